"""File ▸ Export… offers Parquet: chosen in the Save dialog, it writes the two files of
`rla export --format parquet` from the console, as the status line says.

The console opens a database holding the recorded arithmetic run of tests/data (a real run,
imported as `rla import` does); the dialog is answered from a timer, as a person would.
"""
from pathlib import Path

import pyarrow.parquet as pq
from PySide6 import QtCore, QtGui, QtWidgets

from rla_engine.store import open_store
from rla_gui.main_window import MainWindow

from gui_support import until


def answer_file_dialog(name_filter: str) -> list:
    """Wait for the modal file dialog, choose `name_filter` and press Save on the name it proposes."""
    seen: list = []

    def poll():
        dialog = QtWidgets.QApplication.activeModalWidget()
        if not isinstance(dialog, QtWidgets.QFileDialog):
            QtCore.QTimer.singleShot(50, poll)
            return
        seen.append(dialog.nameFilters())
        dialog.selectNameFilter(name_filter)
        dialog.accept()
    QtCore.QTimer.singleShot(50, poll)
    return seen


def test_file_export_offers_parquet_and_writes_both_files(qtbot, tmp_path, drive, recorded):
    (bundle,) = recorded("recorded_arithmetic")
    run_id = bundle["run"]["id"]
    store = open_store(tmp_path / "h.db")
    store.import_runs([bundle])
    store.close()
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    window = MainWindow(tmp_path / "h.db", settings=settings)
    qtbot.addWidget(window)
    window.show()
    export = next(a for a in window.findChildren(QtGui.QAction) if a.text().replace("&", "") == "Export…")
    parquet = next(f for f, v in window.EXPORT_FILTERS.items() if v == "parquet")
    metrics_file, events_file = tmp_path / f"{run_id}.parquet", tmp_path / f"{run_id}.events.parquet"

    async def scenario():
        await until(lambda: window.history.model.rows, what="the run listed")
        window.history.select(run_id)
        seen = answer_file_dialog(parquet)
        QtCore.QTimer.singleShot(0, export.trigger)
        await until(lambda: window.statusBar().currentMessage().startswith("wrote"), timeout=60,
                    what="the export written")
        return seen
    seen = drive(scenario())
    assert parquet in seen[0]
    assert window.statusBar().currentMessage().startswith(f"wrote {metrics_file} (")
    assert pq.read_table(metrics_file).num_rows == len(bundle["metrics"])
    assert pq.read_table(events_file).column("run_id").to_pylist() == [run_id] * len(bundle["events"])
    assert sorted(p.name for p in Path(tmp_path).iterdir() if "parquet" in p.name) == [
        events_file.name, metrics_file.name]
    window.close()
    if window.finished is not None:
        qtbot.waitUntil(window.finished.done, timeout=30_000)
