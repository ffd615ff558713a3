"""Console responsiveness: event-loop stalls while a real run streams, redraw and
pan/zoom of a 1,000,000-iteration history, start-up time to a shown main window; History with
1,000 runs and 10 chosen columns: a sort, a grouping (target: a sort under 100 ms).

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/gui_latency.py        (or under xvfb-run)
    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/gui_latency.py --history-only
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import qasync
from PySide6 import QtCore

from rla_engine.config import Config, build
from rla_engine import metrics
from rla_engine.store import open_store
from rla_gui.model.panel_spec import DRAWN_KEYS
from rla_gui.app import build_app
from rla_gui.main_window import MainWindow

HISTORY_KEYS = [k for k in DRAWN_KEYS if k != metrics.EVAL_SUCCESS] + [metrics.ENV_STEPS, metrics.ITERATION_S]
# History's 10 chosen columns: settings, final and best values, the arm
CHOSEN = ["config:policy.lam", "config:run.seed", "config:env.strategy", "config:judge.m", "run:arm",
          f"final:{metrics.EVAL_SUCCESS}", f"best:{metrics.EVAL_SUCCESS}", f"final:{metrics.MU}",
          f"best:{metrics.SUCCESS}", f"final:{metrics.LOSS_POLICY}"]
RUN_KEYS = (metrics.SUCCESS, metrics.EVAL_SUCCESS, metrics.MU, metrics.DIFFICULTY_MEAN, metrics.LOSS_POLICY,
            metrics.ENV_STEPS)


def pct(xs, q):
    return float(np.percentile(np.array(xs), q))


async def stalls_while_streaming(win: MainWindow, seconds: float) -> list[float]:
    """Intervals of a 5 ms timer beyond 5 ms, while a quickstart run streams into the window."""
    cfg = build(preset="quickstart", sets=["run.iterations=100000"])
    run_id = await win.controller.session.client.start(cfg, preset="quickstart", name="latency")
    win.open_run(run_id)
    await asyncio.sleep(3.0)          # history loaded, plots drawing
    late, last = [], time.perf_counter()

    def tick():
        nonlocal last
        now = time.perf_counter()
        late.append(max(0.0, (now - last) * 1000 - 5.0))
        last = now
    timer = QtCore.QTimer()
    timer.setTimerType(QtCore.Qt.TimerType.PreciseTimer)
    timer.timeout.connect(tick)
    timer.start(5)
    await asyncio.sleep(seconds)
    timer.stop()
    iterations = win.controller.session.data.last_iteration()
    await win.controller.session.client.stop(run_id)
    await win.controller.session.client.wait(run_id)
    print(f"  streamed {iterations} iterations into the window during the measurement")
    return late[1:]


def make_history(db: Path, n: int) -> str:
    store = open_store(db)
    store.create_run("big", name=f"{n:,} iterations", preset="", config=Config().to_dict(), device="cpu")
    rng = np.random.default_rng(0)
    its = np.arange(1, n + 1)
    t = 1.7e9 + its * 0.05
    walk = lambda: np.clip(0.5 + np.cumsum(rng.normal(0, 0.002, n)), 0, 1)   # noqa: E731
    cols: dict[str, np.ndarray] = {k: walk() for k in HISTORY_KEYS}
    cols[metrics.ENV_STEPS] = its * 2000.0
    rows = ((int(i), k, float(cols[k][i - 1]), float(t[i - 1])) for k in HISTORY_KEYS for i in its)
    evals = ((int(i), metrics.EVAL_SUCCESS, float(cols[metrics.SUCCESS][i - 1]), float(t[i - 1])) for i in its[9::10])
    store.insert_history("big", rows, ((int(i), float(t[i - 1]), int(i) * 2000, 0.05) for i in its))
    store.insert_history("big", evals, [])
    store.set_status("big", "completed")
    store.close()
    return "big"


async def load_history(win: MainWindow) -> float:
    t0 = time.perf_counter()
    win.open_run("big")
    while win.controller.session.data.last_iteration() < 1 or win.controller.session.run is None:
        await asyncio.sleep(0.1)
    return time.perf_counter() - t0


def redraw_and_pan(win: MainWindow, app, repeats: int) -> tuple[list[float], list[float]]:
    """Run outside any asyncio task: a synchronous repaint may process queued events."""
    plots = [win.dashboard.policy, win.dashboard.agreement, win.dashboard.balance, win.dashboard.difficulty]
    data = win.controller.session.data
    for p in plots:
        p.plotItem.enableAutoRange()
    win.dashboard.refresh()
    app.processEvents()
    full, pan = [], []
    for r in range(repeats):
        for p in plots:            # drop every curve's drawn state: data re-sent, then painted
            p.reset_drawn()
        t = time.perf_counter()
        win.dashboard.refresh()
        for p in plots:
            p.grab()      # renders the whole plot now, as a repaint would
        full.append((time.perf_counter() - t) * 1000)
        lo = (100_000 + r * 20_000) * data.last_iteration() / 1_000_000
        t = time.perf_counter()
        for p in plots:
            p.plotItem.setXRange(lo, lo + (200_000 - r * 5_000) * data.last_iteration() / 1_000_000, padding=0)
            p.grab()      # renders the whole plot now, as a repaint would
        pan.append((time.perf_counter() - t) * 1000)
        for p in plots:
            p.plotItem.enableAutoRange()
    return full, pan


def added_chart(win: MainWindow, app, repeats: int) -> tuple[float, list[float], list[float]]:
    """Add a chart of two keys of the loaded history (target: redraw and pan stay under 50 ms):
    the time to add and first draw it, then its redraws and pans as above."""
    t = time.perf_counter()
    plot = win.dashboard.add_chart([metrics.MU, metrics.LOSS_POLICY])
    app.processEvents()
    plot.grab()
    added = (time.perf_counter() - t) * 1000
    n = win.controller.session.data.last_iteration()
    full, pan = [], []
    for r in range(repeats):
        plot.plotItem.enableAutoRange()
        plot.reset_drawn()
        t = time.perf_counter()
        plot.refresh()
        plot.grab()
        full.append((time.perf_counter() - t) * 1000)
        lo = (100_000 + r * 20_000) * n / 1_000_000
        t = time.perf_counter()
        plot.plotItem.setXRange(lo, lo + (200_000 - r * 5_000) * n / 1_000_000, padding=0)
        plot.grab()
        pan.append((time.perf_counter() - t) * 1000)
    return added, full, pan


def startup_s() -> float:
    code = ("import time, sys; t0 = float(sys.argv[1]); import os\n"
            "from rla_gui.app import build_app\n"
            "from rla_gui.main_window import MainWindow\n"
            "import qasync, asyncio, pathlib, tempfile\n"
            "app = build_app([]); loop = qasync.QEventLoop(app); asyncio.set_event_loop(loop)\n"
            "w = MainWindow(pathlib.Path(tempfile.mkdtemp()) / 'h.db'); w.show(); app.processEvents()\n"
            "print(time.time() - t0)\n")
    times = []
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", code, repr(time.time())], capture_output=True, text=True,
                             env={**os.environ})
        times.append(float(out.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def make_runs(db: Path, n: int, iterations: int = 10) -> None:
    """`n` finished runs of an ablation-like group: three arms (λ), seeds, a few iterations each."""
    store = open_store(db)
    rng = np.random.default_rng(0)
    for i in range(n):
        arm, lam = [("outcome", 0.0), ("half", 0.5), ("full", 1.0)][i % 3]
        cfg = Config().to_dict()
        cfg["policy"]["lam"], cfg["run"]["seed"] = lam, i // 3
        run_id = f"r{i:05d}"
        store.create_run(run_id, name=f"{arm} · seed {i // 3}", preset="tiny", config=cfg, device="cpu",
                         group_id="scale")
        its = np.arange(1, iterations + 1)
        rows = [(int(it), k, float(rng.random()), 1.7e9 + i + it) for k in RUN_KEYS for it in its]
        store.insert_history(run_id, rows, [(int(it), 1.7e9 + i + it, int(it) * 100, 0.1) for it in its])
        store.set_status(run_id, "completed")
    store.close()


def history_at_scale(app, tmp: Path, runs: int, repeats: int) -> None:
    """History over `runs` runs with 10 chosen columns: the one-query reads, a sort (header click
    to painted rows), a grouping and a sort of the groups (the tree rebuilt and painted)."""
    loop = asyncio.get_event_loop()
    db = tmp / "runs.db"
    t = time.perf_counter()
    make_runs(db, runs)
    print(f"wrote {runs:,} runs in {time.perf_counter() - t:.0f} s")
    settings = QtCore.QSettings(str(tmp / "h.ini"), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(db, settings=settings)
    win.resize(1600, 1000)
    win.show()
    win.history_dock.setFloating(True)            # History as wide as its columns
    win.history_dock.resize(1500, 700)
    history = win.history

    async def values_read() -> float:
        while len(history.model.rows) < runs:
            await asyncio.sleep(0.05)
        t0 = time.perf_counter()
        history.set_columns(CHOSEN)
        while not all(r.get("columns", {}).get(CHOSEN[5]) is not None for r in history.model.rows):
            await asyncio.sleep(0.01)
        return time.perf_counter() - t0
    fill = loop.run_until_complete(values_read())
    print(f"History's 10 chosen columns of {runs:,} runs read and shown in {fill * 1000:.0f} ms "
          "(one query per kind of value)")
    app.processEvents()
    sorts, groupings, group_sorts = [], [], []
    columns = [history.model.columns.index(c) for c in history.model.columns if c.id in CHOSEN] + [0, 3]
    order = QtCore.Qt.SortOrder
    for r in range(repeats):
        column = columns[r % len(columns)]
        t0 = time.perf_counter()
        history.table.sortByColumn(column, order.DescendingOrder if r % 2 else order.AscendingOrder)
        history.table.viewport().repaint()       # painted now, as the next frame would
        sorts.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        history.set_group_by("run:arm" if r % 2 else "config:policy.lam")
        history.tree.viewport().repaint()
        groupings.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        history.tree.header().setSortIndicator(column, order.AscendingOrder if r % 2 else order.DescendingOrder)
        history.tree.viewport().repaint()
        group_sorts.append((time.perf_counter() - t0) * 1000)
        history.set_group_by(None)
        app.processEvents()
    print(f"History sort ({runs:,} runs, 10 chosen columns), header click to painted rows: median "
          f"{statistics.median(sorts):.1f} ms (max {max(sorts):.1f})")
    print(f"History grouped by a column (tree built, every group open, painted): median "
          f"{statistics.median(groupings):.1f} ms (max {max(groupings):.1f})")
    print(f"History's groups sorted by a column: median {statistics.median(group_sorts):.1f} ms "
          f"(max {max(group_sorts):.1f})")
    win.close()
    if win.finished is not None:
        loop.run_until_complete(win.finished)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--iterations", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--runs", type=int, default=1000, help="History's runs for the sort and grouping")
    ap.add_argument("--history-only", action="store_true", help="measure History at scale only")
    a = ap.parse_args()
    if a.history_only:
        app = build_app([])
        app.setQuitOnLastWindowClosed(False)
        loop = qasync.QEventLoop(app)
        asyncio.set_event_loop(loop)
        with tempfile.TemporaryDirectory() as tmp, loop:
            history_at_scale(app, Path(tmp), a.runs, a.repeats)
        return
    print(f"start-up to a shown main window: {startup_s():.2f} s (median of 3)")
    app = build_app([])
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with tempfile.TemporaryDirectory() as tmp, loop:
        settings = QtCore.QSettings(str(Path(tmp) / "s.ini"), QtCore.QSettings.Format.IniFormat)
        win = MainWindow(Path(tmp) / "lat.db", settings=settings)
        win.resize(1600, 1000)
        win.show()
        late = loop.run_until_complete(stalls_while_streaming(win, a.seconds))
        print(f"event-loop lateness of a 5 ms timer while a run streams ({len(late)} ticks): "
              f"p50 {pct(late, 50):.1f} ms, p99 {pct(late, 99):.1f} ms, max {max(late):.1f} ms")
        t = time.perf_counter()
        make_history(Path(tmp) / "lat.db", a.iterations)
        print(f"wrote a {a.iterations:,}-iteration history ({len(HISTORY_KEYS) + 1} keys) in "
              f"{time.perf_counter() - t:.0f} s")
        load = loop.run_until_complete(load_history(win))
        full, pan = redraw_and_pan(win, app, a.repeats)
        print(f"loaded it into the window in {load:.1f} s")
        print(f"full redraw of the four panels: median {statistics.median(full):.1f} ms (max {max(full):.1f})")
        print(f"pan/zoom of the four panels:    median {statistics.median(pan):.1f} ms (max {max(pan):.1f})")
        added, full, pan = added_chart(win, app, a.repeats)
        print(f"an added chart (rm/mu, loss/policy): added and drawn in {added:.1f} ms; redraw median "
              f"{statistics.median(full):.1f} ms (max {max(full):.1f}); pan median {statistics.median(pan):.1f} ms "
              f"(max {max(pan):.1f})")
        win.close()
        loop.run_until_complete(win.finished)
        history_at_scale(app, Path(tmp), a.runs, a.repeats)


if __name__ == "__main__":
    main()
