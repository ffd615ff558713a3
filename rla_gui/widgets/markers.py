"""Event markers of a plot (pause, resume, override, failure…): dashed vertical lines, one line
item per event kind, coloured by kind; where alerts held, shaded bands (an alert that flapped
drew hundreds of lines through every chart: its spans merge into a few bands). One "events"
entry in the plot's legend stands for them all and hides or shows them when clicked (the
read-out names the markers under the mouse).

One item per kind rather than one per event: a labelled pyqtgraph InfiniteLine costs ~65 KB of
scene objects (27 KB without its label), so a run steered every few seconds for a day grew the
console by hundreds of MB. Here a marker costs a few floats; the lines are segments spanning the
visible y range, re-stretched when it changes (the item lives in the ViewBox, outside the
plot's log-y transform and auto-range, so the view's coordinates are used as they are).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore

from ..model.alert_spans import MERGE_PIXELS, alert_spans, merged_bands
from ..model.panel_spec import ALERT_BEGAN, ALERT_COLOURS, MARKER_COLOURS

# Even at a few floats each, a run steered for weeks must stay bounded; the newest are kept,
# and the event log lists every event.
MAX_MARKERS = 5000
ALERT_KINDS = frozenset(ALERT_COLOURS)
ALERT_BAND_COLOUR = (*pg.mkColor(ALERT_COLOURS[ALERT_BEGAN]).getRgb()[:3], 40)     # faint: the curves show through


class EventMarkers:
    def __init__(self, plot: pg.PlotItem, x_of_iteration: Callable[[np.ndarray], np.ndarray]):
        self.plot = plot
        self.x_of_iteration = x_of_iteration
        self.events: list[tuple[int, str]] = []          # (iteration, kind), oldest first
        self.items: dict[str, pg.PlotCurveItem] = {}
        self._xs: dict[str, np.ndarray] = {}
        self.alert_spans: list[tuple[float, float]] = []     # iterations over which an alert held
        self._span_x = (np.empty(0), np.empty(0))            # their starts and ends on the x-axis
        self.bands = pg.BarGraphItem(x0=[], x1=[], y0=[], y1=[], brush=pg.mkBrush(ALERT_BAND_COLOUR),
                                     pen=pg.mkPen(None))
        self.bands.setZValue(-11)     # behind the curves and the lines
        plot.vb.addItem(self.bands, ignoreBounds=True)
        # the legend's entry: clicking its sample toggles the sample's visibility (pyqtgraph's
        # ItemSample), which every marker follows
        self._sample = pg.PlotDataItem(pen=pg.mkPen("#888", width=1, style=QtCore.Qt.PenStyle.DashLine))
        self._sample.visibleChanged.connect(self._follow_legend)
        self._in_legend = False
        plot.vb.sigYRangeChanged.connect(lambda *_: self._stretch())
        # how near spans may be before they merge is a matter of pixels: zooming re-merges them
        plot.vb.sigXRangeChanged.connect(lambda *_: self._shade())
        plot.vb.sigResized.connect(lambda *_: self._shade())

    def __len__(self) -> int:
        return len(self.events)

    def set(self, events: Iterable[tuple[int, str]]) -> None:
        self.events = list(events)[-MAX_MARKERS:]
        self.relocate()

    def add(self, events: Iterable[tuple[int, str]]) -> None:
        self.set(self.events + list(events))

    def relocate(self) -> None:
        """Recompute every marker's x (a new run, new events, or another x-axis)."""
        by_kind: dict[str, list[int]] = {}
        for iteration, kind in self.events:
            by_kind.setdefault(kind, []).append(iteration)
        for kind in list(self.items):
            if kind not in by_kind:
                self.plot.vb.removeItem(self.items.pop(kind))
        self._xs = {}
        for kind, its in by_kind.items():
            # alerts' beginnings and ends are kept for the read-out; the bands draw them
            if kind not in ALERT_KINDS:
                self._item(kind)
            self._xs[kind] = self.x_of_iteration(np.asarray(its, dtype=np.float64))
        self.alert_spans = alert_spans(self.events)
        self._span_x = self._spans_on_axis()
        self._legend(bool(by_kind))
        self._stretch()

    def _spans_on_axis(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.alert_spans:
            return np.empty(0), np.empty(0)
        first, last = (np.array(side, dtype=np.float64) for side in zip(*self.alert_spans))
        held = np.isinf(last)        # still holding: to the right edge, whatever the axis
        ends = self.x_of_iteration(np.where(held, first, last))
        return self.x_of_iteration(first), np.where(held, np.inf, ends)

    def _legend(self, any_marker: bool) -> None:
        """One legend entry for every kind: an entry each (pause, resume, override, …) made the
        legend taller than a narrow plot (the read-out and the Events log name each marker)."""
        if any_marker and not self._in_legend:
            self.plot.legend.addItem(self._sample, "events")
        elif not any_marker and self._in_legend:
            self.plot.legend.removeItem(self._sample)
        self._in_legend = any_marker

    def _follow_legend(self) -> None:
        shown = self._sample.isVisible()
        for item in (*self.items.values(), self.bands):
            item.setVisible(shown)

    def near(self, x: float, tolerance: float) -> list[str]:
        """The kinds of the markers within `tolerance` of x, and whether an alert held there (for
        the read-out)."""
        kinds = [kind.replace("_", " ") for kind, xs in self._xs.items()
                 if len(xs) and np.abs(xs - x).min() <= tolerance]
        starts, ends = self._span_x
        if np.any((starts <= x) & (x <= ends)):
            kinds.append("alert held")
        return kinds

    def _item(self, kind: str) -> pg.PlotCurveItem:
        item = self.items.get(kind)
        if item is None:
            colour = MARKER_COLOURS.get(kind) or ALERT_COLOURS.get(kind, "#888")
            item = pg.PlotCurveItem(pen=pg.mkPen(colour, width=1, style=QtCore.Qt.PenStyle.DashLine),
                                    connect="pairs", skipFiniteCheck=True)
            item.setZValue(-10)     # behind the curves
            item.setVisible(self._sample.isVisible())
            self.plot.vb.addItem(item, ignoreBounds=True)
            self.items[kind] = item
        return item

    def _stretch(self) -> None:
        y0, y1 = self.plot.vb.viewRange()[1]
        for kind, item in self.items.items():
            xs = np.repeat(self._xs[kind], 2)        # a segment from the bottom to the top
            ys = np.empty(len(xs))
            ys[0::2], ys[1::2] = y0, y1
            item.setData(xs, ys)
        self._shade()

    def _shade(self) -> None:
        """The alerts' bands over the visible y range, merged where they would touch on screen."""
        starts, ends = self._span_x
        if len(starts) == 0 and len(self.bands.opts["x0"]) == 0:
            return      # nothing shaded, nothing to: a view change costs nothing
        vb = self.plot.vb
        (x0, x1), (y0, y1) = vb.viewRange()
        pixel = (x1 - x0) / max(1.0, vb.width())
        ends = np.where(np.isinf(ends), np.maximum(starts, x1), ends)
        seen = (ends >= x0) & (starts <= x1)       # zoomed in, the spans out of view cost nothing
        first, last = merged_bands(starts[seen], ends[seen], MERGE_PIXELS * pixel, min_width=pixel)
        self.bands.setOpts(x0=first, x1=last, y0=np.full(len(first), y0), y1=np.full(len(first), y1))
