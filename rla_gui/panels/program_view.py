"""One coding trajectory in the Samples panel: the policy's program, how it did on the task's own
(ground-truth) tests, and the tests the reward model generated with this program's result on each.

A test generator is the coding run's reward model: its tests stand where a step judge's verdicts
stand, so a person reads them as a table, not as verdict marks in a dialogue. Everything here is
model output, shown as plain text only: the program and a test read whole are set with
setPlainText, the table's cells are item text (drawn plain), tooltips go through auto_text. Long
inputs are elided in their cell; the tooltip and the detail pane below have them whole (cut at
`limit`, as every text of the Samples panel is).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (QAbstractItemView, QHeaderView, QPlainTextEdit, QSplitter, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget)

from ..model import coding
from ..widgets.plain_text import auto_text, plain_label
from .episode_view import BAD_COLOR, GOOD_COLOR, UNREADABLE_COLOR

CELL_CHARS = 40            # an input or expected output in its cell; the rest in the tooltip and below
TIP_CHARS = 600            # a cell's tooltip, as the Samples panel's list tooltips
PICK_TEST = "Select a test to read its input, expected output and what the generator wrote, whole."
CUT = "… (cut)"
MIN_PANE = 24


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + CUT


def cell_text(text: str, width: int = CELL_CHARS) -> str:
    """A cell's one line: line breaks shown as ⏎ (an input is often several lines), elided."""
    s = text.replace("\r\n", "\n").replace("\n", " ⏎ ")
    return s if len(s) <= width else s[:width - 1] + "…"


class ProgramView(QWidget):
    """The program (monospace), its ground-truth result, and the generated tests' table; a
    selected test is shown whole below the table."""

    def __init__(self, limit: int, parent: QWidget | None = None):
        super().__init__(parent)
        self.limit = limit
        self.rows: list[coding.UnitTestRow] = []
        self.summary = plain_label("", self)
        self.summary.setWordWrap(True)
        self.summary.setContentsMargins(4, 2, 4, 2)
        self.program = QPlainTextEdit(self)
        self.program.setReadOnly(True)
        self.program.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)      # code keeps its lines
        self.program.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.tests = QTableWidget(0, len(coding.TEST_COLUMNS), self)
        self.tests.setHorizontalHeaderLabels(list(coding.TEST_COLUMNS))
        self.tests.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.tests.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.tests.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tests.verticalHeader().setVisible(False)
        self.tests.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.tests.horizontalHeader().setStretchLastSection(True)
        self.detail = QPlainTextEdit(self)
        self.detail.setReadOnly(True)
        self.detail.setPlaceholderText(PICK_TEST)
        self.detail.setFont(self.program.font())        # inputs and outputs are the program's text
        # the summary is a pane of the splitter too: at 800x600 the Samples dock must fit as short
        # as it did before programs were shown in it (each pane a line or two at the least)
        split = QSplitter(Qt.Orientation.Vertical, self)
        for w in (self.summary, self.program, self.tests, self.detail):
            w.setMinimumHeight(MIN_PANE)
            split.addWidget(w)
            split.setCollapsible(split.indexOf(w), False)
        split.setSizes([44, 220, 160, 100])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(split, 1)
        self.tests.currentCellChanged.connect(lambda row, *_: self._show_test(row))

    def show_trajectory(self, traj: Mapping[str, Any] | None) -> None:
        traj = traj or {}
        self.summary.setText(f"{coding.ground_truth_text(traj)}\n{coding.unit_tests_summary(traj)}")
        self.program.setPlainText(cut(coding.program(traj), self.limit))
        self.rows = coding.unit_test_rows(traj)
        self.tests.clearContents()
        self.tests.setRowCount(len(self.rows))
        for r, row in enumerate(self.rows):
            tip = auto_text(cut(row.whole, TIP_CHARS))
            cells = (cell_text(row.input), cell_text(row.output), row.readable, row.correct, row.result)
            items = [QTableWidgetItem(text) for text in cells]
            colour = UNREADABLE_COLOR if row.passed is None else GOOD_COLOR if row.passed else BAD_COLOR
            for c, item in enumerate(items):
                item.setToolTip(tip)
                if c == len(items) - 1 or row.readable != "yes":    # an unreadable test: the whole row greyed
                    item.setForeground(colour)
                self.tests.setItem(r, c, item)
        self.tests.resizeColumnsToContents()
        self.detail.clear()
        if self.rows:
            self.tests.setCurrentCell(0, 0)

    def _show_test(self, row: int) -> None:
        if 0 <= row < len(self.rows):
            self.detail.setPlainText(cut(self.rows[row].whole, self.limit))
        else:
            self.detail.clear()
