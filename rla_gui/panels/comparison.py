"""Compare runs, or groups of runs: the dashboard's panels with one curve per run or group (a colour
each, model.comparison.colour_of) under the dashboard's view bar (x-axis, smoothing, log y, Add
chart), a summary of final and best values (a group's mean ± sample std of them), a side-by-side
config table with the differing fields highlighted, and for groups their runs. It opens as a tab
beside the live dashboard and follows its runs while one of them is live.

One view for both: a comparison of runs is a comparison of groups of one run each
(model.comparison.Comparison). A group of one is drawn as its run's curve (smoothed, thinned to the
pixels as the dashboard's); a group of several as the mean of its runs' curves with a ± one
standard deviation band (the ablation figures' look). Every chart has the hover read-out of exact
values and the right-click saves (widgets.chart_export)."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from rla_engine.text import printable

from ..guard import guarded
from ..model.comparison import Comparison, Groups, Runs, colour_of
from ..model.mean_curve import grid_of, mean_curve
from ..model.panel_spec import AGREEMENT, LOSSES, PANELS, Panel, agreement_panel, chart_title, run_config, short
from ..model.run_data import X_AXES, ema, hidden_on_log, log_y_note
from ..widgets.chart_export import Shown, add_chart_export
from ..widgets.key_picker import KeyPicker
from ..widgets.mean_band import MeanBandCurve
from ..widgets.metric_plot import MetricCurve
from ..widgets.plain_text import auto_text, plain_label
from ..widgets.readout import HoverReadout, add_legend, set_title
from ..widgets.view_controls import ViewControls
from .dashboard import ONE_TO_A_ROW_MIN_HEIGHT, TWO_TO_A_ROW_WIDTH

READOUT_NAME_CHARS = 24     # a run's name in a read-out: long ones made it wider than the plot
# tall enough that a read-out of six runs and a legend of two rows leave the curves room; when the
# window is smaller the panels scroll rather than squeeze the plots to a strip
PLOT_MIN_HEIGHT = 260
GROUP_X_AXIS = X_AXES[1]    # a group comparison opens on environment steps: what a budgeted ablation's runs share
MIN_COLUMN_PX = 120         # a table's column is cut to its share of the width, never below this
MAX_KEY_PX = 320            # a table's row names (configuration keys) are cut beyond this
BAND_NOTE = "each group: the mean of its runs, the band ± one sample standard deviation (n − 1)"
BAND_LABEL = "groups: mean, band ± 1 sample std"     # the view bar's short form of it


def elide(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


class GroupCurve(MeanBandCurve):
    """A group of several runs in a plot: the mean of their curves, each smoothed as a run's curve
    is, with the ± std band of them; while smoothing, the unsmoothed mean faint behind (as a run's
    raw values are)."""

    def __init__(self, plot: pg.PlotItem, key: str, colour: str, label: str):
        faint = pg.mkColor(colour)
        faint.setAlpha(60)
        self.raw = plot.plot(pen=pg.mkPen(faint, width=1))
        super().__init__(plot, colour, label)
        self.key = key
        self.drawn: tuple | None = None

    def draw_runs(self, runs: Runs, x_axis: str, smoothing: float) -> None:
        stamp = (tuple(data.version for _, data in runs), x_axis, smoothing)
        if stamp == self.drawn:
            return
        self.drawn = stamp
        series = [data.xy(self.key, x_axis) for _, data in runs]
        if smoothing > 0:
            x, mean, _ = mean_curve(series, grid_of(series))
            self.raw.setData(x, mean)
            self.raw.show()
            series = [(x, ema(y, smoothing)) for x, y in series]
        else:
            self.raw.hide()
        self.draw(series)

    def nearest(self, x: float) -> tuple[float, float, float] | None:
        """(x, mean, std) of the drawn mean nearest `x`."""
        if len(self.x) == 0:
            return None
        i = int(np.clip(np.searchsorted(self.x, x), 0, len(self.x) - 1))
        if i > 0 and abs(self.x[i - 1] - x) < abs(self.x[i] - x):
            i -= 1
        return float(self.x[i]), float(self.mean[i]), float(self.std[i])

    def remove(self) -> None:
        super().remove()
        self.plot.removeItem(self.raw)


@dataclass
class MemberSeries:
    """One run of a drawn group, as a chart's CSV reads it (chart_export.DrawnCurve): its smoothed
    values are computed when the CSV is written, as the group's curve computed them."""
    key: str
    smooth: bool = True
    weight: float | None = None
    done: int = 0
    smoothed: np.ndarray = field(default_factory=lambda: np.empty(0))


class OverComparison:
    """A view over one Comparison: its runs (every group's; what the window follows while one is
    live) and its groups."""
    comparison: Comparison

    @property
    def runs(self) -> Runs:
        return self.comparison.runs

    @property
    def groups(self) -> Groups:
        return self.comparison.groups


class ComparePlot(OverComparison, pg.PlotWidget):
    """One key of a panel (chosen in `key_box`), one curve per group of the comparison: a run's
    curve drawn as the dashboard draws it, a group of several as its mean and band."""

    def __init__(self, panel: Panel, parent=None):
        super().__init__(parent=parent)
        self.panel = panel
        set_title(self.plotItem, panel.title)
        self.plotItem.showGrid(x=False, y=False)
        self.setMinimumHeight(PLOT_MIN_HEIGHT)
        add_legend(self.plotItem)
        self.key_box = QtWidgets.QComboBox()
        self.key_box.addItems(panel.keys + (panel.band or ()))
        self.key_box.currentTextChanged.connect(lambda _: self._build())
        self.comparison = Comparison([], by_group=False)
        self.curves: list[MetricCurve | GroupCurve] = []
        self.x_axis, self.smoothing, self.log_y = X_AXES[0], 0.0, False
        self._shown_title = (panel.title, "")
        self.readout = HoverReadout(self, self._describe)
        add_chart_export(self, self._shown)

    def set_panel(self, panel: Panel) -> None:
        """Offer another panel's keys (the agreement panel of runs whose reward model writes tests)."""
        if panel is self.panel:
            return
        self.panel = panel
        self._shown_title = (panel.title, "")
        set_title(self.plotItem, panel.title)
        with QtCore.QSignalBlocker(self.key_box):
            self.key_box.clear()
            self.key_box.addItems(panel.keys + (panel.band or ()))
        self._build()

    def set_runs(self, runs: Runs) -> None:
        self.set_comparison(Comparison.of_runs(runs))

    def set_groups(self, groups: Groups) -> None:
        self.set_comparison(Comparison(groups))

    def set_comparison(self, comparison: Comparison) -> None:
        self.comparison = comparison
        self._build()

    def set_view(self, x_axis: str, smoothing: float, log_y: bool) -> None:
        self.x_axis, self.smoothing, self.log_y = x_axis, smoothing, log_y
        self.plotItem.setLogMode(y=log_y)
        self.plotItem.setLabel("bottom", x_axis)
        self.redraw()

    def _build(self) -> None:
        self.readout.hide()     # it described the curves being replaced
        for c in self.curves:
            if isinstance(c, GroupCurve):
                c.remove()
            else:
                self.plotItem.removeItem(c.raw)
                self.plotItem.removeItem(c.line)
        self.plotItem.legend.clear()
        key = self.key_box.currentText()
        self.curves = [self._curve(i, key, runs) for i, (_, runs) in enumerate(self.groups)]
        self.redraw()

    def _curve(self, i: int, key: str, runs: Runs) -> MetricCurve | GroupCurve:
        # the colour is the group's position in the comparison: the same in every panel and table
        colour, label = colour_of(i), self.comparison.legend(i)
        if len(runs) == 1:
            return MetricCurve(self.plotItem, key, colour, dashed=key in self.panel.dashed, label=label)
        return GroupCurve(self.plotItem, key, colour, label)

    def redraw(self) -> None:
        pixels = max(100, int(self.plotItem.vb.width()))
        for curve, (_, runs) in zip(self.curves, self.groups):
            if isinstance(curve, GroupCurve):
                curve.draw_runs(runs, self.x_axis, self.smoothing)
            else:
                curve.draw(runs[0][1], self.x_axis, self.smoothing, None, pixels)
        self._show_hidden_points()

    def _show_hidden_points(self) -> None:
        """On log y the title says how many points it cannot draw (≤ 0), as the dashboard's charts
        do: a run's values, a group's drawn mean."""
        note = ""
        if self.log_y:
            ys = [curve.mean if isinstance(curve, GroupCurve) else runs[0][1].xy(curve.key)[1]
                  for curve, (_, runs) in zip(self.curves, self.groups)]
            note = log_y_note(sum(hidden_on_log(y) for y in ys), sum(len(y) for y in ys))
        if (self.panel.title, note) != self._shown_title:     # a new title re-lays the plot out: only on a change
            self._shown_title = (self.panel.title, note)
            set_title(self.plotItem, self.panel.title, note)

    def leaveEvent(self, ev) -> None:
        super().leaveEvent(ev)
        self.readout.hide()      # no move comes once the mouse is off the widget

    def _describe(self, x: float) -> str | None:
        lines = []
        for curve, (label, runs) in zip(self.curves, self.groups):
            name = elide(printable(label), READOUT_NAME_CHARS)
            if isinstance(curve, GroupCurve):
                hit = curve.nearest(x)
                if hit is not None:
                    lines.append(f"{name}: {hit[1]:.4g} ± {hit[2]:.4g} at {hit[0]:.6g}")
            else:
                point = curve.nearest(runs[0][1], self.x_axis, x)
                if point is not None:
                    lines.append(f"{name}: {point[1]:.4g} at {point[0]:.6g}")
        return f"{short(self.key_box.currentText())}\n" + "\n".join(lines) if lines else None

    def _shown(self) -> Iterator[Shown]:
        """What the CSV writes: each run's points, a group's runs each under its group's name."""
        for i, (curve, (_, runs)) in enumerate(zip(self.curves, self.groups)):
            for run, data in runs:
                drawn = curve if isinstance(curve, MetricCurve) else MemberSeries(curve.key)
                yield self.comparison.series(i, run), drawn, data


class FittedTable(QtWidgets.QTableWidget):
    """A table of one column per run or group whose columns fit its width: each as wide as its
    contents up to an equal share of the width (a longer value is elided, its full text in the
    cell's tooltip), so a long value in one run's column never pushes another's off screen."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWordWrap(False)
        self.verticalHeader().setMaximumWidth(MAX_KEY_PX)
        self._share = 0

    def fit_columns(self) -> None:
        self._share = max(MIN_COLUMN_PX, self.viewport().width() // max(1, self.columnCount()))
        self.resizeColumnsToContents()
        header = self.horizontalHeader()
        for column in range(self.columnCount()):
            if header.sectionSize(column) > self._share:
                header.resizeSection(column, self._share)

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        if max(MIN_COLUMN_PX, self.viewport().width() // max(1, self.columnCount())) != self._share:
            self.fit_columns()


class ChartsArea(QtWidgets.QScrollArea):
    """The charts' scroll area, saying when its size changed: how many charts fit in a row
    depends on its width, which the view's own resize does not yet know."""
    resized = QtCore.Signal()

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        self.resized.emit()


class ComparisonView(OverComparison, QtWidgets.QWidget):
    """The comparison of a model.comparison.Comparison: runs (`ComparisonPanel`) or groups
    (`GroupComparisonPanel`); each remembers its view bar under its own settings group."""

    def __init__(self, comparison: Comparison, state_group: str, parent=None):
        super().__init__(parent)
        self.state_group = state_group
        self.view = ViewControls()
        if comparison.by_group:
            self.view.x_axis_box.setCurrentText(GROUP_X_AXIS)
            band = plain_label(BAND_LABEL)
            band.setToolTip(BAND_NOTE)
            self.view.bar.insertWidget(self.view.bar.count() - 1, band)
        self.view.changed.connect(self._apply_view)
        self.plots = [ComparePlot(p) for p in PANELS]
        self.grid = grid = QtWidgets.QGridLayout()
        self._columns = 2
        for plot in self.plots:
            grid.addWidget(self._with_key_box(plot), 0, 0)      # the grid owns it; _place_charts places it
        self.added: list[ComparePlot] = []
        self._place_charts()
        self.add_button = QtWidgets.QPushButton("Add chart…")
        self.add_button.setToolTip("A chart of any metric key the runs stored, one curve per "
                                   + ("group" if comparison.by_group else "run"))
        self.add_button.clicked.connect(self.ask_add_chart)
        self.view.bar.addWidget(self.add_button)
        inner = QtWidgets.QWidget()
        inner.setLayout(grid)
        self.charts = charts = ChartsArea()
        charts.resized.connect(self._fit_columns)
        charts.setWidgetResizable(True)
        charts.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        charts.setWidget(inner)
        self.config_table = FittedTable()
        self.only_diff = QtWidgets.QCheckBox("only the fields that differ")
        self.only_diff.setChecked(True)
        self.only_diff.toggled.connect(lambda _: self._fill_config())
        cfg = QtWidgets.QWidget()
        lay = QtWidgets.QVBoxLayout(cfg)
        lay.addWidget(self.only_diff)
        lay.addWidget(self.config_table, 1)
        self.summary_table = FittedTable()
        self.spread_note = plain_label(comparison.spread_note())     # what ± means, above the figures
        self.spread_note.setVisible(bool(comparison.spread_note()))
        summary = QtWidgets.QWidget()
        lay = QtWidgets.QVBoxLayout(summary)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.spread_note)
        lay.addWidget(self.summary_table, 1)
        self.members = QtWidgets.QTreeWidget()
        self.members.setHeaderLabels(["group / run", "id", "status"])
        self.tabs = QtWidgets.QTabWidget()
        self.tabs.addTab(charts, "Panels")
        self.tabs.addTab(summary, "Summary")
        self.tabs.addTab(cfg, "Configuration")
        if comparison.by_group:
            self.tabs.addTab(self.members, "Runs")
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.view)
        layout.addWidget(self.tabs, 1)
        self.comparison = comparison
        self.differing: list[str] = []
        self.set_comparison(comparison)
        self._apply_view()

    # -- what it compares -------------------------------------------------------------------------
    @property
    def x_axis_box(self) -> QtWidgets.QComboBox:
        return self.view.x_axis_box

    def run_ids(self) -> list[str]:
        return self.comparison.run_ids()

    def title(self) -> str:
        return self.comparison.title()

    def is_live(self) -> bool:
        return self.comparison.is_live()

    def set_comparison(self, comparison: Comparison) -> None:
        self.comparison = comparison
        self.setWindowTitle(comparison.full_title())
        agreement = agreement_panel(run_config(run) for run, _ in comparison.runs)
        for plot in self.plots:
            if plot.panel.id == AGREEMENT.id:       # the step judge's, the test generator's, or both
                plot.set_panel(agreement)
            plot.set_comparison(comparison)
        self.differing = comparison.differing()
        self._fill_config()
        self._fill_summary()
        self._fill_members()

    def runs_grew(self) -> None:
        """The live runs' data grew in place (ConsoleController.follow_comparison): redraw and re-sum."""
        for plot in self.plots:
            plot.redraw()
        self._fill_summary()
        self._fill_members()

    # -- charts -----------------------------------------------------------------------------------
    @staticmethod
    def _with_key_box(plot: ComparePlot) -> QtWidgets.QWidget:
        box = QtWidgets.QWidget()
        lay = QtWidgets.QVBoxLayout(box)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(plot.key_box)
        lay.addWidget(plot, 1)
        return box

    def ask_add_chart(self) -> None:
        picker = KeyPicker(self.comparison.stored_keys(), self)
        picker.accepted.connect(lambda: picker.chosen() and self.add_chart(picker.chosen()))
        picker.finished.connect(picker.deleteLater)
        picker.open()
        self.picker = picker      # tests answer it

    def add_chart(self, keys: list[str]) -> ComparePlot:
        """A chart below the panels: one key at a time (its box chooses among `keys`), one curve per run or group."""
        plot = ComparePlot(Panel(f"added-{len(self.added)}", chart_title(keys), tuple(keys)))
        plot.plotItem.vb.menu.addSeparator()
        plot.plotItem.vb.menu.addAction("Remove chart").triggered.connect(lambda: self.remove_chart(plot))
        self.added.append(plot)
        self.plots.append(plot)
        self.grid.addWidget(self._with_key_box(plot), 0, 0)
        self._place_charts()
        plot.set_comparison(self.comparison)
        self._apply_view()
        return plot

    def remove_chart(self, plot: ComparePlot) -> None:
        self.added.remove(plot)
        self.plots.remove(plot)
        box = plot.parentWidget()
        self.grid.removeWidget(box)
        box.deleteLater()
        self._place_charts()

    def _place_charts(self) -> None:
        """The dashboard's 2 × 2 of the four panels, the losses (a dock there) a strip across below
        them, added charts two to a row under it; in a view too narrow for two to a row (an
        800 × 600 window) every chart one to a row, ONE_TO_A_ROW_MIN_HEIGHT tall, and the view scrolls."""
        boxes = [plot.parentWidget() for plot in self.plots]
        for box in boxes:
            self.grid.removeWidget(box)
        two = self._columns == 2
        cells = ([(i // 2, i % 2, 2 if plot.panel is LOSSES else 1) for i, plot in enumerate(self.plots[:len(PANELS)])]
                 + [(3 + j // 2, j % 2, 1) for j in range(len(self.added))]) if two else \
            [(i, 0, 1) for i in range(len(self.plots))]
        for box, (row, column, span) in zip(boxes, cells):
            self.grid.addWidget(box, row, column, 1, span)
            box.setMinimumHeight(0 if two else ONE_TO_A_ROW_MIN_HEIGHT)
        rows = max(row for row, _, _ in cells) + 1
        for row in range(max(rows, self.grid.rowCount())):
            self.grid.setRowStretch(row, 0 if row >= rows else 2 if two and row == 2 else 3)
        for column in (0, 1):
            self.grid.setColumnStretch(column, 1 if column < self._columns else 0)

    @guarded()
    def _fit_columns(self) -> None:
        room = self.charts.viewport().width() - self.grid.horizontalSpacing()
        columns = 2 if room >= 2 * TWO_TO_A_ROW_WIDTH else 1
        if columns != self._columns:
            self._columns = columns
            self._place_charts()

    def _apply_view(self) -> None:
        v = self.view
        for plot in self.plots:
            plot.set_view(v.x_axis(), v.smoothing_weight(), log_y=v.log_y.isChecked() and plot.panel is LOSSES)

    def save_state(self, settings: QtCore.QSettings) -> None:
        self.view.save_state(settings, self.state_group)

    def restore_state(self, settings: QtCore.QSettings) -> None:
        self.view.restore_state(settings, self.state_group)

    # -- tables -----------------------------------------------------------------------------------
    def _headers(self, table: QtWidgets.QTableWidget, rows: list[str]) -> None:
        table.clear()
        table.setColumnCount(len(self.groups))
        table.setRowCount(len(rows))
        table.setHorizontalHeaderLabels(self.comparison.headers())
        table.setVerticalHeaderLabels([printable(r) for r in rows])
        for i in range(len(self.groups)):
            item = table.horizontalHeaderItem(i)
            if item is not None:
                item.setForeground(QtGui.QBrush(QtGui.QColor(colour_of(i))))

    def _fill_config(self) -> None:
        keys, cells = self.comparison.config_rows(self.only_diff.isChecked())
        table = self.config_table
        self._headers(table, keys)
        highlight = QtGui.QBrush(QtGui.QColor(255, 220, 120, 120))
        for row, (key, values) in enumerate(zip(keys, cells)):
            header = table.verticalHeaderItem(row)
            if header is not None:
                header.setToolTip(auto_text(key))      # cut where it is long
            for col, text in enumerate(values):
                item = QtWidgets.QTableWidgetItem(printable(text))
                item.setToolTip(auto_text(text))       # the whole value, where the column cuts it
                if key in self.differing:
                    item.setBackground(highlight)
                table.setItem(row, col, item)
        table.fit_columns()

    @guarded()
    def _fill_summary(self) -> None:
        rows, cells = self.comparison.summary()
        table = self.summary_table
        self._headers(table, [f.label for f in rows])
        note = self.comparison.spread_note()
        for col in range(table.columnCount()):
            header = table.horizontalHeaderItem(col)
            if header is not None and note:
                header.setToolTip(auto_text(note))
        for row, (figure, values) in enumerate(zip(rows, cells)):
            header = table.verticalHeaderItem(row)
            if header is not None:
                header.setToolTip(auto_text(figure.definition))     # what "final" means
            for col, cell in enumerate(values):
                item = QtWidgets.QTableWidgetItem(cell.text)
                item.setToolTip(auto_text(cell.problem))      # why a figure is "?"
                item.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
                table.setItem(row, col, item)
        table.fit_columns()

    def _fill_members(self) -> None:
        self.members.clear()
        for i, (label, runs) in enumerate(self.groups):
            top = QtWidgets.QTreeWidgetItem([printable(f"{label} ({len(runs)})")])
            top.setForeground(0, QtGui.QBrush(QtGui.QColor(colour_of(i))))
            for run, _ in runs:
                top.addChild(QtWidgets.QTreeWidgetItem([printable(run.get("name")), printable(run.get("id")),
                                                        printable(run.get("status"))]))
            self.members.addTopLevelItem(top)
        self.members.expandAll()
        self.members.resizeColumnToContents(0)


class ComparisonPanel(ComparisonView):
    """Runs side by side, a curve and a column each."""

    def __init__(self, runs: Runs, parent=None):
        super().__init__(Comparison.of_runs(runs), "compare", parent)

    def set_runs(self, runs: Runs) -> None:
        self.set_comparison(Comparison.of_runs(runs))


class GroupComparisonPanel(ComparisonView):
    """Groups of runs (History grouped by `column`, groups selected, Compare): a mean curve with
    its band and a column of mean ± std each."""

    def __init__(self, column: str, groups: Groups, parent=None):
        super().__init__(Comparison(groups), "group_compare", parent)
        self.column = column

    def set_groups(self, groups: Groups) -> None:
        self.set_comparison(Comparison(groups))
