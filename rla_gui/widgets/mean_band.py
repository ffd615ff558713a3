"""A group of runs drawn as one curve: the mean line and its ± std band (model.mean_curve computes
them) — the ablation figures' look, shared by those figures, the group comparison tab and its report."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from ..model.mean_curve import grid_of, mean_curve

BAND_ALPHA = 35


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
