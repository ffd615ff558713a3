"""History: every run of the database, sortable and filterable, with open/clone/resume/archive/delete;
columns a person chooses (Columns…: configuration fields, metrics' final and best values),
remembered per database, and the runs grouped by a column (a tree with each group's mean ± std)."""
from __future__ import annotations

import json
from typing import cast

from PySide6 import QtCore, QtGui, QtWidgets

from ..guard import guarded
from ..widgets.column_chooser import ColumnChooser, choices
from ..model.database_settings import DatabaseSettings
from ..model.location import Location
from ..model.run_columns import FIELD, FIXED, RUN, RUN_COLUMNS, Column, parse
from .run_groups import GroupTree, GroupTreeModel
from .runs_model import COLUMNS, Role, RunsFilter, RunsModel, duration_text

__all__ = ["COLUMNS", "HistoryPanel", "RunsFilter", "RunsModel", "duration_text"]

NOTES_SAVE_MS = 800      # notes and tags are saved this long after the last keystroke
BUTTONS_PER_ROW = 2      # History's buttons in rows of two: its dock fits beside the run in an 800 px window
NOTES_FRAME = 12         # the notes box's frame and document margins, around its lines


class HistoryPanel(QtWidgets.QWidget):
    open_requested = QtCore.Signal(str)
    compare_requested = QtCore.Signal(list)
    group_compare_requested = QtCore.Signal(str, list)     # the grouping column's id, [(label, [run id…])…]
    search_changed = QtCore.Signal(str)
    notes_edited = QtCore.Signal(str, str, list)       # run id, notes, tags
    clone_requested = QtCore.Signal(str)
    resume_requested = QtCore.Signal(str)
    archive_requested = QtCore.Signal(str, bool)
    delete_requested = QtCore.Signal(str)
    show_archived_changed = QtCore.Signal(bool)
    columns_changed = QtCore.Signal(list)              # the chosen columns' ids: their values are to be read
    choices_requested = QtCore.Signal()                # Columns…: the database's fields and keys are wanted

    def __init__(self, parent=None):
        super().__init__(parent)
        self.model = RunsModel()
        self.proxy = RunsFilter(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(Role.UserRole)
        self.table = QtWidgets.QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(3, QtCore.Qt.SortOrder.DescendingOrder)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.doubleClicked.connect(lambda _: self._emit(self.open_requested))
        self.groups = GroupTreeModel(self)
        self.tree = GroupTree()
        self.tree.setModel(self.groups)
        self.tree.header().sortIndicatorChanged.connect(lambda *_: self._regroup())
        self.tree.doubleClicked.connect(self._open_from_tree)
        self._collapsed: set[str] = set()       # groups open unless the person closed them
        self.tree.collapsed.connect(lambda i: self._opened(i, False))
        self.tree.expanded.connect(lambda i: self._opened(i, True))
        self.views = QtWidgets.QStackedWidget()
        self.views.addWidget(self.table)
        self.views.addWidget(self.tree)
        self.group_by: Column | None = None
        self.chosen: list[Column] = []
        self._widths: dict[str, int] = {}       # column id -> the width it was given (kept across restarts)
        self._fitted_groups: tuple = ()      # the groups the tree's widths were last fitted to
        self.chooser: ColumnChooser | None = None
        self._remembered: DatabaseSettings | None = None     # None while a database's choices are applied
        self.filter = QtWidgets.QLineEdit()
        self.filter.setPlaceholderText("Find run (Ctrl+F): name, notes, tags, status, id… or policy.lam=0.5")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self.proxy.set_text)
        self.filter.textChanged.connect(lambda _: self._regroup())
        self.filter.textChanged.connect(self.search_changed)
        self.group_box = QtWidgets.QComboBox()
        # as wide as a short title, not its longest one ("group by: best:eval/success_rate"): the dock stays narrow
        self.group_box.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.group_box.setMinimumContentsLength(10)
        self.group_box.setToolTip("Group the runs by a column: each group shows its count and the mean ± std "
                                  "of the metric columns; select groups and press Compare")
        self.group_box.currentIndexChanged.connect(lambda _: self.set_group_by(self.group_box.currentData()))
        self.columns_button = QtWidgets.QPushButton("Columns…")
        self.columns_button.setToolTip("Add columns: configuration fields, metrics' final or best values")
        self.columns_button.clicked.connect(self.choices_requested)
        self.show_archived = QtWidgets.QCheckBox("archived")
        self.show_archived.toggled.connect(self.show_archived_changed)
        self.buttons = {}
        for label, signal in (("Open", self.open_requested), ("Clone config", self.clone_requested),
                              ("Resume", self.resume_requested), ("Delete…", self.delete_requested)):
            b = self.buttons[label] = QtWidgets.QPushButton(label)
            b.clicked.connect(lambda _=False, s=signal: self._emit(s))
        archive = self.buttons["Archive"] = QtWidgets.QPushButton("Archive / restore")
        archive.clicked.connect(self._archive)
        compare = self.buttons["Compare"] = QtWidgets.QPushButton("Compare")
        compare.setToolTip("Overlay the selected runs (select two or more), or the selected run's group; "
                           "selected groups of the grouped view as mean curves with a band")
        compare.clicked.connect(self._compare)
        buttons = QtWidgets.QGridLayout()
        for i, b in enumerate(self.buttons.values()):
            buttons.addWidget(b, i // BUTTONS_PER_ROW, i % BUTTONS_PER_ROW)
        self.notes = QtWidgets.QPlainTextEdit()
        self.notes.setPlaceholderText("Notes on the selected run")
        self.notes.setMaximumHeight(70)
        # two lines at least (not Qt's 70 px): History's column fits beside the run in a 600 px tall window
        self.notes.setMinimumHeight(2 * self.notes.fontMetrics().lineSpacing() + NOTES_FRAME)
        self.tags = QtWidgets.QLineEdit()
        self.tags.setPlaceholderText("tags, comma separated")
        self.save_notes = QtWidgets.QPushButton("Save notes")
        self.save_notes.setToolTip("Notes and tags save as you type; this saves them at once")
        self.save_notes.clicked.connect(self.flush_notes)
        self._notes_timer = QtCore.QTimer(self)
        self._notes_timer.setSingleShot(True)
        self._notes_timer.setInterval(NOTES_SAVE_MS)
        self._notes_timer.timeout.connect(self.flush_notes)
        self.notes.textChanged.connect(self._notes_typed)
        self.tags.textChanged.connect(self._notes_typed)
        notes_row = QtWidgets.QHBoxLayout()
        notes_row.addWidget(self.tags, 1)
        notes_row.addWidget(self.save_notes)
        search_row = QtWidgets.QHBoxLayout()     # two short rows, not one long one: a narrow dock holds them
        search_row.addWidget(self.filter, 1)
        search_row.addWidget(self.show_archived)
        view_row = QtWidgets.QHBoxLayout()
        view_row.addWidget(self.group_box, 1)
        view_row.addWidget(self.columns_button)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(search_row)
        layout.addLayout(view_row)
        layout.addWidget(self.views, 1)
        layout.addLayout(buttons)
        layout.addWidget(self.notes)
        layout.addLayout(notes_row)
        self._notes_run: str | None = None          # the run the boxes' text belongs to
        self._notes_saved = ("", "")                # the boxes' text as shown or last saved: nothing pending
        # text saved but perhaps not yet in the rows (a refresh read before the write): shown over them
        self._written: dict[str, tuple[str, str]] = {}
        self._load_notes(None)
        for view in (self.table, self.tree):
            view.selectionModel().selectionChanged.connect(lambda *_: self._show_notes())
        self._fill_group_box()

    @guarded()
    def set_runs(self, rows: list[dict]) -> None:
        """New rows from the database; the selection follows its runs, not its row numbers."""
        selected = self.selected_ids()
        self.model.set_rows(rows)
        self._forget_written(rows)
        if not self.grouped() and self.selected_ids() != selected:
            sel = self.table.selectionModel()
            sel.clearSelection()
            flags = QtCore.QItemSelectionModel.SelectionFlag.Select | QtCore.QItemSelectionModel.SelectionFlag.Rows
            for r, row in enumerate(self.model.rows):
                if row["id"] in selected:
                    sel.select(self.proxy.mapFromSource(self.model.index(r, 0)), flags)
        self._regroup()
        self._show_notes()      # the boxes' run may be gone (a reset clears the selection silently)

    def grouped(self) -> bool:
        return self.group_by is not None

    def selected_ids(self) -> list[str]:
        """The selected runs; in the grouped view a selected group stands for its runs."""
        if self.grouped():
            ids: dict[str, None] = {}            # ordered, each once (a run and its group may both be selected)
            for index in self.tree.selectionModel().selectedRows():
                group, run = self.groups.group_of(index), self.groups.run_of(index)
                ids.update(dict.fromkeys(r["id"] for r in (group.members if group else [run] if run else [])))
            return list(ids)
        rows = {self.proxy.mapToSource(i).row() for i in self.table.selectionModel().selectedRows()}
        return [self.model.rows[r]["id"] for r in sorted(rows)]

    def select(self, run_id: str) -> None:
        if self.grouped():
            index = self.groups.run_index(run_id)
            if index.isValid():
                self.tree.expand(index.parent())
                self.tree.setCurrentIndex(index)
            return
        for r, row in enumerate(self.model.rows):
            if row["id"] == run_id:
                self.table.selectRow(self.proxy.mapFromSource(self.model.index(r, 0)).row())
                return

    def _select_row(self, run_id: str) -> None:
        """Add the run's row to the flat table's selection."""
        flags = QtCore.QItemSelectionModel.SelectionFlag.Select | QtCore.QItemSelectionModel.SelectionFlag.Rows
        for r, row in enumerate(self.model.rows):
            if row["id"] == run_id:
                self.table.selectionModel().select(self.proxy.mapFromSource(self.model.index(r, 0)), flags)

    # -- chosen columns and grouping, remembered per database --------------------------------------
    def use_database(self, settings: QtCore.QSettings, path: Location) -> None:
        """The columns and grouping chosen last time for this database (none at first)."""
        self._remembered = None
        self._written.clear()
        self._load_notes(None)      # the old database's run (its notes were saved as it was left)
        remembered = DatabaseSettings(settings, path)
        self.set_columns(remembered.columns())
        self.set_group_by(remembered.group_by())
        self._remembered = remembered

    def show_chooser(self, config_fields: list[str], metric_names: list[str]) -> ColumnChooser:
        """Columns…: the database's fields and keys arrived; the chosen ones replace the shown ones."""
        chooser = ColumnChooser(choices(config_fields, metric_names), [c.id for c in self.chosen], self)
        chooser.accepted.connect(lambda: self.set_columns(chooser.chosen()))
        chooser.finished.connect(chooser.deleteLater)
        chooser.open()
        self.chooser = chooser     # tests answer it
        return chooser

    def set_columns(self, column_ids: list[str]) -> None:
        chosen = [c for c in map(parse, dict.fromkeys(column_ids)) if c is not None and c.kind != FIELD]
        header = self.table.horizontalHeader()
        self._keep_widths()       # the model's reset below gives every section the default width
        section, order = header.sortIndicatorSection(), header.sortIndicatorOrder()
        self.chosen = chosen
        self.model.set_columns([*FIXED, *chosen])
        self.proxy.reparse()
        if 0 <= section < self.model.columnCount():
            self.table.sortByColumn(section, order)
        else:
            self.table.sortByColumn(3, QtCore.Qt.SortOrder.DescendingOrder)
        width = self.table.fontMetrics()
        for i, column in enumerate(chosen, start=len(FIXED)):     # a header reads whole
            header.resizeSection(i, max(header.defaultSectionSize(), width.horizontalAdvance(column.title) + 28))
        self._apply_widths()
        self._fill_group_box()
        if self._remembered is not None:
            self._remembered.set_columns([c.id for c in chosen])
        self.columns_changed.emit([c.id for c in chosen])

    def _fill_group_box(self) -> None:
        wanted = self.group_by.id if self.group_by else None
        self.group_box.blockSignals(True)
        self.group_box.clear()
        self.group_box.addItem("group by: none", None)
        for column in [*RUN_COLUMNS, *(c for c in self.chosen if c.kind != RUN)]:
            self.group_box.addItem(f"group by: {column.title}", column.id)
        found = self.group_box.findData(wanted)
        self.group_box.setCurrentIndex(max(found, 0))
        self.group_box.blockSignals(False)
        if wanted is not None and found < 0:       # its column was removed
            self.set_group_by(None)

    def set_group_by(self, column_id: str | None) -> None:
        column = parse(column_id) if column_id else None
        if column is not None and self.group_box.findData(column.id) < 0:
            column = None
        changed = (column.id if column else None) != (self.group_by.id if self.group_by else None)
        selected = self.selected_ids()      # the runs stay selected in the other view
        self.group_by = column
        self.group_box.blockSignals(True)
        self.group_box.setCurrentIndex(max(self.group_box.findData(column.id if column else None), 0))
        self.group_box.blockSignals(False)
        if self._remembered is not None:
            self._remembered.set_group_by(column.id if column else None)
        if column is None:
            self.views.setCurrentWidget(self.table)
            if changed:
                self.table.clearSelection()
                for run_id in selected:
                    self._select_row(run_id)
            return
        if changed:      # the tree takes the table's order, and opens with every group expanded
            self._collapsed.clear()
            header = self.table.horizontalHeader()
            self.tree.header().blockSignals(True)
            self.tree.header().setSortIndicator(header.sortIndicatorSection(), header.sortIndicatorOrder())
            self.tree.header().blockSignals(False)
        self.views.setCurrentWidget(self.tree)
        self._regroup()
        if changed:
            self._fit_tree_columns()
            flags = QtCore.QItemSelectionModel.SelectionFlag.Select | QtCore.QItemSelectionModel.SelectionFlag.Rows
            for run_id in selected:
                self.tree.selectionModel().select(self.groups.run_index(run_id), flags)

    def _fit_tree_columns(self) -> None:
        """The table's widths, widened where a group's row says more: its label and count in the
        first column, "mean ± std" under each metric (measured on the texts, not by a pass over
        every row)."""
        bold = QtGui.QFont(self.tree.font())
        bold.setBold(True)
        metrics = QtGui.QFontMetrics(bold)
        header = self.table.horizontalHeader()
        label = max((metrics.horizontalAdvance(self.groups.index(i, 0).data() or "")
                     for i in range(self.groups.rowCount())), default=0)
        stat = metrics.horizontalAdvance("0.000 ± 0.000") + 12
        for i, column in enumerate(self.model.columns):
            width = header.sectionSize(i)
            if i == 0:
                width = max(width, label + self.tree.indentation() + 16)
            elif column.is_metric:
                width = max(width, stat)
            self.tree.setColumnWidth(i, width)

    def _opened(self, index: QtCore.QModelIndex, is_open: bool) -> None:
        group = self.groups.group_of(index)
        if group is not None:
            (self._collapsed.discard if is_open else self._collapsed.add)(group.key)

    @guarded()
    def _regroup(self) -> None:
        """Rebuild the tree from the current rows, filter and sort, keeping what was collapsed and
        selected (by group and run, not by row number)."""
        if self.group_by is None:
            return
        selection = self.tree.selectionModel()
        picked = [(g.key if (g := self.groups.group_of(i)) else None, r["id"] if (r := self.groups.run_of(i)) else None)
                  for i in selection.selectedRows()]
        scroll = self.tree.verticalScrollBar().value()
        header = self.tree.header()
        rows = [r for r in self.model.rows if self.proxy.accepts(r)]
        self.groups.rebuild(rows, self.model.columns, self.group_by, header.sortIndicatorSection(),
                            header.sortIndicatorOrder() == QtCore.Qt.SortOrder.DescendingOrder)
        labels = tuple(g.key for g in self.groups.groups)
        if labels != self._fitted_groups:
            # new groups (the first rows after a restart, a run of a new arm): their labels decide
            # the first column's width; a refresh of the same groups keeps what the person set
            self._fitted_groups = labels
            self._fit_tree_columns()
        collapsed = set(self._collapsed)
        for i, group in enumerate(self.groups.groups):
            if group.key not in collapsed:
                self.tree.setExpanded(self.groups.index(i, 0), True)
        flags = QtCore.QItemSelectionModel.SelectionFlag.Select | QtCore.QItemSelectionModel.SelectionFlag.Rows
        for group_key, run_id in picked:
            index = self.groups.group_index(group_key) if group_key else self.groups.run_index(run_id or "")
            if index.isValid():
                selection.select(index, flags)
        self.tree.verticalScrollBar().setValue(scroll)

    def selected_groups(self) -> list:
        """The groups whose own rows are selected in the grouped view."""
        if not self.grouped():
            return []
        return [g for i in self.tree.selectionModel().selectedRows() if (g := self.groups.group_of(i))]

    # -- view state --------------------------------------------------------------------------------
    def _keep_widths(self) -> None:
        header = self.table.horizontalHeader()
        for i, column in enumerate(self.model.columns[:header.count()]):
            self._widths[column.id] = header.sectionSize(i)

    def _apply_widths(self) -> None:
        header = self.table.horizontalHeader()
        for i, column in enumerate(self.model.columns[:header.count()]):
            if self._widths.get(column.id, 0) > 0:
                header.resizeSection(i, self._widths[column.id])

    def save_state(self, settings: QtCore.QSettings) -> None:
        header = self.table.horizontalHeader()
        self._keep_widths()
        settings.setValue("history/widths", json.dumps(self._widths))
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
        try:
            widths = json.loads(str(settings.value("history/widths", "{}")))
        except ValueError:      # a hand-edited settings file: the widths as they are
            widths = {}
        if isinstance(widths, dict):
            self._widths.update({k: v for k, v in widths.items()
                                 if isinstance(k, str) and type(v) is int and 0 < v < 10_000})
            self._apply_widths()

    def focus_search(self) -> None:
        self.filter.setFocus()
        self.filter.selectAll()

    def show_matches(self, query: str, ids: set[str]) -> None:
        """Runs whose notes or tags match `query` (full-text search), shown beside the filter's own
        matches — unless a later keystroke has already overtaken that query."""
        if self.filter.text() == query:
            self.proxy.set_extra_ids(ids)
            self._regroup()

    def _open_from_tree(self, index: QtCore.QModelIndex) -> None:
        if self.groups.run_of(index) is not None:     # a group's row opens and closes, as in any tree
            self._emit(self.open_requested)

    def _emit(self, signal) -> None:
        ids = self.selected_ids()
        if ids:
            signal.emit(ids[0])

    def _compare(self) -> None:
        groups = self.selected_groups()
        if groups and self.group_by is not None:
            self.group_compare_requested.emit(self.group_by.id, [(g.label, [r["id"] for r in g.members])
                                                                 for g in groups])
            return
        ids = self.selected_ids()
        if len(ids) == 1:      # one run of a group: compare the whole group
            group = next(r for r in self.model.rows if r["id"] == ids[0]).get("group_id")
            ids = [r["id"] for r in self.model.rows if group and r.get("group_id") == group] or ids
        if len(ids) >= 2:
            self.compare_requested.emit(ids)

    # -- notes and tags: saved as typed (debounced), and whenever their run is left --------------
    def _show_notes(self) -> None:
        ids = self.selected_ids()
        if ids[:1] == [self._notes_run] or (not ids and self._notes_run is None):
            return      # same run still selected: keep what the user is typing
        self.flush_notes()      # what was typed belongs to the run it was typed for
        self._load_notes(ids[0] if ids else None)

    def _load_notes(self, run_id: str | None) -> None:
        row = next((r for r in self.model.rows if r["id"] == run_id), None)
        self._notes_run = row["id"] if row else None
        notes, tags = self._written.get(run_id or "") or ((row or {}).get("notes") or "", (row or {}).get("tags") or "")
        self._notes_saved = (notes, tags)
        self.notes.setPlainText(notes)
        self.tags.setText(tags)
        for box in (self.notes, self.tags):     # no run, nowhere to keep text: nothing is typed
            box.setReadOnly(row is None)
        self._notes_typed()

    def _notes_text(self) -> tuple[str, str]:
        return self.notes.toPlainText(), self.tags.text()

    def notes_pending(self) -> bool:
        return self._notes_run is not None and self._notes_text() != self._notes_saved

    def _notes_typed(self) -> None:
        """Each keystroke restarts the wait; the button says whether anything is left to save."""
        pending = self.notes_pending()
        if pending:
            self._notes_timer.start()
        else:
            self._notes_timer.stop()
        self.save_notes.setEnabled(pending)
        self.save_notes.setText("Saved" if self._notes_run is not None and not pending else "Save notes")

    def flush_notes(self) -> None:
        """Save what was typed for the boxes' run now: after the pause in typing, on the button, and
        before another run, another database or the close takes the boxes."""
        run_id = self._notes_run
        if run_id is None or not self.notes_pending():
            self._notes_timer.stop()
            return
        notes, tags_text = self._notes_text()
        tags = [t.strip() for t in tags_text.split(",") if t.strip()]
        self._notes_saved = (notes, tags_text)
        self._written[run_id] = (notes, ",".join(tags))      # as the database will hold them
        self._notes_typed()
        self.notes_edited.emit(run_id, notes, tags)

    def _forget_written(self, rows: list[dict]) -> None:
        """Saved text the database's rows now hold (or whose run is gone) needs showing over them no more."""
        held = {r["id"]: ((r.get("notes") or ""), (r.get("tags") or "")) for r in rows}
        for run_id, text in list(self._written.items()):
            if held.get(run_id, text) == text:
                del self._written[run_id]

    def _archive(self) -> None:
        for run_id in self.selected_ids():
            row = next(r for r in self.model.rows if r["id"] == run_id)
            self.archive_requested.emit(run_id, not row.get("archived"))
