"""History grouped by a column: a tree of groups (a parent row each, with its count and the mean ±
std of every metric column) over their runs. The cells of a run are the flat table's own
(runs_model.cell); sorting orders the groups by the column's mean (a text column:
by its first value) and the runs within each group, missing values last."""
from __future__ import annotations

from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from rla_engine.spread import Spread
from rla_engine.text import as_html, counted

from ..guard import guarded, resetting
from ..model.run_columns import Column, Group, group_rows, mean_std_text, missing, ordered
from .runs_model import ColumnHeaders, cell, fill_roles

Role = QtCore.Qt.ItemDataRole
TOP = 0          # internal id of a group's index; a run's is its group's row + 1
# the roles a row answers (a view asks a dozen per cell and paint; each question is a call into Python)
ROLES = frozenset({Role.DisplayRole, Role.UserRole, Role.ToolTipRole, Role.ForegroundRole, Role.TextAlignmentRole,
                   Role.FontRole, Role.DecorationRole})
STATS_TIP = "mean ± sample standard deviation over the group's runs"
MIXED_MARK = "⚠ mixes "       # a group's row, when its runs are not repeats of one setup
MIXED_COLOUR = "#b35900"
NOWHERE = QtCore.QModelIndex()


class GroupTreeModel(ColumnHeaders, QtCore.QAbstractItemModel):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.columns: list[Column] = []
        self.groups: list[Group] = []
        self.by: Column | None = None
        self._stats: list[dict[int, Spread] | None] = []
        self._mixes: list[list[str] | None] = []

    @guarded()
    def rebuild(self, rows: list[dict], columns: list[Column], by: Column, sort: int, descending: bool) -> None:
        """Group `rows` (already filtered) by `by`, sorted by column `sort`; a model reset (the
        history restores what was expanded and selected). The groups are made before the reset
        begins: should that fail, the tree keeps the groups it had."""
        groups = self._grouped(rows, columns, by, sort, descending)
        with resetting(self):
            self.columns, self.by, self.groups = columns, by, groups
            self._stats = [None] * len(groups)
            self._mixes = [None] * len(groups)

    def _grouped(self, rows: list[dict], columns: list[Column], by: Column, sort: int, descending: bool) -> list[Group]:
        groups = group_rows(rows, by)
        if 0 <= sort < len(columns):
            column = columns[sort]
            for g in groups:
                g.members = ordered(g.members, column.value, descending)
            if column.id != by.id:
                groups = ordered(groups, lambda g: self._group_value(g, column), descending)
            elif descending:
                groups = ordered(groups, lambda g: g.value, True)
        return groups

    @staticmethod
    def _group_value(group: Group, column: Column) -> Any:
        if column.is_metric:
            return group.stats(column).mean
        return next((v for v in map(column.value, group.members) if not missing(v)), None)

    # -- the tree ---------------------------------------------------------------------------
    @guarded(NOWHERE)
    def index(self, row: int, column: int, parent=QtCore.QModelIndex()) -> QtCore.QModelIndex:
        # the bounds checked here, not by hasIndex: that asks rowCount and columnCount back through Python
        if parent.isValid():
            if parent.internalId() != TOP or parent.column() != 0:
                return QtCore.QModelIndex()
            rows, of = len(self.groups[parent.row()].members), parent.row() + 1
        else:
            rows, of = len(self.groups), TOP
        if not (0 <= row < rows and 0 <= column < len(self.columns)):
            return QtCore.QModelIndex()
        return self.createIndex(row, column, of)

    @guarded(NOWHERE)
    def parent(self, index=QtCore.QModelIndex()) -> QtCore.QModelIndex:  # type: ignore[override]
        if not index.isValid() or index.internalId() == TOP:
            return QtCore.QModelIndex()
        return self.createIndex(int(index.internalId()) - 1, 0, TOP)

    @guarded(0)
    def rowCount(self, parent=QtCore.QModelIndex()) -> int:
        if not parent.isValid():
            return len(self.groups)
        if parent.internalId() == TOP and parent.column() == 0:
            return len(self.groups[parent.row()].members)
        return 0


    def group_of(self, index: QtCore.QModelIndex) -> Group | None:
        """The group a parent row shows (None for a run's row)."""
        return self.groups[index.row()] if index.isValid() and index.internalId() == TOP else None

    def run_of(self, index: QtCore.QModelIndex) -> dict | None:
        if not index.isValid() or index.internalId() == TOP:
            return None
        return self.groups[int(index.internalId()) - 1].members[index.row()]

    @guarded()
    def data(self, index, role=Role.DisplayRole):
        if role not in ROLES:
            return None
        of = index.internalId()
        if of != TOP:
            return cell(self.groups[of - 1].members[index.row()], self.columns[index.column()], role)
        if index.column() == 0:
            return self._group_cell(index.row(), role)
        if role == Role.DisplayRole:
            spread = self.stats(index.row()).get(index.column())
            return "" if spread is None else mean_std_text(spread, self.columns[index.column()].is_count)
        if role == Role.FontRole:
            return _bold()
        if role == Role.ToolTipRole and (spread := self.stats(index.row()).get(index.column())) is not None:
            return spread.problem or STATS_TIP      # plain words, no markup: never taken for rich text
        return None

    def _group_cell(self, row: int, role: int):
        """A group's first cell: its label and count, and a warning when its runs differ in preset
        or budget (the tooltip says what differs): their mean is no repeat's mean."""
        group, mixes = self.groups[row], self.mixes(row)
        if role == Role.DisplayRole:
            text = f"{group.label}   ({counted(len(group.members), 'run')})"
            return f"{text}   {MIXED_MARK}{', '.join(m.split(':')[0] for m in mixes)}" if mixes else text
        if role == Role.FontRole:
            return _bold()
        if not mixes:
            return None
        if role == Role.ToolTipRole:      # presets come from data: shown verbatim, never as markup
            return as_html("Its runs are not repeats of one setup; their mean mixes\n" + "\n".join(mixes))
        if role == Role.ForegroundRole:
            return QtGui.QBrush(QtGui.QColor(MIXED_COLOUR))
        if role == Role.DecorationRole:
            return QtWidgets.QApplication.style().standardIcon(QtWidgets.QStyle.StandardPixmap.SP_MessageBoxWarning)
        return None

    def mixes(self, row: int) -> list[str]:
        """What the group's runs differ in of preset and budget, read when first shown."""
        mixes = self._mixes[row]
        if mixes is None:
            mixes = self._mixes[row] = self.groups[row].mixes()
        return mixes

    @guarded()
    def multiData(self, index, roles) -> None:
        """All roles of a cell in one call (see history.fill_roles); a group's row asks `data`."""
        of = index.internalId()
        if of != TOP:
            fill_roles(roles, self.groups[of - 1].members[index.row()], self.columns[index.column()])
            return
        for wanted in roles:
            value = self.data(index, wanted.role())
            if value is None:
                wanted.clearData()
            else:
                wanted.setData(value)

    def stats(self, row: int) -> dict[int, Spread]:
        """A group's mean ± std per metric column, computed when first shown (most groups of a
        long history are scrolled away)."""
        stats = self._stats[row]
        if stats is None:
            group = self.groups[row]
            stats = self._stats[row] = {i: group.stats(c) for i, c in enumerate(self.columns) if c.is_metric}
        return stats

    # -- finding rows again after a rebuild -------------------------------------------------------
    def group_index(self, key: str) -> QtCore.QModelIndex:
        row = next((i for i, g in enumerate(self.groups) if g.key == key), None)
        return self.index(row, 0) if row is not None else QtCore.QModelIndex()

    def run_index(self, run_id: str) -> QtCore.QModelIndex:
        for gi, g in enumerate(self.groups):
            for ri, r in enumerate(g.members):
                if r["id"] == run_id:
                    return self.index(ri, 0, self.index(gi, 0))
        return QtCore.QModelIndex()


def _bold() -> QtGui.QFont:
    font = QtGui.QFont()
    font.setBold(True)
    return font


class GroupTree(QtWidgets.QTreeView):
    """The tree of groups; its header sorts (the history regroups on a click)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setUniformRowHeights(True)         # no per-row size queries: 1,000 runs lay out at once
        self.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setAlternatingRowColors(True)
        header = self.header()
        header.setSectionsClickable(True)
        header.setSortIndicatorShown(True)
        header.setStretchLastSection(True)
