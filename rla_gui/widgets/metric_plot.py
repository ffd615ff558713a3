"""A plot of some metric keys over the run: one curve item per key, drawn from RunData views.

Drawing is cheap by construction: peak downsampling and clip-to-view keep a million-point
curve to a few thousand drawn vertices, and `refresh()` (called by the dashboard's ≤ 10 Hz
timer) only touches curves whose data or view settings changed.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore

from ..model.panel_spec import PALETTE, short
from ..model.run_data import X_AXES, RunData, ema, ema_state, hidden_on_log, log_y_note
from .chart_export import add_chart_export
from ..model.lod import PeakPyramid
from .markers import EventMarkers
from .readout import HoverReadout, add_legend, set_title


class MetricCurve:
    """A key's line: the smoothed curve in full colour, the raw one faint behind it. Smoothing is
    extended incrementally as points arrive; both series are drawn through min/max pyramids."""

    def __init__(self, plot: pg.PlotItem, key: str, colour: str, dashed: bool = False, width: float = 2.0,
                 smooth: bool = True, pen=None, label: str | None = None):
        style = QtCore.Qt.PenStyle.DashLine if dashed else QtCore.Qt.PenStyle.SolidLine
        self.key, self.smooth = key, smooth
        faint = pg.mkColor(colour)
        faint.setAlpha(60)
        # "finite": a NaN is a break in the line (where a run was paused, on the wall-time axis)
        self.raw = plot.plot(pen=pg.mkPen(faint, width=1), connect="finite")
        self.line = plot.plot(pen=pen if pen is not None else pg.mkPen(colour, width=width, style=style),
                              name=(label or short(key)) if pen is None else None, connect="finite")
        for item in (self.raw, self.line):
            item.setSkipFiniteCheck(True)
        self.raw_lod, self.smooth_lod = PeakPyramid(), PeakPyramid()
        self.smoothed = np.empty(0)
        self.weight: float | None = None
        self.done = 0                  # points already in the pyramids
        self.drawn: tuple | None = None

    def _catch_up(self, y: np.ndarray, weight: float) -> None:
        n = len(y)
        if n < self.done or weight != self.weight:      # rewound, or new smoothing: start over
            self.done, self.weight = 0, weight
            self.raw_lod.reset()
            self.smooth_lod.reset()
            self.smoothed = np.empty(0)
        if n == self.done:
            return
        self.raw_lod.update(y, self.done)
        if self.smooth and weight > 0:
            state = ema_state(self.smoothed[self.done - 1], weight, self.done) if self.done else 0.0
            new = ema(y[self.done:], weight, state, self.done)
            if len(self.smoothed) < n:
                grown = np.empty(max(2 * len(self.smoothed), n))
                grown[: self.done] = self.smoothed[: self.done]
                self.smoothed = grown
            self.smoothed[self.done:n] = new
            self.smooth_lod.update(self.smoothed[:n], self.done)
        self.done = n

    def draw(self, data: RunData, x_axis: str, smoothing: float, x_range: tuple | None, pixels: int) -> None:
        stamp = (data.version, x_axis, smoothing, x_range, pixels)
        if stamp == self.drawn:
            return
        self.drawn = stamp
        x, y = data.xy(self.key, x_axis)
        smoothing = smoothing if self.smooth else 0.0
        self._catch_up(y, smoothing)
        n = len(y)
        if x_range is None:
            i0, i1 = 0, n
        else:
            i0 = max(0, int(np.searchsorted(x, x_range[0])) - 1)
            i1 = min(n, int(np.searchsorted(x, x_range[1])) + 1)
        budget = max(200, 2 * pixels)
        breaks = data.breaks(self.key, x_axis)
        if smoothing > 0 and n > 1:
            self.raw.setData(*self.raw_lod.view(x, y, i0, i1, budget, breaks))
            self.raw.show()
            self.line.setData(*self.smooth_lod.view(x, self.smoothed[:n], i0, i1, budget, breaks))
        else:
            self.raw.hide()
            self.line.setData(*self.raw_lod.view(x, y, i0, i1, budget, breaks))

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
        self.data, self.x_axis, self.smoothing, self.log_y = data, X_AXES[0], 0.0, False
        self.title = title
        self._shown_title = (title, "")
        set_title(self.plotItem, title)
        # no grid: pyqtgraph paints grid lines through the axis picture at ~6 ms per axis per frame,
        # which alone would eat the event loop's 16 ms budget
        self.plotItem.showGrid(x=False, y=False)
        add_legend(self.plotItem)
        self.plotItem.setLabel("bottom", X_AXES[0])
        self.curves: dict[str, MetricCurve] = {}
        for i, key in enumerate(keys):
            self.add_curve(key, PALETTE[i % len(PALETTE)], dashed=key in dashed)
        self.markers = EventMarkers(self.plotItem, lambda its: self.data.x_of_iteration(its, self.x_axis))
        self.readout = HoverReadout(self, self._describe)
        self._last_x: tuple | None = None
        self._drawn_state: tuple | None = None
        self._pending_marks: list[tuple[int, str]] = []
        self.plotItem.vb.sigXRangeChanged.connect(lambda *_: self._view_changed())
        # right-click saves; what it writes as data: these curves and the difficulty plot's band
        add_chart_export(self, lambda: [(short(c.key), c, self.data)
                                        for c in (*self.curves.values(), *getattr(self, "band_curves", ()))])

    def add_curve(self, key: str, colour: str, dashed: bool = False, width: float = 2.0) -> MetricCurve:
        curve = self.curves[key] = MetricCurve(self.plotItem, key, colour, dashed, width)
        return curve

    def set_keys(self, title: str, keys: tuple[str, ...], dashed: tuple[str, ...] = ()) -> None:
        """Draw other keys under another title (a run whose reward model writes tests, not step
        verdicts): the old curves go with their legend entries; the new ones draw on the next refresh."""
        for curve in self.curves.values():
            self.plotItem.removeItem(curve.raw)
            self.plotItem.removeItem(curve.line)     # and its legend entry
        self.curves = {}
        for i, key in enumerate(keys):
            self.add_curve(key, PALETTE[i % len(PALETTE)], dashed=key in dashed)
        self.title = title
        self._drawn_state = None
        self.readout.hide()      # it described the curves just removed
        self._show_hidden_points()      # the title

    def visible_x(self) -> tuple | None:
        """None while x auto-ranges (draw everything, coarsely); else the x range in view."""
        vb = self.plotItem.vb
        if vb.autoRangeEnabled()[0]:
            return None
        x0, x1 = vb.viewRange()[0]
        return (round(x0, 9), round(x1, 9))

    def _view_changed(self) -> None:
        if self.visible_x() != self._last_x:
            self.refresh()

    def set_view(self, x_axis: str, smoothing: float, log_y: bool) -> None:
        if x_axis != self.x_axis:
            self.x_axis = x_axis
            self.plotItem.setLabel("bottom", x_axis)
            self.markers.relocate()
        self.smoothing = smoothing
        if log_y != self.log_y:
            self.log_y = log_y
            self.plotItem.setLogMode(y=log_y)
            if not any(curve.line.xData is not None and len(curve.line.xData) for curve in self.curves.values()):
                self._frame_empty()
            self._show_hidden_points()

    def needs_refresh(self) -> bool:
        return bool(self._pending_marks) or (self.data.version, self.x_axis, self.smoothing) != self._drawn_state

    def refresh(self) -> None:
        if self._pending_marks:
            marks, self._pending_marks = self._pending_marks, []
            self.markers.add(marks)
        self._last_x = x_range = self.visible_x()
        self._drawn_state = (self.data.version, self.x_axis, self.smoothing)
        pixels = max(100, int(self.plotItem.vb.width()))
        for curve in self.curves.values():
            curve.draw(self.data, self.x_axis, self.smoothing, x_range, pixels)
        self._show_hidden_points()

    def _show_hidden_points(self) -> None:
        """On log y the title says how many points it cannot draw (≤ 0): a policy loss is
        negative in most iterations, and its chart showed what was left as if it were all."""
        note = ""
        if self.log_y:
            ys = [self.data.xy(key)[1] for key in self.curves]
            note = log_y_note(sum(hidden_on_log(y) for y in ys), sum(len(y) for y in ys))
        if (self.title, note) != self._shown_title:     # a new title re-lays the plot out: only on a change
            self._shown_title = (self.title, note)
            set_title(self.plotItem, self.title, note)

    def reset_drawn(self) -> None:
        """Forget what was drawn (not the data): the next refresh re-sends every curve."""
        self._drawn_state = None
        for curve in self.curves.values():
            curve.drawn = None

    def reset(self) -> None:
        """Nothing of the old run stays: its curves, markers and read-out go, and the view
        auto-ranges again from a neutral range (an empty plot has nothing to auto-range to and
        would keep showing the old run's axes)."""
        self._drawn_state = None
        for curve in self.curves.values():
            curve.drawn = None
            curve.raw.setData([], [])
            curve.line.setData([], [])
        self.set_markers([])
        self.readout.hide()
        self._frame_empty()

    def _frame_empty(self) -> None:
        """The neutral range of a plot with nothing to draw: 0 to 1, or on log y three decades up
        to 1 (a view range is in log units there: 0 to 1 meant 1 to 10, labelled 2 … 9 in a heap)."""
        vb = self.plotItem.vb
        vb.setRange(xRange=(0, 1), yRange=(-3, 0) if self.log_y else (0, 1), padding=0, disableAutoRange=False)
        vb.enableAutoRange()

    # -- event markers ---------------------------------------------------------------------
    def set_markers(self, events: list[tuple[int, str]]) -> None:
        self._pending_marks = []
        self.markers.set(events)

    def add_markers(self, events: list[tuple[int, str]]) -> None:
        """On a tab not in front (the health dock's), kept until its next refresh: a first marker
        re-lays the plot out for its legend entry, 3-12 ms each, for nothing while unseen."""
        if self.isVisibleTo(self.window()):
            self.markers.add(events)
        else:
            self._pending_marks += events

    # -- hover read-out ----------------------------------------------------------------------
    def leaveEvent(self, ev) -> None:
        super().leaveEvent(ev)
        self.readout.hide()      # no move comes once the mouse is off the widget

    def _describe(self, x: float) -> str | None:
        lines, x_at = [], None
        for key, curve in self.curves.items():
            hit = curve.nearest(self.data, self.x_axis, x)
            if hit is not None:
                x_at = hit[0]
                lines.append(f"{short(key)} = {hit[1]:.4g}")
        (x0, x1), _ = self.plotItem.vb.viewRange()
        events = self.markers.near(x, (x1 - x0) / 100)      # within ~a percent of the view
        if events:
            lines.append("events: " + ", ".join(events))
        return f"{self.x_axis} {x_at:.6g}\n" + "\n".join(lines) if x_at is not None else None
