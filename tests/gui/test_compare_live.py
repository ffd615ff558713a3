"""A comparison that holds a live run follows it (seen at the console under Xvfb: its curves stopped
where the comparison was opened while the run went on, and the summary called those values final)."""
import signal
import subprocess
import sys

from PySide6 import QtCore

from rla_engine import metrics
from rla_gui.main_window import MainWindow

from gui_support import TINY, until


def test_a_comparison_with_a_live_run_follows_it_and_says_it_is_live(qtbot, tmp_path, drive):
    db = tmp_path / "h.db"
    subprocess.run([sys.executable, "-m", "rla_engine.cli", "run", "--db", str(db), *TINY, "--iterations", "3",
                    "--run-id", "done", "--name", "done"], check=True, stdout=subprocess.DEVNULL)
    live = subprocess.Popen([sys.executable, "-m", "rla_engine.cli", "run", "--db", str(db), *TINY,
                             "--iterations", "5000", "--run-id", "live", "--name", "live"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    settings = QtCore.QSettings(str(tmp_path / "s.ini"), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(db, settings=settings)
    win.ask_close_choice = lambda run_id: "detach"
    qtbot.addWidget(win)
    win.show()

    async def compare():
        await until(lambda: {r["id"] for r in win.history.model.rows} == {"done", "live"}
                    and next(r for r in win.history.model.rows if r["id"] == "live")["iteration"] >= 2,
                    timeout=60, what="both runs listed, the live one under way")
        win.controller.compare(["done", "live"])
        await until(lambda: win.comparisons, what="the comparison")
        cmp = win.comparisons[-1]
        live_data = next(d for r, d in cmp.runs if r["id"] == "live")
        opened_at = live_data.last_iteration()
        plot = cmp.plots[0]
        curve = plot.curves[[r["id"] for r, _ in cmp.runs].index("live")]
        # its curve grows past where the comparison opened, with no click
        await until(lambda: live_data.last_iteration() > opened_at + 5, timeout=60, what="the live run followed")
        await until(lambda: curve.line.getData()[0] is not None
                    and len(curve.line.getData()[0]) and curve.line.getData()[0][-1] > opened_at + 5,
                    timeout=10, what="its curve redrawn")
        assert len(live_data.columns[metrics.SUCCESS].it[: live_data.columns[metrics.SUCCESS].n]) > opened_at
        # the summary says the live run's values are where it is now
        headers = [cmp.summary_table.horizontalHeaderItem(i).text() for i in range(cmp.summary_table.columnCount())]
        assert any(h.startswith("live (running, it ") for h in headers), headers
        assert "done" in headers

    try:
        drive(compare(), timeout=150)
    finally:
        live.send_signal(signal.SIGTERM)
        live.wait(30)
        win.close()
        if win.finished is not None:
            qtbot.waitUntil(win.finished.done, timeout=30_000)
