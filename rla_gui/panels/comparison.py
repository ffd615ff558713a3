"""Compare runs: the dashboard's panels with one curve per run (a colour each, the legend by run
name) under the dashboard's view bar (x-axis, smoothing, log y), a summary of final and best
values, and a side-by-side config table with the differing fields highlighted. It opens as a
tab beside the live dashboard."""
from __future__ import annotations

import json
import math

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from rla_engine import metrics
from rla_engine.summary import (HEADLINE_ROWS, LARGE, best_value, config_differences, figure, final_value,
                                run_duration, settings)
from rla_engine.text import printable
from rla_engine.vocabulary import LIVE

from ..guard import guarded
from ..model.panel_spec import LOSSES, PALETTE, PANELS, Panel, chart_title, short
from ..model.run_data import X_AXES, RunData
from ..widgets.chart_export import add_chart_export
from ..widgets.key_picker import KeyPicker
from ..widgets.metric_plot import MetricCurve
from ..widgets.readout import HoverReadout, add_legend, set_title
from ..widgets.view_controls import ViewControls

MAX_TITLE_NAMES = 2
READOUT_NAME_CHARS = 24     # a run's name in a read-out: long ones made it wider than the plot


def elide(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"
# tall enough that a read-out of six runs and a legend of two rows leave the curves room; when the
# window is smaller the panels scroll rather than squeeze the plots to a strip
PLOT_MIN_HEIGHT = 260


def summarise(data: RunData, run: dict) -> dict[str, float | int | None]:
    """Final and best values of the headline metrics, totals of variants, steps and wall time;
    counts are ints, so the table shows them as counts."""
    out: dict[str, float | int | None] = {}
    for label, key, has_best in HEADLINE_ROWS:
        its, vals = data.xy(key)
        out[f"{label} final"] = final_value(vals)
        if has_best:
            out[f"{label} best"] = best_value(its, vals)[0]
    for key in data.tier_keys():
        out[f"{short(key)} final"] = data.last(key)
    for key in (metrics.ACCEPTED, metrics.REJECTED):
        col = data.columns.get(key)
        # nansum: one unreadable row of an old database must not void the whole count
        out[f"{short(key)} variants"] = _count(float(np.nansum(col.val[: col.n]))) if col is not None else None
    out["env steps"] = _count(data.last(metrics.ENV_STEPS))
    duration = run_duration(run)
    out["wall time (s)"] = round(duration, 1) if duration is not None else None
    return out


def _count(x: float | None) -> int | None:
    return int(x) if x is not None and math.isfinite(x) else None


def summary_text(v: float | int | None) -> str:
    """A summary cell: a count as a whole number, a measurement to three decimals (digits
    grouped where it is large, as decimals would be noise there)."""
    if v is None:
        return ""
    if isinstance(v, int) and abs(v) < LARGE:
        return f"{v:,}"
    return figure(v)       # 1.5e+308, not 309 digits


def _legend(run: dict) -> str:
    """A run's name for a legend (the legend escapes it: shown verbatim)."""
    return printable(run["name"])


class ComparePlot(pg.PlotWidget):
    """One key of a panel (chosen in `key_box`), one curve per run, drawn as the dashboard draws."""

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
        self.runs: list[tuple[dict, RunData]] = []
        self.curves: list[MetricCurve] = []
        self.x_axis, self.smoothing = X_AXES[0], 0.0
        self.readout = HoverReadout(self, self._describe)
        add_chart_export(self, lambda: [(printable(run["name"]), c, data)
                                        for c, (run, data) in zip(self.curves, self.runs)])

    def set_runs(self, runs: list[tuple[dict, RunData]]) -> None:
        self.runs = runs
        self._build()

    def set_view(self, x_axis: str, smoothing: float, log_y: bool) -> None:
        self.x_axis, self.smoothing = x_axis, smoothing
        self.plotItem.setLogMode(y=log_y)
        self.plotItem.setLabel("bottom", x_axis)
        self.redraw()

    def _build(self) -> None:
        self.readout.hide()     # it described the curves being replaced
        for c in self.curves:
            self.plotItem.removeItem(c.raw)
            self.plotItem.removeItem(c.line)
        self.plotItem.legend.clear()
        key = self.key_box.currentText()
        # the colour is the run's position in the comparison: the same in every panel and table
        self.curves = [MetricCurve(self.plotItem, key, PALETTE[i % len(PALETTE)], dashed=key in self.panel.dashed,
                                   label=_legend(run)) for i, (run, _) in enumerate(self.runs)]
        self.redraw()

    def redraw(self) -> None:
        pixels = max(100, int(self.plotItem.vb.width()))
        for curve, (_, data) in zip(self.curves, self.runs):
            curve.draw(data, self.x_axis, self.smoothing, None, pixels)

    def leaveEvent(self, ev) -> None:
        super().leaveEvent(ev)
        self.readout.hide()      # no move comes once the mouse is off the widget

    def _describe(self, x: float) -> str | None:
        lines = []
        for curve, (run, data) in zip(self.curves, self.runs):
            hit = curve.nearest(data, self.x_axis, x)
            if hit is not None:
                lines.append(f"{elide(printable(run['name']), READOUT_NAME_CHARS)}: {hit[1]:.4g} at {hit[0]:.6g}")
        return f"{short(self.key_box.currentText())}\n" + "\n".join(lines) if lines else None


class ComparisonPanel(QtWidgets.QWidget):
    def __init__(self, runs: list[tuple[dict, RunData]], parent=None):
        super().__init__(parent)
        self.view = ViewControls()
        self.view.changed.connect(self._apply_view)
        self.plots = [ComparePlot(p) for p in PANELS]
        self.grid = grid = QtWidgets.QGridLayout()
        for i, plot in enumerate(self.plots):
            # the dashboard's 2 × 2 of the four panels, the losses (a dock there) a lower strip below
            grid.addWidget(self._with_key_box(plot), i // 2, i % 2, 1, 2 if plot.panel is LOSSES else 1)
        for row, stretch in enumerate((3, 3, 2)):
            grid.setRowStretch(row, stretch)
        self.added: list[ComparePlot] = []
        self.add_button = QtWidgets.QPushButton("Add chart…")
        self.add_button.setToolTip("A chart of any metric key the runs stored, one curve per run")
        self.add_button.clicked.connect(self.ask_add_chart)
        self.view.bar.addWidget(self.add_button)
        inner = QtWidgets.QWidget()
        inner.setLayout(grid)
        charts = QtWidgets.QScrollArea()
        charts.setWidgetResizable(True)
        charts.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        charts.setWidget(inner)
        self.config_table = QtWidgets.QTableWidget()
        self.only_diff = QtWidgets.QCheckBox("only the fields that differ")
        self.only_diff.setChecked(True)
        self.only_diff.toggled.connect(lambda _: self._fill_config())
        cfg = QtWidgets.QWidget()
        lay = QtWidgets.QVBoxLayout(cfg)
        lay.addWidget(self.only_diff)
        lay.addWidget(self.config_table, 1)
        self.summary_table = QtWidgets.QTableWidget()
        self.tabs = QtWidgets.QTabWidget()
        self.tabs.addTab(charts, "Panels")
        self.tabs.addTab(self.summary_table, "Summary")
        self.tabs.addTab(cfg, "Configuration")
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.view)
        layout.addWidget(self.tabs, 1)
        self.runs: list[tuple[dict, RunData]] = []
        self.differing: list[str] = []
        self.set_runs(runs)
        self._apply_view()

    @staticmethod
    def _with_key_box(plot: ComparePlot) -> QtWidgets.QWidget:
        box = QtWidgets.QWidget()
        lay = QtWidgets.QVBoxLayout(box)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(plot.key_box)
        lay.addWidget(plot, 1)
        return box

    def ask_add_chart(self) -> None:
        stored = {k for _, data in self.runs for k in data.columns}
        picker = KeyPicker(stored, self)
        picker.accepted.connect(lambda: picker.chosen() and self.add_chart(picker.chosen()))
        picker.finished.connect(picker.deleteLater)
        picker.open()
        self.picker = picker      # tests answer it

    def add_chart(self, keys: list[str]) -> ComparePlot:
        """A chart below the panels: one key at a time (its box chooses among `keys`), one curve per run."""
        plot = ComparePlot(Panel(f"added-{len(self.added)}", chart_title(keys), tuple(keys)))
        plot.plotItem.vb.menu.addSeparator()
        plot.plotItem.vb.menu.addAction("Remove chart").triggered.connect(lambda: self.remove_chart(plot))
        self.added.append(plot)
        self.plots.append(plot)
        row = 3 + (len(self.added) - 1) // 2
        self.grid.addWidget(self._with_key_box(plot), row, (len(self.added) - 1) % 2)
        self.grid.setRowStretch(row, 3)
        plot.set_runs(self.runs)
        self._apply_view()
        return plot

    def remove_chart(self, plot: ComparePlot) -> None:
        self.added.remove(plot)
        self.plots.remove(plot)
        box = plot.parentWidget()
        self.grid.removeWidget(box)
        box.deleteLater()

    def title(self) -> str:
        names = [printable(r["name"]) for r, _ in self.runs]
        more = f" +{len(names) - MAX_TITLE_NAMES}" if len(names) > MAX_TITLE_NAMES else ""
        return "Compare: " + ", ".join(names[:MAX_TITLE_NAMES]) + more

    def _apply_view(self) -> None:
        v = self.view
        for plot in self.plots:
            plot.set_view(v.x_axis(), v.smoothing_weight(), log_y=v.log_y.isChecked() and plot.panel is LOSSES)

    def save_state(self, settings: QtCore.QSettings) -> None:
        self.view.save_state(settings, "compare")

    def restore_state(self, settings: QtCore.QSettings) -> None:
        self.view.restore_state(settings, "compare")

    def set_runs(self, runs: list[tuple[dict, RunData]]) -> None:
        self.runs = runs
        self.setWindowTitle("Compare: " + ", ".join(printable(r["name"]) for r, _ in runs))
        for plot in self.plots:
            plot.set_runs(runs)
        self.differing = config_differences([r["config"] for r, _ in runs])
        self._fill_config()
        self._fill_summary()

    def is_live(self) -> bool:
        return any(r.get("status") in LIVE for r, _ in self.runs)

    def runs_grew(self) -> None:
        """The live runs' data grew in place (ConsoleController.follow_comparison): redraw and re-sum."""
        for plot in self.plots:
            plot.redraw()
        self._fill_summary()

    def _headers(self, table: QtWidgets.QTableWidget, rows: list[str]) -> None:
        table.clear()
        table.setColumnCount(len(self.runs))
        table.setRowCount(len(rows))
        # a live run's values are where it is now, not final: its column says so
        table.setHorizontalHeaderLabels([printable(r["name"]) + (f" ({r['status']}, it {r['iteration']})"
                                                                 if r.get("status") in LIVE else "")
                                         for r, _ in self.runs])
        table.setVerticalHeaderLabels(rows)
        for i in range(len(self.runs)):
            item = table.horizontalHeaderItem(i)
            if item is not None:
                item.setForeground(QtGui.QBrush(QtGui.QColor(PALETTE[i % len(PALETTE)])))

    def _fill_config(self) -> None:
        flat = [settings(r["config"]) for r, _ in self.runs]
        keys = self.differing if self.only_diff.isChecked() else sorted(set().union(*flat)) if flat else []
        self._headers(self.config_table, keys)
        highlight = QtGui.QBrush(QtGui.QColor(255, 220, 120, 120))
        for row, key in enumerate(keys):
            for col, f in enumerate(flat):
                item = QtWidgets.QTableWidgetItem(json.dumps(f.get(key)) if key in f else "—")
                if key in self.differing:
                    item.setBackground(highlight)
                self.config_table.setItem(row, col, item)
        self.config_table.resizeColumnsToContents()

    @guarded()
    def _fill_summary(self) -> None:
        sums = [summarise(data, run) for run, data in self.runs]
        keys = list(dict.fromkeys(k for s in sums for k in s))
        self._headers(self.summary_table, keys)
        for row, key in enumerate(keys):
            for col, s in enumerate(sums):
                item = QtWidgets.QTableWidgetItem(summary_text(s.get(key)))
                item.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
                self.summary_table.setItem(row, col, item)
        self.summary_table.resizeColumnsToContents()
