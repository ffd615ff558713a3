"""Samples: what a language-model run's policy, judge and environment model actually wrote.

The engine records one "samples" event per iteration (vocabulary.SamplesPayload): a few
trajectories as text with each step's m verdicts and the judge's reasoning, and the environment
model's variants of this iteration. This panel follows the newest one; a person can step back to an
earlier iteration, whose samples are read from the database then (only the newest is kept in
memory: a long run's samples are far too many to hold). A coding run's trajectory (one with
`unit_tests`) is shown by program_view.ProgramView instead of the dialogue: its program, its
ground-truth result and the generated tests. Everything in it is model output, so it is shown as
plain text only — inserted with QTextCursor.insertText or on plain-text labels, list and table
items, never through anything that guesses at rich text — and each text is cut at MAX_CHARS so one
runaway answer cannot freeze the console.
"""
from __future__ import annotations

import asyncio
import bisect
import contextlib
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

from PySide6.QtCore import QEvent, QSignalBlocker, Qt, Signal
from PySide6.QtGui import QColor, QFont, QHelpEvent, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (QCheckBox, QHBoxLayout, QLabel, QListView, QListWidget, QListWidgetItem,
                               QPlainTextEdit, QSpinBox, QSplitter, QStackedWidget, QTabWidget, QTextEdit, QToolTip,
                               QVBoxLayout, QWidget)

from rla_engine.vocabulary import EventKind, VariantOutcome

from ..guard import guarded
from ..model import coding
from ..widgets.plain_text import auto_text
from .episode_view import BAD_COLOR, GOOD_COLOR, UNREADABLE_COLOR, chip_color
from .program_view import ProgramView

if TYPE_CHECKING:       # the session is only ever passed in
    from ..session import RunSession

EMPTY_TEXT = "Samples appear for language-model runs."
MAX_CHARS = 20_000            # per text (a step, an observation, a reasoning, an answer)
MAX_DIALOGUE = 200_000        # per shown trajectory, all its texts together
CUT = "… (cut)"
PICK_STEP = "Click a step in the dialogue to read the judge's reasoning."
OUTCOME_COLORS: dict[str, QColor] = {VariantOutcome.ACCEPTED: GOOD_COLOR, VariantOutcome.REJECTED: BAD_COLOR,
                                     VariantOutcome.INVALID: UNREADABLE_COLOR}
# a pane keeps two lines (not a scroll area's 70 px): the dock fits an 800 × 600 window
PANE_MIN_HEIGHT = 40
TIP_CHARS = 600               # a list item's tooltip: enough of a task to read, never a wall of text
LATEST_TIP = ("Show the newest samples as they arrive. Step the iteration back (or type one) to read an "
              "earlier iteration's; tick this to follow the run again.")
PICKER_TIP = "The iterations that have samples: the arrows step through them, a typed number goes to the nearest " \
             "one at or before it (Enter)."
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


class IterationPicker(QSpinBox):
    """Chooses among the iterations that have samples: the arrows (keys, wheel) step from one to the
    next, never onto an iteration without any; a typed number is taken on Enter."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.iterations: list[int] = []       # ascending
        self.setKeyboardTracking(False)       # one choice per typed number, not one per digit
        self.setToolTip(PICKER_TIP)
        self.set_iterations([])

    def set_iterations(self, iterations: list[int]) -> None:
        self.iterations = iterations
        with QSignalBlocker(self):
            self.setRange(iterations[0] if iterations else 0, iterations[-1] if iterations else 0)

    def snapped(self, value: int) -> int:
        """The iteration with samples at or before `value` (the first one, below all)."""
        if not self.iterations:
            return value
        return self.iterations[max(bisect.bisect_right(self.iterations, value) - 1, 0)]

    def stepBy(self, steps: int) -> None:
        if self.iterations:
            here = bisect.bisect_left(self.iterations, self.snapped(self.value()))
            self.setValue(self.iterations[min(max(here + steps, 0), len(self.iterations) - 1)])

    def show_quietly(self, iteration: int) -> None:
        with QSignalBlocker(self):
            self.setValue(iteration)


class SamplesPanel(QWidget):
    """The open run's samples: trajectories and the environment model's variants, of the newest
    iteration or of one a person stepped back to."""

    became_available = Signal()     # the first samples of the open run arrived

    def __init__(self, session: RunSession | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.payload: dict | None = None            # what is shown, of `iteration`
        self.iteration: int | None = None
        self.variants: list[dict] = []
        self.variants_iteration: int | None = None
        self.newest: tuple[dict, int | None] | None = None      # the newest samples, followed while `latest` is ticked
        self.newest_variants: tuple[list[dict], int | None] = ([], None)   # the last the environment model proposed
        self.wanted: int | None = None              # an earlier iteration being read, until it arrives
        self._reads: set[asyncio.Task] = set()
        self.picker = IterationPicker(self)
        self.latest_box = QCheckBox("latest", self)
        self.latest_box.setChecked(True)
        self.latest_box.setToolTip(LATEST_TIP)
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
        self.program = ProgramView(MAX_CHARS, self)      # in the dialogue's place for a coding trajectory
        self.program.hide()      # before the splitter lays out: a hidden pane adds nothing to the dock's minimum
        self.variant_list = _wrapping_list(self)
        self.variant_text = _plain_text_box(self, "Select a variant.")
        self.tabs = QTabWidget(self)
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self._with_legend(self._split(Qt.Orientation.Vertical, self.trajectories, self.dialogue,
                                                       self.reasoning, self.program, sizes=(90, 330, 160, 490))),
                            "Trajectories")
        self.tabs.addTab(self._split(Qt.Orientation.Vertical, self.variant_list, self.variant_text,
                                     sizes=(120, 400)), "Variants")
        content = QWidget(self)
        box = QVBoxLayout(content)
        box.setContentsMargins(0, 0, 0, 0)
        box.addLayout(self._picker_row())
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
        self.picker.valueChanged.connect(self._iteration_chosen)
        self.latest_box.toggled.connect(self._follow_latest)
        if session is not None:
            session.cleared.connect(self._cleared)
            session.events_added.connect(self.add_events)

    def _picker_row(self) -> QHBoxLayout:
        row = QHBoxLayout()
        row.setContentsMargins(4, 2, 4, 0)
        row.addWidget(QLabel("iteration", self))
        row.addWidget(self.picker)
        row.addWidget(self.latest_box)
        row.addStretch(1)
        return row

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
            w.setMinimumHeight(PANE_MIN_HEIGHT)
            split.addWidget(w)
            split.setCollapsible(split.indexOf(w), False)
        split.setSizes(list(sizes))
        return split

    # -- data ------------------------------------------------------------------------------------
    def add_events(self, events: list[dict]) -> None:
        """Only the newest samples event is kept, and the newest with variants; older ones in the
        same batch (a whole history when a run is opened) are only counted as iterations to step to."""
        samples = [e for e in events if e.get("kind") == EventKind.SAMPLES and isinstance(e.get("payload"), dict)]
        if not samples:
            return
        self._add_iterations(e.get("iteration") for e in samples)
        newest = samples[-1]
        with_variants = next((e for e in reversed(samples) if _dicts(e["payload"].get("variants"))), None)
        if with_variants is not None and with_variants is not newest:
            self.newest_variants = (_dicts(with_variants["payload"].get("variants")), with_variants.get("iteration"))
        self.show_samples(newest["payload"], newest.get("iteration"))

    def show_samples(self, payload: dict | None, iteration: int | None = None) -> None:
        """The run's newest samples (None: no run, or none yet); shown unless a person is reading
        an earlier iteration."""
        if payload is None:
            self.newest, self.newest_variants = None, ([], None)
            self._display(None, None, [], None)
            return
        if _dicts(payload.get("variants")):
            # the environment model speaks only on some iterations: keep its last words in view
            self.newest_variants = (_dicts(payload.get("variants")), iteration)
        self.newest = (payload, iteration)
        self._add_iterations([iteration])
        if self.latest_box.isChecked():
            self._show_newest()

    def _show_newest(self) -> None:
        if self.newest is not None:
            payload, iteration = self.newest
            self._display(payload, iteration, *self.newest_variants)
            if iteration is not None:
                self.picker.show_quietly(iteration)

    def _display(self, payload: dict | None, iteration: int | None, variants: list[dict],
                 variants_iteration: int | None) -> None:
        was_empty = self.payload is None
        self.payload, self.iteration = payload, iteration
        self.variants, self.variants_iteration = variants, variants_iteration
        self.stack.setCurrentIndex(0 if payload is None else 1)
        self._fill()
        if was_empty and payload is not None:
            self.became_available.emit()

    def _cleared(self) -> None:
        """Another run (or none) is open: its iterations, and any read of one, are not this run's."""
        self.wanted = None
        self.picker.set_iterations([])
        with QSignalBlocker(self.latest_box):
            self.latest_box.setChecked(True)
        self.show_samples(None)

    # -- stepping back -----------------------------------------------------------------------------
    def _add_iterations(self, iterations: Iterable[Any]) -> None:
        new = {i for i in iterations if isinstance(i, int) and not isinstance(i, bool)}
        if not new.issubset(self.picker.iterations):
            self.picker.set_iterations(sorted(new.union(self.picker.iterations)))
        # only the newest is in memory: without a session to read them, earlier ones cannot be shown
        self.picker.setEnabled(self.session is not None and len(self.picker.iterations) > 1)

    def _iteration_chosen(self, value: int) -> None:
        iteration = self.picker.snapped(value)
        if iteration != value:
            self.picker.show_quietly(iteration)
        with QSignalBlocker(self.latest_box):        # a person looking back is not following the run
            self.latest_box.setChecked(False)
        if self.newest is not None and iteration == self.newest[1]:
            self.wanted = None
            self._show_newest()
        else:
            self.show_iteration(iteration)

    def _follow_latest(self, on: bool) -> None:
        if on:
            self.wanted = None
            self._show_newest()

    def show_iteration(self, iteration: int) -> asyncio.Task | None:
        """Read an earlier iteration's samples from the database (on the client's thread) and show
        them; the returned task ends once they are shown, or once another choice made them moot."""
        if self.session is None or self.session.run_id is None:
            return None
        self.wanted = iteration
        self.latest_box.setChecked(False)
        self.header.setText(f"iteration {iteration} · reading its samples…")
        task = asyncio.ensure_future(self._read_iteration(self.session.run_id, iteration))
        self._reads.add(task)
        task.add_done_callback(self._reads.discard)
        return task

    @guarded()
    async def _read_iteration(self, run_id: str, iteration: int) -> None:
        assert self.session is not None
        try:
            events, error = await self.session.events_at(run_id, iteration, [EventKind.SAMPLES]), ""
        except Exception as e:      # a locked or vanished database: said where the samples would be
            events, error = [], f"{type(e).__name__}: {e}"
        with contextlib.suppress(RuntimeError):     # the window was closed meanwhile
            if self.wanted != iteration or self.session.run_id != run_id:
                return      # another iteration or run was chosen since: this one is no longer asked for
            self.wanted = None
            payloads = [e["payload"] for e in events if isinstance(e.get("payload"), dict)]
            if not payloads:
                # what is shown stays, and the picker says which iteration that is
                if self.iteration is not None:
                    self.picker.show_quietly(self.iteration)
                self.header.setText(f"iteration {iteration}: its samples could not be read "
                                    f"({one_line(error or 'none stored', 200)}); shown: iteration {self.iteration}")
                return
            payload = payloads[-1]
            # an earlier iteration's own variants, none if it proposed none: not the newest ones
            self._display(payload, iteration, _dicts(payload.get("variants")), iteration)

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
            self.variant_text.setPlainText("The environment model has not proposed a variant yet."
                                           if self.variants_iteration is None else
                                           f"The environment model proposed no variant in iteration "
                                           f"{self.variants_iteration}.")

    # -- selection -------------------------------------------------------------------------------
    def current_trajectory(self) -> dict | None:
        trajs = _dicts((self.payload or {}).get("trajectories"))
        row = self.trajectories.currentRow()
        return trajs[row] if 0 <= row < len(trajs) else None

    def _show_trajectory(self, _row: int) -> None:
        traj = self.current_trajectory()
        tests = traj is not None and coding.has_tests(traj)
        # a test generator's tests are its verdicts: the verdict legend and the dialogue make way
        for w in (self.dialogue, self.reasoning, self.legend):
            w.setVisible(not tests)
        self.program.setVisible(tests)
        if tests:
            self.program.show_trajectory(traj)
        self.dialogue.show_trajectory(None if tests else traj)
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
