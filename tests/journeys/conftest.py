"""Journeys: long sequences of what a person does at the console, with what they see checked
after every step (tests/journeys/person.py). The loop fixtures are tests/conftest.py's."""
import sys
from pathlib import Path

import pytest
from PySide6 import QtCore, QtWidgets

# person.py here, and gui_support.py (shared with the console's tests)
sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[1] / "gui")]

MODAL_PATIENCE_S = 30


@pytest.fixture(autouse=True)
def unanswered_dialogs_fail(qapp):
    """A modal dialog nobody answers runs its own event loop forever: the journey would hang, not
    fail. One left open longer than MODAL_PATIENCE_S is closed and fails the test."""
    seen: dict = {}
    left: list[str] = []

    def check():
        dialog = QtWidgets.QApplication.activeModalWidget()
        if dialog is None:
            seen.clear()
            return
        first = seen.setdefault(id(dialog), QtCore.QTime.currentTime())
        if first.secsTo(QtCore.QTime.currentTime()) > MODAL_PATIENCE_S:
            text = dialog.text() if isinstance(dialog, QtWidgets.QMessageBox) else ""
            left.append(f"{type(dialog).__name__} {dialog.windowTitle()!r} {text!r}")
            dialog.reject() if isinstance(dialog, QtWidgets.QDialog) else dialog.close()
    timer = QtCore.QTimer()
    timer.timeout.connect(check)
    timer.start(1000)
    yield
    timer.stop()
    assert not left, f"modal dialogs left unanswered: {left}"
