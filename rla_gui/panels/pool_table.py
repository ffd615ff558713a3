"""Task-pool table: one line per slot of the adaptive pool, with its pending candidate (DESIGN §6).

Fed with store task rows (`Store.tasks(run_id, [TaskStatus.ACTIVE, TaskStatus.PENDING])`) on every poll. The
model keeps the user's sort and scroll: a refresh with the same slots only emits dataChanged;
a changed slot set emits layoutChanged with the persistent indexes moved by slot, so a selected
slot stays selected.
"""
from __future__ import annotations

import json
import math

from PySide6.QtCore import QModelIndex, QSize, QSortFilterProxyModel, Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import (QAbstractItemView, QHeaderView, QLabel, QStyle, QStyleOptionHeader, QTableView,
                               QVBoxLayout, QWidget)

from rla_engine.text import as_html
from rla_engine.vocabulary import TaskStatus

from ..guard import guarded
from ..widgets.list_model import ListTableModel

from typing import TYPE_CHECKING

if TYPE_CHECKING:       # the session is only ever passed in
    from ..session import RunSession

# Short headers so every column fits the dock's default width (~330 px) with nothing elided;
# each header's tooltip says what its column holds.
COLUMNS = ("Slot", "Family", "Ver.", "Diff.", "Last acc", "Pending", "Pend. d")
HEADER_TIPS = ("Slot of the task pool (the pool's size is constant during a run).",
               "Task family.",
               "Version of the slot's task: how many times its task has been replaced.",
               "Difficulty of the slot's active task, 0 (easiest) to 1.",
               "Last accuracy: the share of the task's latest rollouts that succeeded.",
               "A candidate the environment model proposed for this slot, harder or easier, waiting for "
               "its check.",
               "Difficulty of the pending candidate.")
FAMILY_COLUMN = 1
ARROWS = {"harder": "harder ↑", "easier": "easier ↓"}
SORT_ROLE = Qt.ItemDataRole.UserRole
_MISSING = float("-inf")     # sorts empty numeric cells together, below every real value


def _num(v) -> float | None:
    """A finite number, else None (also an integer no float holds: a hand-edited 10**400)."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return None
    try:
        x = float(v)
    except OverflowError:
        return None
    return x if math.isfinite(x) else None


def _fmt(v, digits: int = 2) -> str:
    x = _num(v)
    return "—" if x is None else f"{x:.{digits}f}"


def pool_lines(rows: list[dict]) -> list[dict]:
    """Merge active and pending rows into one line per slot, sorted by slot. The active row's
    own `direction` is the history of how it got there, not a pending change, so only a
    pending row fills the pending columns."""
    lines: dict[int, dict] = {}
    for r in rows:
        slot = r.get("slot")
        if not isinstance(slot, int):
            continue
        line = lines.setdefault(slot, {"slot": slot, "family": r.get("family"), "version": None,
                                       "difficulty": None, "last_acc": None, "pending": None,
                                       "pending_difficulty": None, "params": None})
        if r.get("status") == TaskStatus.PENDING:
            line["pending"] = r.get("direction")
            line["pending_difficulty"] = r.get("difficulty")
        elif r.get("status") == TaskStatus.ACTIVE:
            line.update(family=r.get("family"), version=r.get("version"), difficulty=r.get("difficulty"),
                        last_acc=r.get("last_acc"), params=r.get("params_json"))
    return [lines[s] for s in sorted(lines)]


class PoolTableModel(ListTableModel):
    columns = COLUMNS

    def line(self, row: int) -> dict:
        return self.items[row]

    @guarded()
    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.ToolTipRole:
            return HEADER_TIPS[section] if 0 <= section < len(HEADER_TIPS) else None
        return super().headerData(section, orientation, role)

    def families(self) -> list[str]:
        return sorted({line["family"] or "" for line in self.items})

    @guarded()
    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        line, col = self.items[index.row()], index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._display(line, col)
        if role == SORT_ROLE:
            return self._sort_key(line, col)
        if role == Qt.ItemDataRole.TextAlignmentRole and col not in (1, 5):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole and line["params"]:
            return self._params_tip(line["params"])
        return None

    @staticmethod
    def _display(line: dict, col: int) -> str:
        if col == 0:
            return str(line["slot"])
        if col == 1:
            return line["family"] or ""
        if col == 2:
            return "—" if line["version"] is None else f"v{line['version']}"
        if col == 3:
            return _fmt(line["difficulty"])
        if col == 4:
            return _fmt(line["last_acc"])
        if col == 5:
            return ARROWS.get(line["pending"], line["pending"] or "")
        return "" if line["pending"] is None else _fmt(line["pending_difficulty"])

    @staticmethod
    def _sort_key(line: dict, col: int):
        """Numbers sort as numbers (slot 10 after slot 2; full precision, not the 2-decimal text)."""
        key = ("slot", "family", "version", "difficulty", "last_acc", "pending", "pending_difficulty")[col]
        v = line[key]
        if col in (1, 5):
            return v or ""
        x = _num(v)
        return _MISSING if x is None else x

    @staticmethod
    def _params_tip(params_json: str) -> str:
        """The task's parameters, verbatim (a tooltip guesses markup: `<img …>` in a parameter is text)."""
        try:
            text = json.dumps(json.loads(params_json), indent=1)
        except (TypeError, ValueError):
            text = str(params_json)
        return as_html(text)

    @guarded()
    def set_rows(self, rows: list[dict]) -> None:
        new = pool_lines(rows)
        if [row["slot"] for row in new] == [row["slot"] for row in self.items]:
            self.items = new
            if new:   # in place: the view keeps its sort, scroll and selection untouched
                self.dataChanged.emit(self.index(0, 0), self.index(len(new) - 1, len(COLUMNS) - 1))
            return
        self.layoutAboutToBeChanged.emit()
        try:       # a layout change that began ends (guard.resetting's rule)
            old_slots = [row["slot"] for row in self.items]
            row_of = {row["slot"]: i for i, row in enumerate(new)}
            olds = self.persistentIndexList()
            targets = [row_of.get(old_slots[i.row()]) if 0 <= i.row() < len(old_slots) else None for i in olds]
            self.items = new
            # indexes follow their slot to its new row (built after the swap: index() checks the
            # new row count); a slot that left takes its indexes with it
            self.changePersistentIndexList(olds, [QModelIndex() if r is None else self.index(r, i.column())
                                                  for i, r in zip(olds, targets)])
        finally:
            self.layoutChanged.emit()


class SortedOnlyHeader(QHeaderView):
    """A header that makes room for the sort arrow only in the sorted column. Qt's own sizes
    every section as if it bore the arrow (about 20 px each), which alone pushed the last
    columns out of a 330 px dock."""

    def sectionSizeFromContents(self, logicalIndex: int) -> QSize:
        if self.isSortIndicatorShown() and logicalIndex == self.sortIndicatorSection():
            return super().sectionSizeFromContents(logicalIndex)
        opt = QStyleOptionHeader()
        self.initStyleOption(opt)
        opt.section = logicalIndex
        opt.text = str(self.model().headerData(logicalIndex, self.orientation()) or "")
        bold = QFont(self.font())
        bold.setBold(True)             # as Qt measures it: the pressed or current section is bold
        opt.fontMetrics = QFontMetrics(bold)
        opt.sortIndicator = QStyleOptionHeader.SortIndicator.None_
        return self.style().sizeFromContents(QStyle.ContentsType.CT_HeaderSection, opt, QSize(), self)


class PoolTablePanel(QWidget):
    """A sortable table of the pool: slot, family, version, difficulty, last accuracy and the
    pending candidate (direction, difficulty)."""

    def __init__(self, session: RunSession | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.model = PoolTableModel(self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(SORT_ROLE)
        self.proxy.setDynamicSortFilter(True)   # an update re-sorts under the user's chosen column
        self.view = QTableView(self)
        header = SortedOnlyHeader(Qt.Orientation.Horizontal, self.view)
        header.setSectionsClickable(True)       # as the view's own header: a click sorts
        header.setHighlightSections(True)
        self.view.setHorizontalHeader(header)
        self.view.setModel(self.proxy)
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.view.setAlternatingRowColors(True)
        self.view.verticalHeader().setVisible(False)
        # Sized to contents, never below a header's text: a column too wide for the dock scrolls,
        # it is not cut to "Las…". No stretched last section: Qt keeps it at least 100 px wide.
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        # the header and a line at least (not Qt's 70 px): the right-hand docks fit a 600 px tall window
        self.view.setMinimumHeight(header.sizeHint().height() + self.view.verticalHeader().defaultSectionSize()
                                   + 2 * self.view.frameWidth())
        self.caption = QLabel(self)
        self.caption.setObjectName("pool_caption")
        self.caption.setTextFormat(Qt.TextFormat.PlainText)
        self.caption.setContentsMargins(4, 2, 4, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.caption)
        layout.addWidget(self.view)
        self._show_family()
        if session is not None:
            session.cleared.connect(lambda: self.set_rows([]))
            session.pool_changed.connect(self.set_rows)

    def set_rows(self, rows: list[dict]) -> None:
        self.model.set_rows(rows)
        self._show_family()

    def _show_family(self) -> None:
        """A run's pool holds one family: it is said once above the table instead of on every line,
        which leaves the width to the numbers. Lines of several families bring the column back."""
        families = self.model.families()
        lines = self.model.rowCount()
        pending = sum(1 for line in self.model.items if line["pending"] is not None)
        self.view.setColumnHidden(FAMILY_COLUMN, len(families) <= 1)
        name = families[0] if len(families) == 1 else f"{len(families)} families" if families else "no tasks yet"
        self.caption.setText(f"{name} · {lines} slots · {pending} pending" if lines else name)
        self.caption.setToolTip(HEADER_TIPS[FAMILY_COLUMN] if len(families) == 1 else "")

    def visible_lines(self) -> list[dict]:
        """The lines in the order the user sees them (after sorting)."""
        return [self.model.line(self.proxy.mapToSource(self.proxy.index(r, 0)).row())
                for r in range(self.proxy.rowCount())]
