"""A resume that finds only checkpoints its database did not sign (issue 34, finding 7) is refused;
the console asks, naming the risk, and resumes with `--accept-unowned-checkpoints` only on Yes."""
from __future__ import annotations

import subprocess
import sys

from PySide6 import QtWidgets

from rla_engine.paths import checkpoints_dir
from rla_engine.store import open_store

from gui_support import TINY, shown_window, until

SIGNED_HEADER = 56         # rla_engine.checkpoint's format-2 header, before the owner and the archive


def strip_signatures(folder) -> None:
    """Every checkpoint of the folder as a headerless archive: what an older version wrote, or a
    file someone placed there."""
    for p in folder.glob("it-*.pt"):
        data = p.read_bytes()
        p.write_bytes(data[SIGNED_HEADER + int.from_bytes(data[12:16], "little"):])


def box_titled(title: str) -> QtWidgets.QMessageBox | None:
    boxes = [w for w in QtWidgets.QApplication.topLevelWidgets()
             if isinstance(w, QtWidgets.QMessageBox) and w.isVisible() and w.windowTitle() == title]
    return boxes[-1] if boxes else None


def test_the_console_resumes_from_unsigned_checkpoints_only_when_told_to(qtbot, tmp_path, drive):
    db = tmp_path / "h.db"
    subprocess.run([sys.executable, "-m", "rla_engine.cli", "run", *TINY, "--iterations", "2", "--run-id", "r",
                    "--db", str(db)], check=True, capture_output=True)
    strip_signatures(checkpoints_dir(db, "r"))
    with shown_window(qtbot, db, tmp_path) as win:
        win.controller.resume("r", 1)
        box = drive(until(lambda: box_titled("Unsigned checkpoints"), what="the question"))
        assert "did not sign" in box.text()
        failure = box_titled("Engine failed")          # the refusal itself, with its log
        assert failure is not None and "--accept-unowned-checkpoints" in failure.detailedText()
        failure.close()
        box.button(QtWidgets.QMessageBox.StandardButton.No).click()
        store = open_store(db)
        assert store.get_run("r")["iteration"] == 2         # No: nothing resumed
        win.controller.resume("r", 1)
        box = drive(until(lambda: box_titled("Unsigned checkpoints"), what="the question again"))
        drive(until(lambda: box_titled("Engine failed"), what="the failure")).close()
        box.button(QtWidgets.QMessageBox.StandardButton.Yes).click()
        drive(until(lambda: store.get_run("r")["status"] == "completed" and store.get_run("r")["iteration"] == 3,
                    what="the resumed run's third iteration"))
        store.close()
