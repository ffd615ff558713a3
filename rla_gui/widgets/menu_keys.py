"""The window's menu keys work while a text box has the keyboard. On Linux a QLineEdit or
QTextEdit claims Ctrl+E as "end of line", so File ▸ Export…'s Ctrl+E did nothing in the run's
name, History's filter or the notes — a key that silently does nothing. Only the focused text
widget is watched, and only for the menu's own keys (never a key a text box needs, such as Ctrl+A)."""
from __future__ import annotations

import contextlib
from collections.abc import Iterable

from PySide6 import QtCore, QtGui, QtWidgets

TEXT_WIDGETS = (QtWidgets.QLineEdit, QtWidgets.QTextEdit, QtWidgets.QPlainTextEdit, QtWidgets.QAbstractSpinBox)


class MenuKeysFirst(QtCore.QObject):
    def __init__(self, keys: Iterable[QtGui.QKeySequence], parent: QtCore.QObject):
        super().__init__(parent)
        self.keys = {seq[0].toCombined() for seq in keys if not seq.isEmpty()}  # type: ignore[index]
        self._watched: QtWidgets.QWidget | None = None
        app = QtWidgets.QApplication.instance()
        assert isinstance(app, QtWidgets.QApplication)
        app.focusChanged.connect(self._focus_changed)

    def _focus_changed(self, _old, new) -> None:
        if self._watched is not None:
            with contextlib.suppress(RuntimeError):       # the widget is gone already
                self._watched.removeEventFilter(self)
        self._watched = new if isinstance(new, TEXT_WIDGETS) else None
        if self._watched is not None:
            self._watched.installEventFilter(self)

    def eventFilter(self, watched: QtCore.QObject, event: QtCore.QEvent) -> bool:
        if event.type() == QtCore.QEvent.Type.ShortcutOverride and isinstance(event, QtGui.QKeyEvent) \
                and event.keyCombination().toCombined() in self.keys:
            return True      # left unaccepted: the shortcut runs the menu's action, not "end of line"
        return False
