"""File ▸ Export… must leave the console seeing its database: a run started afterwards is seen
starting, listed, drawn and finished.

The export's Save dialog lists the database's folder. Qt's default dialog opened h.db, h.db-wal
and h.db-shm there to sniff their types, and closing those descriptors dropped the console's
SQLite locks (POSIX fcntl semantics); the report renderer, closing its own connection next,
then deleted the -wal and -shm files, and the console's connection kept reading the unlinked
ones: blind to every new row (rla_gui/widgets/file_dialogs.py tells the whole story).
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6 import QtCore, QtGui, QtWidgets

from rla_engine import metrics
from rla_engine.client import EngineError
from rla_engine.config import build
from rla_engine.store import open_store
from rla_gui.main_window import MainWindow
from rla_gui.widgets import file_dialogs

from gui_support import TINY, until


def open_window(qtbot, tmp_path):
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(tmp_path / "h.db", settings=settings)
    win.ask_close_choice = lambda run_id: "stop"
    qtbot.addWidget(win)
    win.show()
    return win


def close_window(qtbot, win):
    if not win._closing:
        win.close()
    if win.finished is not None:
        qtbot.waitUntil(win.finished.done, timeout=30_000)


@pytest.fixture
def window(qtbot, tmp_path, aloop):
    # one finished run to export, made before the console opens (a few seconds)
    subprocess.run([sys.executable, "-m", "rla_engine.cli", "run", "--db", str(tmp_path / "h.db"), *TINY,
                    "--iterations", "2", "--name", "exported"], check=True, stdout=subprocess.DEVNULL)
    win = open_window(qtbot, tmp_path)
    yield win
    close_window(qtbot, win)


def accept_file_dialog(name_filter: str | None = None, look_ms: int = 1000) -> list:
    """As a person does: wait for the modal file dialog, look at the folder it lists for a
    moment, then press Save/Open on what it proposes. Returns a list that gets the dialog."""
    seen: list = []

    def poll():
        dialog = QtWidgets.QApplication.activeModalWidget()
        if not isinstance(dialog, QtWidgets.QFileDialog):
            QtCore.QTimer.singleShot(50, poll)
        elif not seen:
            seen.append(dialog)
            QtCore.QTimer.singleShot(look_ms, poll)
        else:
            if name_filter:
                dialog.selectNameFilter(name_filter)
            dialog.accept()
    QtCore.QTimer.singleShot(50, poll)
    return seen


def posix_locks(path: Path) -> list[tuple[str, ...]]:
    """This process's POSIX locks on `path`: (type, first byte, last byte). Linux's /proc/locks
    lines read `N: POSIX ADVISORY READ pid major:minor:inode start end`."""
    inode = str(os.stat(path).st_ino)
    with open("/proc/locks", encoding="ascii") as f:
        rows = [line.split() for line in f if "->" not in line]      # "->": a waiter, not a holder
    return sorted((r[3], r[6], r[7]) for r in rows
                  if r[1] == "POSIX" and r[4] == str(os.getpid()) and r[5].rsplit(":", 1)[-1] == inode)


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="reads /proc/locks")
def test_the_consoles_file_dialog_leaves_the_database_locks_alone(qtbot, tmp_path, aloop):
    db = tmp_path / "h.db"
    store = open_store(db)
    store.list_runs()                                # a read: the connection holds its locks
    shm = Path(f"{db}-shm")
    before = posix_locks(db) + posix_locks(shm)
    assert before, "an open WAL connection holds locks on the database and its -shm"
    accepted = accept_file_dialog()
    path, _ = file_dialogs.save_file_name(None, "Export", str(tmp_path / "report.html"),
                                          "HTML report (*.html);;CSV (*.csv)")
    assert accepted and path == str(tmp_path / "report.html")
    assert posix_locks(db) + posix_locks(shm) == before
    store.close()


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="reads /proc/locks")
def test_a_plots_right_click_export_leaves_the_database_locks_alone(qtbot, tmp_path, window):
    """pyqtgraph's own Export… (a plot's context menu) builds its dialog itself, in the folder it
    last exported to: here the database's."""
    import importlib

    import pyqtgraph.exporters
    pyqtgraph_exporter = importlib.import_module("pyqtgraph.exporters.Exporter")
    qtbot.waitUntil(lambda: bool(window.history.model.rows))      # the console has read its database
    shm = Path(f"{window.controller.db_path}-shm")
    before = posix_locks(window.controller.db_path) + posix_locks(shm)
    assert before
    pyqtgraph_exporter.LastExportDirectory = str(tmp_path)
    exporter = pyqtgraph.exporters.ImageExporter(window.dashboard.policy.plotItem)
    exporter.export()                                # no file name: pyqtgraph asks for one
    dialog = exporter.fileDialog
    try:
        qtbot.waitUntil(lambda: dialog.isVisible() and dialog.directory().absolutePath() == str(tmp_path))
        listing = dialog.findChild(QtWidgets.QFileSystemModel)
        listing.setNameFilterDisables(True)          # files the image filter leaves out are listed, greyed
        # the folder listed, the database among its files: what once opened (sniffed) them has run
        qtbot.waitUntil(lambda: listed(listing, tmp_path, Path(window.controller.db_path).name), timeout=10_000)
        assert posix_locks(window.controller.db_path) + posix_locks(shm) == before
    finally:
        dialog.reject()


def listed(model, folder: Path, name: str) -> bool:
    parent = model.index(str(folder))
    return any(model.fileName(model.index(i, 0, parent)) == name for i in range(model.rowCount(parent)))


def test_a_run_started_after_an_html_export_is_seen_starting_listed_drawn_and_finished(window, drive, qtbot,
                                                                                       tmp_path):
    bar = window.statusBar()
    export = next(a for a in window.findChildren(QtGui.QAction) if a.text().replace("&", "") == "Export…")
    html = next(f for f, v in window.EXPORT_FILTERS.items() if v == "html")

    async def scenario():
        await until(lambda: window.history.model.rows, what="the finished run listed")
        old = window.history.model.rows[0]["id"]
        window.open_run(old)                                     # a run is open, as a person would have it
        window.history.select(old)
        accepted = accept_file_dialog(html)
        QtCore.QTimer.singleShot(0, export.trigger)              # File ▸ Export…, then Save
        out = tmp_path / f"{old}.html"                           # what the dialog proposes
        await until(lambda: out.exists() and bar.currentMessage().startswith("wrote"), timeout=60,
                    what="the report written")
        assert accepted

        window.run_form.load_config(build(preset="tiny", sets=["run.iterations=40"]).to_dict(), "tiny")
        window.run_form.name_edit.setText("after the export")
        window.run_form.start_button.click()
        await until(lambda: bar.currentMessage().startswith("starting the engine"), what="the start is shown")
        wal_there = Path(f"{window.controller.db_path}-wal").exists()      # the console's connection holds it open
        await until(lambda: not bar.currentMessage().startswith("starting the engine"), timeout=40,
                    what="the status line to leave 'starting the engine…'")
        new = window.controller.session.run_id
        assert bar.currentMessage() == f"run {new} started" and new != old, \
            (bar.currentMessage(), f"the -wal file was {'there' if wal_there else 'deleted'} at the start")
        assert window.controller.session.tracking(new)          # its exit will be awaited, and handled
        await until(lambda: any(r["id"] == new for r in window.history.model.rows), timeout=10,
                    what="the new run in the history")
        await until(lambda: window.controller.session.data.last_iteration() >= 3, timeout=30, what="live curves")
        n = window.controller.session.data.last_iteration()
        await until(lambda: window.controller.session.data.last_iteration() > n, timeout=30, what="the curves to grow")
        await until(lambda: window.controls.status == "completed", timeout=60, what="the run completes")
        await until(lambda: next(r["status"] for r in window.history.model.rows if r["id"] == new) == "completed",
                    timeout=10, what="the history to show it completed")
        # a failure dialog would come with the engine's exit: wait until the console has handled it
        await until(lambda: not window.controller.session.tracking(new), timeout=30, what="the engine's exit handled")
        return new

    new = drive(scenario(), timeout=180)
    assert getattr(window, "_failure_box", None) is None, window._failure_box.text()
    assert open_store(window.controller.db_path).get_run(new)["status"] == "completed"
    assert window.controller.session.data.last(metrics.SUCCESS) is not None


def test_a_failed_start_names_the_run_it_started_not_the_open_one(qtbot, tmp_path, aloop, drive):
    """The failure dialog of a start names the new run (the open run is another one)."""
    win = open_window(qtbot, tmp_path)
    try:
        win.open_run("the-open-run")
        win.controller.client.python = shutil.which("false")     # an "engine" that exits at once, code 1

        async def scenario():
            task = win.controller.start(build(preset="tiny"), "tiny", "doomed")
            await until(task.done, what="the failed start")
            await until(lambda: getattr(win, "_failure_box", None) is not None, what="the failure dialog")
            return task.exception()
        error = drive(scenario(), timeout=30)
        assert isinstance(error, EngineError) and error.run_id and error.run_id != "the-open-run"
        assert win._failure_box.text() == f"The engine of run {error.run_id} failed."
    finally:
        close_window(qtbot, win)


def test_a_typed_pdf_name_gets_a_pdf_whatever_filter_was_left_selected(window, drive, tmp_path):
    """Typing quick.pdf with the HTML filter still selected wrote HTML into quick.pdf (seen under Xvfb)."""
    html = next(f for f, v in window.EXPORT_FILTERS.items() if v == "html")
    out = tmp_path / "quick.pdf"

    def answer():
        dialog = QtWidgets.QApplication.activeModalWidget()
        if not isinstance(dialog, QtWidgets.QFileDialog):
            QtCore.QTimer.singleShot(50, answer)
            return
        dialog.selectNameFilter(html)
        name = dialog.findChild(QtWidgets.QLineEdit, "fileNameEdit")
        name.setText(str(out))
        dialog.accept()

    async def scenario():
        await until(lambda: window.history.model.rows, what="the finished run listed")
        window.history.select(window.history.model.rows[0]["id"])
        QtCore.QTimer.singleShot(50, answer)
        window.ask_export()
        await until(lambda: out.exists() and window.statusBar().currentMessage().startswith("wrote"), timeout=90,
                    what="the export written")

    drive(scenario(), timeout=120)
    assert out.read_bytes()[:5] == b"%PDF-"
