"""Screenshots of the console's health parts for docs/screenshots/issue-21/: an added chart, the
System tab of the Training health dock, and an alert raised, then cleared.

A real `tiny` run whose pool starts at difficulty 1 (every task fails: no task in band) is shown
live; the "no task in band" alert is raised within its window, then the difficulty override to 0
(the console's own command) brings tasks in band and the alert is cleared.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/screenshots_health.py --out docs/screenshots/issue-21
"""
from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

import qasync
from PySide6 import QtCore

from rla_engine import metrics
from rla_engine.config import build
from rla_engine.vocabulary import CommandKind
from rla_gui.app import build_app
from rla_gui.main_window import MainWindow


async def until(predicate, timeout: float = 120.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise TimeoutError("the run did not get there")
        await asyncio.sleep(0.2)


class StoppingWindow(MainWindow):
    def ask_close_choice(self, run_id: str) -> str:
        return "stop"           # no modal dialog at the end: the run is stopped with the window


async def scenario(win: MainWindow, out: Path) -> None:
    cfg = build(preset="tiny", sets=["run.iterations=400", "task.dataset_low=1.0", "task.dataset_high=1.0",
                                     "alerts.window=3", "run.system_every_s=0.5"])
    win.run_form.load_config(cfg.to_dict(), "tiny")
    win.run_form.name_edit.setText("pool out of reach")
    win.run_form.start_button.click()
    await until(lambda: win.controller.session.run_id is not None and win.controller.session.data.last_iteration() >= 2)
    status = win.status_line
    await until(lambda: bool(status.active))
    win.dashboard.add_chart([metrics.IN_BAND, metrics.POSITIVE_FRACTION])
    win.losses_dock.raise_()
    win.dashboard.health.setCurrentIndex(4)          # System
    win.events_dock.raise_()
    await asyncio.sleep(2.0)
    win.grab().save(str(out / "alert-raised.png"))
    print("saved", out / "alert-raised.png", flush=True)
    win.controller.command(CommandKind.SET_DIFFICULTY, {"value": 0.0})
    await until(lambda: not status.active, timeout=180)
    await asyncio.sleep(3.0)
    win.grab().save(str(out / "alert-cleared.png"))
    print("saved", out / "alert-cleared.png", flush=True)
    win.losses_dock.raise_()
    bar = win.dashboard.chart_area.verticalScrollBar()
    bar.setValue(bar.maximum())                        # the added chart, below the four panels
    await asyncio.sleep(1.0)
    win.grab().save(str(out / "added-chart-and-system.png"))
    print("saved", out / "added-chart-and-system.png", flush=True)
    win.controller.command(CommandKind.STOP)
    await until(lambda: win.controls.status == "stopped", timeout=60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/screenshots/issue-21")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    app = build_app([])
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with tempfile.TemporaryDirectory() as tmp, loop:
        settings = QtCore.QSettings(str(Path(tmp) / "s.ini"), QtCore.QSettings.Format.IniFormat)
        win = StoppingWindow(Path(tmp) / "h.db", settings=settings)
        win.resize(1600, 1000)
        win.show()
        loop.run_until_complete(scenario(win, out))
        win.close()
        if win.finished is not None:
            loop.run_until_complete(win.finished)


if __name__ == "__main__":
    main()
