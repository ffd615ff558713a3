"""Level-of-detail for long curves: a min/max pyramid over a growing series.

A plot never hands pyqtgraph more than ~2 points per pixel: for the visible index range it picks
the coarsest-enough level and draws each bin as a vertical min–max segment (the same picture as
peak downsampling), so a million-point history costs what a few thousand points cost. Appends
update only the last bins of each level.
"""
from __future__ import annotations

import numpy as np

FACTOR = 8


class PeakPyramid:
    def __init__(self) -> None:
        # level k+1 holds the min (lo) and max (hi) of each bin of FACTOR**(k+1) points, in
        # buffers that grow by doubling and are written in place: a live curve appends a few
        # points at a time, and copying whole levels on every redraw churned the allocator
        # (the console's memory grew ~10 MB/min in the soak) and cost O(n) per append
        self._lo: list[np.ndarray] = []
        self._hi: list[np.ndarray] = []
        self._size: list[int] = []
        self.n = 0

    @property
    def lo(self) -> list[np.ndarray]:
        return [b[:k] for b, k in zip(self._lo, self._size)]

    @property
    def hi(self) -> list[np.ndarray]:
        return [b[:k] for b, k in zip(self._hi, self._size)]

    def reset(self) -> None:
        self._lo, self._hi, self._size, self.n = [], [], [], 0

    def _room(self, level: int, bins: int, keep: int) -> None:
        """Level `level` can hold `bins` entries; its first `keep` entries are kept."""
        if level == len(self._lo):
            self._lo.append(np.empty(max(64, bins)))
            self._hi.append(np.empty(max(64, bins)))
            self._size.append(0)
        elif bins > len(self._lo[level]):
            for bufs in (self._lo, self._hi):
                grown = np.empty(max(2 * len(bufs[level]), bins))
                grown[:keep] = bufs[level][:keep]
                bufs[level] = grown

    def update(self, y: np.ndarray, start: int) -> None:
        """y: the whole series (a view); points from index `start` on are new or changed."""
        self.n = n = len(y)
        lo_prev = hi_prev = y
        level = 0
        while len(lo_prev) > 1:
            bins = -(-len(lo_prev) // FACTOR)
            first = min(start // FACTOR, bins, self._size[level] if level < len(self._size) else 0)
            seg_lo, seg_hi = lo_prev[first * FACTOR:], hi_prev[first * FACTOR:]
            pad = (-len(seg_lo)) % FACTOR
            if pad:      # a partial last bin: repeat its last value so min/max are unchanged
                seg_lo = np.concatenate([seg_lo, np.repeat(seg_lo[-1:], pad)])
                seg_hi = np.concatenate([seg_hi, np.repeat(seg_hi[-1:], pad)])
            self._room(level, bins, first)
            self._lo[level][first:bins] = seg_lo.reshape(-1, FACTOR).min(1)
            self._hi[level][first:bins] = seg_hi.reshape(-1, FACTOR).max(1)
            self._size[level] = bins
            lo_prev, hi_prev, start = self._lo[level][:bins], self._hi[level][:bins], first
            level += 1
        del self._lo[level:], self._hi[level:], self._size[level:]
        if n == 0:
            self.reset()

    def view(self, x: np.ndarray, y: np.ndarray, i0: int, i1: int, max_points: int,
             breaks: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Points to draw for indices [i0, i1): the raw ones if few enough, else min/max bins.
        `breaks`: sorted indices i where no line may join point i-1 to i; a NaN goes between them
        (drawn with connect="finite"), after the bin holding i-1 when points are binned. Breaks
        are inserted here, not stored as NaN in the series: a NaN would blank its whole bin and
        stop the moving average for good."""
        count = i1 - i0
        if count <= max_points:
            xs, ys = x[i0:i1], y[i0:i1]
            after = _inside(breaks, i0, i1) - i0          # a NaN before each of these points
        else:
            xs, ys, size, b0 = self._bins(x, i0, i1, max_points)
            inside = _inside(breaks, i0, i1)
            after = 2 * (np.unique((inside - 1) // size) - b0 + 1)     # after the pair of i-1's bin
            after = after[after < len(xs)]
        if len(after) == 0:
            return xs, ys
        return np.insert(xs, after, xs[after - 1]), np.insert(ys, after, np.nan)

    def _bins(self, x: np.ndarray, i0: int, i1: int, max_points: int) -> tuple[np.ndarray, np.ndarray, int, int]:
        """Each bin of the coarsest-enough level as a vertical min–max segment at its first x."""
        count = i1 - i0
        level, size = 0, FACTOR
        while count / size > max_points / 2 and level + 1 < len(self._size):
            level, size = level + 1, size * FACTOR
        b0, b1 = i0 // size, min(-(-i1 // size), self._size[level])
        lo, hi = self._lo[level][b0:b1], self._hi[level][b0:b1]
        starts = np.minimum(np.arange(b0, b0 + len(lo)) * size, len(x) - 1)
        xs = np.repeat(x[starts], 2)
        ys = np.empty(2 * len(lo))
        ys[0::2], ys[1::2] = lo, hi
        return xs, ys, size, b0


def _inside(breaks: np.ndarray | None, i0: int, i1: int) -> np.ndarray:
    """The breaks strictly after i0 and before i1 (a break at i0 joins nothing drawn)."""
    if breaks is None or len(breaks) == 0:
        return np.empty(0, np.intp)
    return breaks[(breaks > i0) & (breaks < i1)]


# -- a whole series at once: the report's charts -----------------------------------------------------
def thinned(x: np.ndarray, y: np.ndarray, max_points: int,
            breaks: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The points a live plot draws for the whole of (x, y) at a budget of `max_points`: the same
    min/max bins of the same pyramid, so a report's chart and the dashboard's show one picture."""
    pyramid = PeakPyramid()
    pyramid.update(y, 0)
    return pyramid.view(x, y, 0, len(y), max_points, breaks)


def bounds(x: np.ndarray, y: np.ndarray, max_bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, min, max) per bin of the pyramid level thinned() draws at 2 * max_bins points; every
    point its own bin when there are no more than `max_bins`. A filled band follows these: its
    outline of thousands of vertices would fill slowly."""
    if len(y) <= max_bins:
        return x, y, y
    pyramid = PeakPyramid()
    pyramid.update(y, 0)
    xs, ys, _, _ = pyramid._bins(x, 0, len(y), 2 * max_bins)
    return xs[0::2], ys[0::2], ys[1::2]


def finite_points(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The points of (x, y) that have a finite value, and the breaks (for PeakPyramid.view) where
    points without one were left out: a chart draws no point for a value that is not a number
    (a damaged row reads back as NaN) and draws a gap where it was rather than a line across, nor
    fills a bin with an invented value."""
    keep = np.isfinite(y) & np.isfinite(x)
    if keep.all():
        return x, y, np.empty(0, np.intp)
    kept_before = np.cumsum(keep) - keep          # how many kept points precede each point
    dropped = kept_before[~keep]
    return x[keep], y[keep], np.unique(dropped[(dropped > 0) & (dropped < keep.sum())])
