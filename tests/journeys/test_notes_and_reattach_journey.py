"""Working beside a live run: notes, tags and search while it trains, then the console closed
with "let it run on" and opened again — it finds the run still live and can stop it."""
from person import TINY, Key, Person, close_console, open_console, rla, until


def test_notes_tags_and_search_while_live_then_close_and_reattach(qtbot, tmp_path, drive):
    rla(tmp_path / "h.db", "run", *TINY, "--iterations", "2", "--name", "short run")    # to search among
    win = open_console(qtbot, tmp_path)
    win.ask_close_choice = lambda run_id: "detach"       # "Let it run on"
    me = Person(win, qtbot)
    h = win.history

    async def journey():
        # 1. a long run started from the form, seen live
        me.new_run("notes run", 20000)
        await until(lambda: me.state() == "notes run — running", 60, "running")
        # 2. listed beside the short run made before from a terminal, to search among
        await until(lambda: me.history_row("notes run") and me.history_row("short run"), 10, "both listed")
        # 3. the live run selected in History, notes typed, tags typed, saved
        win.history_dock.raise_()
        me.select_runs("notes run")
        me.type_into(h.notes, "lr looks too high after the override")
        me.type_into(h.tags, "baseline, override-test")
        me.click("Save notes")
        await until(lambda: me.message().startswith("notes of"), 20, "notes saved")
        # 4. the run keeps going meanwhile
        start = win.status_line.iteration.text()
        await until(lambda: win.status_line.iteration.text() != start, 30, "iterations go on")
        # 5. search by a tag finds it
        me.type_into(h.filter, "override-test")
        await until(lambda: [r["name"] for r in me.history()] == ["notes run"], 10, "found by tag")
        # 6. search by a word of the notes (the full-text index) finds it too
        me.type_into(h.filter, "too high")
        await until(lambda: [r["name"] for r in me.history()] == ["notes run"], 10, "found by notes")
        # 7. a word that is nowhere finds nothing
        me.type_into(h.filter, "zebra")
        await until(lambda: me.history() == [], 10, "nothing found")
        # 8. cleared: both runs again, the live one still running
        h.filter.clear()
        await until(lambda: (me.history_row("notes run") or {}).get("status") == "running", 10, "listed again")
        assert sorted(r["name"] for r in me.history()) == ["notes run", "short run"]
        # 9. selected again, its saved notes are shown; Space pauses it meanwhile
        me.select_runs("notes run")
        await until(lambda: h.notes.toPlainText() == "lr looks too high after the override", 10, "the saved notes")
        me.key(Key.Key_Space)
        await until(lambda: me.state() == "notes run — paused", 30, "paused")
        me.key(Key.Key_Space)
        await until(lambda: me.state() == "notes run — running", 30, "running")

    drive(journey(), timeout=300)
    # 10. closed with "let it run on": the engine goes on without the console
    close_console(qtbot, win)
    again = open_console(qtbot, tmp_path)
    me = Person(again, qtbot)

    async def reattached():
        # 11. the new console lists it running and, opened, shows it live with its notes
        await until(lambda: (me.history_row("notes run") or {}).get("status") == "running", 20, "still running")
        me.open_run("notes run")
        await until(lambda: me.state() == "notes run — running", 30, "re-attached")
        assert me.enabled("Pause") and me.enabled("Stop")
        assert [t.strip() for t in again.history.tags.text().split(",")] == ["baseline", "override-test"]
        # 12. its curves grow in the new console
        await until(lambda: me.points(again.dashboard.policy) >= 2, 30, "drawn")
        before = me.points(again.dashboard.policy)
        await until(lambda: me.points(again.dashboard.policy) > before, 30, "growing")
        # 13. stopped from here
        me.click("Stop")
        await until(lambda: me.state() == "notes run — stopped", 60, "stopped")
        assert not me.failure_boxes()

    drive(reattached(), timeout=200)
    close_console(qtbot, again)
