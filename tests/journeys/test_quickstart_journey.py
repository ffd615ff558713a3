"""A first afternoon: start from the form, pause with Space, override the difficulty, resume, read
a value under the mouse, stop; then a second run, the first one again, and the console restarted.
The controls, the read-out and the difficulty band must show the open run and nothing else."""
from PySide6 import QtCore

from person import Key, Person, close_console, drag_slider, open_console, until


def test_quickstart_pause_override_resume_stop_then_another_run(qtbot, tmp_path, drive):
    win = open_console(qtbot, tmp_path)
    me = Person(win, qtbot)
    dash = win.dashboard

    async def journey():
        # 1. a fresh console: nothing open, nothing to control
        assert me.state() == "no run open"
        assert not me.enabled("Pause") and not me.enabled("Apply")
        assert me.override_label() == "" and me.slider_value() == "0.50"

        # 2. the quickstart from the form: it is seen starting, listed and drawn
        me.new_run("first", 4000)
        await until(lambda: me.state() == "first — running", 60, "first running")
        await until(lambda: (me.history_row("first") or {}).get("status") == "running", 10, "first listed running")
        await until(lambda: me.points(dash.policy) >= 3, 30, "policy curve drawn")

        # 3. Space pauses
        me.key(Key.Key_Space)
        await until(lambda: me.state() == "first — paused", 30, "paused by Space")
        assert me.button("Resume").isEnabled()

        # 4. the override: slider to 0.90, Apply; the toolbar says it is fixed
        drag_slider(win.controls.slider, 90)
        assert me.slider_value() == "0.90"
        me.click("Apply")
        await until(lambda: me.override_label() == "fixed at 0.90", 30, "override shown")

        # 5. Space resumes; the curves go on
        me.key(Key.Key_Space)
        await until(lambda: me.state() == "first — running", 30, "running again")
        before = me.points(dash.policy)
        await until(lambda: me.points(dash.policy) > before, 30, "new points after the resume")

        # 6. a value under the mouse near the plot's right edge, then the mouse leaves
        me.hover(dash.policy, 0.98)
        readout = dash.policy.readout.item
        assert readout.isVisible() and "success" in readout.toPlainText()
        assert dash.policy.plotItem.vb.sceneBoundingRect().contains(readout.sceneBoundingRect()), \
            "the read-out is cut at the plot's edge"
        me.leave(dash.policy)
        assert not readout.isVisible(), "the read-out stays after the mouse left"

        # 7. Stop: the run ends stopped, and can be resumed
        me.click("Stop")
        await until(lambda: me.state() == "first — stopped", 60, "stopped")
        assert not me.enabled("Pause") and me.enabled("Resume run")

        # 8. a second run: its controls start from its own state, not the first's override
        me.hover(dash.policy, 0.5)
        me.new_run("second", 4000)
        await until(lambda: me.state() == "second — running", 60, "second running")
        assert me.override_label() in ("", "automatic"), f"the first run's override shows: {me.override_label()}"
        assert me.slider_value() == "0.50"
        assert not dash.policy.readout.item.isVisible(), "the first run's read-out carried over"

        # 9. the first run again: its override is its state
        me.open_run("first")
        await until(lambda: me.state() == "first — stopped", 30, "first open")
        await until(lambda: me.override_label() == "fixed at 0.90", 30, "first run's override shown")

        # 10. the second again, then stopped; the first's band and override are gone
        me.open_run("second")
        await until(lambda: me.state() == "second — running", 30, "second open")
        assert me.override_label() in ("", "automatic")
        me.click("Stop")
        await until(lambda: me.state() == "second — stopped", 60, "second stopped")

        # 11. closing the run (opening none, as a delete does): nothing of it stays drawn
        win.open_run(None)
        await until(lambda: me.state() == "no run open", 10, "nothing open")
        assert me.points(dash.policy) == 0
        assert not me.band_drawn(dash.difficulty), "the difficulty band outlives its run"
        assert me.override_label() == "" and me.slider_value() == "0.50"

    drive(journey(), timeout=300)
    close_console(qtbot, win)

    # 12. the console restarted on the same database: the controls show no run's state
    again = open_console(qtbot, tmp_path)
    me = Person(again, qtbot)

    async def restarted():
        await until(lambda: me.history_row("first") and me.history_row("second"), 20, "both runs listed")
        assert me.state() == "no run open"
        assert me.override_label() == "" and me.slider_value() == "0.50"
        me.open_run("second")
        await until(lambda: me.state() == "second — stopped", 30, "second open after the restart")
        assert me.override_label() in ("", "automatic")
    drive(restarted(), timeout=120)
    close_console(qtbot, again)
    QtCore.QCoreApplication.processEvents()
