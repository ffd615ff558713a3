"""A coding run started from the New run form, watched live: the reward-model panel becomes the
test generator's, the status bar says which sandbox the programs run in, the event log has it, and
the Samples dock shows a program with its ground truth and generated tests — then a step-judge run
opened after it gets its own panel back."""
from person import TINY, Person, close_console, open_console, rla, until

from rla_gui.model import panel_spec


def test_start_a_coding_run_from_the_form_and_read_its_program_and_tests(qtbot, tmp_path, drive):
    db = tmp_path / "h.db"
    rla(db, "run", *TINY, "--iterations", "3", "--name", "embedded")
    win = open_console(qtbot, tmp_path, db)
    me = Person(win, qtbot)
    samples = win.samples

    async def journey():
        await until(lambda: me.history_row("embedded"), 20, "the embedded run listed")
        # 1. the coding preset, two iterations, from the form
        me.new_run("code", 2, preset="llm-code-tiny")
        await until(lambda: me.state().startswith("code — "), 60, "the coding run open")
        # 2. the reward-model panel is the test generator's, and the status bar names the sandbox
        await until(lambda: win.dashboard.agreement.title == panel_spec.TEST_AGREEMENT.title, 60,
                    "the generated tests' panel")
        await until(lambda: win.status_line.sandbox.isVisible(), 120, "the sandbox level shown")
        assert win.status_line.sandbox.text() == "sandbox: bubblewrap"
        # 3. the samples: a program, its ground truth and the four generated tests
        await until(lambda: samples.trajectories.count() > 0, 120, "samples")
        samples.trajectories.setCurrentRow(0)
        await until(lambda: samples.program.isVisible(), 20, "the program view")
        assert "of 6 tests passed" in samples.program.summary.text()
        assert samples.program.tests.rowCount() == 4 and not samples.dialogue.isVisible()
        await until(lambda: me.state() == "code — completed", 180, "the coding run completed")
        log = win.events.model
        assert any(e.get("kind") == "sandbox" for e, _ in log.items), "the sandbox event in the log"
        # 4. a step-judge run opened next: its own panel, no sandbox in the status bar
        me.open_run("embedded")
        await until(lambda: me.state() == "embedded — completed", 30, "embedded open")
        await until(lambda: win.dashboard.agreement.title == panel_spec.AGREEMENT.title, 20, "the judge's panel back")
        assert not win.status_line.sandbox.isVisible()
        assert not me.failure_boxes()

    drive(journey(), timeout=400)
    close_console(qtbot, win)
