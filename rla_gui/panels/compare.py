"""Compare runs: overlaid panels (one colour per run, legend by run name), a side-by-side config
table with the differing fields highlighted, and a summary of final and best values."""
from __future__ import annotations

import json

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from rla_engine import metrics
from rla_engine.summary import config_differences, flatten, run_duration

from ..run_data import X_AXES, RunData
from ..panel_spec import LOSSES, PALETTE, PANELS, Panel, short
from ..widgets.metric_plot import MetricCurve

SUMMARY = [(metrics.SUCCESS, "max"), (metrics.EVAL_SUCCESS, "max"), (metrics.OUTCOME_AGREEMENT, "max"),
           (metrics.PROCESS_AGREEMENT, "max"), (metrics.MU, "max"), (metrics.DIFFICULTY_MEAN, "max")]


def summarise(data: RunData, run: dict) -> dict[str, float | None]:
    """Final and best values of the headline metrics, totals of variants, steps and wall time."""
    out: dict[str, float | None] = {}
    for key, best in SUMMARY:
        col = data.columns.get(key)
        vals = col.val[: col.n] if col is not None else None
        out[f"{short(key)} final"] = float(vals[-1]) if vals is not None and len(vals) else None
        out[f"{short(key)} best"] = float(getattr(vals, best)()) if vals is not None and len(vals) else None
    for key in data.tier_keys():
        out[f"{short(key)} final"] = data.last(key)
    for key in (metrics.ACCEPTED, metrics.REJECTED):
        col = data.columns.get(key)
        out[f"{short(key)} variants"] = float(col.val[: col.n].sum()) if col is not None else None
    out["env steps"] = data.last(metrics.ENV_STEPS)
    duration = run_duration(run)
    out["wall time (s)"] = round(duration, 1) if duration is not None else None
    return out


class ComparePlot(pg.PlotWidget):
    """One key of a panel, one curve per run."""

    def __init__(self, panel: Panel, parent=None):
        super().__init__(parent=parent)
        self.panel = panel
        self.plotItem.setTitle(panel.title)
        self.plotItem.addLegend(offset=(5, 5), labelTextSize="8pt", verSpacing=-6,
                                brush=pg.mkBrush(255, 255, 255, 150))
        self.key_box = QtWidgets.QComboBox()
        self.key_box.addItems(panel.keys + (panel.band or ()))
        self.key_box.currentTextChanged.connect(lambda _: self.redraw())
        self.runs: list[tuple[dict, RunData]] = []
        self.curves: list[MetricCurve] = []
        self.x_axis = X_AXES[0]

    def set_runs(self, runs: list[tuple[dict, RunData]]) -> None:
        self.runs = runs
        self.redraw()

    def redraw(self) -> None:
        for c in self.curves:
            self.plotItem.removeItem(c.raw)
            self.plotItem.removeItem(c.line)
        self.plotItem.legend.clear()
        self.curves = []
        key = self.key_box.currentText()
        pixels = max(100, int(self.plotItem.vb.width()))
        for i, (run, data) in enumerate(self.runs):
            colour = PALETTE[i % len(PALETTE)]     # stable: the run's position in the comparison
            curve = MetricCurve(self.plotItem, key, colour, smooth=False, label=run["name"])
            curve.draw(data, self.x_axis, 0.0, None, pixels)
            self.curves.append(curve)
        self.plotItem.setLabel("bottom", self.x_axis)


class CompareWindow(QtWidgets.QWidget):
    def __init__(self, parent=None):
        super().__init__(parent, QtCore.Qt.WindowType.Window)
        self.setWindowTitle("Compare runs")
        self.resize(1400, 900)
        self.plots = [ComparePlot(p) for p in PANELS if p is not LOSSES]
        grid = QtWidgets.QGridLayout()
        for i, plot in enumerate(self.plots):
            box = QtWidgets.QVBoxLayout()
            box.addWidget(plot.key_box)
            box.addWidget(plot, 1)
            grid.addLayout(box, i // 2, i % 2)
        charts = QtWidgets.QWidget()
        charts.setLayout(grid)
        self.config_table = QtWidgets.QTableWidget()
        self.only_diff = QtWidgets.QCheckBox("only the fields that differ")
        self.only_diff.setChecked(True)
        self.only_diff.toggled.connect(lambda _: self._fill_config())
        cfg = QtWidgets.QWidget()
        lay = QtWidgets.QVBoxLayout(cfg)
        lay.addWidget(self.only_diff)
        lay.addWidget(self.config_table, 1)
        self.summary_table = QtWidgets.QTableWidget()
        tabs = QtWidgets.QTabWidget()
        tabs.addTab(charts, "Panels")
        tabs.addTab(self.summary_table, "Summary")
        tabs.addTab(cfg, "Configuration")
        self.tabs = tabs
        QtWidgets.QVBoxLayout(self).addWidget(tabs)
        self.runs: list[tuple[dict, RunData]] = []
        self.differing: list[str] = []

    async def load(self, client, run_ids: list[str]) -> None:
        runs = []
        for run_id in run_ids:
            run = await client.run(run_id)
            if run is None:
                continue
            data = RunData()
            data.add(await client.columns(run_id))
            run["config"] = json.loads(run["config_json"])
            runs.append((run, data))
        self.set_runs(runs)

    def set_runs(self, runs: list[tuple[dict, RunData]]) -> None:
        self.runs = runs
        self.setWindowTitle("Compare: " + ", ".join(r["name"] for r, _ in runs))
        for plot in self.plots:
            plot.set_runs(runs)
        self.differing = config_differences([r["config"] for r, _ in runs])
        self._fill_config()
        self._fill_summary()

    def _headers(self, table: QtWidgets.QTableWidget, rows: list[str]) -> None:
        table.clear()
        table.setColumnCount(len(self.runs))
        table.setRowCount(len(rows))
        table.setHorizontalHeaderLabels([r["name"] for r, _ in self.runs])
        table.setVerticalHeaderLabels(rows)
        for i in range(len(self.runs)):
            item = table.horizontalHeaderItem(i)
            if item is not None:
                item.setForeground(QtGui.QBrush(QtGui.QColor(PALETTE[i % len(PALETTE)])))

    def _fill_config(self) -> None:
        flat = [flatten(r["config"]) for r, _ in self.runs]
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

    def _fill_summary(self) -> None:
        sums = [summarise(data, run) for run, data in self.runs]
        keys = list(dict.fromkeys(k for s in sums for k in s))
        self._headers(self.summary_table, keys)
        for row, key in enumerate(keys):
            for col, s in enumerate(sums):
                v = s.get(key)
                text = "" if v is None else (f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3f}")
                item = QtWidgets.QTableWidgetItem(text)
                item.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
                self.summary_table.setItem(row, col, item)
        self.summary_table.resizeColumnsToContents()
