"""History's runs as Qt models: a row per run with its cells (the fixed columns, the chosen ones),
sorted by the model itself, and the filter box's proxy (text, notes and tags, column conditions)."""
from __future__ import annotations

import math
from typing import cast

from PySide6 import QtCore, QtGui

from rla_engine.summary import BEST, FINAL, LARGE, figure, local_time
from rla_engine.text import as_html, shown
from rla_engine.vocabulary import DAMAGED, Status

from ..guard import guarded, resetting
from ..model import run_columns
from ..model.run_columns import (FIELD, FIXED, Column, Condition, accepts, missing, number, ordered,
                                 parse_filter, value_text)

COLUMNS = [(c.title, c.key) for c in FIXED]       # (header, field of the summary row): the fixed columns
STATUS_COLOURS = {Status.RUNNING: "#2ca02c", Status.PAUSED: "#ff7f0e", Status.CRASHED: "#d62728",
                  Status.FAILED: "#d62728", DAMAGED: "#d62728"}
Role = QtCore.Qt.ItemDataRole
RIGHT = QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter
# the roles a cell answers: a view asks a dozen per cell and paint, and each question is a call into Python
ROLES = frozenset({Role.DisplayRole, Role.UserRole, Role.ToolTipRole, Role.ForegroundRole, Role.TextAlignmentRole})
INT64 = 2 ** 63         # a Python int from here on does not fit the 64-bit integer a Qt variant holds
ARCHIVED_MARK = " (archived)"      # the status cell of a run shown with "archived" checked
ARCHIVED_COLOUR = "#8c8c8c"        # an archived run's row, greyed
# what a chosen metric column's figure is: the one definition every table shows (summary.Reduction)
REDUCTIONS = {run_columns.FINAL: FINAL, run_columns.BEST: BEST}


def column_tip(column: Column) -> str | None:
    """A header's tooltip: what "final" or "best" means, as the comparison and the reports say it."""
    reduction = REDUCTIONS.get(column.kind)
    return f"{reduction.name}: {reduction.definition}" if reduction else None


def archived(row: dict) -> bool:
    return row.get("archived") == 1


def duration_text(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if abs(seconds) >= LARGE or not math.isfinite(seconds):     # huge first: isfinite(10**400) raises
        return "?"      # a hand-edited time: no clock reads it
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _damage_text(row: dict) -> str:
    damaged = row.get("damaged") or {}
    return ("damaged row: " + ", ".join(f"{column} holds {what}" for column, what in damaged.items())
            if damaged else "")


def cell(row: dict, column: Column, role: int):
    """What a run's row shows in `column` for `role` (the flat table's and the tree's runs)."""
    if role not in ROLES:
        return None
    value = column.value(row)
    if role == Role.UserRole:      # a sort value: numbers as numbers (the model sorts by `ordered`)
        return _sort_value(value)
    if role == Role.ToolTipRole:
        # as HTML that shows the text verbatim: Qt would take a note like "<b>…" for markup
        tip = "\n".join(filter(None, [_damage_text(row), row.get("error"), row.get("notes")]))
        return as_html(tip) if tip else None
    field = column.key if column.kind == FIELD else None
    if role == Role.ForegroundRole:
        return _colour(row, field, value)
    if role == Role.TextAlignmentRole and column.kind != FIELD and number(value) is not None:
        return RIGHT
    if role != Role.DisplayRole:
        return None
    if field is None:
        return value_text(column, value)
    if field == "status" and archived(row):      # shown with "archived" checked: said so, beside its state
        return shown(row, field) + ARCHIVED_MARK
    return _field_text(row, field, value)


def _colour(row: dict, field: str | None, value) -> QtGui.QBrush | None:
    """An archived run's row greyed; a status in its colour."""
    if archived(row):
        return QtGui.QBrush(QtGui.QColor(ARCHIVED_COLOUR))
    if field == "status" and value in STATUS_COLOURS:
        return QtGui.QBrush(QtGui.QColor(STATUS_COLOURS[value]))
    return None


def _field_text(row: dict, field: str, value) -> str:
    if field in (row.get("damaged") or {}):     # a hand-edited row (see rla_engine/store/reads.py)
        return shown(row, field)
    if field == "started_at":
        return local_time(value) if value else ""
    if field == "duration":
        return duration_text(value)
    if isinstance(value, float):
        return figure(value, grouped=False)      # 1.5e+308, not 309 digits; "?" for inf and NaN
    return shown(row, field)          # names, presets, ids: control characters escaped


def _sort_value(value):
    """A cell's value as a Qt variant holds it: an unreadable one (None, NaN) lowest, an integer
    too large for 64 bits (a hand-edited 10**400) as a float, or ±inf where no float holds it."""
    if missing(value):
        return float("-inf")
    if type(value) is int and not -INT64 <= value < INT64:
        n = number(value)
        return n if n is not None else math.inf if value > 0 else -math.inf
    return value


def fill_roles(roles, row: dict, column: Column) -> None:
    """Every role a view asks of one cell in one call: a painted cell is one call into Python,
    not seven (1,000 runs sort and paint in well under 100 ms)."""
    for wanted in roles:
        role = wanted.role()
        value = cell(row, column, role) if role in ROLES else None
        if value is None:
            wanted.clearData()
        else:
            wanted.setData(int(value) if role == Role.TextAlignmentRole else value)


class ColumnHeaders:
    """The columns and headers of History's flat table and grouped tree (the same for both): each
    column's title, and its definition as the tooltip."""
    columns: list[Column]

    @guarded(0)
    def columnCount(self, parent=QtCore.QModelIndex()) -> int:
        return len(self.columns)

    @guarded()
    def headerData(self, section, orientation, role=Role.DisplayRole):
        if orientation != QtCore.Qt.Orientation.Horizontal or not 0 <= section < len(self.columns):
            return None
        if role == Role.DisplayRole:
            return self.columns[section].title
        return column_tip(self.columns[section]) if role == Role.ToolTipRole else None


class RunsModel(ColumnHeaders, QtCore.QAbstractTableModel):
    """The runs in the order of the sorted column. It sorts itself (`ordered`: one key per row,
    Python's sort), not through the proxy, which would call back into Python for every comparison."""

    def __init__(self):
        super().__init__()
        self.rows: list[dict] = []
        self.columns: list[Column] = list(FIXED)
        self.sort_column, self.descending = -1, False     # the order rows came in until sorted

    @guarded()
    def set_columns(self, columns: list[Column]) -> None:
        with resetting(self):
            self.columns = columns
            if self.sort_column >= len(columns):
                self.sort_column = -1

    @guarded()
    def set_rows(self, rows: list[dict]) -> None:
        rows = self._ordered(rows)
        ids, old = [r["id"] for r in rows], [r["id"] for r in self.rows]
        if ids == old:
            self.rows = rows
            self.dataChanged.emit(self.index(0, 0), self.index(len(rows) - 1, len(self.columns) - 1))
        elif sorted(ids) == sorted(old):     # the same runs in a new order: the selection follows them
            self._relayout(rows)
        else:     # rows came or went: a reset (the panel re-selects by run id)
            with resetting(self):
                self.rows = rows

    @guarded()
    def sort(self, column: int, order=QtCore.Qt.SortOrder.AscendingOrder) -> None:
        descending = order == QtCore.Qt.SortOrder.DescendingOrder
        if (column, descending) == (self.sort_column, self.descending):
            return      # already in this order (set_rows keeps it): QTableView asks twice per sortByColumn
        self.sort_column, self.descending = column, descending
        self._relayout(self._ordered(self.rows))

    def _ordered(self, rows: list[dict]) -> list[dict]:
        if not 0 <= self.sort_column < len(self.columns):
            return list(rows)
        return ordered(list(rows), self.columns[self.sort_column].value, self.descending)

    def _relayout(self, rows: list[dict]) -> None:
        self.layoutAboutToBeChanged.emit()
        try:       # a layout change that began ends, as a reset does (guard.resetting)
            old = self.persistentIndexList()
            ids = [self.rows[i.row()]["id"] for i in old]
            self.rows = rows
            where = {r["id"]: n for n, r in enumerate(rows)}
            gone = QtCore.QModelIndex()
            self.changePersistentIndexList(old, [self.index(where[rid], i.column()) if rid in where else gone
                                                 for rid, i in zip(ids, old)])
        finally:
            self.layoutChanged.emit()

    @guarded(0)
    def rowCount(self, parent=QtCore.QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    @guarded()
    def data(self, index, role=Role.DisplayRole):
        return cell(self.rows[index.row()], self.columns[index.column()], role)

    @guarded()
    def multiData(self, index, roles) -> None:
        fill_roles(roles, self.rows[index.row()], self.columns[index.column()])


class RunsFilter(QtCore.QSortFilterProxyModel):
    """Matches the typed text in the visible columns, or — through the database's full-text
    index — in a run's notes and tags (`extra_ids`, filled asynchronously). Words such as
    `policy.lam=0.5` or `final:eval/success_rate>0.3` filter by that column. Sorting is the
    source model's own."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.raw = ""
        self.text = ""
        self.conditions: list[Condition] = []
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

    @guarded()
    def set_text(self, text: str) -> None:
        words, conditions = parse_filter(text, self._columns())
        self._change(raw=text, text=words, conditions=conditions)

    def reparse(self) -> None:
        """The columns changed: a word may name one now (or no longer)."""
        self.set_text(self.raw)

    def set_extra_ids(self, ids: set[str]) -> None:
        self._change(extra_ids=ids)

    @guarded()
    def sort(self, column: int, order=QtCore.Qt.SortOrder.AscendingOrder) -> None:
        cast(RunsModel, self.sourceModel()).sort(column, order)

    def _columns(self) -> list[Column]:
        model = self.sourceModel()
        return model.columns if isinstance(model, RunsModel) else list(FIXED)

    def accepts(self, rec: dict) -> bool:
        # a run chosen by hand (extra_ids) stays in view whatever the searched text
        text = "" if rec["id"] in self.extra_ids else self.text
        return accepts(rec, text, self.conditions, self._columns())

    @guarded(True)      # a row whose test fails is shown, not hidden
    def filterAcceptsRow(self, row: int, parent) -> bool:
        return self.accepts(cast(RunsModel, self.sourceModel()).rows[row])
