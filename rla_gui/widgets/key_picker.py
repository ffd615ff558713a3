"""Add a chart: pick one or more metric keys from a searchable list.

Every key the run (or the comparison's runs) has stored comes first; the keys the engine can
write but this run has not (yet) follow, greyed, so a chart for a key that arrives later can be
made now (a live run's system keys come after a few seconds)."""
from __future__ import annotations

from collections.abc import Iterable

from PySide6 import QtCore, QtGui, QtWidgets

from rla_engine import metrics

from ..model.panel_spec import short
from .checklist import show_matching, toggle

# what the engine writes besides the per-tier keys (those are listed once stored)
KNOWN_KEYS = tuple(dict.fromkeys((*metrics.ALL_FIXED, metrics.EFFECTIVE_LAMBDA, metrics.INVALID,
                                  *metrics.JUDGE_ERRORS, *metrics.POLICY_HEALTH, *metrics.JUDGE_HEALTH,
                                  *metrics.TEXT_HEALTH, *metrics.SYSTEM)))


class KeyPicker(QtWidgets.QDialog):
    """`chosen()` is the checked keys in list order; Add is enabled once one is checked."""

    def __init__(self, stored: Iterable[str], parent=None, title: str = "Add a chart"):
        super().__init__(parent)
        self.setWindowTitle(title)
        stored = sorted(set(stored))
        self.search = QtWidgets.QLineEdit()
        self.search.setPlaceholderText("search keys, e.g. kl, mu, sys/")
        self.search.setClearButtonEnabled(True)
        self.keys = QtWidgets.QListWidget()
        grey = self.palette().color(QtGui.QPalette.ColorGroup.Disabled, QtGui.QPalette.ColorRole.Text)
        for key in [*stored, *(k for k in KNOWN_KEYS if k not in stored)]:
            item = QtWidgets.QListWidgetItem(f"{key}   ·   {short(key)}")
            item.setData(QtCore.Qt.ItemDataRole.UserRole, key)
            item.setFlags(item.flags() | QtCore.Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(QtCore.Qt.CheckState.Unchecked)
            if key not in stored:
                item.setForeground(grey)
                item.setToolTip("not stored by this run (yet)")
            self.keys.addItem(item)
        self.keys.itemChanged.connect(lambda _: self._enable())
        self.keys.itemActivated.connect(toggle)
        self.search.textChanged.connect(lambda text: show_matching(self.keys, text))
        self.buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Cancel)
        self.add = self.buttons.addButton("Add chart", QtWidgets.QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self.search)
        layout.addWidget(self.keys, 1)
        layout.addWidget(QtWidgets.QLabel("Check one key or several: several share one chart."))
        layout.addWidget(self.buttons)
        self.resize(460, 520)
        self._enable()

    def _enable(self) -> None:
        self.add.setEnabled(bool(self.chosen()))

    def items(self) -> list[QtWidgets.QListWidgetItem]:
        return [self.keys.item(i) for i in range(self.keys.count())]

    def check(self, key: str) -> None:
        """Check `key` as a person's click would."""
        item = next(i for i in self.items() if i.data(QtCore.Qt.ItemDataRole.UserRole) == key)
        item.setCheckState(QtCore.Qt.CheckState.Checked)

    def chosen(self) -> list[str]:
        return [i.data(QtCore.Qt.ItemDataRole.UserRole) for i in self.items()
                if i.checkState() == QtCore.Qt.CheckState.Checked]
