"""Soak: a live run for `--minutes` (default 30) with random pause / resume /
set_difficulty (a value in [0, 1] or null) / checkpoint commands every few seconds and the real
console attached and showing it. Prints its figures; exits 1 when a guarantee is violated.

    .venv/bin/python benchmarks/soak.py [--minutes M] [--history N]

How the console comes to show ≥ 1,000,000 points per curve: a real run is made (3 iterations),
then its history is extended in the database to N iterations (default 1,000,000) for every key
the dashboard draws (Store.insert_history; random walks), and its newest checkpoint is saved
again as the checkpoint of iteration N (the same trained state, only the iteration counter and
step count moved). `rla resume` then continues the run live from N+1, and the console opens it:
a stored 1M-point history with a live run appending to it, every command applied by the engine.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_support import (ROOT, Engine, Verdict, committed, connect, half_iterations, last_line, pct, read_console,
                           rla, rss_mb, run_row, slope_per_min, start_console, stop_console, table, tiny)

from rla_engine import checkpoint
from rla_engine import metrics
from rla_engine.paths import checkpoints_dir
from rla_engine.store import open_store
from rla_engine.vocabulary import CommandOutcome
from rla_gui.model.panel_spec import DRAWN_KEYS

HISTORY_KEYS = sorted({k for k in DRAWN_KEYS if k != metrics.EVAL_SUCCESS}
                      | {metrics.ENV_STEPS, metrics.ITERATION_S})
APPLY_WITHIN_S = 15.0


def make_history(db: Path, n: int, say) -> str:
    """A real 3-iteration run, its history extended to `n` iterations, resumable at `n`."""
    res = rla(db, "run", *tiny(), "--iterations", "3", "--seed", "1", "--name", "soak", timeout=300)
    if res.returncode != 0:
        raise SystemExit(f"soak: the seed run failed: {res.stderr}")
    store = open_store(db)
    run_id = store.list_runs()[0]["id"]
    t = time.time()
    import numpy as np
    rng = np.random.default_rng(0)
    its = np.arange(4, n + 1)
    ts = t - (n - its) * 0.05
    cols: dict[str, np.ndarray] = {k: np.clip(0.5 + np.cumsum(rng.normal(0, 0.002, len(its))), 0, 1)
                                   for k in HISTORY_KEYS}
    cols[metrics.ENV_STEPS] = its * 256.0
    cols[metrics.ITERATION_S] = np.full(len(its), 0.05)
    # keys the real 3 iterations did not all store (a loss needs an update first) are filled in too,
    # so that every curve holds at least n points
    have = {(it, k) for it, k in store.db.execute("SELECT iteration, key FROM metrics WHERE run_id = ?", [run_id])}
    store.insert_history(run_id, [(it, k, 0.5, t - n * 0.05) for it in (1, 2, 3) for k in HISTORY_KEYS
                                  if (it, k) not in have], [])
    # in iteration order (the primary key's), a few thousand iterations per transaction: the WAL
    # stays small and the B-tree grows at its end
    step, nk = 20_000, len(HISTORY_KEYS)
    for lo in range(0, len(its), step):
        part = slice(lo, min(lo + step, len(its)))
        it, tt = its[part], ts[part]
        values = np.stack([cols[k][part] for k in HISTORY_KEYS], axis=1).ravel()
        store.insert_history(run_id, zip(np.repeat(it, nk).tolist(), HISTORY_KEYS * len(it), values.tolist(),
                                         np.repeat(tt, nk).tolist()),
                             zip(it.tolist(), tt.tolist(), (it * 256).tolist(), [0.05] * len(it)))
    owner = checkpoint.Owner(run_id, store.database_id)
    store.close()
    folder = checkpoints_dir(db, run_id)
    newest = checkpoint.latest(folder)
    if newest is None:
        raise SystemExit(f"soak: the seed run left no checkpoint in {folder}")
    state = checkpoint.load(newest)
    state["iteration"], state["env_steps"] = n, n * 256
    checkpoint.save(folder, n, state, 3, owner)
    say(f"history: {n:,} iterations × {len(HISTORY_KEYS)} keys stored in {time.time() - t:.0f} s "
        f"({db.stat().st_size / 2 ** 20:.0f} MB)")
    return run_id


def steer(db: Path, run_id: str, kind: str, payload: dict | None) -> int:
    """One command as a short-lived client sends it: open the store, add the row, close."""
    store = open_store(db)
    try:
        return store.add_command(run_id, kind, payload)
    finally:
        store.close()


def next_command(rng: random.Random, paused: bool) -> tuple[str, dict | None]:
    """Mostly what a user would do next; now and then a pause that is already in force (or a
    resume that is not needed), which must be answered "ignored"."""
    kinds = ["pause", "resume", "set_difficulty", "checkpoint"]
    kind = rng.choices(kinds, [5, 60, 20, 15] if paused else [25, 10, 40, 25])[0]
    if kind == "set_difficulty":
        return kind, {"value": rng.choice([None, round(rng.random(), 3)])}
    return kind, None


def check_commands(conn, run_id: str, since: float, v: Verdict, flagged: set, now: float) -> tuple[int, str | None]:
    """Commands still pending after APPLY_WITHIN_S are violations; return (pending, expected status)."""
    conn.execute("BEGIN")
    try:
        rows = conn.execute("SELECT id, kind, created_at, applied_at, outcome FROM commands WHERE run_id = ? "
                            "AND created_at >= ? ORDER BY id", [run_id, since]).fetchall()
        status = conn.execute("SELECT status FROM runs WHERE id = ?", [run_id]).fetchone()[0]
    finally:
        conn.execute("ROLLBACK")
    pending = [r for r in rows if r[3] is None]
    for cid, kind, created, applied, outcome in rows:
        if cid in flagged:
            continue
        if applied is None and now - created > APPLY_WITHIN_S:
            flagged.add(cid)
            v.check("soak: every command applied with a result", False,
                    f"command {cid} ({kind}) not applied after {now - created:.0f} s")
        elif applied is not None:
            flagged.add(cid)
            v.check("soak: every command applied with a result", bool(outcome), f"command {cid} ({kind}): no result")
    toggles = [r for r in rows if r[1] in ("pause", "resume", "stop") and r[3] is not None
               and r[4] == CommandOutcome.APPLIED]
    expected = None
    if rows and not pending and now - max(r[3] for r in rows) > 1.0:
        expected = {"pause": "paused", "stop": "stopped"}.get(toggles[-1][1] if toggles else "", "running")
        v.check("soak: status consistent with the applied commands", status == expected,
                f"status {status!r}, but the last applied pause/resume says {expected!r}")
    return len(pending), status


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--history", type=int, default=1_000_000, help="stored iterations before the live part")
    ap.add_argument("--every", type=float, nargs=2, default=(1.0, 5.0), metavar=("MIN_S", "MAX_S"),
                    help="seconds between two commands (uniform)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    v = Verdict()
    root = Path(tempfile.mkdtemp(prefix="rla-soak-"))
    db = root / "soak.db"
    say = print
    console = engine = None
    try:
        run_id = make_history(db, a.history, say)
        engine = Engine(db, "resume", run_id, "--iterations", "100000000")
        conn = connect(db)
        while engine.alive() and run_row(conn, run_id).get("pid") != engine.pid:
            time.sleep(0.2)    # the console attaches to the live run, as to one started from a terminal
        out = root / "console.json"
        seconds = a.minutes * 60
        console = start_console(db, out, seconds=seconds + 60, run=run_id, every=5.0)
        t0 = time.time()
        sent: list[tuple[int, str]] = []
        flagged: set[int] = set()
        engine_rss: list[tuple[float, float]] = []
        console_rss: list[tuple[float, float]] = []
        paused, next_cmd, next_sample = False, t0 + 10, t0
        while time.time() - t0 < seconds and engine.alive():
            now = time.time()
            if now >= next_cmd:
                kind, payload = next_command(rng, paused)
                sent.append((steer(db, run_id, kind, payload), kind))
                paused = {"pause": True, "resume": False}.get(kind, paused)
                next_cmd = now + rng.uniform(*a.every)
            if now >= next_sample:
                for series, pid in ((engine_rss, engine.pid), (console_rss, console.pid)):
                    mb = rss_mb(pid)
                    if mb:
                        series.append((now - t0, mb))
                printed = engine.progress()
                half = half_iterations(conn, run_id, since=a.history)
                v.check("soak: no half iteration", not half, f"at {now - t0:.0f} s: {half[:2]}")
                seen = committed(conn, run_id)
                v.check("soak: every printed iteration is committed", seen >= printed,
                        f"at {now - t0:.0f} s the engine had printed iteration {printed}, a reader sees {seen}")
                check_commands(conn, run_id, t0, v, flagged, now)
                next_sample = now + 5.0
            time.sleep(0.2)
        live_ok = engine.alive()
        steer(db, run_id, "stop", None)
        rc = engine.wait(timeout=120)
        v.check("soak: the engine ran to the stop", live_ok and rc == 0,
                f"engine exit {rc}: {last_line(engine.output())}")
        time.sleep(1.0)
        check_commands(conn, run_id, t0, v, flagged, time.time() + APPLY_WITHIN_S + 1)
        half = half_iterations(conn, run_id, since=a.history)
        v.check("soak: no half iteration", not half, f"at the end: {half[:2]}")
        row = run_row(conn, run_id)
        v.check("soak: status consistent with the applied commands", row.get("status") == "stopped",
                f"after the stop command: status {row.get('status')}")
        cmds = conn.execute("SELECT kind, outcome, applied_at - created_at FROM commands WHERE run_id = ? AND "
                            "created_at >= ?", [run_id, t0]).fetchall()
        last = conn.execute("SELECT max(iteration) FROM iterations WHERE run_id = ?", [run_id]).fetchone()[0]
        count = "SELECT count(*) FROM metrics WHERE run_id = ? AND key = ?"
        stored = {k: conn.execute(count, [run_id, k]).fetchone()[0]
                  for k in HISTORY_KEYS}
        conn.close()
        stop_console(console, out, timeout=120)
        rep = read_console(out)
        return report(a, v, rep, run_id, cmds, last, engine_rss, console_rss, stored)
    finally:
        for p in (engine.proc if engine is not None else None, console):
            if p is not None and p.poll() is None:
                p.kill()
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)


def window(samples: list[tuple[float, float]], since: float) -> tuple[float, float, float]:
    tail = [(t, m) for t, m in samples if t >= since]
    ms = [m for _, m in tail]
    return (slope_per_min(tail), (max(ms) - min(ms)) if ms else float("nan"), max(ms, default=float("nan")))


def report(a, v: Verdict, rep: dict, run_id: str, cmds: list, last: int, engine_rss: list, console_rss: list,
           stored: dict) -> int:
    seconds = a.minutes * 60
    warm = min(300.0, seconds / 3)      # "after the first 5 minutes"; a short soak uses its first third
    e_slope, e_range, e_max = window(engine_rss, warm)
    # a slope needs a long window to mean anything: it is judged from 5 minutes of samples on
    long_enough = seconds - warm >= 300
    v.check("soak: engine memory flat after warm-up", e_range <= 50 and (not long_enough or abs(e_slope) <= 1.0),
            f"engine RSS after {warm / 60:.1f} min: slope {e_slope:.2f} MB/min, max-min {e_range:.1f} MB")
    loaded = rep.get("loaded_at") or 0.0
    points = rep.get("points", {})
    shown = min((points.get(k, 0) for k in HISTORY_KEYS), default=0)
    missing = {k: (points.get(k, 0), n) for k, n in stored.items() if points.get(k, 0) != n}
    c_since = max(warm, loaded + 30)
    c_slope, c_range, c_max = window(console_rss, c_since)
    v.check("soak: the console shows the run", rep.get("run_id") == run_id and shown >= a.history and not missing,
            f"console shows {rep.get('run_id')} with {shown:,} points on its smallest curve; "
            f"(shown, stored) differ for {len(missing)} keys: {list(missing.items())[:2]}")
    v.check("soak: console memory bounded", c_range <= 150 and (not seconds - c_since >= 300 or c_slope <= 3.0),
            f"console RSS after {c_since / 60:.1f} min: slope {c_slope:.2f} MB/min, max-min {c_range:.1f} MB")
    errors = rep.get("errors", ["no console report"])
    v.check("soak: the console shows no error", not errors, f"console: {errors[:3]}")
    kinds: dict[str, int] = {}
    for kind, outcome, _ in cmds:
        key = f"{kind}: {outcome or 'NO RESULT'}"
        kinds[key] = kinds.get(key, 0) + 1
    lat = [d * 1000 for _, _, d in cmds if d is not None]
    late = rep.get("lateness_after_load") or {}
    print(table(f"soak: {a.minutes:g} min live after a stored history of {a.history:,} iterations",
                [("live iterations", (last or 0) - a.history, ""),
                 ("commands (kind: result)", len(cmds), ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))),
                 ("command applied after (ms) p50 / max", "", f"{pct(lat, 50):.0f} / {max(lat, default=0):.0f}"),
                 ("engine RSS first / max MB", "", f"{engine_rss[0][1] if engine_rss else 0:.0f} / {e_max:.0f}"),
                 (f"engine RSS after {warm / 60:.1f} min: slope MB/min, max-min MB", "",
                  f"{e_slope:.3f}, {e_range:.1f}"),
                 ("console: points on its smallest history curve", f"{shown:,}", f"history loaded at {loaded:.0f} s"),
                 ("console RSS after load / max MB", "",
                  f"{window(console_rss, loaded + 5)[2]:.0f} / {c_max:.0f}"),
                 (f"console RSS after {c_since / 60:.1f} min: slope MB/min, max-min MB", "",
                  f"{c_slope:.3f}, {c_range:.1f}"),
                 ("console 5 ms timer lateness after load p50/p99/max ms", late.get("n", 0),
                  f"{late.get('p50', 0):.1f} / {late.get('p99', 0):.1f} / {late.get('max', 0):.0f}"),
                 ("console errors", len(errors), "; ".join(errors[:2])[:100])],
                ("what", "count", "figures")))
    return v.report()


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
