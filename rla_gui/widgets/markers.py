"""Event markers of a plot (pause, resume, override, failure, alerts…): dashed vertical lines,
one line item per event kind, coloured by kind, with one "events" entry in the plot's legend (the
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

from ..model.panel_spec import ALERT_COLOURS, MARKER_COLOURS

# Even at a few floats each, a run steered for weeks must stay bounded; the newest are kept,
# and the event log lists every event.
MAX_MARKERS = 5000


class EventMarkers:
    def __init__(self, plot: pg.PlotItem, x_of_iteration: Callable[[np.ndarray], np.ndarray]):
        self.plot = plot
        self.x_of_iteration = x_of_iteration
        self.events: list[tuple[int, str]] = []          # (iteration, kind), oldest first
        self.items: dict[str, pg.PlotCurveItem] = {}
        self._xs: dict[str, np.ndarray] = {}
        self._sample = pg.PlotDataItem(pen=pg.mkPen("#888", width=1, style=QtCore.Qt.PenStyle.DashLine))
        self._in_legend = False
        plot.vb.sigYRangeChanged.connect(lambda *_: self._stretch())

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
                self._xs.pop(kind, None)
        for kind, its in by_kind.items():
            self._item(kind)
            self._xs[kind] = np.repeat(self.x_of_iteration(np.asarray(its, dtype=np.float64)), 2)
        self._legend(bool(by_kind))
        self._stretch()

    def _legend(self, any_marker: bool) -> None:
        """One legend entry for every kind: an entry each (pause, resume, override, …) made the
        legend taller than a narrow plot (the read-out and the Events log name each marker)."""
        if any_marker and not self._in_legend:
            self.plot.legend.addItem(self._sample, "events")
        elif not any_marker and self._in_legend:
            self.plot.legend.removeItem(self._sample)
        self._in_legend = any_marker

    def near(self, x: float, tolerance: float) -> list[str]:
        """The kinds of the markers within `tolerance` of x (for the read-out)."""
        return [kind.replace("_", " ") for kind, xs in self._xs.items()
                if len(xs) and np.abs(xs - x).min() <= tolerance]

    def _item(self, kind: str) -> pg.PlotCurveItem:
        item = self.items.get(kind)
        if item is None:
            colour = MARKER_COLOURS.get(kind) or ALERT_COLOURS.get(kind, "#888")
            item = pg.PlotCurveItem(pen=pg.mkPen(colour, width=1, style=QtCore.Qt.PenStyle.DashLine),
                                    connect="pairs", skipFiniteCheck=True)
            item.setZValue(-10)     # behind the curves
            self.plot.vb.addItem(item, ignoreBounds=True)
            self.items[kind] = item
        return item

    def _stretch(self) -> None:
        y0, y1 = self.plot.vb.viewRange()[1]
        for kind, xs in self._xs.items():
            ys = np.empty(len(xs))
            ys[0::2], ys[1::2] = y0, y1
            self.items[kind].setData(xs, ys)
