"""Two journeys about what a person tries that the console must answer well: resuming a run that
has completed, and opening a file that is no database."""
from PySide6 import QtWidgets

from person import TINY, Person, close_console, open_console, rla, until


def test_resume_a_completed_run_from_the_toolbar_and_from_history(qtbot, tmp_path, drive):
    db = tmp_path / "h.db"
    rla(db, "run", *TINY, "--iterations", "3", "--name", "done")
    win = open_console(qtbot, tmp_path)
    me = Person(win, qtbot)

    async def journey():
        # 1. the finished run is listed; 2. opened, it shows completed at 3
        await until(lambda: me.history_row("done"), 20, "done listed")
        assert me.history_row("done")["status"] == "completed"
        me.open_run("done")
        await until(lambda: me.state() == "done — completed", 30, "done open")
        assert win.status_line.iteration.text() == "iteration 3"
        # 3. Resume run is offered for a completed run, and says what it will do
        assert me.enabled("Resume run")
        assert "more iterations" in me.button("Resume run").toolTip()
        # 4. a click asks how many iterations to add; cancelled, nothing happens
        asked = me.answer_input(None)
        me.click("Resume run")
        await until(lambda: "text" in asked, 10, "the question")
        assert "Iterations to add" in asked["text"]
        await until(lambda: not any(isinstance(d, QtWidgets.QInputDialog) for d in me.dialogs()), 10, 'closed')
        assert me.state() == "done — completed" and not me.failure_boxes()
        # 5. asked again, 4 more: the run goes on to 7 and completes, no failure is shown
        asked = me.answer_input(4)
        me.click("Resume run")
        await until(lambda: win.status_line.iteration.text() == "iteration 7", 60, "resumed to 7")
        await until(lambda: me.state() == "done — completed", 60, "completed again")
        assert not me.failure_boxes(), me.failure_boxes()
        # 6. History lists it completed at 7
        await until(lambda: (me.history_row("done") or {}).get("iter") == "7", 10, "history at 7")
        # 7. History's Resume on the completed run asks too; 2 more → 9
        me.select_runs("done")
        asked = me.answer_input(2)
        me.click("Resume")
        await until(lambda: "text" in asked, 10, "History's question")
        await until(lambda: (me.history_row("done") or {}).get("iter") == "9", 60, "history at 9")
        await until(lambda: me.state() == "done — completed", 60, "completed at 9")
        # 8. the engine's plain exit was no failure, ever
        assert not me.failure_boxes(), me.failure_boxes()
        assert "error" not in me.message()
        # 9. a second run, stopped, resumes to its own target without a question
        me.new_run("stopped one", 4000)
        await until(lambda: me.state() == "stopped one — running", 60, "second running")
        me.click("Stop")
        await until(lambda: me.state() == "stopped one — stopped", 60, "second stopped")
        assert me.enabled("Resume run") and "stopped" in me.button("Resume run").toolTip()
        # 10. resumed: running again, without a question
        me.click("Resume run")
        await until(lambda: me.state() == "stopped one — running", 60, "second resumed")
        assert not any(isinstance(d, QtWidgets.QInputDialog) for d in me.dialogs())
        me.click("Stop")
        await until(lambda: me.state() == "stopped one — stopped", 60, "second stopped again")
        assert not me.failure_boxes()

    drive(journey(), timeout=300)
    close_console(qtbot, win)


def test_open_a_file_that_is_no_database_and_carry_on(qtbot, tmp_path, drive):
    db = tmp_path / "h.db"
    rla(db, "run", *TINY, "--iterations", "2", "--name", "kept")
    notes = tmp_path / "notes.txt"
    notes.write_text("these are my notes, not a database\n" * 50)
    win = open_console(qtbot, tmp_path)
    me = Person(win, qtbot)
    title = me.title()

    async def journey():
        # 1. the database's run is listed
        await until(lambda: me.history_row("kept"), 20, "kept listed")
        # 2. File ▸ Open database…, the text file chosen
        chosen = me.answer_file_dialog(notes)
        me.menu("File ▸ Open database…")
        await until(lambda: chosen.get("dialog"), 10, "the file chooser")
        # 3. a dialog says why, naming the file; the title and History stay
        await until(lambda: any(t.startswith("Cannot open the database") for t in me.dialog_texts()), 20,
                    "the refusal dialog")
        box = next(d for d in me.dialogs() if d.windowTitle() == "Cannot open the database")
        assert "notes.txt" in box.text() and "not an SQLite database" in box.informativeText()
        assert "--db" not in box.informativeText()        # the console has no --db: no CLI advice
        assert me.title() == title
        assert me.history_row("kept")
        # 4. closed, the console carries on with the old database: open the run
        box.close()
        me.open_run("kept")
        await until(lambda: me.state() == "kept — completed", 30, "kept open")
        # 5. a run started now lands in the old database and is seen live
        me.new_run("after the refusal", 4000)
        await until(lambda: me.state() == "after the refusal — running", 60, "new run live")
        await until(lambda: me.history_row("after the refusal"), 10, "listed")
        # 6. stopped
        me.click("Stop")
        await until(lambda: me.state() == "after the refusal — stopped", 60, "stopped")
        # 7. File ▸ New database… in another folder: empty history, new title
        other = tmp_path / "other" / "fresh.db"
        other.parent.mkdir()
        chosen = me.answer_file_dialog(other)
        me.menu("File ▸ New database…")
        await until(lambda: "fresh.db" in me.title(), 20, "the new database open")
        await until(lambda: not me.history(), 10, "an empty history")
        assert me.state() == "no run open"
        # 8. back to the first database: both runs listed again
        chosen = me.answer_file_dialog(db)
        me.menu("File ▸ Open database…")
        await until(lambda: me.history_row("kept") and me.history_row("after the refusal"), 20, "runs back")
        assert me.title() == title
        # 9. a file named like a database that holds garbage is refused the same way
        broken = tmp_path / "broken.db"
        broken.write_bytes(bytes(range(256)) * 16)
        chosen = me.answer_file_dialog(broken)
        me.menu("File ▸ Open database…")
        await until(lambda: any(t.startswith("Cannot open the database") for t in me.dialog_texts()), 20,
                    "the second refusal")
        me.close_boxes()
        assert me.title() == title
        # 10. nothing went to a failure dialog; the history is still the first database's
        assert not me.failure_boxes()
        assert me.history_row("kept")

    drive(journey(), timeout=300)
    close_console(qtbot, win)
