"""Samples: what a language-model run's policy, judge and environment model actually wrote.

The engine records one "samples" event per iteration (vocabulary.SamplesPayload): a few
trajectories as text with each step's m verdicts and the judge's reasoning, and the environment
model's variants of this iteration. This panel shows the newest one. Everything in it is model
output, so it is shown as plain text only — inserted with QTextCursor.insertText or on
plain-text labels and list items, never through anything that guesses at rich text — and each
text is cut at MAX_CHARS so one runaway answer cannot freeze the console.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QColor, QFont, QHelpEvent, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (QLabel, QListView, QListWidget, QListWidgetItem, QPlainTextEdit, QSplitter,
                               QStackedWidget, QTabWidget, QTextEdit, QToolTip, QVBoxLayout, QWidget)

from rla_engine.vocabulary import EventKind, VariantOutcome

from ..widgets.plain_text import auto_text
from .episode_view import BAD_COLOR, GOOD_COLOR, UNREADABLE_COLOR, chip_color

if TYPE_CHECKING:       # the session is only ever passed in
    from ..session import RunSession

EMPTY_TEXT = "Samples appear for language-model runs."
MAX_CHARS = 20_000            # per text (a step, an observation, a reasoning, an answer)
MAX_DIALOGUE = 200_000        # per shown trajectory, all its texts together
CUT = "… (cut)"
PICK_STEP = "Click a step in the dialogue to read the judge's reasoning."
OUTCOME_COLORS: dict[str, QColor] = {VariantOutcome.ACCEPTED: GOOD_COLOR, VariantOutcome.REJECTED: BAD_COLOR,
                                     VariantOutcome.INVALID: UNREADABLE_COLOR}
TIP_CHARS = 600               # a list item's tooltip: enough of a task to read, never a wall of text
# What the judge's verdicts mean (rewards.parse_verdict, SPEC §1, §4): the judge samples m answers
# per step, each ending in \boxed{1} or \boxed{-1}; anything else reads as 0.
VERDICT_WORDS = {1: "step right", -1: "step wrong", 0: "unreadable"}
LEGEND_TIP = ("<p>Each step is judged m times (judge.m). +1: the judge answered \\boxed{1}, the step is right; "
              "−1: it answered \\boxed{-1}, the step is wrong; 0: no readable verdict in its answer (no box, "
              "an unclosed box or another value), which costs the judge reward −2.</p>"
              "<p>oracle: the family's own label of the step, a diagnostic the judge never sees.</p>")


def clip(text: Any, limit: int = MAX_CHARS) -> str:
    s = text if isinstance(text, str) else "" if text is None else str(text)
    return s if len(s) <= limit else s[:limit] + CUT


def verdict_mark(v: Any) -> str:
    return {1: "+1", -1: "−1"}.get(v, "0") if isinstance(v, int) else "?"


def legend_html() -> str:
    """"Verdicts, one per judge sample: +1 = step right · −1 = step wrong · 0 = unreadable", each
    mark coloured as in the dialogue and no entry broken across lines."""
    entries = [f"<b style='color:{chip_color(v).name()}'>{verdict_mark(v)}</b>&nbsp;=&nbsp;"
               f"{VERDICT_WORDS[v].replace(' ', '&nbsp;')}" for v in (1, -1, 0)]
    return "Verdicts, one per judge sample: " + " · ".join(entries)


def verdict_word(v: Any) -> str:
    """A verdict in words: "+1 = step right", "0 = unreadable"."""
    if not isinstance(v, int):
        return "? = not a verdict"
    return f"{verdict_mark(v)} = {VERDICT_WORDS.get(v, VERDICT_WORDS[0])}"


def one_line(text: Any, width: int = 90) -> str:
    s = " ".join(clip(text, 4 * width).split())
    return s if len(s) <= width else s[:width - 1] + "…"


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _dicts(value: Any) -> list[dict]:
    """The dict items of a payload list; anything else (an old or foreign payload) is left out."""
    return [v for v in _list(value) if isinstance(v, dict)]


def describe_variant(v: dict) -> str:
    critic = v.get("critic")
    if not isinstance(critic, str):
        critic = json.dumps(critic, indent=1, ensure_ascii=False, default=str)
    parts = [f"slot {v.get('slot', '?')} · {v.get('direction', '?')} · {v.get('outcome', '?')}"]
    if v.get("reason"):
        parts.append(f"reason: {clip(v['reason'])}")
    parts += [f"task:\n{clip(v.get('task')) or '(none)'}", f"critic (what the environment model was told):\n"
              f"{clip(critic)}", f"raw answer:\n{clip(v.get('answer'))}"]
    return "\n\n".join(parts)


class DialogueView(QPlainTextEdit):
    """One trajectory as text; verdict marks coloured by char formats, the text itself inserted
    verbatim. `spans` maps each step's character range to its (turn, step) indexes."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setReadOnly(True)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                     | Qt.TextInteractionFlag.TextSelectableByKeyboard)
        self.spans: list[tuple[int, int, int, int]] = []
        self.marks: list[tuple[int, int, str]] = []      # (start, end, tooltip) of each verdict mark

    def show_trajectory(self, traj: dict | None) -> None:
        self.spans = []             # first: clear() moves the cursor, which looks the step up
        self.marks = []
        self.clear()
        if traj is None:
            return
        cur = QTextCursor(self.document())
        plain, bold = QTextCharFormat(), QTextCharFormat()
        bold.setFontWeight(QFont.Weight.Bold)
        cur.insertText("TASK\n", bold)
        cur.insertText(clip(traj.get("task")) + "\n", plain)
        for t, turn in enumerate(_dicts(traj.get("turns"))):
            if cur.position() > MAX_DIALOGUE:
                cur.insertText(f"\n{CUT} (the remaining turns)\n", plain)
                break
            cur.insertText(f"\n── turn {t + 1} ──\n", bold)
            for s, step in enumerate(_dicts(turn.get("steps"))):
                start = cur.position()
                cur.insertText(f"step {s + 1}  ", bold)
                for j, v in enumerate(_list(step.get("verdicts"))):
                    self._insert_mark(cur, verdict_mark(v), chip_color(v), f"judge {j + 1}: {verdict_word(v)}")
                    cur.insertText(" ", plain)
                oracle = step.get("oracle")
                if oracle in (1, -1):
                    cur.insertText(" ", plain)
                    self._insert_mark(cur, f"oracle {verdict_mark(oracle)}", None,
                                      f"the family's own label: {verdict_word(oracle)} (a diagnostic the judge "
                                      "never sees)")
                cur.insertText("\n" + clip(step.get("text")) + "\n", plain)
                self.spans.append((start, cur.position(), t, s))
            if turn.get("observation"):
                cur.insertText("observation:\n", bold)
                cur.insertText(clip(turn.get("observation")) + "\n", plain)
        self.moveCursor(QTextCursor.MoveOperation.Start)

    def _insert_mark(self, cur: QTextCursor, text: str, color: QColor | None, tip: str) -> None:
        fmt = QTextCharFormat()
        if color is not None:
            fmt.setForeground(color)
            fmt.setFontWeight(QFont.Weight.Bold)
        start = cur.position()
        cur.insertText(text, fmt)
        self.marks.append((start, cur.position(), tip))

    def mark_tip(self, position: int) -> str:
        """What the verdict mark at a character position means ("" off the marks)."""
        return next((tip for start, end, tip in self.marks if start <= position < end), "")

    def viewportEvent(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            help_event = cast(QHelpEvent, event)
            tip = self.mark_tip(self.cursorForPosition(help_event.pos()).position())
            if tip:
                QToolTip.showText(help_event.globalPos(), tip, self.viewport())
            else:
                QToolTip.hideText()
            return True
        return super().viewportEvent(event)

    def step_at(self, position: int) -> tuple[int, int] | None:
        for start, end, t, s in self.spans:
            if start <= position < end:
                return t, s
        return None

    def mark_step(self, position: int) -> None:
        """Tint the step that holds `position` (extra selections do not change the text)."""
        sel: list[QTextEdit.ExtraSelection] = []
        for start, end, *_ in self.spans:
            if start <= position < end:
                extra = QTextEdit.ExtraSelection()
                extra.format.setBackground(QColor(120, 140, 200, 60))
                c = QTextCursor(self.document())
                c.setPosition(start)
                c.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
                extra.cursor = c
                sel.append(extra)
        self.setExtraSelections(sel)


def _wrapping_list(parent: QWidget) -> QListWidget:
    """A list whose items wrap at the dock's width instead of running off to the right."""
    view = QListWidget(parent)
    view.setWordWrap(True)
    view.setResizeMode(QListView.ResizeMode.Adjust)     # re-wrap when the dock is resized
    view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    view.setTextElideMode(Qt.TextElideMode.ElideNone)
    return view


def _list_item(text: str, tip: str) -> QListWidgetItem:
    item = QListWidgetItem(text)
    item.setToolTip(tip)
    return item


def _plain_tip(text: Any) -> str:
    """Model text for a tooltip, cut, shown as written (Qt would render what looks like markup)."""
    return auto_text(clip(text, TIP_CHARS))


def _plain_text_box(parent: QWidget, placeholder: str = "") -> QPlainTextEdit:
    box = QPlainTextEdit(parent)
    box.setReadOnly(True)
    box.setPlaceholderText(placeholder)
    return box


class SamplesPanel(QWidget):
    """The newest samples event of the open run: trajectories and the environment model's variants."""

    became_available = Signal()     # the first samples of the open run arrived

    def __init__(self, session: RunSession | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.payload: dict | None = None
        self.iteration: int | None = None
        self.variants: list[dict] = []
        self.variants_iteration: int | None = None
        self.header = QLabel(self)
        self.header.setTextFormat(Qt.TextFormat.PlainText)
        self.header.setContentsMargins(4, 2, 4, 2)
        self.message = QLabel(EMPTY_TEXT, self)
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.setEnabled(False)          # the placeholder look
        self.message.setWordWrap(True)
        self.header.setWordWrap(True)
        self.legend = QLabel(legend_html(), self)
        self.legend.setObjectName("verdict_legend")
        self.legend.setTextFormat(Qt.TextFormat.RichText)      # our own words only, coloured as the marks
        self.legend.setWordWrap(True)
        self.legend.setContentsMargins(4, 2, 4, 2)
        self.legend.setToolTip(LEGEND_TIP)
        self.trajectories = _wrapping_list(self)
        self.dialogue = DialogueView(self)
        self.reasoning = _plain_text_box(self, PICK_STEP)
        self.variant_list = _wrapping_list(self)
        self.variant_text = _plain_text_box(self, "Select a variant.")
        self.tabs = QTabWidget(self)
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self._with_legend(self._split(Qt.Orientation.Vertical, self.trajectories, self.dialogue,
                                                       self.reasoning, sizes=(90, 330, 160))), "Trajectories")
        self.tabs.addTab(self._split(Qt.Orientation.Vertical, self.variant_list, self.variant_text,
                                     sizes=(120, 400)), "Variants")
        content = QWidget(self)
        box = QVBoxLayout(content)
        box.setContentsMargins(0, 0, 0, 0)
        box.addWidget(self.header)
        box.addWidget(self.tabs)
        self.stack = QStackedWidget(self)
        self.stack.addWidget(self.message)
        self.stack.addWidget(content)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.stack)
        self.trajectories.currentRowChanged.connect(self._show_trajectory)
        self.dialogue.cursorPositionChanged.connect(self._on_cursor)
        self.variant_list.currentRowChanged.connect(self._show_variant)
        if session is not None:
            session.cleared.connect(lambda: self.show_samples(None))
            session.events_added.connect(self.add_events)

    def _with_legend(self, split: QSplitter) -> QWidget:
        page = QWidget(self)
        column = QVBoxLayout(page)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.legend)
        column.addWidget(split, 1)
        return page

    def _split(self, orientation: Qt.Orientation, *widgets: QWidget, sizes: tuple[int, ...]) -> QSplitter:
        split = QSplitter(orientation, self)
        for w in widgets:
            split.addWidget(w)
            split.setCollapsible(split.indexOf(w), False)
        split.setSizes(list(sizes))
        return split

    # -- data ------------------------------------------------------------------------------------
    def add_events(self, events: list[dict]) -> None:
        """Only the newest samples event matters, and the newest with variants; older ones in the
        same batch (a whole history when a run is opened) are skipped unread."""
        newest = with_variants = None
        for event in reversed(events):
            if event.get("kind") != EventKind.SAMPLES or not isinstance(event.get("payload"), dict):
                continue
            if newest is None:
                newest = event
            if _dicts(event["payload"].get("variants")):
                with_variants = event
                break
        if newest is None:
            return
        if with_variants is not None and with_variants is not newest:
            self.variants = _dicts(with_variants["payload"].get("variants"))
            self.variants_iteration = with_variants.get("iteration")
        self.show_samples(newest["payload"], newest.get("iteration"))

    def show_samples(self, payload: dict | None, iteration: int | None = None) -> None:
        was_empty = self.payload is None
        self.payload, self.iteration = payload, iteration
        if payload is None:
            self.variants, self.variants_iteration = [], None
        elif _dicts(payload.get("variants")):
            # the environment model speaks only on some iterations: keep its last words in view
            self.variants, self.variants_iteration = _dicts(payload.get("variants")), iteration
        self.stack.setCurrentIndex(0 if payload is None else 1)
        self._fill()
        if was_empty and payload is not None:
            self.became_available.emit()

    def _fill(self) -> None:
        p = self.payload or {}
        trajs = _dicts(p.get("trajectories"))
        where = f"iteration {self.iteration}" if self.iteration is not None else "latest samples"
        self.header.setText(f"{where} · {one_line(p.get('family', '?'), 40)} · {len(trajs)} trajectories")
        keep = max(self.trajectories.currentRow(), 0)
        self.trajectories.blockSignals(True)
        self.trajectories.clear()
        for traj in trajs:
            ok = "✓" if traj.get("success") else "✗"
            item = _list_item(f"slot {traj.get('slot', '?')}  {ok}  {one_line(traj.get('task'))}",
                              _plain_tip(traj.get("task")))
            item.setForeground(GOOD_COLOR if traj.get("success") else BAD_COLOR)
            self.trajectories.addItem(item)
        self.trajectories.blockSignals(False)
        self.trajectories.setCurrentRow(min(keep, len(trajs) - 1) if trajs else -1)
        if not trajs:
            self._show_trajectory(-1)
        self.variant_list.blockSignals(True)
        self.variant_list.clear()
        for v in self.variants:
            item = _list_item(f"slot {v.get('slot', '?')}  {v.get('direction', '?')}  {v.get('outcome', '?')}"
                              f"  {one_line(v.get('reason') or v.get('task'), 70)}",
                              _plain_tip(v.get("reason") or v.get("task")))
            color = OUTCOME_COLORS.get(str(v.get("outcome")))
            if color is not None:
                item.setForeground(color)
            self.variant_list.addItem(item)
        self.variant_list.blockSignals(False)
        label = "Variants" if self.variants_iteration is None else f"Variants (iteration {self.variants_iteration})"
        self.tabs.setTabText(1, label)
        self.variant_list.setCurrentRow(0 if self.variants else -1)
        if not self.variants:
            self.variant_text.setPlainText("The environment model has not proposed a variant yet.")

    # -- selection -------------------------------------------------------------------------------
    def current_trajectory(self) -> dict | None:
        trajs = _dicts((self.payload or {}).get("trajectories"))
        row = self.trajectories.currentRow()
        return trajs[row] if 0 <= row < len(trajs) else None

    def _show_trajectory(self, _row: int) -> None:
        self.dialogue.show_trajectory(self.current_trajectory())
        self.reasoning.clear()
        self.dialogue.setExtraSelections([])

    def select_step(self, turn: int, step: int) -> None:
        """Put the dialogue's cursor on a step, as a click there does (shows its reasoning)."""
        for start, _end, t, s in self.dialogue.spans:
            if (t, s) == (turn, step):
                cur = self.dialogue.textCursor()
                cur.setPosition(start)
                self.dialogue.setTextCursor(cur)
                return

    def _on_cursor(self) -> None:
        pos = self.dialogue.textCursor().position()
        where = self.dialogue.step_at(pos)
        traj = self.current_trajectory()
        if where is None or traj is None:
            return
        self.dialogue.mark_step(pos)
        t, s = where
        step = _dicts(_dicts(traj.get("turns"))[t].get("steps"))[s]
        verdicts, reasons = _list(step.get("verdicts")), _list(step.get("reasoning"))
        parts = [f"turn {t + 1} · step {s + 1} · verdicts {' '.join(verdict_mark(v) for v in verdicts) or '(none)'}"]
        for i in range(max(len(verdicts), len(reasons))):
            v = verdict_word(verdicts[i]) if i < len(verdicts) else "? = no verdict"
            parts.append(f"judge {i + 1} ({v}):\n{clip(reasons[i]) if i < len(reasons) else '(no text)'}")
        self.reasoning.setPlainText("\n\n".join(parts))

    def _show_variant(self, row: int) -> None:
        if 0 <= row < len(self.variants):
            self.variant_text.setPlainText(describe_variant(self.variants[row]))
