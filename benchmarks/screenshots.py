"""Screenshots of the console for docs/: during a quickstart run and after it.

Runs the real main window (under xvfb-run, or offscreen), starts a run through the form and
grabs the window. `xvfb-run -a .venv/bin/python benchmarks/screenshots.py --out docs`
"""
from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

import qasync
from PySide6 import QtCore

from rla_engine.config import build
from rla_gui.app import build_app
from rla_gui.main_window import MainWindow


async def scenario(win: MainWindow, out: Path, seconds: float, iterations: int) -> None:
    win.run_form.load_config(build(preset="quickstart", sets=[f"run.iterations={iterations}"]).to_dict(),
                             "quickstart")
    win.run_form.name_edit.setText("quickstart (screenshot)")
    win.run_form.start_button.click()
    while win.controller.session.run_id is None:
        await asyncio.sleep(0.1)
    await asyncio.sleep(seconds)
    win.grab().save(str(out / "console-live.png"))
    print("saved", out / "console-live.png", flush=True)
    while win.controls.status != "completed":
        await asyncio.sleep(0.5)
    await asyncio.sleep(1.0)
    win.history_dock.raise_()
    await asyncio.sleep(0.5)
    win.grab().save(str(out / "console-done.png"))
    print("saved", out / "console-done.png", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="docs")
    ap.add_argument("--seconds", type=float, default=25.0)
    ap.add_argument("--iterations", type=int, default=600)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    app = build_app([])
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with tempfile.TemporaryDirectory() as tmp:
        settings = QtCore.QSettings(str(Path(tmp) / "s.ini"), QtCore.QSettings.Format.IniFormat)
        win = MainWindow(Path(tmp) / "shots.db", settings=settings)
        win.resize(1600, 1000)
        win.show()
        with loop:
            loop.run_until_complete(scenario(win, out, a.seconds, a.iterations))
            win.close()
            loop.run_until_complete(win.finished)


if __name__ == "__main__":
    main()
