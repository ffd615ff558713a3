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

from rla_engine.alerts import CLEARED, RAISED
from rla_engine.vocabulary import EventKind

from ..model.panel_spec import (AGREEMENT, ALERT_BEGAN, ALERT_ENDED, BALANCE, DIFFICULTY, HEALTH_TABS, LOSSES,
                                MARKER_KINDS, POLICY, TABS_WITH_DATA_ONLY, TIER_COLOURS, Panel, agreement_panel,
                                chart_title, run_config)
from ..model.run_data import RunData
from ..model.variants import ACCEPTED, REJECTED, VariantPoints
from ..session import RunSession
from ..widgets.key_picker import KeyPicker
from ..widgets.metric_plot import MetricCurve, MetricPlot
from ..widgets.readout import set_title
from ..widgets.view_controls import ViewControls

# The timer refreshes one plot per tick, round robin over the plots on screen (four panels, the
# health dock's tab in front, added charts): one tick's work is one plot, and with six on screen
# each redraws at most every REDRAW_MS × 6 = 120 ms.
REDRAW_MS = 20
# Variants arrive about once an iteration and the scatter items are rebuilt on each redraw: 20,000
# points churned ~2 MB per redraw through the allocator (the soak's console grew ~1 MB/min more
# than with 2,000). Every variant is kept; at most this many are drawn, evenly over the whole run,
# and the title says when the points are such a sample.
MAX_VARIANT_POINTS = 2_000
# the panels never shrink below this height (at the window's minimum size two of them had no
# plot area left): below it, the grid scrolls
PANEL_MIN_HEIGHT = 200
# A plot narrower than this stacks its legend down the whole plot and leaves the curves a sliver:
# the plots go two to a row where each gets this width, else one to a row (an 800 × 600 window).
TWO_TO_A_ROW_WIDTH = 280
# One to a row, a plot is narrow still and its legend takes more rows: it is given this height,
# the curves ~80 px under a legend of six entries, and the view scrolls to the next.
ONE_TO_A_ROW_MIN_HEIGHT = 260
# The Run view keeps this width (its view bar on two rows, a plot as wide as TWO_TO_A_ROW_WIDTH
# and more): a small window narrows its docks rather than its plots.
RUN_VIEW_MIN_WIDTH = 370


def _finite(x: object) -> TypeGuard[float]:
    """A number the plots can place (rows of old databases may hold null or text)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def alert_marks(events: list[dict]) -> list[tuple[int, str]]:
    """Where each alert began (the first iteration of the window it held over) and where it ended
    (a resumed run's repeated raise is no new beginning)."""
    out = []
    for e in events:
        p = e.get("payload")
        if e.get("kind") != EventKind.ALERT or not isinstance(p, dict):
            continue
        if p.get("state") == RAISED and not p.get("resumed") and _finite(p.get("since")):
            out.append((int(p["since"]), ALERT_BEGAN))
        elif p.get("state") == CLEARED and _finite(e.get("iteration")):
            out.append((int(e["iteration"]), ALERT_ENDED))
    return out


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
        self.variants = VariantPoints()
        self._drawn_variants: tuple | None = None
        self._caption = ""       # what the title says of the variants drawn (a sample, or all)

    def refresh(self) -> None:
        super().refresh()
        pixels = max(100, int(self.plotItem.vb.width()))
        for curve in self.band_curves:
            curve.draw(self.data, self.x_axis, 0.0, self._last_x, pixels)
        stamp = (len(self.variants), self.x_axis)
        if stamp != self._drawn_variants:     # scatter points change only with variant events
            self._drawn_variants = stamp
            self._draw_variants()

    def add_variants(self, events: list[dict]) -> None:
        self.variants.add(events)

    def _draw_variants(self) -> None:
        drawn = self.variants.sample(MAX_VARIANT_POINTS)
        for item, kind in ((self.accepted, ACCEPTED), (self.rejected, REJECTED)):
            x, y = drawn.points[kind]
            item.setData(self.data.x_of_iteration(x, self.x_axis) if len(x) else [], y if len(x) else [])
        caption = drawn.caption()
        if caption != self._caption:      # a new title re-lays the plot out: only when it changes
            self._caption = caption
            set_title(self.plotItem, DIFFICULTY.title, caption)

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
        self._caption = ""
        set_title(self.plotItem, DIFFICULTY.title)


# the training-health dock's tabs: (tab title, its panels side by side)


class HealthTabs(QtWidgets.QTabWidget):
    """The Training health dock: the losses, each role's PPO update (clip fraction, KL, entropy,
    gradient norm, share trained on), a language model's completions, and the engine's machine."""

    def __init__(self, data: RunData, parent=None):
        super().__init__(parent)
        self.data = data
        self.plots: dict[str, MetricPlot] = {}
        self.tab_keys: dict[str, set[str]] = {}      # the keys of each tab shown only with data
        for title, panels in HEALTH_TABS:
            page = QtWidgets.QWidget()
            row = QtWidgets.QHBoxLayout(page)
            row.setContentsMargins(0, 0, 0, 0)
            for panel in panels:
                plot = self.plots[panel.id] = MetricPlot(panel.title, panel.keys, data)
                row.addWidget(plot)
            self.addTab(page, title)
            if title in TABS_WITH_DATA_ONLY:
                self.tab_keys[title] = {k for p in panels for k in p.keys}
        self.show_tabs_with_data()

    def show_tabs_with_data(self) -> None:
        """A tab such as Sandbox is there only for a run that stored one of its keys (a coding
        run): on any other it would be empty plots."""
        for i in range(self.count()):
            keys = self.tab_keys.get(self.tabText(i))
            if keys is not None:
                shown = any(k in self.data for k in keys)
                if shown != self.isTabVisible(i):
                    self.setTabVisible(i, shown)


class DashboardPanel(QtWidgets.QWidget):
    """The open run's panels, and the charts a person added below them; the health tabs (the
    losses first) are handed to the window for a dock of their own."""

    charts_changed = QtCore.Signal()

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
        self.health = HealthTabs(data)
        self.losses = self.health.plots[LOSSES.id]
        self.plots: list[MetricPlot] = [self.policy, self.agreement, self.balance, self.difficulty,
                                        *self.health.plots.values()]
        self._tiers: set[str] = set()

        self.view = ViewControls()
        self.view.changed.connect(self._apply_view)
        self.add_button = QtWidgets.QPushButton("Add chart…")
        self.add_button.setToolTip("A chart of any stored metric key, or of several in one chart")
        self.add_button.clicked.connect(self.ask_add_chart)
        self.view.bar.addWidget(self.add_button)
        self.fixed = [self.policy, self.agreement, self.balance, self.difficulty]
        self.added: list[MetricPlot] = []
        self.grid = QtWidgets.QGridLayout()
        self._columns = 2
        charts = QtWidgets.QWidget()
        charts.setLayout(self.grid)
        # added charts make the grid taller than the window: it scrolls rather than squeeze them
        self.chart_area = scroll = QtWidgets.QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        scroll.setWidget(charts)
        self._row_height = PANEL_MIN_HEIGHT
        self._place_charts()
        self.setMinimumWidth(RUN_VIEW_MIN_WIDTH)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.view)
        layout.addWidget(scroll, 1)
        self.timer = QtCore.QTimer(self)
        self.timer.setInterval(REDRAW_MS)
        self._next = 0
        self.timer.timeout.connect(self.tick)
        self.timer.start()
        self._apply_view()
        self.agreement_shown: Panel = AGREEMENT
        self._config_of: str | None = None      # the run whose configuration chose the agreement panel
        session.cleared.connect(self.reset)
        session.events_added.connect(self.add_events)
        session.metrics_added.connect(lambda _: self.health.show_tabs_with_data())
        session.run_changed.connect(self.follow_config)

    def follow_config(self, run: dict) -> None:
        """The agreement panel of the run's reward model (panel_spec.agreement_panel): a test
        generator's figures for judge.kind = tests, the step judge's otherwise."""
        if run.get("id") == self._config_of:
            return      # read as often as the engine commits: the configuration never changes
        self._config_of = run.get("id")
        self._show_agreement(agreement_panel([run_config(run)]))

    def _show_agreement(self, panel) -> None:
        if panel is not self.agreement_shown:
            self.agreement_shown = panel
            self.agreement.set_keys(panel.title, panel.keys, panel.dashed)

    # -- added charts -------------------------------------------------------------------------
    def _place_charts(self) -> None:
        """The four panels, then the added charts, two to a row (one in a narrow view) in the order given."""
        plots = [*self.fixed, *self.added]
        for plot in plots:
            self.grid.removeWidget(plot)
        for i, plot in enumerate(plots):
            self.grid.addWidget(plot, i // self._columns, i % self._columns)
            plot.setMinimumHeight(self._row_height)
            # widths from the columns' stretch alone (a plot's size hint follows its legend)
            plot.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Expanding)
        rows = -(-len(plots) // self._columns)
        for row in range(self.grid.rowCount()):     # rows left empty by a removed chart take no room
            self.grid.setRowStretch(row, 1 if row < rows else 0)
        for column in (0, 1):       # equal halves, whatever each chart's legend would like
            self.grid.setColumnStretch(column, 1 if column < self._columns else 0)

    def _fitting_columns(self) -> int:
        """Two plots to a row where each gets TWO_TO_A_ROW_WIDTH beside a scroll bar, else one."""
        margins = self.grid.contentsMargins()
        room = (self.chart_area.width() - self.chart_area.verticalScrollBar().sizeHint().width()
                - margins.left() - margins.right() - self.grid.horizontalSpacing())
        return 2 if room >= 2 * TWO_TO_A_ROW_WIDTH else 1

    def resizeEvent(self, event) -> None:
        """The four panels fill the view as they did before any chart was added (added charts are
        as tall and come below, reached by scrolling); never shorter than PANEL_MIN_HEIGHT. In a
        view too narrow for two to a row they go one to a row, taller (ONE_TO_A_ROW_MIN_HEIGHT)."""
        super().resizeEvent(event)
        columns = self._fitting_columns()
        margins = self.grid.contentsMargins()
        room = self.chart_area.height() - margins.top() - margins.bottom() - self.grid.verticalSpacing()
        # two rows exactly: no scroll bar until a chart is added
        height = max(PANEL_MIN_HEIGHT if columns == 2 else ONE_TO_A_ROW_MIN_HEIGHT, room // 2)
        if columns != self._columns:
            self._columns, self._row_height = columns, height
            self._place_charts()
        elif height != self._row_height:
            self._row_height = height
            for plot in [*self.fixed, *self.added]:
                plot.setMinimumHeight(height)

    def ask_add_chart(self) -> None:
        picker = KeyPicker(self.data.columns, self)
        picker.accepted.connect(lambda: picker.chosen() and self.add_chart(picker.chosen()))
        picker.finished.connect(picker.deleteLater)
        picker.open()
        self.picker = picker      # tests answer it

    def add_chart(self, keys: list[str]) -> MetricPlot:
        plot = MetricPlot(chart_title(keys), tuple(keys), self.data)
        menu = plot.plotItem.vb.menu
        menu.addSeparator()
        for text, slot in (("Move chart earlier", lambda: self.move_chart(plot, -1)),
                           ("Move chart later", lambda: self.move_chart(plot, 1)),
                           ("Remove chart", lambda: self.remove_chart(plot))):
            menu.addAction(text).triggered.connect(slot)
        self.added.append(plot)
        self.plots.append(plot)
        plot.set_view(self.view.x_axis(), self.view.smoothing_weight(), log_y=False)
        self._place_charts()
        plot.refresh()
        self.charts_changed.emit()
        return plot

    def remove_chart(self, plot: MetricPlot) -> None:
        self.added.remove(plot)
        self.plots.remove(plot)
        self._next = 0
        self.grid.removeWidget(plot)
        plot.setParent(None)
        plot.deleteLater()
        self._place_charts()
        self.charts_changed.emit()

    def move_chart(self, plot: MetricPlot, step: int) -> None:
        i = self.added.index(plot)
        j = min(max(i + step, 0), len(self.added) - 1)
        self.added.insert(j, self.added.pop(i))
        self._place_charts()
        self.charts_changed.emit()

    def chart_keys(self) -> list[list[str]]:
        """The added charts' keys, in order (what the console remembers per database)."""
        return [list(plot.curves) for plot in self.added]

    def set_charts(self, charts: list[list[str]]) -> None:
        """Replace the added charts (another database's layout)."""
        with QtCore.QSignalBlocker(self):
            for plot in list(self.added):
                self.remove_chart(plot)
            for keys in charts:
                self.add_chart(keys)

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
            legend.removeItem(curve.line)
            if not self._tiers:
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
            # a plot on a tab not in front waits: it is drawn on the first tick after it shows
            if plot.needs_refresh() and plot.isVisibleTo(plot.window()):
                plot.refresh()
                return

    def refresh(self) -> None:
        """Refresh every plot now (tests, benchmarks, a reopened run)."""
        self._add_tier_curves()
        self.health.show_tabs_with_data()
        for plot in self.plots:
            plot.refresh()

    def add_events(self, events: list[dict]) -> None:
        marks = [(e["iteration"], e["kind"]) for e in events
                 if e.get("kind") in MARKER_KINDS and _finite(e.get("iteration"))]
        marks += alert_marks(events)
        if marks:
            for plot in self.plots:
                plot.add_markers(marks)
        self.difficulty.add_variants(events)

    def reset(self) -> None:
        for plot in self.plots:
            plot.reset()
        self.health.show_tabs_with_data()
        self._config_of = None
        self._show_agreement(agreement_panel([]))     # no run open: the step judge's panel, as at start
        for key in self._tiers:
            curve = self.policy.curves.pop(key)
            self.policy.plotItem.removeItem(curve.raw)
            self.policy.plotItem.removeItem(curve.line)
            self.policy.plotItem.legend.removeItem(curve.line)
        self._tiers.clear()
