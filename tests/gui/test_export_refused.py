"""The console never exports over its own database: File ▸ Export… and a chart's right-click save
refuse the database, its -wal, its checkpoint folder… in a message box that names the path and
why, whatever the file dialog's "replace it?" was answered, and start nothing."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6 import QtWidgets

from rla_gui.widgets.chart_export import ChartExport
from rla_gui.widgets.metric_plot import MetricPlot

from gui_support import shown_window, until

RECORDED = Path(__file__).resolve().parents[1] / "data" / "recorded_arithmetic.json"


@pytest.fixture
def window(qtbot, tmp_path, aloop):
    db = tmp_path / "h.db"
    subprocess.run([sys.executable, "-m", "rla_engine.cli", "import", str(RECORDED), "--as", "r", "--db", str(db)],
                   check=True, stdout=subprocess.DEVNULL)
    (tmp_path / "checkpoints" / "r").mkdir(parents=True)
    with shown_window(qtbot, db, tmp_path, close_choice="stop") as win:
        yield win


def refusal_shown() -> str | None:
    boxes = [w for w in QtWidgets.QApplication.topLevelWidgets()
             if isinstance(w, QtWidgets.QMessageBox) and w.isVisible() and w.windowTitle() == "Cannot write there"]
    for box in boxes:
        box.close()
    return boxes[-1].text() if boxes else None


TARGETS = [("h.db", "html", "the database"), ("h.db-wal", "csv", "write-ahead log"),
           ("checkpoints/r/report.html", "html", "checkpoint folder")]


@pytest.mark.parametrize("name,fmt,what", TARGETS, ids=[t[0] for t in TARGETS])
def test_file_export_refuses_the_databases_own_files(window, drive, tmp_path, monkeypatch, name, fmt, what):
    target = tmp_path / name
    chosen = next(f for f, v in window.EXPORT_FILTERS.items() if v == fmt)
    monkeypatch.setattr("rla_gui.widgets.file_dialogs.save_file_name", lambda *a, **k: (str(target), chosen))
    inode = os.stat(tmp_path / "h.db").st_ino

    async def scenario():
        await until(lambda: window.history.model.rows, what="the imported run listed")
        window.history.select("r")
        window.ask_export()                        # Ctrl+E, the dialog answered with the database's file
    drive(scenario(), timeout=60)
    text = refusal_shown()
    assert text is not None and str(target) in text and what in text, text
    assert "exporting" not in window.statusBar().currentMessage()      # nothing was started
    assert os.stat(tmp_path / "h.db").st_ino == inode
    assert not Path(f"{target}.events.csv").exists()
    assert list((tmp_path / "checkpoints" / "r").iterdir()) == []


def test_a_charts_save_refuses_the_database(window, tmp_path):
    plot = window.findChildren(MetricPlot)[0]
    (export,) = plot.plotItem.vb.menu.findChildren(ChartExport)
    inode = os.stat(tmp_path / "h.db").st_ino
    export.save("png", tmp_path / "h.db")
    text = refusal_shown()
    assert text is not None and "the database" in text, text
    assert os.stat(tmp_path / "h.db").st_ino == inode       # not replaced by a PNG


def test_a_charts_save_from_a_floating_dock_refuses_the_database(window, tmp_path):
    """A floating dock is a window of its own: the chart inside must still know its database."""
    for dock in window.findChildren(QtWidgets.QDockWidget):
        dock.setFloating(True)
    docked = [p for p in window.findChildren(MetricPlot) if isinstance(p.window(), QtWidgets.QDockWidget)]
    assert docked, "no chart in a dock: this test would check nothing"
    inode = os.stat(tmp_path / "h.db").st_ino
    for plot in docked:
        (export,) = plot.plotItem.vb.menu.findChildren(ChartExport)
        export.save("png", tmp_path / "h.db")
        text = refusal_shown()
        assert text is not None and "the database" in text, text
    assert os.stat(tmp_path / "h.db").st_ino == inode
