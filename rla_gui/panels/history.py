"""History: every run of the database, sortable and filterable, with open/clone/resume/archive/delete."""
from __future__ import annotations

import math
import time
from typing import cast

from PySide6 import QtCore, QtGui, QtWidgets

from rla_engine import metrics
from rla_engine.text import as_html, shown
from rla_engine.vocabulary import DAMAGED

COLUMNS = [("name", "name"), ("status", "status"), ("preset", "preset"), ("started", "started_at"),
           ("duration", "duration"), ("iter", "iteration"), ("success", metrics.SUCCESS),
           ("eval", metrics.EVAL_SUCCESS), ("μ", metrics.MU), ("difficulty", metrics.DIFFICULTY_MEAN), ("id", "id")]
STATUS_COLOURS = {"running": "#2ca02c", "paused": "#ff7f0e", "crashed": "#d62728", "failed": "#d62728",
                  DAMAGED: "#d62728"}


def duration_text(seconds: float | None) -> str:
    if seconds is None:
        return ""
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _damage_text(row: dict) -> str:
    damaged = row.get("damaged") or {}
    return ("damaged row: " + ", ".join(f"{column} holds {what}" for column, what in damaged.items())
            if damaged else "")


class RunsModel(QtCore.QAbstractTableModel):
    def __init__(self):
        super().__init__()
        self.rows: list[dict] = []

    def set_rows(self, rows: list[dict]) -> None:
        if [r["id"] for r in rows] == [r["id"] for r in self.rows]:
            self.rows = rows
            self.dataChanged.emit(self.index(0, 0), self.index(len(rows) - 1, len(COLUMNS) - 1))
        else:     # rows came or went: a reset (the panel re-selects by run id)
            self.beginResetModel()
            self.rows = rows
            self.endResetModel()

    def rowCount(self, parent=QtCore.QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QtCore.QModelIndex()) -> int:
        return len(COLUMNS)

    def headerData(self, section, orientation, role=QtCore.Qt.ItemDataRole.DisplayRole):
        if role == QtCore.Qt.ItemDataRole.DisplayRole and orientation == QtCore.Qt.Orientation.Horizontal:
            return COLUMNS[section][0]
        return None

    def data(self, index, role=QtCore.Qt.ItemDataRole.DisplayRole):
        row, (_, field) = self.rows[index.row()], COLUMNS[index.column()]
        value = row.get(field)
        if role == QtCore.Qt.ItemDataRole.UserRole:      # sort key: numbers as numbers
            unknown = value is None or (isinstance(value, float) and math.isnan(value))   # NaN: unreadable
            return float("-inf") if unknown else value
        if role == QtCore.Qt.ItemDataRole.ForegroundRole and field == "status" and value in STATUS_COLOURS:
            return QtGui.QBrush(QtGui.QColor(STATUS_COLOURS[value]))
        if role == QtCore.Qt.ItemDataRole.ToolTipRole:
            # as HTML that shows the text verbatim: Qt would take a note like "<b>…" for markup
            tip = "\n".join(filter(None, [_damage_text(row), row.get("error"), row.get("notes")]))
            return as_html(tip) if tip else None
        if role != QtCore.Qt.ItemDataRole.DisplayRole:
            return None
        if field in (row.get("damaged") or {}):     # a hand-edited row (see rla_engine/store/reads.py)
            return shown(row, field)
        if field == "started_at":
            return time.strftime("%Y-%m-%d %H:%M", time.localtime(value)) if value else ""
        if field == "duration":
            return duration_text(value)
        if isinstance(value, float):
            return f"{value:.3f}" if math.isfinite(value) else "?"
        return shown(row, field)          # names, presets, ids: control characters escaped


class RunsFilter(QtCore.QSortFilterProxyModel):
    """Matches the typed text in the visible columns, or — through the database's full-text
    index — in a run's notes and tags (`extra_ids`, filled asynchronously)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.text = ""
        self.extra_ids: set[str] = set()

    def _change(self, **state) -> None:
        # Qt ≥ 6.9 brackets a filter change (invalidateFilter is deprecated there)
        begin = getattr(self, "beginFilterChange", None)
        if begin is not None:
            begin()
        self.__dict__.update(state)
        if begin is not None:
            self.endFilterChange()
        else:
            self.invalidateFilter()

    def set_text(self, text: str) -> None:
        self._change(text=text.strip().lower())

    def set_extra_ids(self, ids: set[str]) -> None:
        self._change(extra_ids=ids)

    def filterAcceptsRow(self, row: int, parent) -> bool:
        if not self.text:
            return True
        rec = cast(RunsModel, self.sourceModel()).rows[row]
        if rec["id"] in self.extra_ids:
            return True
        hay = " ".join(str(rec.get(k) or "") for k in ("name", "status", "preset", "id", "notes", "tags")).lower()
        return self.text in hay


class HistoryPanel(QtWidgets.QWidget):
    open_requested = QtCore.Signal(str)
    compare_requested = QtCore.Signal(list)
    search_changed = QtCore.Signal(str)
    notes_edited = QtCore.Signal(str, str, list)       # run id, notes, tags
    clone_requested = QtCore.Signal(str)
    resume_requested = QtCore.Signal(str)
    archive_requested = QtCore.Signal(str, bool)
    delete_requested = QtCore.Signal(str)
    show_archived_changed = QtCore.Signal(bool)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.model = RunsModel()
        self.proxy = RunsFilter(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(QtCore.Qt.ItemDataRole.UserRole)
        self.table = QtWidgets.QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(3, QtCore.Qt.SortOrder.DescendingOrder)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.doubleClicked.connect(lambda _: self._emit(self.open_requested))
        self.filter = QtWidgets.QLineEdit()
        self.filter.setPlaceholderText("Find run (Ctrl+F): name, notes, tags, status, id…")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self.proxy.set_text)
        self.filter.textChanged.connect(self.search_changed)
        self.show_archived = QtWidgets.QCheckBox("archived")
        self.show_archived.toggled.connect(self.show_archived_changed)
        buttons = QtWidgets.QHBoxLayout()
        self.buttons = {}
        for label, signal in (("Open", self.open_requested), ("Clone config", self.clone_requested),
                              ("Resume", self.resume_requested), ("Delete…", self.delete_requested)):
            b = self.buttons[label] = QtWidgets.QPushButton(label)
            b.clicked.connect(lambda _=False, s=signal: self._emit(s))
            buttons.addWidget(b)
        archive = self.buttons["Archive"] = QtWidgets.QPushButton("Archive / restore")
        archive.clicked.connect(self._archive)
        buttons.addWidget(archive)
        compare = self.buttons["Compare"] = QtWidgets.QPushButton("Compare")
        compare.setToolTip("Overlay the selected runs (select two or more), or the selected run's group")
        compare.clicked.connect(self._compare)
        buttons.addWidget(compare)
        buttons.addStretch(1)
        self.notes = QtWidgets.QPlainTextEdit()
        self.notes.setPlaceholderText("Notes on the selected run")
        self.notes.setMaximumHeight(70)
        self.tags = QtWidgets.QLineEdit()
        self.tags.setPlaceholderText("tags, comma separated")
        self.save_notes = QtWidgets.QPushButton("Save notes")
        self.save_notes.clicked.connect(self._save_notes)
        notes_row = QtWidgets.QHBoxLayout()
        notes_row.addWidget(self.tags, 1)
        notes_row.addWidget(self.save_notes)
        top = QtWidgets.QHBoxLayout()
        top.addWidget(self.filter, 1)
        top.addWidget(self.show_archived)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(top)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        layout.addWidget(self.notes)
        layout.addLayout(notes_row)
        self._notes_for: list[str] = []
        self.table.selectionModel().selectionChanged.connect(lambda *_: self._show_notes())

    def set_runs(self, rows: list[dict]) -> None:
        """New rows from the database; the selection follows its runs, not its row numbers."""
        selected = self.selected_ids()
        self.model.set_rows(rows)
        if self.selected_ids() != selected:
            sel = self.table.selectionModel()
            sel.clearSelection()
            flags = QtCore.QItemSelectionModel.SelectionFlag.Select | QtCore.QItemSelectionModel.SelectionFlag.Rows
            for r, row in enumerate(self.model.rows):
                if row["id"] in selected:
                    sel.select(self.proxy.mapFromSource(self.model.index(r, 0)), flags)

    def selected_ids(self) -> list[str]:
        rows = {self.proxy.mapToSource(i).row() for i in self.table.selectionModel().selectedRows()}
        return [self.model.rows[r]["id"] for r in sorted(rows)]

    def select(self, run_id: str) -> None:
        for r, row in enumerate(self.model.rows):
            if row["id"] == run_id:
                self.table.selectRow(self.proxy.mapFromSource(self.model.index(r, 0)).row())
                return

    def save_state(self, settings: QtCore.QSettings) -> None:
        header = self.table.horizontalHeader()
        settings.setValue("history/sort_column", header.sortIndicatorSection())
        settings.setValue("history/sort_descending", header.sortIndicatorOrder() == QtCore.Qt.SortOrder.DescendingOrder)
        settings.setValue("history/show_archived", self.show_archived.isChecked())

    def restore_state(self, settings: QtCore.QSettings) -> None:
        """The sort the user chose last time (newest first until then), and whether archived runs show."""
        column = cast(int, settings.value("history/sort_column", 3, type=int))
        descending = cast(bool, settings.value("history/sort_descending", True, type=bool))
        if 0 <= column < self.model.columnCount():
            order = QtCore.Qt.SortOrder.DescendingOrder if descending else QtCore.Qt.SortOrder.AscendingOrder
            self.table.sortByColumn(column, order)
        self.show_archived.setChecked(cast(bool, settings.value("history/show_archived", False, type=bool)))

    def focus_search(self) -> None:
        self.filter.setFocus()
        self.filter.selectAll()

    def show_matches(self, query: str, ids: set[str]) -> None:
        """Runs whose notes or tags match `query` (full-text search), shown beside the filter's own
        matches — unless a later keystroke has already overtaken that query."""
        if self.filter.text() == query:
            self.proxy.set_extra_ids(ids)

    def _emit(self, signal) -> None:
        ids = self.selected_ids()
        if ids:
            signal.emit(ids[0])

    def _compare(self) -> None:
        ids = self.selected_ids()
        if len(ids) == 1:      # one run of a group: compare the whole group
            group = next(r for r in self.model.rows if r["id"] == ids[0]).get("group_id")
            ids = [r["id"] for r in self.model.rows if group and r.get("group_id") == group] or ids
        if len(ids) >= 2:
            self.compare_requested.emit(ids)

    def _show_notes(self) -> None:
        ids = self.selected_ids()
        if ids[:1] == self._notes_for:
            return      # same run still selected: keep what the user is typing
        self._notes_for = ids[:1]
        row = next((r for r in self.model.rows if ids and r["id"] == ids[0]), None)
        self.notes.setPlainText((row or {}).get("notes") or "")
        self.tags.setText((row or {}).get("tags") or "")
        self.save_notes.setEnabled(row is not None)

    def _save_notes(self) -> None:
        ids = self.selected_ids()
        if ids:
            tags = [t.strip() for t in self.tags.text().split(",") if t.strip()]
            self.notes_edited.emit(ids[0], self.notes.toPlainText(), tags)

    def _archive(self) -> None:
        for run_id in self.selected_ids():
            row = next(r for r in self.model.rows if r["id"] == run_id)
            self.archive_requested.emit(run_id, not row.get("archived"))
