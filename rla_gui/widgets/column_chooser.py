"""History's Columns… dialog: a searchable list of every column a person can add — what a run
row says about its ablation (arm, group), every configuration field of the database's runs,
and every metric key stored there, once as its final and once as its best value."""
from __future__ import annotations

from collections.abc import Iterable

from PySide6 import QtCore, QtWidgets

from ..model.run_columns import BEST, FINAL, RUN, RUN_COLUMNS, Column, config_column, metric_column, parse
from .checklist import show_matching, toggle

KIND_NOTES = {RUN: "of the run row", "config": "configuration field", FINAL: "value at the last iteration",
              BEST: "highest value (the comparison's best)"}


def choices(config_fields: Iterable[str], metric_names: Iterable[str]) -> list[Column]:
    """Every column the chooser lists, in the order it lists them."""
    names = sorted(set(metric_names))
    return [*RUN_COLUMNS, *(config_column(k) for k in sorted(set(config_fields))),
            *(metric_column(kind, k) for k in names for kind in (FINAL, BEST))]


class ColumnChooser(QtWidgets.QDialog):
    """`chosen()`: the checked column ids — those already shown keep their order, new ones follow
    in the order they were checked."""

    def __init__(self, columns: list[Column], shown: list[str], parent=None):
        super().__init__(parent)
        self.setWindowTitle("History columns")
        self.order = list(shown)       # the checked ids, in the order they were checked
        self.search = QtWidgets.QLineEdit()
        self.search.setPlaceholderText("search, e.g. lam, seed, eval/, best:")
        self.search.setClearButtonEnabled(True)
        self.list = QtWidgets.QListWidget()
        known = {c.id for c in columns}
        # a shown column no longer in the database (its runs deleted) stays listed, so it can be removed
        extra = [c for c in map(parse, shown) if c is not None and c.id not in known]
        for column in [*columns, *extra]:
            item = QtWidgets.QListWidgetItem(column.title if column.kind != RUN else f"run:{column.key}")
            item.setData(QtCore.Qt.ItemDataRole.UserRole, column.id)
            item.setToolTip(KIND_NOTES.get(column.kind, ""))
            item.setFlags(item.flags() | QtCore.Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(QtCore.Qt.CheckState.Checked if column.id in self.order
                               else QtCore.Qt.CheckState.Unchecked)
            self.list.addItem(item)
        self.list.itemActivated.connect(toggle)
        self.search.textChanged.connect(lambda text: show_matching(self.list, text))
        self.count = QtWidgets.QLabel()
        self.list.itemChanged.connect(self._changed)
        buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Ok
                                             | QtWidgets.QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self.search)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.count)
        layout.addWidget(buttons)
        self.resize(440, 560)
        self._count()

    def _changed(self, item: QtWidgets.QListWidgetItem) -> None:
        column_id = item.data(QtCore.Qt.ItemDataRole.UserRole)
        checked = item.checkState() == QtCore.Qt.CheckState.Checked
        if checked and column_id not in self.order:
            self.order.append(column_id)
        elif not checked and column_id in self.order:
            self.order.remove(column_id)
        self._count()

    def _count(self) -> None:
        n = len(self.chosen())
        self.count.setText(f"{n} column{'s' if n != 1 else ''} chosen, after the fixed ones")

    def items(self) -> list[QtWidgets.QListWidgetItem]:
        return [self.list.item(i) for i in range(self.list.count())]

    def check(self, column_id: str, checked: bool = True) -> None:
        """Check (or uncheck) a column as a person's click would."""
        item = next(i for i in self.items() if i.data(QtCore.Qt.ItemDataRole.UserRole) == column_id)
        item.setCheckState(QtCore.Qt.CheckState.Checked if checked else QtCore.Qt.CheckState.Unchecked)

    def chosen(self) -> list[str]:
        return list(self.order)
