"""Episode viewer: one recent trajectory of the run, drawn with its step verdicts (DESIGN §6).

The engine stores one "episode" event per iteration (trainer `_episode`); this widget paints
its payload. Each family has a painter in `PAINTERS` and the words for its colours in `LEGENDS`,
so a new family plugs in by adding one function and one legend, never by editing the widget.
Painters get the payload and the drawing rectangle and may raise on a malformed payload: the
widget then says so instead of dying in paintEvent.
"""
from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QPointF, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPalette, QPen
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from rla_engine.vocabulary import EventKind

from ..widgets.plain_text import set_tooltip

from typing import TYPE_CHECKING

if TYPE_CHECKING:       # the session is only ever passed in
    from ..session import RunSession

# Content colours are fixed (a maze is a picture, not chrome) and chosen to read on both light
# and dark backgrounds; the background and the text come from the palette.
WALL_COLOR = QColor(52, 56, 66)
FREE_COLOR = QColor(226, 229, 234)
GOOD_COLOR = QColor(40, 170, 70)      # every verdict +1
BAD_COLOR = QColor(215, 45, 45)       # every verdict −1
UNREADABLE_COLOR = QColor(140, 140, 140)
START_COLOR = QColor(50, 110, 230)
GOAL_COLOR = QColor(235, 170, 20)
DOOR_COLOR = QColor(140, 90, 50)      # keyrooms: a locked door
KEY_COLOR = QColor(250, 215, 110)     # keyrooms: its key
CELL_COLORS = {"#": WALL_COLOR, "D": DOOR_COLOR, "k": KEY_COLOR}
EMPTY_TEXT = "no episode yet"
TEXT_RUN_TEXT = "a language-model run: its episodes are text, in the Samples panel"

# actions 0 up (y−1), 1 down (y+1), 2 left (x−1), 3 right (x+1) — gridworld.py
MOVES = {0: (0, -1), 1: (0, 1), 2: (-1, 0), 3: (1, 0)}
OP_SYMBOLS = {0: "+", 1: "−", 2: "×"}
OP_CODES = {"+": 0, "-": 1, "*": 2}

Painter = Callable[[QPainter, QRectF, dict, QPalette], None]


def _blend(a: QColor, b: QColor, t: float) -> QColor:
    t = min(max(t, 0.0), 1.0)
    return QColor(round(a.red() + (b.red() - a.red()) * t), round(a.green() + (b.green() - a.green()) * t),
                  round(a.blue() + (b.blue() - a.blue()) * t))


def verdict_color(verdicts) -> QColor:
    """Mean verdict mapped red (all −1) → green (all +1); 0 means "unreadable" and is left out
    of the mean, so a step with no readable verdict (or no list at all) is grey."""
    try:
        votes = [int(v) for v in verdicts if int(v) in (1, -1)]
    except (TypeError, ValueError):
        return QColor(UNREADABLE_COLOR)
    if not votes:
        return QColor(UNREADABLE_COLOR)
    return _blend(BAD_COLOR, GOOD_COLOR, (sum(votes) / len(votes) + 1) / 2)


def chip_color(v) -> QColor:
    return QColor({1: GOOD_COLOR, -1: BAD_COLOR}.get(v, UNREADABLE_COLOR))


def oracle_agreement(payload: dict) -> float | None:
    """Share of readable verdicts equal to their step's oracle label. A diagnostic only: the
    judge never sees the oracle, the caption just shows how this one episode was judged."""
    hits = total = 0
    for votes, label in zip(payload.get("verdicts") or [], payload.get("oracle") or []):
        for v in votes:
            if v in (1, -1):
                total += 1
                hits += v == label
    return hits / total if total else None


def caption(payload: dict) -> str:
    task = payload.get("task") or {}
    steps = len(payload.get("info") or [])
    parts = [f"slot {payload.get('slot', '?')}"]
    d = task.get("difficulty")
    if isinstance(d, (int, float)):
        parts.append(f"d {d:.2f}")
    parts.append("success" if payload.get("success") else "failure")
    budget = task.get("budget") or task.get("turns")
    parts.append(f"{steps}/{budget} steps" if budget else f"{steps} steps")
    agree = oracle_agreement(payload)
    if agree is not None:
        parts.append(f"oracle agreement {agree:.0%}")
    return "  ·  ".join(parts)


def tooltip_text(payload: dict) -> str:
    """The caption, and a text game's whole transcript (the panel may show only its first turns)."""
    lines = [caption(payload)]
    for step in payload.get("transcript") or []:
        lines += [f"> {step['command']}", f"   {step['answer']}"]
    return "\n".join(lines)


def _caption_rect(p: QPainter, rect: QRectF, payload: dict, pal: QPalette) -> QRectF:
    """Draw the caption line at the top; return what is left below it."""
    h = max(14.0, min(24.0, rect.height() * 0.07))
    text = caption(payload)
    font = QFont(p.font())
    size = max(9, int(h * 0.62))
    font.setPixelSize(size)
    p.setFont(font)
    # shrink before eliding: a narrow dock should still show the whole line if it can
    while size > 8 and p.fontMetrics().horizontalAdvance(text) > rect.width():
        size -= 1
        font.setPixelSize(size)
        p.setFont(font)
    text = p.fontMetrics().elidedText(text, Qt.TextElideMode.ElideRight, int(rect.width()))
    p.setPen(pal.color(QPalette.ColorRole.Text))
    p.drawText(QRectF(rect.left(), rect.top(), rect.width(), h), Qt.AlignmentFlag.AlignCenter, text)
    return QRectF(rect.left(), rect.top() + h + 4, rect.width(), rect.height() - h - 4)


def paint_gridworld(p: QPainter, rect: QRectF, payload: dict, pal: QPalette) -> None:
    task = payload["task"]
    walls = [str(r) for r in task["walls"]]
    n = int(task.get("size") or len(walls))
    area = _caption_rect(p, rect, payload, pal)
    cell = min(area.width(), area.height()) / n
    ox = area.left() + (area.width() - cell * n) / 2
    oy = area.top() + (area.height() - cell * n) / 2

    def centre(x: float, y: float) -> QPointF:
        return QPointF(ox + (x + 0.5) * cell, oy + (y + 0.5) * cell)

    p.setPen(Qt.PenStyle.NoPen)
    for y in range(n):
        for x in range(n):
            mark = walls[y][x] if y < len(walls) and x < len(walls[y]) else "."
            p.setBrush(CELL_COLORS.get(mark, FREE_COLOR))
            # a hairline gap between cells shows the grid without a separate pass
            p.drawRect(QRectF(ox + x * cell + 0.5, oy + y * cell + 0.5, cell - 1, cell - 1))

    inset = cell * 0.18
    for (x, y), color in ((task["start"], START_COLOR), (task["goal"], GOAL_COLOR)):
        p.setBrush(color)
        p.drawRoundedRect(QRectF(ox + x * cell + inset, oy + y * cell + inset,
                                 cell - 2 * inset, cell - 2 * inset), cell * 0.15, cell * 0.15)

    verdicts = payload.get("verdicts") or []
    width = max(1.5, cell * 0.11)
    for i, row in enumerate(payload.get("info") or []):
        x, y, action, blocked = (int(v) for v in row[:4])
        dx, dy = MOVES.get(action, (0, 0))
        pen = QPen(verdict_color(verdicts[i] if i < len(verdicts) else None), width)
        pen.setCapStyle(Qt.PenCapStyle.RoundCap)
        p.setPen(pen)
        # a walker often goes back and forth; a small per-step sideways shift keeps the
        # segments of the same edge from hiding each other
        shift = ((i % 3) - 1) * width * 0.9
        off = QPointF(-dy * shift, dx * shift)
        a = centre(x, y) + off
        if blocked:
            # bumped into a wall: a short stub toward it with a bar across, the walker stays
            tip = a + QPointF(dx, dy) * cell * 0.4
            p.drawLine(a, tip)
            bar = QPointF(-dy, dx) * cell * 0.18
            p.drawLine(tip - bar, tip + bar)
        else:
            p.drawLine(a, centre(x + dx, y + dy) + off)


def _expected(code: int, prev: int, operand: int) -> int:
    """The digit the step should have written given the previous written one (arithmetic.py)."""
    return (prev + operand if code == 0 else prev - operand if code == 1 else prev * operand) % 10


def _chain_lines(payload: dict) -> list[tuple[str, list | None, int | None, str]]:
    """(text, verdicts, oracle, hint) per displayed line: the start, one line per step, the answer."""
    task = payload["task"]
    info, verdicts = payload.get("info") or [], payload.get("verdicts") or []
    oracle = payload.get("oracle") or []
    lines: list[tuple[str, list | None, int | None, str]] = [(f"start {task['start']}", None, None, "")]
    ops, operands = task.get("ops") or [], task.get("operands") or []
    for i in range(max(len(info), len(ops))):
        hint = ""
        if i < len(info):
            _, code, operand, written, prev = (int(v) for v in info[i][:5])
            text = f"{OP_SYMBOLS.get(code, '?')} {operand} → wrote {written}"
            want = _expected(code, prev, operand)
            hint = f"({want})" if want != written else ""
        else:   # an episode cut short: show the rest of the chain unwritten
            text = f"{OP_SYMBOLS.get(OP_CODES.get(ops[i], -1), '?')} {operands[i] if i < len(operands) else '?'}"
        lines.append((text, verdicts[i] if i < len(verdicts) else [], oracle[i] if i < len(oracle) else None, hint))
    lines.append((f"answer {task['answer']}", None, None, ""))
    return lines


def paint_arithmetic(p: QPainter, rect: QRectF, payload: dict, pal: QPalette) -> None:
    lines = _chain_lines(payload)
    area = _caption_rect(p, rect, payload, pal)
    line_h = min(34.0, area.height() / len(lines))
    font = QFont(p.font())
    font.setPixelSize(max(8, int(line_h * 0.6)))
    p.setFont(font)
    fm = p.fontMetrics()
    text_w = max(fm.horizontalAdvance(t) for t, *_ in lines) + line_h
    m = max((len(v) for _, v, *_ in lines if v), default=0)
    chip = line_h * 0.6
    block_w = text_w + m * (chip + 3) + line_h * 2.5
    left = area.left() + max(4.0, (area.width() - block_w) / 2)
    top = area.top() + max(0.0, (area.height() - line_h * len(lines)) / 2)
    text_color = pal.color(QPalette.ColorRole.Text)
    for row, (text, votes, label, hint) in enumerate(lines):
        y = top + row * line_h
        p.setPen(text_color)
        p.drawText(QRectF(left, y, text_w, line_h), Qt.AlignmentFlag.AlignVCenter, text)
        if votes is None:
            continue
        x = _chips(p, left + text_w, y, line_h, votes, label)
        if hint:   # what a right step would have written, faint: the judge saw only the digits
            p.setPen(_faint(text_color))
            p.drawText(QRectF(x + line_h * 1.2, y, line_h * 1.5, line_h), Qt.AlignmentFlag.AlignVCenter, hint)


def _faint(color: QColor) -> QColor:
    faint = QColor(color)
    faint.setAlpha(130)
    return faint


def _chips(p: QPainter, x: float, y: float, line_h: float, votes: list, label: int | None) -> float:
    """A step's verdict chips from x, then the oracle's ✓ / ✗; returns where they end."""
    chip = line_h * 0.6
    p.setPen(Qt.PenStyle.NoPen)
    for v in votes:
        p.setBrush(chip_color(v))
        p.drawRoundedRect(QRectF(x, y + (line_h - chip) / 2, chip, chip), chip * 0.25, chip * 0.25)
        x += chip + 3
    if label is not None:
        # the oracle's word on the step, next to what the judge said about it
        p.setPen(GOOD_COLOR if label > 0 else BAD_COLOR)
        p.drawText(QRectF(x + line_h * 0.3, y, line_h, line_h), Qt.AlignmentFlag.AlignVCenter,
                   "✓" if label > 0 else "✗")
    return x


def paint_transcript(p: QPainter, rect: QRectF, payload: dict, pal: QPalette) -> None:
    """A text game's episode (textworld_commands): the goal, then two lines a turn: the command
    played with its verdict chips and the oracle's label, and under it the game's answer (faint, cut
    to the width). A panel too short for every turn shows the first ones (the tooltip has them all)."""
    steps = list(payload["transcript"])
    verdicts, oracle = payload.get("verdicts") or [], payload.get("oracle") or []
    area = _caption_rect(p, rect, payload, pal)
    goal = str((payload.get("task") or {}).get("goal") or "")
    rows = 2 * len(steps) + (1 if goal else 0)
    line_h = max(12.0, min(22.0, area.height() / max(rows, 1)))
    font = QFont(p.font())
    font.setPixelSize(max(8, min(13, int(line_h * 0.62))))
    p.setFont(font)
    fm = p.fontMetrics()
    text_color = pal.color(QPalette.ColorRole.Text)
    width = int(area.width())

    def line(y: float, text: str, color: QColor, x: float = area.left()) -> None:
        p.setPen(color)
        room = max(0, int(area.right() - x))
        p.drawText(QRectF(x, y, room, line_h), Qt.AlignmentFlag.AlignVCenter,
                   fm.elidedText(text, Qt.TextElideMode.ElideRight, room))

    y = area.top()
    if goal:
        line(y, f"goal: {goal}", _faint(text_color))
        y += line_h
    chips_w = max((len(v) for v in verdicts), default=0) * (line_h * 0.6 + 3) + line_h * 1.4
    for i, step in enumerate(steps):
        if y + 2 * line_h > area.bottom() + 0.5:
            break
        command_w = min(fm.horizontalAdvance(f"> {step['command']}") + line_h * 0.5, max(0.0, width - chips_w))
        line(y, f"> {step['command']}", text_color)
        _chips(p, area.left() + command_w, y, line_h, verdicts[i] if i < len(verdicts) else [],
               oracle[i] if i < len(oracle) else None)
        line(y + line_h, str(step["answer"]), _faint(text_color), area.left() + line_h * 0.8)
        y += 2 * line_h


# keyrooms draws as a gridworld whose rows also mark doors "D" and keys "k"
PAINTERS: dict[str, Painter] = {"gridworld": paint_gridworld, "keyrooms": paint_gridworld,
                                "arithmetic": paint_arithmetic, "textworld_commands": paint_transcript}


def swatch(color: QColor, words: str) -> str:
    """One legend entry, its mark in the colour the picture uses; never broken across lines."""
    return f"<span style='color:{color.name()}'>■</span>&nbsp;{words.replace(' ', '&nbsp;')}"


def _legend(*entries: tuple[QColor, str]) -> str:
    return " · ".join(swatch(color, words) for color, words in entries)


# A step's colour is the mean of its verdicts (verdict_color): the two ends and grey name them all.
VERDICT_ENTRIES = ((GOOD_COLOR, "judged right (all +1)"), (verdict_color([1, -1]), "split (a blend)"),
                   (BAD_COLOR, "judged wrong (all −1)"), (UNREADABLE_COLOR, "no readable verdict"))
GRID_LEGEND = _legend((WALL_COLOR, "wall"), (FREE_COLOR, "free"), (START_COLOR, "start"), (GOAL_COLOR, "goal")) \
    + "<br>path, a step per segment: " + _legend(*VERDICT_ENTRIES) + " · a bar across: bumped into a wall"
LEGENDS: dict[str, str] = {
    "gridworld": GRID_LEGEND,
    "keyrooms": GRID_LEGEND + " · " + _legend((DOOR_COLOR, "locked door"), (KEY_COLOR, "its key")),
    "arithmetic": "chips, one per judge sample: " + _legend(*VERDICT_ENTRIES)
                  + "<br>✓ / ✗ the oracle's label of the step (the judge never sees it) · (n), faint: the digit a "
                    "right step would have written",
    "textworld_commands": "each turn: the command played, its chips, one per judge sample: "
                          + _legend(*VERDICT_ENTRIES) + "<br>✓ / ✗ the oracle's label of the step (the judge never "
                          "sees it); under it, the game's answer",
}
LEGEND_TIP = ("<p>Each step is judged m times (judge.m); a path segment's colour is the mean of its readable "
              "verdicts, from red (all −1) through the blends between to green (all +1). A verdict of 0 (no "
              "readable answer) is left out of the mean; a step with none readable is grey.</p>")


class EpisodeViewPanel(QWidget):
    """Paints the last episode payload given to `show_episode` (with a session: the newest
    episode event of the open run), scaled to the widget."""

    def __init__(self, session: RunSession | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self._payload: dict | None = None
        self._empty_text = EMPTY_TEXT
        self.setMinimumSize(160, 120)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setAutoFillBackground(False)
        self.legend = QLabel(self)
        self.legend.setObjectName("episode_legend")
        self.legend.setTextFormat(Qt.TextFormat.RichText)      # our own words only, marks coloured as drawn
        self.legend.setWordWrap(True)
        self.legend.setContentsMargins(6, 2, 6, 4)
        self.legend.setToolTip(LEGEND_TIP)
        self.legend.hide()
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.addStretch(1)                # the picture is painted above the legend
        column.addWidget(self.legend)
        if session is not None:
            session.cleared.connect(self._cleared)
            session.events_added.connect(self.show_newest_episode)

    def _cleared(self) -> None:
        self._empty_text = EMPTY_TEXT
        self.show_episode(None)

    def show_newest_episode(self, events: list[dict]) -> None:
        episodes = [e for e in events if e["kind"] == EventKind.EPISODE]
        if episodes:
            self.show_episode(episodes[-1]["payload"])
        elif self._payload is None and any(e["kind"] == EventKind.SAMPLES for e in events):
            self._empty_text = TEXT_RUN_TEXT       # not "yet": this run will never draw one here
            self.update()

    def empty_text(self) -> str:
        """What the panel says while it has no episode to draw."""
        return self._empty_text

    def payload(self) -> dict | None:
        return self._payload

    def show_episode(self, payload: dict | None) -> None:
        self._payload = payload if isinstance(payload, dict) else None
        legend = LEGENDS.get(str(self._payload.get("family"))) if self._payload else None
        self.legend.setText(legend or "")
        self.legend.setVisible(legend is not None)
        try:
            set_tooltip(self, tooltip_text(self._payload) if self._payload else "")    # the payload's text as written
        except (AttributeError, TypeError, ValueError):
            self.setToolTip("")   # paintEvent says the payload is unreadable
        self.update()

    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        try:
            p.setRenderHint(QPainter.RenderHint.Antialiasing)
            pal = self.palette()
            rect = QRectF(self.picture_area()).adjusted(6, 6, -6, -6)
            p.fillRect(self.rect(), pal.color(QPalette.ColorRole.Base))
            painter = PAINTERS.get(str(self._payload.get("family"))) if self._payload else None
            if painter is None or self._payload is None:
                self._empty_state(p, rect, self._empty_text)
                return
            try:
                painter(p, rect, self._payload, pal)
            except (AttributeError, KeyError, TypeError, ValueError, IndexError, ZeroDivisionError):
                # an old or foreign payload must not take the console down with it
                p.fillRect(self.rect(), pal.color(QPalette.ColorRole.Base))
                self._empty_state(p, rect, "episode could not be drawn")
        finally:
            p.end()

    def picture_area(self) -> QRect:
        """Where the episode is drawn: the whole widget but the legend under it."""
        area = self.rect()
        if self.legend.isVisibleTo(self):
            # the height the layout gives it (a wrapped label's, at this width), known before a first layout
            area.setBottom(self.height() - self.legend.heightForWidth(self.width()) - 1)
        return area

    def _empty_state(self, p: QPainter, rect: QRectF, text: str) -> None:
        p.setPen(self.palette().color(QPalette.ColorRole.PlaceholderText))
        p.drawText(rect, int(Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap), text)   # a narrow dock wraps it
