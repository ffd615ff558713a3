"""Compare groups of runs (History grouped by a column, groups selected, Compare): the dashboard's
panels with one mean curve per group and its ± one standard deviation band (the ablation
figures' look), a colour per group in the comparison's palette; a summary of each group's mean ±
std of the headline values; the runs of each group. It opens as a tab beside the comparisons and,
like them, follows its runs while one is live."""
from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from rla_engine.text import counted, printable
from rla_engine.vocabulary import LIVE

from ..guard import guarded
from ..model.panel_spec import LOSSES, PALETTE, PANELS, Panel
from ..model.run_data import X_AXES, RunData
from ..widgets.mean_band import MeanBandCurve
from ..widgets.readout import add_legend, set_title
from .comparison import PLOT_MIN_HEIGHT, summarise
from ..model.run_columns import mean_std, mean_std_text

Runs = list[tuple[dict, RunData]]
MAX_TITLE_GROUPS = 2
DEFAULT_X_AXIS = X_AXES[1]      # environment steps: what a budgeted ablation's runs share


def group_colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


class GroupPlot(pg.PlotWidget):
    """One key of a panel (chosen in `key_box`), one mean curve with its band per group."""

    def __init__(self, panel: Panel, parent=None):
        super().__init__(parent=parent)
        self.panel = panel
        set_title(self.plotItem, panel.title)
        self.setMinimumHeight(PLOT_MIN_HEIGHT)
        add_legend(self.plotItem)
        self.key_box = QtWidgets.QComboBox()
        self.key_box.addItems(panel.keys + (panel.band or ()))
        self.key_box.currentTextChanged.connect(lambda _: self._build())
        self.groups: list[tuple[str, Runs]] = []
        self.curves: list[MeanBandCurve] = []
        self.x_axis = DEFAULT_X_AXIS

    def set_groups(self, groups: list[tuple[str, Runs]]) -> None:
        self.groups = groups
        self._build()

    def set_x_axis(self, x_axis: str) -> None:
        self.x_axis = x_axis
        self.plotItem.setLabel("bottom", x_axis)
        self.redraw()

    def _build(self) -> None:
        for curve in self.curves:
            curve.remove()
        self.plotItem.legend.clear()
        self.curves = [MeanBandCurve(self.plotItem, group_colour(i), legend_label(label, runs))
                       for i, (label, runs) in enumerate(self.groups)]
        self.redraw()

    def redraw(self) -> None:
        key = self.key_box.currentText()
        for curve, (_, runs) in zip(self.curves, self.groups):
            curve.draw([data.xy(key, self.x_axis) for _, data in runs])


def legend_label(label: str, runs: Runs) -> str:
    """A group's legend entry (the legend escapes it: shown verbatim)."""
    return printable(f"{label} ({counted(len(runs), 'run')})")


class GroupComparisonPanel(QtWidgets.QWidget):
    def __init__(self, column: str, groups: list[tuple[str, Runs]], parent=None):
        super().__init__(parent)
        self.column, self.groups = column, groups
        self.x_axis_box = QtWidgets.QComboBox()
        self.x_axis_box.addItems(X_AXES)
        self.x_axis_box.setCurrentText(DEFAULT_X_AXIS)
        self.x_axis_box.currentTextChanged.connect(self._apply_view)
        bar = QtWidgets.QHBoxLayout()
        bar.addWidget(QtWidgets.QLabel("x-axis"))
        bar.addWidget(self.x_axis_box)
        bar.addSpacing(16)
        bar.addWidget(QtWidgets.QLabel("each group: the mean of its runs, the band ± one standard deviation"))
        bar.addStretch(1)
        self.plots = [GroupPlot(p) for p in PANELS]
        grid = QtWidgets.QGridLayout()
        for i, plot in enumerate(self.plots):
            box = QtWidgets.QVBoxLayout()
            box.addWidget(plot.key_box)
            box.addWidget(plot, 1)
            grid.addLayout(box, i // 2, i % 2, 1, 2 if plot.panel is LOSSES else 1)
        inner = QtWidgets.QWidget()
        inner.setLayout(grid)
        charts = QtWidgets.QScrollArea()
        charts.setWidgetResizable(True)
        charts.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        charts.setWidget(inner)
        self.summary_table = QtWidgets.QTableWidget()
        self.members = QtWidgets.QTreeWidget()
        self.members.setHeaderLabels(["group / run", "id", "status"])
        self.tabs = QtWidgets.QTabWidget()
        self.tabs.addTab(charts, "Panels")
        self.tabs.addTab(self.summary_table, "Summary")
        self.tabs.addTab(self.members, "Runs")
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(bar)
        layout.addWidget(self.tabs, 1)
        self.setWindowTitle("Groups: " + ", ".join(printable(label) for label, _ in groups))
        for plot in self.plots:
            plot.set_groups(groups)
        self._fill_summary()
        self._fill_members()
        self._apply_view()

    def title(self) -> str:
        labels = [printable(label) for label, _ in self.groups]
        more = f" +{len(labels) - MAX_TITLE_GROUPS}" if len(labels) > MAX_TITLE_GROUPS else ""
        return "Groups: " + ", ".join(labels[:MAX_TITLE_GROUPS]) + more

    def run_ids(self) -> list[str]:
        return [run["id"] for run, _ in self.runs]

    @property
    def runs(self) -> Runs:
        """Every group's runs: what the window follows while one of them is live."""
        return [run for _, runs in self.groups for run in runs]

    def is_live(self) -> bool:
        return any(r.get("status") in LIVE for r, _ in self.runs)

    def runs_grew(self) -> None:
        """Live runs' data grew in place (ConsoleController.follow_comparison): means, bands and sums again."""
        for plot in self.plots:
            plot.redraw()
        self._fill_summary()
        self.members.clear()
        self._fill_members()

    def _apply_view(self) -> None:
        for plot in self.plots:
            plot.set_x_axis(self.x_axis_box.currentText())

    def save_state(self, settings: QtCore.QSettings) -> None:
        settings.setValue("group_compare/x_axis", self.x_axis_box.currentText())

    def restore_state(self, settings: QtCore.QSettings) -> None:
        x_axis = str(settings.value("group_compare/x_axis", DEFAULT_X_AXIS))
        if self.x_axis_box.findText(x_axis) >= 0:
            self.x_axis_box.setCurrentText(x_axis)

    @guarded()
    def _fill_summary(self) -> None:
        """Per group: its number of runs, then the mean ± std of each of the comparison's summary values."""
        sums = [[summarise(data, run) for run, data in runs] for _, runs in self.groups]
        keys = list(dict.fromkeys(k for group in sums for s in group for k in s))
        table = self.summary_table
        table.setColumnCount(len(self.groups))
        table.setRowCount(len(keys) + 1)
        table.setHorizontalHeaderLabels([printable(label) for label, _ in self.groups])
        table.setVerticalHeaderLabels(["runs", *keys])
        for col, group in enumerate(sums):
            header = table.horizontalHeaderItem(col)
            if header is not None:
                header.setForeground(QtGui.QBrush(QtGui.QColor(group_colour(col))))
            spreads = [mean_std(s.get(k) for s in group) for k in keys]
            cells = [(str(len(group)), ""), *((mean_std_text(s), s.problem) for s in spreads)]
            for row, (text, problem) in enumerate(cells):
                item = QtWidgets.QTableWidgetItem(text)
                item.setToolTip(problem)      # why a figure is "?" (plain words, no markup)
                item.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
                table.setItem(row, col, item)
        table.resizeColumnsToContents()

    def _fill_members(self) -> None:
        for i, (label, runs) in enumerate(self.groups):
            top = QtWidgets.QTreeWidgetItem([printable(f"{label} ({len(runs)})")])
            top.setForeground(0, QtGui.QBrush(QtGui.QColor(group_colour(i))))
            for run, _ in runs:
                top.addChild(QtWidgets.QTreeWidgetItem([printable(run["name"]), printable(run["id"]),
                                                        printable(run.get("status"))]))
            self.members.addTopLevelItem(top)
        self.members.expandAll()
        self.members.resizeColumnToContents(0)
