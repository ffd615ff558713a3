"""What the console's checkable lists (Columns…, Add chart…) share: Return or a double click
toggles an item's check, and a search box hides the items that do not hold every typed word."""
from __future__ import annotations

from PySide6 import QtCore, QtWidgets


def toggle(item: QtWidgets.QListWidgetItem) -> None:
    checked = item.checkState() == QtCore.Qt.CheckState.Checked
    item.setCheckState(QtCore.Qt.CheckState.Unchecked if checked else QtCore.Qt.CheckState.Checked)


def show_matching(items: QtWidgets.QListWidget, text: str) -> None:
    """Hide the items whose text lacks one of the words typed (case-insensitive)."""
    words = text.casefold().split()
    for i in range(items.count()):
        items.setRowHidden(i, not all(w in items.item(i).text().casefold() for w in words))
