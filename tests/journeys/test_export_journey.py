"""Reports in the middle of work: HTML and PDF exports while a run is live, then another run
started and watched, a run from a terminal, and search — the console must keep seeing its
database after every export (losing it was the worst defect found in real use)."""
import subprocess
import sys

from person import TINY, Key, Person, close_console, open_console, rla, until


def test_export_html_and_pdf_mid_run_then_start_another_and_see_it_live(qtbot, tmp_path, drive):
    db = tmp_path / "h.db"
    rla(db, "run", *TINY, "--iterations", "2", "--name", "exported")
    reports = tmp_path / "reports"
    reports.mkdir()
    win = open_console(qtbot, tmp_path)
    me = Person(win, qtbot)
    dash = win.dashboard
    html = next(f for f, v in win.EXPORT_FILTERS.items() if v == "html")
    pdf = next(f for f, v in win.EXPORT_FILTERS.items() if v == "pdf")

    async def journey():
        # 1. the finished run listed; a live run started from the form
        await until(lambda: me.history_row("exported"), 20, "exported listed")
        me.new_run("live", 4000)
        await until(lambda: me.state() == "live — running", 60, "live running")
        run_id = win.controller.session.run_id

        # 2. paused with Space
        me.key(Key.Key_Space)
        await until(lambda: me.state() == "live — paused", 30, "paused")

        # 3. File ▸ Export… as HTML into a reports folder: the dialog proposes the open run
        seen = me.answer_file_dialog(reports / f"{run_id}.html", html)
        me.menu("File ▸ Export…")
        await until(lambda: (reports / f"{run_id}.html").exists() and me.message().startswith("wrote"), 90,
                    "the HTML report written")
        assert seen["proposed"] == f"{run_id}.html"

        # 4. exported again as PDF: the dialog remembers the folder
        seen = me.answer_file_dialog(reports / f"{run_id}.pdf", pdf)
        me.menu("File ▸ Export…")
        await until(lambda: (reports / f"{run_id}.pdf").exists() and me.message().startswith("wrote"), 120,
                    "the PDF report written")
        assert seen["folder"] == str(reports)
        assert (reports / f"{run_id}.pdf").read_bytes().startswith(b"%PDF")

        # 5. Space: the run goes on, and its new points are drawn
        me.key(Key.Key_Space)
        await until(lambda: me.state() == "live — running", 30, "running again")
        before = me.points(dash.policy)
        await until(lambda: me.points(dash.policy) > before, 30, "points after the exports")

        # 6. stopped
        me.click("Stop")
        await until(lambda: me.state() == "live — stopped", 60, "stopped")

        # 7. another run started after the exports is seen starting, listed and drawn
        me.new_run("after the exports", 30)
        await until(lambda: me.state() == "after the exports — running", 60, "the new run seen live")
        await until(lambda: me.history_row("after the exports"), 10, "listed")
        await until(lambda: me.points(dash.policy) >= 2, 30, "drawn")

        # 8. it completes, and no failure is claimed for any run
        await until(lambda: me.state() == "after the exports — completed", 120, "completed")
        assert not me.failure_boxes(), me.failure_boxes()

        # 9. a run from a terminal appears in History
        subprocess.run([sys.executable, "-m", "rla_engine.cli", "run", "--db", str(db), *TINY, "--iterations", "2",
                        "--name", "from the terminal"], check=True, stdout=subprocess.DEVNULL)
        await until(lambda: me.history_row("from the terminal"), 20, "the terminal's run listed")

        # 10. search finds it; cleared, every run is back
        me.type_into(win.history.filter, "terminal")
        await until(lambda: [r["name"] for r in me.history()] == ["from the terminal"], 10, "search")
        me.type_into(win.history.filter, "")
        win.history.filter.clear()
        await until(lambda: len(me.history()) == 4, 10, "all four runs")

        # 11. a CSV of two runs: the name proposed is a comparison's, not one run's id
        me.select_runs("exported", "live")
        seen = me.answer_file_dialog(None)
        me.menu("File ▸ Export…")
        await until(lambda: me.message().startswith("wrote"), 90, "the two runs exported")
        assert seen["proposed"].startswith("comparison-") and seen["folder"] == str(reports)

    drive(journey(), timeout=400)
    close_console(qtbot, win)
