"""Event timeline: the run's events as readable lines, newest at the bottom (DESIGN §6).

Every control's effect is an event, so this is where the user sees that Pause, an override or
an accepted variant happened. Fed incrementally with `Store.events(run_id, after_id)`;
"episode" and "samples" events are the episode viewer's and the samples panel's, not lines
here. Summaries dispatch on the kind through `SUMMARIES`, so a new kind plugs in with one
function; unknown kinds show their JSON.
"""
from __future__ import annotations

import contextlib
import json
from collections.abc import Callable

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QVBoxLayout, QWidget

from rla_engine.alerts import ALERTS, RAISED, RUN_ENDED, describe
from rla_engine.summary import local_time
from rla_engine.text import printable
from rla_engine.vocabulary import CommandKind, CommandOutcome, CommandResult, EventKind

from ..widgets.list_model import ListTableModel
from ..widgets.plain_text import auto_text

from typing import TYPE_CHECKING

if TYPE_CHECKING:       # the session is only ever passed in
    from ..session import RunSession

COLUMNS = ("Iteration", "Time", "Kind", "Summary")
MAX_ROWS = 5000
TOOLTIP_CHARS = 4000        # a language model's raw answer in a payload can be long
SKIPPED = frozenset({EventKind.EPISODE, EventKind.SAMPLES})
# translucent so they tint either a light or a dark palette
FAILED_BACKGROUND = QColor(220, 40, 40, 90)
REJECTED_BACKGROUND = QColor(230, 160, 20, 60)
ALERT_BACKGROUND = QColor(230, 85, 13, 70)


def _f(v, fmt: str = ".2f") -> str:
    return format(v, fmt) if isinstance(v, (int, float)) and not isinstance(v, bool) else "?"


def _variant(p: dict) -> str:
    return (f"slot {p.get('slot', '?')} {p.get('direction', '?')}: acc {_f(p.get('prev_acc'))} → "
            f"{_f(p.get('new_acc'))} (v{p.get('version', '?')}, d {_f(p.get('difficulty'))})")


def _invalid(p: dict) -> str:
    """A language-model variant that failed validation: its reason, on one line (the raw answer
    is in the samples panel)."""
    reason = " ".join(str(p.get("reason") or "invalid").split())
    return f"slot {p.get('slot', '?')} {p.get('direction', '?')}: {reason[:200]}"


def _command(p: dict) -> str:
    """pause/resume/stop/checkpoint/set_difficulty events carry the command and its result."""
    kind, text = p.get("kind", "command"), str(p.get("result", ""))
    result = CommandResult.parse(text)
    if result is not None and result.outcome == CommandOutcome.APPLIED:
        if kind == CommandKind.SET_DIFFICULTY:
            value = (p.get("payload") or {}).get("value") if isinstance(p.get("payload"), dict) else None
            return "automatic difficulty applied" if value is None else f"difficulty {_f(value, 'g')} applied"
        if kind == CommandKind.CHECKPOINT and result.detail is not None:
            return f"checkpoint {result.detail} saved"
    return f"{kind} {text}".strip()


def _rejected(p: dict) -> str:
    text = str(p.get("result", CommandOutcome.REJECTED))
    return f"{text} ({p['kind']})" if p.get("kind") else text


def _failed(p: dict) -> str:
    where = f"iteration {p['iteration']}: " if "iteration" in p else ""
    if "error" in p:
        return where + str(p["error"])
    if "quantity" in p:
        return where + f"{p['quantity']} = {p.get('value', '?')}"
    return where + "failed"


def _placed(p: dict) -> str:
    """Where a Ray run's work is: its workers per role and on how many nodes, or the run's actor."""
    if "run" in p:
        return f"run on Ray node {str(p['run'].get('node', '?'))[:8]}, {p.get('device', '?')}"
    workers = p.get("workers", [])
    roles: dict[str, int] = {}
    for w in workers:
        roles[w["role"]] = roles.get(w["role"], 0) + 1
    nodes = len({w.get("node") for w in workers})
    return f"Ray workers: {', '.join(f'{n} {r}' for r, n in roles.items())} on {nodes} node{'s' * (nodes != 1)}"


def _alert(p: dict) -> str:
    """Raised: what holds, what it means and what a person might do; cleared: since when, and why."""
    rule = ALERTS.get(str(p.get("alert")))
    title = rule.title if rule else str(p.get("alert", "alert"))
    if p.get("state") == RAISED:
        again = " (still, after the resume)" if p.get("resumed") else ""
        return f"⚠ {title}{again}: {describe(p)}. {p.get('message', '')} What to do: {p.get('advice', '')}".strip()
    why = "the run ended" if p.get("reason") == RUN_ENDED else "the condition ended"
    value = p.get("value")
    now = f" (now {value:.3g})" if isinstance(value, (int, float)) else ""
    return f"✓ {title} cleared: {why}{now}; it held since iteration {p.get('since', '?')}"


def _stopped(p: dict) -> str:
    cut = f" (iteration {p['abandoned_iteration']} cut short, not kept)" if "abandoned_iteration" in p else ""
    return str(p.get("reason", "stopped")) + cut


E = EventKind
SUMMARIES: dict[str, Callable[[dict], str]] = {
    E.VARIANT_ACCEPTED: _variant,
    E.VARIANT_REJECTED: _variant,
    E.VARIANT_INVALID: _invalid,
    **{kind: _command for kind in CommandKind},
    E.COMMAND_REJECTED: _rejected,
    E.FAILED: _failed,
    E.STARTED: lambda p: f"on {p.get('device', '?')}, target {p.get('target', '?')} iterations",
    E.COMPLETED: lambda p: f"{p.get('iterations', '?')} iterations",
    E.STOPPED: _stopped,
    E.PLACED: _placed,
    E.WORKER_RESTARTED: lambda p: f"{p['role']} worker {p['index']} restarted (#{p['restart']}): {p['error']}",
    E.REWOUND: lambda p: f"to iteration {p.get('to', '?')} ({p.get('rows', '?')} rows removed)",
    E.RESUMED_FROM_CHECKPOINT: lambda p: f"from {p.get('checkpoint', '?')}, target {p.get('target', '?')}",
    E.ALERT: _alert,
}


def summarize(event: dict) -> str:
    payload = event.get("payload")
    if not isinstance(payload, dict):
        payload = {}
    fn = SUMMARIES.get(str(event.get("kind")))
    if fn is not None:
        with contextlib.suppress(KeyError, TypeError, ValueError, OverflowError):   # an odd payload: its JSON
            return fn(payload)
    return json.dumps(payload, default=str)[:160]


def clock(t) -> str:
    return local_time(t, "%H:%M:%S")


class EventTableModel(ListTableModel):
    columns = COLUMNS

    def __init__(self, max_rows: int = MAX_ROWS, parent=None):
        super().__init__(parent)
        self.max_rows = max_rows   # items: (event, its rendered cells)

    def event_at(self, row: int) -> dict:
        return self.items[row][0]

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        event, cells = self.items[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return cells[index.column()]
        kind = event.get("kind")
        if role == Qt.ItemDataRole.BackgroundRole:
            if kind == E.ALERT:
                raised = isinstance(event.get("payload"), dict) and event["payload"].get("state") == RAISED
                return ALERT_BACKGROUND if raised else None
            return {E.FAILED: FAILED_BACKGROUND, E.COMMAND_REJECTED: REJECTED_BACKGROUND}.get(kind)
        if role == Qt.ItemDataRole.FontRole and kind == E.FAILED:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.ToolTipRole and index.column() == 3:
            return auto_text(self._tooltip(event, cells))    # stored text, shown as written
        if role == Qt.ItemDataRole.TextAlignmentRole and index.column() == 0:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    @staticmethod
    def _tooltip(event: dict, cells: tuple) -> str:
        if event.get("kind") == E.ALERT:
            return cells[3]      # the sentence, whole (the column cuts it)
        text = json.dumps(event.get("payload"), indent=1, default=str)
        return text if len(text) <= TOOLTIP_CHARS else text[:TOOLTIP_CHARS] + "…"

    def append(self, events: list[dict]) -> int:
        """Add the displayable events; drop the oldest beyond max_rows. Returns rows dropped."""
        new = [(e, (printable(e.get("iteration", "")), clock(e.get("t")), printable(e.get("kind", "")),
                    printable(summarize(e))))
               for e in events if e.get("kind") not in SKIPPED]
        new = new[-self.max_rows:]
        if not new:
            return 0
        n = len(self.items)
        self.beginInsertRows(QModelIndex(), n, n + len(new) - 1)
        self.items.extend(new)
        self.endInsertRows()
        drop = len(self.items) - self.max_rows
        if drop > 0:
            self.beginRemoveRows(QModelIndex(), 0, drop - 1)
            del self.items[:drop]
            self.endRemoveRows()
        return max(drop, 0)

    def clear(self) -> None:
        self.beginResetModel()
        self.items.clear()
        self.endResetModel()


class EventLogPanel(QWidget):
    """The run's events, one line each; follows the newest unless the user scrolled up."""

    event_selected = Signal(dict)

    def __init__(self, session: RunSession | None = None, parent: QWidget | None = None, max_rows: int = MAX_ROWS):
        super().__init__(parent)
        self.model = EventTableModel(max_rows, self)
        self.view = QTableView(self)
        self.view.setModel(self.model)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        # per-item scrolling: the scroll value counts rows, which makes the adjustment after
        # dropping old rows exact; fixed row heights keep 5000 rows cheap to lay out
        self.view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerItem)
        vh = self.view.verticalHeader()
        vh.setVisible(False)
        vh.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        vh.setDefaultSectionSize(self.view.fontMetrics().height() + 6)
        # widths from the font, not ResizeToContents: that would measure thousands of rows
        # on every append
        hh = self.view.horizontalHeader()
        bold = QFont(self.view.font())
        bold.setBold(True)                      # failed lines are bold: size for them
        fm = QFontMetrics(bold)
        for col, sample in enumerate(("Iteration__", "00:00:00___", "variant_accepted__")):
            hh.resizeSection(col, fm.horizontalAdvance(sample))
        hh.setStretchLastSection(True)
        self.view.doubleClicked.connect(self._on_double_click)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view)
        if session is not None:
            session.cleared.connect(self.clear)
            session.events_added.connect(self.append)

    def at_bottom(self) -> bool:
        bar = self.view.verticalScrollBar()
        return bar.value() >= bar.maximum()

    def append(self, events: list[dict]) -> None:
        bar = self.view.verticalScrollBar()
        follow = self.at_bottom()
        value = bar.value()
        dropped = self.model.append(events)
        if follow:
            self.view.scrollToBottom()
        elif dropped:
            # the lines the user is reading moved up by `dropped` rows; keep them in view
            bar.setValue(max(0, value - dropped))

    def clear(self) -> None:
        self.model.clear()

    def row_count(self) -> int:
        return self.model.rowCount()

    def _on_double_click(self, index: QModelIndex) -> None:
        if index.isValid():
            self.event_selected.emit(self.model.event_at(index.row()))
