"""A chart's right-click saves: the chart as PNG or SVG, the data in view as CSV.

Real widgets, offscreen: the dashboard's MetricPlot and DifficultyPlot on a RunData fed metric
columns as the store hands them over, and the comparison's ComparePlot on the recorded group's
three real runs (tests/data) read back from a database. Each action is triggered from the plot's
own menu and its file dialog answered as a person would, from a timer.
"""
from __future__ import annotations

import csv
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from PySide6 import QtCore, QtGui, QtWidgets

from rla_engine import metrics
from rla_gui.model.panel_spec import PALETTE, POLICY, short
from rla_gui.panels.comparison import ComparePlot
from rla_gui.panels.dashboard import DifficultyPlot
from rla_gui.model.run_data import RunData
from rla_gui.widgets import chart_export
from rla_gui.widgets.chart_export import ChartExport
from rla_gui.widgets.metric_plot import MetricPlot

from gui_support import runs_with_data

ITERATIONS = 60
EVAL_EVERY = 5              # a held-out rate on its own x grid, as a real run's


def a_run() -> RunData:
    rng = np.random.default_rng(1)
    its = np.arange(1, ITERATIONS + 1, dtype=np.float64)
    evals = its[EVAL_EVERY - 1::EVAL_EVERY]
    data = RunData()
    data.add({metrics.SUCCESS: (its, rng.uniform(0, 1, ITERATIONS), 1000.0 + its),
              metrics.REWARD: (its, rng.normal(0, 1, ITERATIONS), 1000.0 + its),
              metrics.EVAL_SUCCESS: (evals, rng.uniform(0, 1, len(evals)), 1000.0 + evals),
              metrics.DIFFICULTY_MEAN: (its, np.linspace(0.2, 0.6, ITERATIONS), 1000.0 + its),
              metrics.DIFFICULTY_MIN: (its, np.linspace(0.0, 0.4, ITERATIONS), 1000.0 + its),
              metrics.DIFFICULTY_MAX: (its, np.linspace(0.4, 0.8, ITERATIONS), 1000.0 + its),
              metrics.ENV_STEPS: (its, its * 512, 1000.0 + its)})
    return data


def shown(qtbot, plot, smoothing: float, size=(640, 320)):
    qtbot.addWidget(plot)
    plot.resize(*size)
    plot.show()
    qtbot.waitExposed(plot)
    plot.set_view("iteration", smoothing, False)
    plot.refresh() if hasattr(plot, "refresh") else plot.redraw()
    QtWidgets.QApplication.processEvents()
    return plot


@pytest.fixture
def policy(qtbot):
    return shown(qtbot, MetricPlot(POLICY.title, POLICY.keys, a_run()), smoothing=0.6)


@pytest.fixture(autouse=True)
def dialogs_open_in(tmp_path, monkeypatch):
    """Each test's dialogs start in its own folder (the first one would start in the home folder)."""
    monkeypatch.setattr(ChartExport, "last_folder", tmp_path)


def answer_file_dialog(path: Path | None) -> list:
    """As a person does: wait for the modal file dialog, then type `path` and press Save (None:
    press Cancel). Returns a list that gets what the dialog proposed (title, folder, name, filters)."""
    seen: list = []

    def poll():
        dialog = QtWidgets.QApplication.activeModalWidget()
        if not isinstance(dialog, QtWidgets.QFileDialog):
            QtCore.QTimer.singleShot(20, poll)
            return
        seen.append((dialog.windowTitle(), dialog.directory().absolutePath(),
                     Path(dialog.selectedFiles()[0]).name, dialog.nameFilters()))
        if path is None:
            dialog.reject()
        else:
            # typed into the name field, as a person does: selectFile before the folder's listing
            # has loaded selects nothing (the dialog then saved under its proposal)
            dialog.findChild(QtWidgets.QLineEdit, "fileNameEdit").setText(str(path))
            dialog.accept()
    QtCore.QTimer.singleShot(20, poll)
    return seen


def save_from_menu(plot, kind: str, path: Path | None) -> tuple:
    """Trigger the plot's menu entry for `kind` with the dialog answered; return what it proposed."""
    texts = {"png": "Save chart as PNG…", "svg": "Save chart as SVG…", "csv": "Save visible data as CSV…"}
    (action,) = [a for a in plot.plotItem.vb.menu.actions() if a.text() == texts[kind]]
    seen = answer_file_dialog(path)
    action.trigger()                # returns once the dialog is answered and the file written
    assert len(seen) == 1
    return seen[0]


def read_csv(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


# ----------------------------------------------------------------------------- the menu


def test_both_kinds_of_plot_offer_the_three_saves(qtbot, policy):
    compare = ComparePlot(POLICY)
    qtbot.addWidget(compare)
    for plot in (policy, compare):
        texts = [a.text() for a in plot.plotItem.vb.menu.actions()]
        assert texts[texts.index("Save chart as PNG…"):][:3] == [
            "Save chart as PNG…", "Save chart as SVG…", "Save visible data as CSV…"]


# ----------------------------------------------------------------------------- PNG and SVG


def test_png_is_the_plot_at_its_size_with_its_curves(policy, tmp_path):
    out = tmp_path / "policy.png"
    title, folder, name, filters = save_from_menu(policy, "png", out)
    assert (title, folder, name, filters) == ("Save chart as PNG", str(tmp_path), "policy-reward.png",
                                              ["PNG image (*.png)"])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = QtGui.QImage(str(out))
    assert (image.width(), image.height()) == (policy.width(), policy.height()) == (640, 320)
    pixels = image.convertToFormat(QtGui.QImage.Format.Format_RGB32)
    rgb = np.frombuffer(pixels.constBits(), np.uint32)[: image.width() * image.height()] & 0xFFFFFF
    colours = {f"#{int(c):06x}" for c in np.unique(rgb)}
    assert {PALETTE[0], PALETTE[1], PALETTE[2]} <= colours        # the three keys' lines are drawn
    assert oct(out.stat().st_mode & 0o777) == oct(0o600)


def test_svg_is_xml_with_each_curves_path(policy, tmp_path):
    out = tmp_path / "policy.svg"
    save_from_menu(policy, "svg", out)
    root = ET.fromstring(out.read_bytes())
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    drawn: dict[tuple[str, bool], int] = {}       # (stroke colour, faint) -> vertices
    for group in root.iter("{http://www.w3.org/2000/svg}g"):
        for shape in group:
            tag = shape.tag.rsplit("}", 1)[-1]
            if tag not in ("path", "polyline"):
                continue
            text = shape.get("d") or shape.get("points") or ""
            faint = float(group.get("stroke-opacity", "1")) < 0.5
            key = (group.get("stroke", ""), faint)
            drawn[key] = drawn.get(key, 0) + text.count(",")
    for colour, key in zip(PALETTE, POLICY.keys):
        n = len(policy.data.xy(key)[0])
        # the smoothed line in full colour, the raw one faint behind it, every point a vertex
        assert drawn.get((colour, False), 0) >= n - 1 and drawn.get((colour, True), 0) >= n, (key, drawn)


# ----------------------------------------------------------------------------- CSV


def test_csv_holds_exactly_the_points_in_view_raw_and_smoothed(policy, tmp_path):
    policy.plotItem.vb.setXRange(10, 30, padding=0)
    policy.refresh()
    out = tmp_path / "view.csv"
    assert save_from_menu(policy, "csv", out)[2] == "policy-reward.csv"
    rows = read_csv(out)
    assert rows[0] == ["series", "key", "curve", "iteration", "value"]
    got = [(s, k, c, int(x), float(v)) for s, k, c, x, v in rows[1:]]
    want = []
    for key, curve in policy.curves.items():
        x, y = policy.data.xy(key)
        inside = (x >= 10) & (x <= 30)
        assert inside.sum() in (21, 5)        # every iteration, or the held-out rate's every fifth
        series = short(key)
        want += [(series, key, "raw", int(a), float(b)) for a, b in zip(x[inside], y[inside])]
        want += [(series, key, "smoothed", int(a), float(b))
                 for a, b in zip(x[inside], curve.smoothed[: len(y)][inside])]     # as drawn
    assert got == want
    assert {r[0] for r in rows[1:]} == {"success (train)", "eval success", "reward R"}


def test_csv_smoothing_is_the_drawn_one_after_live_appends(qtbot, tmp_path):
    """A live run's curve is smoothed a chunk at a time; the CSV has those values to the last bit
    (a smoothing redone at once differs in the last digits)."""
    data, rng = RunData(), np.random.default_rng(2)
    plot = shown(qtbot, MetricPlot(POLICY.title, (metrics.SUCCESS,), data), smoothing=0.9)
    for start in range(0, 2000, 250):
        its = np.arange(start + 1, start + 251, dtype=np.float64)
        data.add({metrics.SUCCESS: (its, rng.uniform(0, 1, 250), 1000.0 + its)})
        plot.refresh()
    out = tmp_path / "live.csv"
    save_from_menu(plot, "csv", out)
    smoothed = [float(r[4]) for r in read_csv(out)[1:] if r[2] == "smoothed"]
    assert smoothed == list(plot.curves[metrics.SUCCESS].smoothed[:2000])


def test_csv_without_smoothing_has_the_raw_points_only_on_the_chosen_x_axis(policy, tmp_path):
    policy.set_view("env steps", 0.0, False)
    policy.refresh()
    policy.plotItem.vb.setXRange(512 * 50, 512 * 55, padding=0)
    out = tmp_path / "steps.csv"
    save_from_menu(policy, "csv", out)
    rows = read_csv(out)
    assert rows[0][3] == "env steps"
    assert {r[2] for r in rows[1:]} == {"raw"}
    assert sorted({int(r[3]) for r in rows[1:]}) == [512 * i for i in range(50, 56)]
    assert len(rows) - 1 == 6 + 6 + 2           # success and reward each iteration; eval at 50 and 55


def test_the_difficulty_plots_csv_has_its_band(qtbot, tmp_path):
    plot = shown(qtbot, DifficultyPlot(a_run()), smoothing=0.0)
    plot.plotItem.vb.setXRange(1, 3, padding=0)
    out = tmp_path / "difficulty.csv"
    save_from_menu(plot, "csv", out)
    keys = [r[1] for r in read_csv(out)[1:]]
    assert keys == [metrics.DIFFICULTY_MEAN] * 3 + [metrics.DIFFICULTY_MIN] * 3 + [metrics.DIFFICULTY_MAX] * 3


@pytest.fixture(scope="module")
def group(recorded, recorded_db) -> list[tuple[dict, RunData]]:
    """The recorded group's three real runs, read back as the comparison reads them."""
    return runs_with_data(recorded_db(*recorded("recorded_group")))


def test_a_comparisons_csv_has_a_series_per_run(qtbot, tmp_path, group):
    plot = ComparePlot(POLICY)
    plot.set_runs(group)
    shown(qtbot, plot, smoothing=0.5)
    plot.plotItem.vb.setXRange(2, 4, padding=0)
    out = tmp_path / "compare.csv"
    save_from_menu(plot, "csv", out)
    rows = read_csv(out)[1:]
    assert [r[0] for r in rows if r[2] == "raw"] == [run["name"] for run, _ in group for _ in range(3)]
    assert {r[1] for r in rows} == {POLICY.keys[0]}
    for run, data in group:
        x, y = data.xy(POLICY.keys[0])
        assert [(int(r[3]), float(r[4])) for r in rows if r[0] == run["name"] and r[2] == "raw"] == [
            (int(a), float(b)) for a, b in zip(x, y) if 2 <= a <= 4]
        assert sum(r[0] == run["name"] and r[2] == "smoothed" for r in rows) == 3


# ----------------------------------------------------------------------------- cancel and failure


def test_cancel_writes_nothing(policy, tmp_path):
    save_from_menu(policy, "png", None)
    assert list(tmp_path.iterdir()) == []


def test_a_failure_is_told_in_a_message_box_and_writes_nothing(policy, tmp_path):
    export = policy.plotItem.vb.menu.findChildren(ChartExport)[0]
    export.save("csv", tmp_path / "gone" / "view.csv")              # a folder removed meanwhile
    (box,) = policy.findChildren(QtWidgets.QMessageBox)
    assert box.isVisible() and str(tmp_path / "gone" / "view.csv") in box.text()
    assert "does not exist" in box.informativeText()
    box.close()
    assert list(tmp_path.iterdir()) == []


def test_a_closed_svg_path_survives_the_coordinate_pass():
    """The compatibility shim alone: a path Qt closes with "Z" is moved by its group's transform
    and keeps its "Z" where it was."""
    import importlib
    from xml.dom import minidom

    module = importlib.import_module("pyqtgraph.exporters.SVGExporter")
    chart_export._tolerate_closed_svg_paths()
    doc = minidom.parseString('<g><g transform="matrix(1,0,0,1,5,10)"><path d="M0,0 L4,0 L4,3 Z M1,1 L2,2 Z"/>'
                              '</g></g>')
    module.correctCoordinates(doc.documentElement, [], QtWidgets.QGraphicsRectItem(0, 0, 4, 3), {})
    d = doc.getElementsByTagName("path")[0].getAttribute("d").split()
    assert d == ["M5.0,10.0", "L9.0,10.0", "L9.0,13.0", "Z", "M6.0,11.0", "L7.0,12.0", "Z"]
