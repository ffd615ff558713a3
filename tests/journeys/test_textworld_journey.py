"""Real TextWorld games from the form: the textworld-commands preset (the embedded policy on
TextWorld's games) chosen and started, seen running and completed, its Episode view drawing a
game's transcript turn by turn with its verdicts, the whole transcript in the tooltip, and the
run's report with that episode in it."""
from rla_engine.store import open_store

from person import Person, close_console, open_console, rla, until


def test_a_textworld_run_from_the_form_shows_its_games_transcript_and_reports_it(qtbot, tmp_path, drive):
    win = open_console(qtbot, tmp_path)
    me = Person(win, qtbot)

    async def journey():
        # 1. the preset chosen in the form, two iterations and a smaller pool, started
        win.show_new_run()
        me.choose_preset("textworld-commands")
        for key, value in (("run.iterations", "2"), ("task.pool_size", "4"), ("rollout.tasks_per_iter", "4"),
                           ("eval.tasks_per_tier", "1")):
            me.fill(key, value)
        me.type_into(win.run_form.name_edit, "games")
        me.click("Start")
        await until(lambda: me.state() == "games — running", 120, "running")
        # 2. completed, its games built beside the database
        await until(lambda: me.state() == "games — completed", 240, "completed")
        assert any((tmp_path / "games").iterdir())
        # 3. the Episode view draws the last episode: a real game's transcript
        await until(lambda: (win.episode.payload() or {}).get("transcript"), 30, "a transcript drawn")
        episode = win.episode.payload()
        assert episode["family"] == "textworld_commands"
        turns = episode["transcript"]
        assert len(turns) == len(episode["verdicts"]) and all(t["command"] and t["answer"] for t in turns)
        tip = win.episode.toolTip()
        assert all(f"> {t['command']}" in tip for t in turns)
        assert not me.failure_boxes()
        return turns

    turns = drive(journey(), timeout=400)
    close_console(qtbot, win)
    # 4. its report holds the episode the view drew, turn by turn
    store = open_store(tmp_path / "h.db")
    run_id = store.list_runs()[0]["id"]
    store.close()
    out = tmp_path / "games.html"
    rla(tmp_path / "h.db", "export", run_id, "--format", "html", "--out", str(out))
    html = out.read_text()
    assert "Last episode" in html and all(t["command"].replace("'", "&#x27;") in html for t in turns)
