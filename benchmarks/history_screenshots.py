"""Screenshots of History as a table of settings and results: an ablation's runs with
chosen columns, grouped by arm, and its groups compared as mean curves with a band.

    .venv/bin/rla ablate --db /tmp/shots.db --preset tiny --seeds 0,1,2 --budget 2500 \\
        --arms outcome,step+judge,full --group demo
    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/history_screenshots.py --db /tmp/shots.db --out docs
"""
from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

import qasync
from PySide6 import QtCore

from rla_engine import metrics
from rla_gui.app import build_app
from rla_gui.main_window import MainWindow
from rla_gui.panels.group_comparison import GroupComparisonPanel

COLUMNS = ["run:arm", "config:policy.lam", "config:judge.train", "config:env.strategy", "config:run.seed",
           f"final:{metrics.EVAL_SUCCESS}", f"best:{metrics.EVAL_SUCCESS}", f"final:{metrics.PROCESS_AGREEMENT}"]


async def scenario(win: MainWindow, out: Path) -> None:
    history = win.history
    while not history.model.rows:
        await asyncio.sleep(0.1)
    history.set_columns(COLUMNS)
    history.set_group_by("run:arm")
    while not all(r.get("columns") for r in history.model.rows):
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)
    for column, width in ((1, 80), (3, 120), (4, 60), (5, 40)):      # status, started, duration, iter
        history.tree.setColumnWidth(column, width)
    history.tree.setColumnHidden(10, True)      # the run id: the name says as much here
    history.tree.setColumnHidden(2, True)       # the preset: one for all
    await asyncio.sleep(0.2)
    history.grab().save(str(out / "history-grouped-by-arm.png"))
    print("saved", out / "history-grouped-by-arm.png", flush=True)
    history.tree.selectionModel().clearSelection()
    flags = QtCore.QItemSelectionModel.SelectionFlag.Select | QtCore.QItemSelectionModel.SelectionFlag.Rows
    for i in range(history.groups.rowCount()):
        history.tree.selectionModel().select(history.groups.index(i, 0), flags)
    history.buttons["Compare"].click()
    while not any(isinstance(v, GroupComparisonPanel) for v in win.comparisons):
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)
    win.grab().save(str(out / "group-comparison.png"))
    print("saved", out / "group-comparison.png", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True, help="a database holding an ablation group (see the docstring)")
    ap.add_argument("--out", default="docs")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    app = build_app([])
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with tempfile.TemporaryDirectory() as tmp:
        settings = QtCore.QSettings(str(Path(tmp) / "s.ini"), QtCore.QSettings.Format.IniFormat)
        win = MainWindow(Path(a.db), settings=settings)
        win.resize(1700, 1000)
        win.show()
        win.history_dock.setFloating(True)       # History on its own, wide enough for its columns
        win.history_dock.resize(1700, 560)
        with loop:
            loop.run_until_complete(scenario(win, out))
            win.close()
            loop.run_until_complete(win.finished)


if __name__ == "__main__":
    main()
