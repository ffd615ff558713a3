"""The samples panel on a real database: runs written with the store's own write path (what the
engine commits per iteration), opened in the real window (offscreen)."""
import pytest
from PySide6 import QtCore

from rla_engine import metrics
from rla_engine.config import build
from rla_engine.store import open_store
from rla_gui.main_window import MainWindow
from rla_gui.panels import samples as S
from rla_gui.panels import episode_view as EV
from rla_gui.panels.episode_view import BAD_COLOR, GOOD_COLOR

from gui_support import until

MARKUP = "<b>bold</b> <img src=x> &amp;"


def step(text, verdicts, oracle=0, why="looks right"):
    return {"text": text, "verdicts": verdicts, "reasoning": [f"{why} #{i} {MARKUP}" for i in range(len(verdicts))],
            "oracle": oracle}


def trajectory(slot, success, task, turns):
    return {"slot": slot, "task": task, "success": success, "turns": turns}


def samples(iteration, variants=None, long_step=""):
    """A SamplesPayload (vocabulary.py) whose texts differ per iteration and hold markup."""
    first = trajectory(0, True, f"add 2 and 3 (iteration {iteration}) {MARKUP}", [
        {"steps": [step("2 + 3 = 5", [1, 1, -1], oracle=1), step(f"so the answer is 5 {MARKUP}", [1, -1, 0])],
         "observation": f"correct {MARKUP}"},
        {"steps": [step("done" + long_step, [1, 1, 1], why="fine")], "observation": ""}])
    second = trajectory(3, False, "multiply 4 by 6", [
        {"steps": [step("4 × 6 = 28", [-1, -1, -1], oracle=-1, why="wrong product")], "observation": "wrong"}])
    return {"family": "text_arithmetic", "trajectories": [first, second], "variants": variants or []}


def variant(slot, outcome, reason=None):
    return {"slot": slot, "direction": "harder", "outcome": outcome, "critic": {"acc": 0.9, "judge": MARKUP},
            "task": "" if outcome == "invalid" else f"add 12 and 30 {MARKUP}",
            "answer": f'{{"a": 12, "b": 30}} {MARKUP}', "reason": reason}


VARIANTS = [variant(0, "accepted"), variant(1, "rejected", "too hard: acc 0.00"),
            variant(2, "invalid", f"not JSON {MARKUP}")]


@pytest.fixture
def db(tmp_path):
    """"lm": three iterations of samples (variants only in the second); "embedded": episodes only."""
    store = open_store(tmp_path / "samples.db")
    config = build(preset="tiny").to_dict()
    runs = {"lm": [[("samples", samples(1))],
                   [("samples", samples(2, VARIANTS)), ("variant_invalid", VARIANTS[2])],
                   [("samples", samples(3))]],
            "embedded": [[("episode", {"family": "gridworld"})]]}
    for run_id, iterations in runs.items():
        store.create_run(run_id, name=run_id, preset="tiny", config=config, device="cpu")
        for it, events in enumerate(iterations, start=1):
            store.commit_iteration(run_id, it, env_steps=100 * it, wall_s=float(it),
                                   metrics={metrics.SUCCESS: 0.5}, events=events, tasks=[])
        store.end_run(run_id, len(iterations), "completed", {"iterations": len(iterations)})
    store.close()
    return tmp_path / "samples.db"


@pytest.fixture
def window(qtbot, db, aloop):
    settings = QtCore.QSettings(str(db.parent / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(db, settings=settings)
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    yield win
    win.close()
    qtbot.waitUntil(win.finished.done, timeout=30_000)


def open_run(window, drive, run_id, ready):
    async def scenario():
        window.open_run(run_id)
        await until(lambda: window.controller.session.run is not None and ready(window.samples), what=f"{run_id} shown")
    drive(scenario(), timeout=30)
    return window.samples


def lm_ready(panel):
    return panel.iteration == 3


def in_front(widget) -> bool:
    """A dock behind another tab stays "visible", moved out of sight: ask what is painted."""
    return not widget.visibleRegion().isEmpty()


def items(widget):
    return [widget.item(i).text() for i in range(widget.count())]


def colour_of(doc, text):
    """Foreground colour of the first text fragment equal to `text`."""
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            frag = it.fragment()
            if frag.text() == text:
                return frag.charFormat().foreground().color()
            it += 1
        block = block.next()
    raise AssertionError(f"no fragment {text!r}")


def test_the_window_has_a_samples_dock_tabified_with_the_episode(window):
    assert window.samples_dock in window.docks and window.samples_dock.widget() is window.samples
    assert window.samples_dock in window.tabifiedDockWidgets(window.episode_dock)
    assert window.samples.stack.currentWidget() is window.samples.message
    assert window.samples.message.text() == S.EMPTY_TEXT
    assert window.episode.empty_text() == EV.EMPTY_TEXT
    assert in_front(window.episode) and not in_front(window.samples)


def test_the_newest_iteration_shows_its_trajectories_and_the_last_variants(window, drive):
    panel = open_run(window, drive, "lm", lm_ready)
    assert panel.stack.currentIndex() == 1 and in_front(window.samples)     # raised: no episode to show
    assert window.episode.empty_text() == EV.TEXT_RUN_TEXT                 # and the episode dock says why
    assert panel.header.text() == "iteration 3 · text_arithmetic · 2 trajectories"
    assert items(panel.trajectories) == [f"slot 0  ✓  add 2 and 3 (iteration 3) {MARKUP}",
                                         "slot 3  ✗  multiply 4 by 6"]
    assert panel.trajectories.currentRow() == 0
    assert "add 2 and 3 (iteration 3)" in panel.dialogue.toPlainText()
    # iteration 3 proposed nothing: the variants of iteration 2 stay in view, and say so
    assert panel.tabs.tabText(1) == "Variants (iteration 2)"
    assert [t.split("  ")[:3] for t in items(panel.variant_list)] == [
        ["slot 0", "harder", "accepted"], ["slot 1", "harder", "rejected"], ["slot 2", "harder", "invalid"]]
    panel.variant_list.setCurrentRow(2)
    text = panel.variant_text.toPlainText()
    assert f"reason: not JSON {MARKUP}" in text and f'raw answer:\n{{"a": 12, "b": 30}} {MARKUP}' in text
    assert '"judge": "<b>bold</b> <img src=x> &amp;"' in text    # the critic, as JSON
    kinds = [window.events.model.event_at(i)["kind"] for i in range(window.events.row_count())]
    assert "samples" not in kinds and "variant_invalid" in kinds
    row = kinds.index("variant_invalid")
    assert window.events.model.index(row, 3).data() == f"slot 2 harder: not JSON {MARKUP}"


def test_selecting_a_trajectory_and_a_step_shows_verdicts_and_reasoning(window, drive):
    panel = open_run(window, drive, "lm", lm_ready)
    panel.trajectories.setCurrentRow(1)
    text = panel.dialogue.toPlainText()
    assert text.startswith("TASK\nmultiply 4 by 6\n")
    assert "step 1  −1 −1 −1  oracle −1\n4 × 6 = 28\nobservation:\nwrong" in text
    assert panel.reasoning.toPlainText() == ""
    panel.select_step(0, 0)
    assert panel.reasoning.toPlainText().startswith("turn 1 · step 1 · verdicts −1 −1 −1\n\n"
                                                    f"judge 1 (−1 = step wrong):\nwrong product #0 {MARKUP}")
    assert len(panel.dialogue.extraSelections()) == 1          # the selected step is tinted

    panel.trajectories.setCurrentRow(0)
    text = panel.dialogue.toPlainText()
    assert "step 1  +1 +1 −1  oracle +1\n2 + 3 = 5\n" in text
    assert f"step 2  +1 −1 0 \nso the answer is 5 {MARKUP}\nobservation:\ncorrect {MARKUP}" in text
    assert "step 1  +1 +1 +1 \ndone" in text                  # turn 2, no oracle label, no observation
    assert colour_of(panel.dialogue.document(), "+1") == GOOD_COLOR
    assert colour_of(panel.dialogue.document(), "−1") == BAD_COLOR
    # a click inside step 2's text selects it as well
    start = next(a for a, _b, t, s in panel.dialogue.spans if (t, s) == (0, 1))
    cur = panel.dialogue.textCursor()
    cur.setPosition(start + 12)
    panel.dialogue.setTextCursor(cur)
    assert panel.reasoning.toPlainText().startswith("turn 1 · step 2 · verdicts +1 −1 0\n\n"
                                                    "judge 1 (+1 = step right):\n")
    assert "judge 3 (0 = unreadable):" in panel.reasoning.toPlainText()


def test_markup_in_model_text_is_shown_literally(window, drive):
    panel = open_run(window, drive, "lm", lm_ready)
    panel.select_step(0, 1)
    panel.variant_list.setCurrentRow(0)
    for box in (panel.dialogue, panel.reasoning, panel.variant_text):
        assert MARKUP in box.toPlainText()
        assert "<img" not in box.document().toHtml()                    # no image element: the tag stayed text
    assert panel.header.textFormat() == QtCore.Qt.TextFormat.PlainText
    assert MARKUP in panel.trajectories.item(0).text()
    panel.grab()                                                        # and it paints


def test_a_run_without_samples_shows_the_message_and_switching_back_shows_them(window, drive):
    panel = open_run(window, drive, "embedded", lambda p: window.controller.session.run["id"] == "embedded")
    assert panel.stack.currentWidget() is panel.message and panel.payload is None
    panel = open_run(window, drive, "lm", lm_ready)
    assert panel.stack.currentIndex() == 1 and panel.trajectories.count() == 2
    assert in_front(window.samples) and not in_front(window.episode)
    panel = open_run(window, drive, "embedded", lambda p: p.payload is None)
    assert panel.stack.currentWidget() is panel.message and panel.variant_list.count() == 0
    assert in_front(window.episode) and not in_front(window.samples)    # the dock with something to show
    assert window.episode.empty_text() == EV.EMPTY_TEXT                 # its own words again, not the LM run's


def test_long_texts_are_cut(qtbot):
    qtbot.addWidget(panel := S.SamplesPanel())
    panel.show_samples(samples(7, [variant(0, "invalid", "x" * 50_000)], long_step="y" * 100_000), 7)
    text = panel.dialogue.toPlainText()
    assert "\ndone" + "y" * (S.MAX_CHARS - 4) + S.CUT + "\n" in text
    assert len(text) < 2 * S.MAX_CHARS
    assert len(panel.variant_text.toPlainText()) < S.MAX_CHARS + 1000
    # a payload of another shape is shown as far as it goes, never raised on
    panel.show_samples({"family": 3, "trajectories": [None, {"turns": "x"}], "variants": "?"}, 8)
    assert panel.trajectories.count() == 1 and panel.dialogue.toPlainText().startswith("TASK\n")
    assert panel.tabs.tabText(1) == "Variants (iteration 7)"
