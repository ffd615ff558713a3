"""A read-only table over a Python list: one row per item, a fixed tuple of column headers."""
from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt

from ..guard import guarded


class ListTableModel(QAbstractTableModel):
    columns: tuple[str, ...] = ()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.items: list = []

    @guarded(0)
    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.items)

    @guarded(0)
    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.columns)

    @guarded()
    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole \
                and 0 <= section < len(self.columns):
            return self.columns[section]
        return None
