"""Alerts from the theory, as the console shows them: a badge in the status line
while one is active, a shaded band from where it began to where it ended, and a sentence with
advice in the Events log — from a real engine whose judge gives one verdict per step (unanimous by
definition: the collapse alert after a window of 2), cleared when its run ends."""
import math

from PySide6 import QtCore

from rla_engine.alerts import ALERTS, JUDGE_UNANIMOUS
from rla_gui.main_window import MainWindow

from gui_support import until


def test_a_collapsed_judge_is_shown_while_it_lasts_and_explained(qtbot, tmp_path, drive):
    settings = QtCore.QSettings(str(tmp_path / "s.ini"), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(tmp_path / "h.db", settings=settings)
    win.ask_close_choice = lambda run_id: "stop"
    qtbot.addWidget(win)
    win.show()
    title = ALERTS[JUDGE_UNANIMOUS].title
    badge = win.status_line.alerts

    def log_lines() -> list[str]:
        return [cells[3] for _, cells in win.events.model.items]

    async def journey():
        from rla_engine.config import build
        # the paper's judge: the repaired one's μ also falls to 1 late in this run, a second alert
        cfg = build(preset="tiny", sets=["run.iterations=40", "judge.m=1", "alerts.window=2", "judge.profile=paper"])
        win.run_form.load_config(cfg.to_dict(), "tiny")
        win.run_form.start_button.click()
        # raised within its window: the badge names it, its tooltip says what to do
        await until(lambda: badge.isVisible() and title in badge.text(), timeout=90, what="the badge")
        assert "What to do:" in badge.toolTip()
        # the Events log explains it in a sentence, with advice
        await until(lambda: any(line.startswith(f"⚠ {title}") and "What to do:" in line for line in log_lines()),
                    timeout=10, what="the alert in the Events log")
        # the dashboard shades where it holds, from where it began on
        markers = win.dashboard.policy.markers
        await until(lambda: markers.alert_spans and math.isinf(markers.alert_spans[-1][1]), timeout=10,
                    what="its band")
        # the run ends: the alert is cleared, the badge says (as `rla show` does) that it was active
        # then, no longer as a warning, and the end is marked
        await until(lambda: win.controls.status == "completed", timeout=120, what="the run's end")
        await until(lambda: badge.text() == f"1 alert active when the run ended: {title}", timeout=10,
                    what="the badge muted")
        assert any(line.startswith(f"✓ {title} cleared: the run ended") for line in log_lines())
        await until(lambda: markers.alert_spans and not math.isinf(markers.alert_spans[-1][1]), timeout=10,
                    what="its band ended")

    drive(journey(), timeout=240)
    win.close()
    if win.finished is not None:
        qtbot.waitUntil(win.finished.done, timeout=30_000)
