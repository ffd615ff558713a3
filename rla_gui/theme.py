"""Light/dark: Qt widgets follow the OS by themselves; plots are told here, before they are built."""
from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from .widgets import finite_range


def is_dark() -> bool:
    app = QtWidgets.QApplication.instance()
    return isinstance(app, QtWidgets.QApplication) and app.styleHints().colorScheme() == QtCore.Qt.ColorScheme.Dark


def apply_plot_theme() -> None:
    dark = is_dark()
    pg.setConfigOptions(background="#1e1e1e" if dark else "w", foreground="#dddddd" if dark else "#333333",
                        antialias=False)
    finite_range.install()      # values near the largest float: no "Cannot set range [-inf, inf]"
