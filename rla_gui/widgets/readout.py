"""What the dashboard's and the comparison's plots share beyond their curves: the legend's look
and a hover read-out of exact values under the mouse."""
from __future__ import annotations

from collections.abc import Callable

import pyqtgraph as pg

from ..theme import is_dark


def add_legend(plot_item: pg.PlotItem) -> pg.LegendItem:
    """A compact, half-transparent legend in the top-left corner, above the curves."""
    legend = plot_item.addLegend(offset=(5, 5), labelTextSize="8pt", verSpacing=-6,
                                 brush=pg.mkBrush((30, 30, 30, 150) if is_dark() else (255, 255, 255, 150)),
                                 pen=pg.mkPen(128, 128, 128, 120))
    legend.setZValue(50)
    return legend


class HoverReadout:
    """A text item that follows the mouse over the plot; `describe(x)` gives its text for the data
    x under the mouse, or None to hide it."""

    def __init__(self, plot: pg.PlotWidget, describe: Callable[[float], str | None]):
        self.plot_item, self.describe = plot.plotItem, describe
        self.item = pg.TextItem(anchor=(0, 1), color="#444")
        self.item.setZValue(100)
        self.plot_item.addItem(self.item, ignoreBounds=True)
        self.item.hide()
        plot.scene().sigMouseMoved.connect(self._hover)

    def _hover(self, pos) -> None:
        if not self.plot_item.sceneBoundingRect().contains(pos):
            self.item.hide()
            return
        p = self.plot_item.vb.mapSceneToView(pos)
        text = self.describe(p.x())
        if text is None:
            self.item.hide()
            return
        self.item.setText(text)
        self.item.setPos(p.x(), p.y())
        self.item.show()
