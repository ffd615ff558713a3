"""A language-model run read after the fact: its samples in their dock at the default width, a
verdict explained, then an embedded run and back — no panel keeps the other run's view."""
import re

from PySide6.QtTest import QTest
from PySide6 import QtCore

from person import TINY, Person, close_console, open_console, rla, until


def in_front(widget) -> bool:
    """A dock behind another tab stays "visible", moved out of sight: ask what is painted."""
    return not widget.visibleRegion().isEmpty()


def test_open_a_language_model_run_read_its_samples_then_switch_runs(qtbot, tmp_path, drive):
    db = tmp_path / "h.db"
    rla(db, "run", "--preset", "llm-tiny", "--iterations", "2", "--name", "lm")
    rla(db, "run", *TINY, "--iterations", "30", "--name", "embedded")
    win = open_console(qtbot, tmp_path)
    me = Person(win, qtbot)
    samples, losses = win.samples, win.dashboard.losses

    async def journey():
        # 1. both runs listed
        await until(lambda: me.history_row("lm") and me.history_row("embedded"), 20, "both listed")
        # 2. the embedded run opened: its losses drawn over its 30 iterations
        me.open_run("embedded")
        await until(lambda: me.state() == "embedded — completed", 30, "embedded open")
        win.losses_dock.raise_()
        win.dashboard.refresh()
        await until(lambda: me.points(losses) >= 2, 20, "losses drawn")
        embedded_x = me.last_point(losses)[0]
        assert embedded_x >= 10
        await until(lambda: losses.plotItem.vb.viewRange()[0][1] >= embedded_x, 10, "the x-range framing it")
        # 3. the language-model run opened: the Samples dock comes to the front by itself
        me.open_run("lm")
        await until(lambda: me.state() == "lm — completed", 30, "lm open")
        await until(lambda: in_front(samples) and samples.trajectories.count() > 0, 30, "samples in front")
        # 4. its empty Losses panel does not keep the embedded run's x-range
        win.dashboard.refresh()
        assert me.points(losses) == 0
        await until(lambda: losses.plotItem.vb.viewRange()[0][1] < embedded_x, 10, "the other run's x-range gone")
        # 5. the dock reads at its default width: no sideways scrolling in the trajectories
        assert samples.width() <= 420
        assert not samples.trajectories.horizontalScrollBar().isVisible()
        # 6. what a verdict "0" means is said where verdicts are shown
        legend = re.sub(r"<[^>]+>", "", samples.legend.text()).replace("&nbsp;", " ")
        assert "0 = unreadable" in legend, legend
        # 7. a trajectory chosen: its dialogue is shown
        samples.trajectories.setCurrentRow(0)
        await until(lambda: samples.dialogue.toPlainText().strip(), 10, "the dialogue")
        # 8. a step clicked: the judges' reasoning for it
        QTest.mouseClick(samples.dialogue.viewport(), QtCore.Qt.MouseButton.LeftButton,
                         QtCore.Qt.KeyboardModifier.NoModifier, QtCore.QPoint(30, 10))
        # 9. back to the embedded run: the Episode panel has its episode again
        me.open_run("embedded")
        await until(lambda: me.state() == "embedded — completed", 30, "embedded again")
        await until(lambda: win.episode.payload() is not None, 30, "an episode drawn")
        # 10. its losses are back, over its own range
        win.dashboard.refresh()
        await until(lambda: me.points(losses) >= 2, 20, "losses again")
        assert not me.failure_boxes()

    drive(journey(), timeout=300)
    close_console(qtbot, win)
