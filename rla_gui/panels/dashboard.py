"""The live dashboard: the four panels the product is about, plus losses (DESIGN §6).

Data arrives from the session at whatever rate the engine commits; the panels only redraw on
a ≤ 10 Hz timer, so a fast engine can never flood the event loop. The view controls (x-axis,
smoothing, log y) are a ViewControls bar shared with the comparison, and persist in QSettings.
"""
from __future__ import annotations

import math
from typing import TypeGuard

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from rla_engine.vocabulary import VARIANT_KINDS, EventKind

from ..panel_spec import AGREEMENT, BALANCE, DIFFICULTY, LOSSES, MARKER_KINDS, POLICY, TIER_COLOURS
from ..run_data import RunData
from ..session import RunSession
from ..widgets.metric_plot import MetricCurve, MetricPlot
from ..widgets.view_controls import ViewControls

# The timer refreshes one plot per tick, round robin: each plot redraws at most every
# REDRAW_MS × 5 = 100 ms (≤ 10 Hz), and one tick's work is one plot, not five.
REDRAW_MS = 20
# Variants arrive about once an iteration and the scatter items are rebuilt on each redraw: 20,000
# points churned ~2 MB per redraw through the allocator (the soak's console grew ~1 MB/min more
# than with 2,000). The newest 2,000 cover the recent history; the event log lists them all.
MAX_VARIANT_POINTS = 2_000


def _finite(x: object) -> TypeGuard[float]:
    """A number the plots can place (rows of old databases may hold null or text)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


class BandFill(pg.FillBetweenItem):
    """The fill between two lines, empty while either line is. pyqtgraph fills between the lines'
    inner curve items, and an emptied line only hides its curve, which keeps its old path: the
    band of a closed run stayed on screen."""

    def updatePath(self) -> None:
        if any(_empty(line) for line in self.curves or ()):
            self.setPath(QtGui.QPainterPath())
            return
        super().updatePath()


def _empty(line: pg.PlotDataItem) -> bool:
    x, _ = line.getData()
    return x is None or len(x) == 0


# above the line at its left end, beside the axis rather than half under it
MU_LABEL = {"position": 0.02, "color": "#d62728", "anchors": [(0, 1), (0, 1)]}


class DifficultyPlot(MetricPlot):
    """Pool mean with the min–max band; accepted/rejected variants as points at their difficulty."""

    def __init__(self, data: RunData):
        super().__init__(DIFFICULTY.title, DIFFICULTY.keys, data)
        self.band_curves = [MetricCurve(self.plotItem, key, "#1f77b4", smooth=False, pen=pg.mkPen(None))
                            for key in DIFFICULTY.band or ()]
        self.lo, self.hi = (c.line for c in self.band_curves)
        band = BandFill(self.lo, self.hi, brush=pg.mkBrush(31, 119, 180, 50))
        # the band's lines bound the view; the fill would too, and empty it centres the view on 0
        self.plotItem.addItem(band, ignoreBounds=True)
        self.accepted = pg.ScatterPlotItem(size=5, symbol="t1", brush=pg.mkBrush(44, 160, 44, 110), pen=None,
                                           name="accepted variant")
        self.rejected = pg.ScatterPlotItem(size=4, symbol="x", brush=pg.mkBrush(120, 120, 120, 60), pen=None,
                                           name="rejected variant")
        for item in (self.accepted, self.rejected):
            self.plotItem.addItem(item)   # named items join the legend by themselves
        self.variants: list[tuple[int, float, bool]] = []
        self._drawn_variants: tuple | None = None

    def refresh(self) -> None:
        super().refresh()
        pixels = max(100, int(self.plotItem.vb.width()))
        for curve in self.band_curves:
            curve.draw(self.data, self.x_axis, 0.0, self._last_x, pixels)
        stamp = (len(self.variants), self.variants[-1] if self.variants else None, self.x_axis)
        if stamp != self._drawn_variants:     # scatter points change only with variant events
            self._drawn_variants = stamp
            self._draw_variants()

    def add_variants(self, events: list[dict]) -> None:
        for e in events:
            if e.get("kind") not in VARIANT_KINDS:
                continue
            # an old or foreign row's payload may be null or no object, its difficulty missing or
            # text: such a variant has no place on the plot (the event log still lists it)
            payload = e.get("payload")
            d = payload.get("difficulty") if isinstance(payload, dict) else None
            if _finite(e.get("iteration")) and _finite(d):
                self.variants.append((e["iteration"], float(d), e["kind"] == EventKind.VARIANT_ACCEPTED))
        del self.variants[:-MAX_VARIANT_POINTS]

    def _draw_variants(self) -> None:
        import numpy as np
        for item, accepted in ((self.accepted, True), (self.rejected, False)):
            pts = [(it, d) for it, d, ok in self.variants if ok == accepted]
            if not pts:
                item.setData([], [])
                continue
            arr = np.array(pts, dtype=np.float64)
            item.setData(self.data.x_of_iteration(arr[:, 0], self.x_axis), arr[:, 1])

    def reset_drawn(self) -> None:
        super().reset_drawn()
        for curve in self.band_curves:
            curve.drawn = None
        self._drawn_variants = None

    def reset(self) -> None:
        super().reset()
        self.variants.clear()
        self._drawn_variants = None
        for curve in self.band_curves:
            curve.drawn = None
        for item in (self.lo, self.hi, self.accepted, self.rejected):
            item.setData([], [])


class DashboardPanel(QtWidgets.QWidget):
    """The open run's panels; `losses` is handed to the window for a dock of its own."""

    def __init__(self, session: RunSession, parent=None):
        super().__init__(parent)
        self.data = data = session.data
        self.policy, self.agreement, self.balance = (MetricPlot(p.title, p.keys, data, dashed=p.dashed)
                                                     for p in (POLICY, AGREEMENT, BALANCE))
        self.balance.plotItem.addItem(pg.InfiniteLine(pos=1.0, angle=0, pen=pg.mkPen("#d62728", width=1,
                                      style=QtCore.Qt.PenStyle.DotLine), label="μ = 1",
                                      labelOpts=MU_LABEL), ignoreBounds=True)
        region = pg.LinearRegionItem(values=(0.2, 0.8), orientation="horizontal", movable=False,
                                     brush=pg.mkBrush(44, 160, 44, 30), pen=pg.mkPen(None))
        region.setZValue(-10)
        self.balance.plotItem.addItem(region, ignoreBounds=True)
        self.difficulty = DifficultyPlot(data)
        self.losses = MetricPlot(LOSSES.title, LOSSES.keys, data)
        self.plots: list[MetricPlot] = [self.policy, self.agreement, self.balance, self.difficulty, self.losses]
        self._tiers: set[str] = set()

        self.view = ViewControls()
        self.view.changed.connect(self._apply_view)
        grid = QtWidgets.QGridLayout()
        grid.addWidget(self.policy, 0, 0)
        grid.addWidget(self.agreement, 0, 1)
        grid.addWidget(self.balance, 1, 0)
        grid.addWidget(self.difficulty, 1, 1)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.view)
        layout.addLayout(grid, 1)
        self.timer = QtCore.QTimer(self)
        self.timer.setInterval(REDRAW_MS)
        self._next = 0
        self.timer.timeout.connect(self.tick)
        self.timer.start()
        self._apply_view()
        session.cleared.connect(self.reset)
        session.events_added.connect(self.add_events)

    def _apply_view(self) -> None:
        v = self.view
        for plot in self.plots:
            plot.set_view(v.x_axis(), v.smoothing_weight(), log_y=v.log_y.isChecked() and plot is self.losses)

    def save_state(self, settings: QtCore.QSettings) -> None:
        self.view.save_state(settings, "plots")

    def restore_state(self, settings: QtCore.QSettings) -> None:
        self.view.restore_state(settings, "plots")

    def _add_tier_curves(self) -> None:
        new_tiers = [k for k in self.data.tier_keys() if k not in self._tiers]
        for i, key in enumerate(new_tiers, start=len(self._tiers)):
            curve = self.policy.add_curve(key, TIER_COLOURS[i % len(TIER_COLOURS)], width=1.2)
            # one legend entry stands for every tier (their shades say which): an entry each made
            # the legend taller than the plot; the read-out names each tier's value
            legend = self.policy.plotItem.legend
            if self._tiers:
                legend.removeItem(curve.line)
            else:
                legend.removeItem(curve.line)
                legend.addItem(curve.line, "eval @tiers")
            self._tiers.add(key)
        if new_tiers:
            self._apply_view()

    def tick(self) -> None:
        """Refresh the next plot that has something new (timer slot)."""
        self._add_tier_curves()
        for _ in range(len(self.plots)):
            plot = self.plots[self._next]
            self._next = (self._next + 1) % len(self.plots)
            if plot.needs_refresh():
                plot.refresh()
                return

    def refresh(self) -> None:
        """Refresh every plot now (tests, benchmarks, a reopened run)."""
        self._add_tier_curves()
        for plot in self.plots:
            plot.refresh()

    def add_events(self, events: list[dict]) -> None:
        marks = [(e["iteration"], e["kind"]) for e in events
                 if e.get("kind") in MARKER_KINDS and _finite(e.get("iteration"))]
        if marks:
            for plot in self.plots:
                plot.add_markers(marks)
        self.difficulty.add_variants(events)

    def reset(self) -> None:
        for plot in self.plots:
            plot.reset()
        for key in self._tiers:
            curve = self.policy.curves.pop(key)
            self.policy.plotItem.removeItem(curve.raw)
            self.policy.plotItem.removeItem(curve.line)
            self.policy.plotItem.legend.removeItem(curve.line)
        self._tiers.clear()
