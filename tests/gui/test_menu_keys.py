"""Ctrl+E (File ▸ Export…) works wherever the keyboard is: on Linux a text box claims Ctrl+E as
"end of line", and in the run's name, History's filter or a spin box of the form the key did
nothing (found by hand under Xvfb). The keys a text box needs stay its own.

The offscreen platform has no such key binding, so a text box that claims Ctrl+E as X11's does
(ClaimsCtrlE) stands in for it; the console's own boxes are driven too."""
from __future__ import annotations

from PySide6 import QtCore, QtWidgets
from PySide6.QtTest import QTest

from gui_support import shown_window

CTRL = QtCore.Qt.KeyboardModifier.ControlModifier


class ClaimsCtrlE(QtWidgets.QLineEdit):
    """A line edit as X11's: Ctrl+E is its "end of line", claimed before any shortcut."""

    def event(self, e):
        if e.type() == QtCore.QEvent.Type.ShortcutOverride and e.keyCombination().toCombined() == \
                (CTRL | QtCore.Qt.Key.Key_E).toCombined():
            e.accept()
            return True
        return super().event(e)


def test_ctrl_e_exports_from_a_text_box_and_ctrl_a_still_selects(qtbot, tmp_path, aloop, monkeypatch):
    asked = []
    monkeypatch.setattr("rla_gui.main_window.MainWindow.ask_export", lambda self: asked.append(self.focusWidget()))
    with shown_window(qtbot, tmp_path / "h.db", tmp_path) as win:
        win.activateWindow()
        claims = ClaimsCtrlE()
        win.run_form.layout().addWidget(claims)
        claims.show()
        boxes = [claims, win.run_form.name_edit, win.history.filter,
                 next(w for w in win.run_form.findChildren(QtWidgets.QAbstractSpinBox) if w.isVisible())]
        for box in boxes:
            win.history.show() if box is win.history.filter else win.show_new_run()
            box.setFocus()
            qtbot.waitUntil(box.hasFocus)
            QTest.keyClick(box, QtCore.Qt.Key.Key_E, CTRL)
            qtbot.waitUntil(lambda box=box: box in asked, timeout=5000)
        assert asked == boxes
        name = win.run_form.name_edit
        win.show_new_run()
        name.setFocus()
        qtbot.waitUntil(name.hasFocus)
        name.setText("short run")
        QTest.keyClick(name, QtCore.Qt.Key.Key_A, CTRL)          # a text box's own key: select all
        assert name.selectedText() == "short run" and len(asked) == 4
