"""The choices of an ablation beside the form's shared configuration: seeds, the environment-step
budget every run gets, the arms, and how many runs at a time. Checked with the same parsers as
`rla ablate`, so the dialog and the command accept the same things."""
from __future__ import annotations

import os

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFormLayout, QLabel, QLineEdit, QListWidget,
                               QListWidgetItem, QSpinBox, QVBoxLayout, QWidget)

from rla_engine.ablation.arms import ARMS, AblationSpec, parse_arms, parse_seeds
from rla_engine.errors import InputError

DEFAULT_BUDGET = 2_000_000      # about the quickstart's 1200 iterations
ERROR_STYLE = "color: #d32f2f;"


class AblationDialog(QDialog):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Start an ablation")
        self.seeds = QLineEdit("0,1,2")
        self.seeds.setObjectName("seeds")
        self.budget = QSpinBox()
        self.budget.setObjectName("budget")
        self.budget.setRange(1, 2_000_000_000)
        self.budget.setSingleStep(100_000)
        self.budget.setGroupSeparatorShown(True)
        self.budget.setValue(DEFAULT_BUDGET)
        self.budget.setToolTip("Environment steps per run: every arm and seed stops once it has taken them.")
        self.arms = QListWidget()
        self.arms.setObjectName("arms")
        for arm in ARMS:
            item = QListWidgetItem(arm)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked)
            self.arms.addItem(item)
        self.jobs = QSpinBox()
        self.jobs.setObjectName("jobs")
        self.jobs.setRange(1, max(1, os.cpu_count() or 1))
        self.jobs.setToolTip("Runs at a time; each uses one core.")
        self.error = QLabel()
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Start ablation")
        form = QFormLayout()
        form.addRow("Seeds", self.seeds)
        form.addRow("Budget (env steps)", self.budget)
        form.addRow("Arms", self.arms)
        form.addRow("Runs at a time", self.jobs)
        intro = QLabel("Every arm runs every seed with the form's configuration; only the arm's component "
                       "changes. The runs form one group, opened as a comparison at the end.")
        intro.setWordWrap(True)
        column = QVBoxLayout(self)
        column.addWidget(intro)
        column.addLayout(form)
        column.addWidget(self.error)
        column.addWidget(self.buttons)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.seeds.textChanged.connect(self._check)
        self.arms.itemChanged.connect(self._check)
        self._check()

    def checked_arms(self) -> list[str]:
        return [self.arms.item(i).text() for i in range(self.arms.count())
                if self.arms.item(i).checkState() == Qt.CheckState.Checked]

    def spec(self) -> AblationSpec:
        """The choices; raises InputError naming what is wrong."""
        return AblationSpec(parse_seeds(self.seeds.text()), self.budget.value(),
                            parse_arms(",".join(self.checked_arms())), self.jobs.value())

    def _check(self) -> None:
        try:
            self.spec()
            problem = ""
        except InputError as e:
            problem = str(e)
        self.error.setText(problem)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(not problem)
