"""Event timeline: the run's events as readable lines, newest at the bottom (DESIGN §6).

Every control's effect is an event, so this is where the user sees that Pause, an override or
an accepted variant happened: every event of the run stays listed (a filter shows one kind, and
the count beside it says how many rows of how many are shown). Fed incrementally with
`Store.events(run_id, after_id)`;
"episode" and "samples" events are the episode viewer's and the samples panel's, not lines
here. Summaries dispatch on the kind through `SUMMARIES`, so a new kind plugs in with one
function; unknown kinds show their JSON.
"""
from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Callable

from PySide6.QtCore import QModelIndex, QSignalBlocker, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QTableView, QVBoxLayout,
                               QWidget)

from rla_engine.alerts import ALERTS, RAISED, RUN_ENDED, describe
from rla_engine.summary import local_time
from rla_engine.text import printable
from rla_engine.vocabulary import CommandKind, CommandOutcome, CommandResult, EventKind

from ..guard import guarded
from ..model import coding
from ..widgets.list_model import ListTableModel
from ..widgets.plain_text import auto_text, plain_label

from typing import TYPE_CHECKING

if TYPE_CHECKING:       # the session is only ever passed in
    from ..session import RunSession

COLUMNS = ("Iteration", "Time", "Kind", "Summary")
ALL_KINDS = "All kinds"
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


def _started(p: dict) -> str:
    budget = p.get("budget")        # a budget run's iteration target is only a ceiling it never reaches
    ends = (f"until {budget:,} env steps" if isinstance(budget, int) and budget > 0
            else f"target {p.get('target', '?')} iterations")
    return f"on {p.get('device', '?')}, {ends}"


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
    E.STARTED: _started,
    E.COMPLETED: lambda p: f"{p.get('iterations', '?')} iterations",
    E.STOPPED: _stopped,
    E.PLACED: _placed,
    E.WORKER_RESTARTED: lambda p: f"{p['role']} worker {p['index']} restarted (#{p['restart']}): {p['error']}",
    E.REWOUND: lambda p: f"to iteration {p.get('to', '?')} ({p.get('rows', '?')} rows removed)",
    E.RESUMED_FROM_CHECKPOINT: lambda p: f"from {p.get('checkpoint', '?')}, target {p.get('target', '?')}",
    E.ALERT: _alert,
    E.SANDBOX: coding.isolation_summary,
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
    """Every displayable event of the run, oldest first, kept in `every`: items are (event, its
    rendered cells). The rows shown (`items`) are all of them, or those of one kind (`set_kind`).
    The filter lives here, not in a QSortFilterProxyModel: a proxy asks Python once per row, and
    choosing a kind among 200,000 events froze the window for two to three seconds."""
    columns = COLUMNS

    def __init__(self, parent=None):
        super().__init__(parent)
        self.every: list = self.items        # every event; `items` is this same list while no kind is chosen
        self.row_kinds: list[str] = []       # each event's kind, in `every`'s order
        self.kinds: Counter[str] = Counter()     # how many events of each kind
        self.kind: str | None = None

    def event_at(self, row: int) -> dict:
        return self.items[row][0]

    def total(self) -> int:
        return len(self.every)

    def set_kind(self, kind: str | None) -> None:
        """Show the events of `kind` only (None: every event)."""
        if kind == self.kind:
            return
        self.beginResetModel()
        self.kind = kind
        self.items = self.every if kind is None else [item for item, k in zip(self.every, self.row_kinds) if k == kind]
        self.endResetModel()

    @guarded()
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
            if kind == E.SANDBOX:       # programs ran with less isolation than bubblewrap gives: a warning
                weak = not isinstance(event.get("payload"), dict) or coding.is_weak(event["payload"])
                return ALERT_BACKGROUND if weak else None
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
        if event.get("kind") == E.SANDBOX and isinstance(event.get("payload"), dict):
            return coding.isolation_details(event["payload"])     # each guarantee, how it holds or why not
        text = json.dumps(event.get("payload"), indent=1, default=str)
        return text if len(text) <= TOOLTIP_CHARS else text[:TOOLTIP_CHARS] + "…"

    def append(self, events: list[dict]) -> int:
        """Add the displayable events, every one (none is ever dropped). Returns how many."""
        new = [(e, (printable(e.get("iteration", "")), clock(e.get("t")), printable(e.get("kind", "")),
                    printable(summarize(e))))
               for e in events if e.get("kind") not in SKIPPED]
        if not new:
            return 0
        kinds = [str(e.get("kind", "")) for e, _ in new]
        self.kinds.update(kinds)
        self.row_kinds.extend(kinds)
        if self.kind is not None:         # `every` is not the list shown: it grows on its own
            self.every.extend(new)
        shown = new if self.kind is None else [item for item, k in zip(new, kinds) if k == self.kind]
        if shown:
            n = len(self.items)
            self.beginInsertRows(QModelIndex(), n, n + len(shown) - 1)
            self.items.extend(shown)
            self.endInsertRows()
        return len(new)

    def clear(self) -> None:
        self.beginResetModel()
        self.every.clear()
        self.items = self.every
        self.row_kinds.clear()
        self.kinds.clear()
        self.kind = None
        self.endResetModel()


def shown_text(shown: int, total: int, kind: str | None) -> str:
    """What the count beside the filter says: all rows, or how many of them the filter shows."""
    if kind is None:
        return f"{total:,} event{'s' * (total != 1)}"
    return f"{shown:,} of {total:,} events shown ({kind})"


class EventLogPanel(QWidget):
    """The run's events, one line each, every one of them; a filter shows one kind. Follows the
    newest unless the user scrolled up."""

    event_selected = Signal(dict)

    def __init__(self, session: RunSession | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.model = EventTableModel(self)
        self.view = QTableView(self)
        self.view.setModel(self.model)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        # per-item scrolling and fixed row heights keep tens of thousands of rows cheap to lay out
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
        self.kind_box = QComboBox(self)
        self.kind_box.addItem(ALL_KINDS, None)
        self.kind_box.setToolTip("Show the events of one kind, or of every kind")
        self.kind_box.currentIndexChanged.connect(self._on_kind_chosen)
        self.count = plain_label("0 events", self)
        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(plain_label("Show:", self))
        bar.addWidget(self.kind_box)
        bar.addStretch(1)
        bar.addWidget(self.count)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.view)
        if session is not None:
            session.cleared.connect(self.clear)
            session.events_added.connect(self.append)

    def at_bottom(self) -> bool:
        bar = self.view.verticalScrollBar()
        return bar.value() >= bar.maximum()

    @guarded()
    def append(self, events: list[dict]) -> None:
        follow = self.at_bottom()
        if self.model.append(events):
            self._update_kinds()
            if follow:
                self.view.scrollToBottom()

    @guarded()
    def clear(self) -> None:
        self.model.clear()
        with QSignalBlocker(self.kind_box):
            while self.kind_box.count() > 1:
                self.kind_box.removeItem(1)
            self.kind_box.setCurrentIndex(0)
        self._update_count()

    def row_count(self) -> int:
        """The rows shown (of the kind chosen)."""
        return self.model.rowCount()

    def event_at(self, row: int) -> dict:
        """The event of a row as shown."""
        return self.model.event_at(row)

    def show_kind(self, kind: str | None) -> None:
        """Show the events of `kind` only (None: every kind), as choosing it in the box does."""
        self.kind_box.setCurrentIndex(max(0, self.kind_box.findData(kind)))

    def _update_kinds(self) -> None:
        """An entry for each kind seen, in name order, with how many there are."""
        for kind, n in sorted(self.model.kinds.items()):
            i = self.kind_box.findData(kind)
            text = f"{printable(kind)} ({n:,})"
            if i < 0:
                later = [j for j in range(1, self.kind_box.count()) if self.kind_box.itemData(j) > kind]
                self.kind_box.insertItem(later[0] if later else self.kind_box.count(), text, kind)
            elif self.kind_box.itemText(i) != text:
                self.kind_box.setItemText(i, text)
        self._update_count()

    def _update_count(self) -> None:
        self.count.setText(shown_text(self.model.rowCount(), self.model.total(), self.model.kind))

    @guarded()
    def _on_kind_chosen(self, index: int) -> None:
        kind = self.kind_box.itemData(index)
        self.model.set_kind(kind if isinstance(kind, str) else None)
        self._update_count()
        self.view.scrollToBottom()

    @guarded()
    def _on_double_click(self, index: QModelIndex) -> None:
        if index.isValid():
            self.event_selected.emit(self.event_at(index.row()))
