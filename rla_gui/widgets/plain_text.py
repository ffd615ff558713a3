"""Text that came from data (metric keys, run names, notes, tags, config values, event payloads,
model samples), shown as written: the one home of how each kind of Qt or pyqtgraph sink is fed.

Anyone can write that text (an imported file, a hand edit, a model's answer), and Qt guesses:
a label or tooltip whose first line looks like markup is rendered as HTML (`<img src=…>` loads a
local file, `<font size=7>` spoofs what is read, `&lt;` turns into `<`); pyqtgraph's titles,
axis labels and legends are HTML always; and a button, menu entry or tab takes `&` as the mark
of its shortcut letter (`a&b` reads "ab", with the b underlined).
"""
from __future__ import annotations

import html
from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from rla_engine.text import as_html, printable


def html_text(text: Any) -> str:
    """`text` escaped for a sink that always reads HTML (pyqtgraph's LabelItem, legends, axis
    labels): it shows literally, control characters made visible."""
    return html.escape(printable(text))


def auto_text(text: Any) -> str:
    """`text` for a sink that guesses (a tooltip, a message box, a dialog's label): as it is when
    Qt would show it plain anyway, else as HTML that shows it verbatim. Line breaks are kept."""
    s = printable(text, keep="\n")
    return as_html(s) if QtGui.Qt.mightBeRichText(s) else s


def set_tooltip(widget: QtWidgets.QWidget | QtGui.QAction, text: Any) -> None:
    """A tooltip showing `text` as written."""
    widget.setToolTip(auto_text(text) if text else "")


def plain_label(text: Any = "", parent: QtWidgets.QWidget | None = None) -> QtWidgets.QLabel:
    """A label that never reads its text as markup."""
    label = QtWidgets.QLabel(parent)
    label.setTextFormat(QtCore.Qt.TextFormat.PlainText)
    label.setText(printable(text, keep="\n"))
    return label


def action_text(text: Any) -> str:
    """`text` for a button, menu entry or tab: `&` doubled so that it shows, not a shortcut mark."""
    return printable(text).replace("&", "&&")


def message_box(icon: QtWidgets.QMessageBox.Icon, title: str, text: Any,
                parent: QtWidgets.QWidget | None = None) -> QtWidgets.QMessageBox:
    """A message box whose text and informative text (a run's name, a path, a log's last line)
    never read as markup."""
    box = QtWidgets.QMessageBox(icon, title, printable(text, keep="\n"), parent=parent)
    box.setTextFormat(QtCore.Qt.TextFormat.PlainText)
    return box
