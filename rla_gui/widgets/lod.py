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
        self.lo: list[np.ndarray] = []     # level k+1: min of each bin of FACTOR**(k+1) points
        self.hi: list[np.ndarray] = []
        self.n = 0

    def reset(self) -> None:
        self.lo, self.hi, self.n = [], [], 0

    def update(self, y: np.ndarray, start: int) -> None:
        """y: the whole series (a view); points from index `start` on are new or changed."""
        self.n = n = len(y)
        lo_prev = hi_prev = y
        level = 0
        while len(lo_prev) > 1:
            bins = -(-len(lo_prev) // FACTOR)
            first = min(start // FACTOR, bins)
            seg_lo, seg_hi = lo_prev[first * FACTOR:], hi_prev[first * FACTOR:]
            pad = (-len(seg_lo)) % FACTOR
            if pad:      # a partial last bin: repeat its last value so min/max are unchanged
                seg_lo = np.concatenate([seg_lo, np.repeat(seg_lo[-1:], pad)])
                seg_hi = np.concatenate([seg_hi, np.repeat(seg_hi[-1:], pad)])
            new_lo = seg_lo.reshape(-1, FACTOR).min(1)
            new_hi = seg_hi.reshape(-1, FACTOR).max(1)
            if level == len(self.lo):
                self.lo.append(new_lo)
                self.hi.append(new_hi)
            else:
                self.lo[level] = np.concatenate([self.lo[level][:first], new_lo])
                self.hi[level] = np.concatenate([self.hi[level][:first], new_hi])
            lo_prev, hi_prev, start = self.lo[level], self.hi[level], first
            level += 1
        del self.lo[level:], self.hi[level:]
        if n == 0:
            self.reset()

    def view(self, x: np.ndarray, y: np.ndarray, i0: int, i1: int, max_points: int) -> tuple[np.ndarray, np.ndarray]:
        """Points to draw for indices [i0, i1): the raw ones if few enough, else min/max bins."""
        count = i1 - i0
        if count <= max_points:
            return x[i0:i1], y[i0:i1]
        level, size = 0, FACTOR
        while count / size > max_points / 2 and level + 1 < len(self.lo):
            level, size = level + 1, size * FACTOR
        b0, b1 = i0 // size, -(-i1 // size)
        lo, hi = self.lo[level][b0:b1], self.hi[level][b0:b1]
        starts = np.minimum(np.arange(b0, b0 + len(lo)) * size, len(x) - 1)
        xs = np.repeat(x[starts], 2)
        ys = np.empty(2 * len(lo))
        ys[0::2], ys[1::2] = lo, hi
        return xs, ys
