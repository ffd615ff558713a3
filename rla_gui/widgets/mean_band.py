"""A group of runs as one curve: the mean over its runs with ± one sample standard deviation as a
band — the ablation figures' look, shared by those figures, the group comparison tab and its report."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg

BAND_ALPHA = 35
GRID_POINTS = 400      # where the runs' curves are resampled to be averaged


def mean_curve(runs: list[tuple[np.ndarray, np.ndarray]], grid: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, mean, sample std) of the runs' curves, interpolated on `grid`, where every run has
    a value (a mean over the runs still going would jump as they drop out)."""
    ys = [np.interp(grid, x, y, left=np.nan, right=np.nan) for x, y in runs if len(x) > 1]
    if not ys:
        return np.array([]), np.array([]), np.array([])
    stack = np.vstack(ys)
    reached = np.all(np.isfinite(stack), axis=0)
    stack = stack[:, reached]
    # scaled by a power of two (exact) so that values near the largest float (an imported 1.5e308)
    # have a mean; a spread beyond what a float holds is cut where the band would leave the floats
    exponent = int(np.frexp(np.max(np.abs(stack)))[1]) if stack.size else 0
    scaled = np.ldexp(stack, -exponent)
    with np.errstate(over="ignore"):
        mean = np.ldexp(scaled.mean(0), exponent)
        std = np.ldexp(scaled.std(0, ddof=1), exponent) if len(ys) > 1 else np.zeros(stack.shape[1])
    return grid[reached], mean, np.minimum(std, np.finfo(np.float64).max - np.abs(mean))


def grid_of(runs: list[tuple[np.ndarray, np.ndarray]], points: int = GRID_POINTS) -> np.ndarray:
    """Where to average the runs: every x any of them has (runs logged at the same iterations are
    averaged at their own points, not between them), or `points` evenly spaced x over the same
    span where that would be more."""
    xs = [x[np.isfinite(x)] for x, _ in runs if len(x) > 1]
    if not xs:
        return np.array([])
    grid = np.unique(np.concatenate(xs))
    return grid if len(grid) <= points else np.linspace(grid[0], grid[-1], points)


def add_band(plot: pg.PlotItem, x: np.ndarray, lo: np.ndarray, hi: np.ndarray, colour: str,
             alpha: int = BAND_ALPHA) -> list:
    """A filled band between `lo` and `hi` in `colour` (translucent); returns its items."""
    lo_item = pg.PlotDataItem(x, lo, pen=pg.mkPen(None))
    hi_item = pg.PlotDataItem(x, hi, pen=pg.mkPen(None))
    fill = pg.mkColor(colour)
    fill.setAlpha(alpha)
    band = pg.FillBetweenItem(lo_item.curve, hi_item.curve, brush=pg.mkBrush(fill))
    items = [lo_item, hi_item, band]
    for item in items:
        plot.addItem(item)
    return items


class MeanBandCurve:
    """One group in a plot: its mean line (in the legend as `label`) and its ± std band (drawn
    only where the group has two runs or more)."""

    def __init__(self, plot: pg.PlotItem, colour: str, label: str, width: float = 2.0):
        self.plot, self.colour = plot, colour
        self.mean_item = plot.plot(pen=pg.mkPen(colour, width=width), name=label)
        self.band_items: list = []
        self.x = self.mean = self.std = np.array([])

    def draw(self, runs: list[tuple[np.ndarray, np.ndarray]]) -> None:
        self.clear_band()
        self.x, self.mean, self.std = mean_curve(runs, grid_of(runs))
        self.mean_item.setData(self.x, self.mean)
        if sum(len(x) > 1 for x, _ in runs) > 1 and len(self.x) > 1:
            self.band_items = add_band(self.plot, self.x, self.mean - self.std, self.mean + self.std, self.colour)

    def clear_band(self) -> None:
        for item in self.band_items:
            self.plot.removeItem(item)
        self.band_items = []

    def remove(self) -> None:
        self.clear_band()
        self.plot.removeItem(self.mean_item)
