"""A plot of some metric keys over the run: one curve item per key, drawn from RunData views.

Drawing is cheap by construction: peak downsampling and clip-to-view keep a million-point
curve to a few thousand drawn vertices, and `refresh()` (called by the dashboard's ≤ 10 Hz
timer) only touches curves whose data or view settings changed.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore

from ..run_data import X_AXES, RunData, ema

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
MARKER_COLOURS = {"pause": "#d62728", "resume": "#2ca02c", "set_difficulty": "#9467bd", "failed": "#000000",
                  "resumed_from_checkpoint": "#17becf"}


def short(key: str) -> str:
    return key.split("/", 1)[-1]


class MetricCurve:
    """A key's line: the smoothed curve in full colour, the raw one faint behind it."""

    def __init__(self, plot: pg.PlotItem, key: str, colour: str, dashed: bool = False, width: float = 2.0):
        style = QtCore.Qt.PenStyle.DashLine if dashed else QtCore.Qt.PenStyle.SolidLine
        self.key = key
        faint = pg.mkColor(colour)
        faint.setAlpha(60)
        self.raw = plot.plot(pen=pg.mkPen(faint, width=1))
        self.line = plot.plot(pen=pg.mkPen(colour, width=width, style=style), name=short(key))
        for item in (self.raw, self.line):
            item.setDownsampling(auto=True, method="peak")
            item.setClipToView(True)
            item.setSkipFiniteCheck(True)
        self.drawn: tuple | None = None

    def draw(self, data: RunData, x_axis: str, smoothing: float) -> None:
        stamp = (data.version, x_axis, smoothing)
        if stamp == self.drawn:
            return
        self.drawn = stamp
        x, y = data.xy(self.key, x_axis)
        if smoothing > 0 and len(y) > 1:
            self.raw.setData(x, y)
            self.raw.show()
            self.line.setData(x, ema(y, smoothing))
        else:
            self.raw.hide()
            self.line.setData(x, y)

    def nearest(self, data: RunData, x_axis: str, x: float) -> tuple[float, float] | None:
        xs, ys = data.xy(self.key, x_axis)
        if len(xs) == 0:
            return None
        i = int(np.clip(np.searchsorted(xs, x), 0, len(xs) - 1))
        if i > 0 and abs(xs[i - 1] - x) < abs(xs[i] - x):
            i -= 1
        return float(xs[i]), float(ys[i])


class MetricPlot(pg.PlotWidget):
    """A titled plot of several keys with smoothing, log-y, a choice of x-axis, event markers and
    a hover read-out of exact values."""

    def __init__(self, title: str, keys: tuple[str, ...], data: RunData, dashed: tuple[str, ...] = (),
                 parent=None):
        super().__init__(parent=parent)
        self.data, self.x_axis, self.smoothing = data, X_AXES[0], 0.0
        self.plotItem.setTitle(title)
        self.plotItem.showGrid(x=True, y=True, alpha=0.2)
        self.plotItem.addLegend(offset=(5, 5), labelTextSize="8pt")
        self.plotItem.setLabel("bottom", X_AXES[0])
        self.curves: dict[str, MetricCurve] = {}
        for i, key in enumerate(keys):
            self.add_curve(key, PALETTE[i % len(PALETTE)], dashed=key in dashed)
        self._markers: list[pg.InfiniteLine] = []
        self._marker_events: list[tuple[int, str]] = []
        self.readout = pg.TextItem(anchor=(0, 1), color="#444")
        self.readout.setZValue(100)
        self.plotItem.addItem(self.readout, ignoreBounds=True)
        self.readout.hide()
        self.scene().sigMouseMoved.connect(self._hover)

    def add_curve(self, key: str, colour: str, dashed: bool = False, width: float = 2.0) -> MetricCurve:
        curve = self.curves[key] = MetricCurve(self.plotItem, key, colour, dashed, width)
        return curve

    def set_view(self, x_axis: str, smoothing: float, log_y: bool) -> None:
        if x_axis != self.x_axis:
            self.x_axis = x_axis
            self.plotItem.setLabel("bottom", x_axis)
            self._place_markers()
        self.smoothing = smoothing
        self.plotItem.setLogMode(y=log_y)

    def refresh(self) -> None:
        for curve in self.curves.values():
            curve.draw(self.data, self.x_axis, self.smoothing)

    def reset(self) -> None:
        for curve in self.curves.values():
            curve.drawn = None
            curve.raw.setData([], [])
            curve.line.setData([], [])
        self.set_markers([])

    # -- event markers ---------------------------------------------------------------------
    def set_markers(self, events: list[tuple[int, str]]) -> None:
        self._marker_events = list(events)
        self._place_markers()

    def add_markers(self, events: list[tuple[int, str]]) -> None:
        self._marker_events += events
        self._place_markers(new=events)

    def _place_markers(self, new: list[tuple[int, str]] | None = None) -> None:
        if new is None:
            for line in self._markers:
                self.plotItem.removeItem(line)
            self._markers = []
            new = self._marker_events
        if not new:
            return
        xs = self.data.x_of_iteration(np.array([it for it, _ in new], dtype=np.float64), self.x_axis)
        for x, (_, kind) in zip(xs, new):
            pen = pg.mkPen(MARKER_COLOURS.get(kind, "#888"), width=1, style=QtCore.Qt.PenStyle.DashLine)
            line = pg.InfiniteLine(pos=float(x), angle=90, pen=pen, label=kind.replace("_", " "),
                                   labelOpts={"position": 0.95, "color": MARKER_COLOURS.get(kind, "#888")})
            self.plotItem.addItem(line, ignoreBounds=True)
            self._markers.append(line)

    # -- hover read-out ----------------------------------------------------------------------
    def _hover(self, pos) -> None:
        vb = self.plotItem.vb
        if not self.plotItem.sceneBoundingRect().contains(pos):
            self.readout.hide()
            return
        p = vb.mapSceneToView(pos)
        lines, x_at = [], None
        for key, curve in self.curves.items():
            hit = curve.nearest(self.data, self.x_axis, p.x())
            if hit is not None:
                x_at = hit[0]
                lines.append(f"{short(key)} = {hit[1]:.4g}")
        if not lines:
            self.readout.hide()
            return
        self.readout.setText(f"{self.x_axis} {x_at:.6g}\n" + "\n".join(lines))
        self.readout.setPos(p.x(), p.y())
        self.readout.show()
