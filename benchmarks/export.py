"""Export time and file size for a run with 100,000 metric rows (targets: < 3 s for HTML
and PDF, < 1 s for CSV).

Builds a synthetic stored run in a temporary database — every metric key of SPEC §7 each
iteration until there are --rows metric rows, one episode event per iteration (as the engine
records), a variant event every few iterations and a 64-slot task pool — then times
`python -m rla_gui.report` per format as a user runs it (a fresh process: interpreter start,
imports, reading the database, rendering, writing), best of --repeat. HTML and PDF are timed
when their modules exist.

    .venv/bin/python benchmarks/export.py [--rows 100000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rla_engine import metrics
from rla_engine.store import open_store

TARGET_S = {"csv": 1.0, "json": None, "html": 3.0, "pdf": 3.0}


def metric_keys() -> list[str]:
    return sorted({v for k, v in vars(metrics).items() if k.isupper() and isinstance(v, str) and "/" in v
                   and not v.endswith(("@", "/"))})


def build(db: Path, rows: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    keys = metric_keys()
    n_iter = -(-rows // len(keys))
    s = open_store(db)
    run_id = "bench-export"
    s.create_run(run_id, name="export benchmark", preset="quickstart", config={"task": {"family": "gridworld"}},
                 device="cpu")
    t0 = time.time() - n_iter
    rows_all = ((it, k, rng.random(), t0 + it) for it in range(1, n_iter + 1) for k in keys)
    metric_rows = (m for _, m in zip(range(rows), rows_all))
    s.insert_history(run_id, metric_rows, ((it, t0 + it, 512 * it, 0.05) for it in range(1, n_iter + 1)))
    episode = {"family": "gridworld", "slot": 0, "success": False,
               "task": {"size": 5, "walls": ["....."] * 5, "start": [4, 3], "goal": [3, 2], "budget": 7},
               "info": [[4, 3, 1, 0, 1, 0]] * 7, "verdicts": [[-1, 1, 1]] * 7, "oracle": [-1, 1, -1, 1, -1, 1, -1]}
    with s.db.conn as conn:   # one stored history; a benchmark may write rows in bulk directly
        conn.executemany("INSERT INTO events (run_id, iteration, t, kind, payload_json) VALUES (?, ?, ?, ?, ?)",
                         [(run_id, it, t0 + it, kind, json.dumps(p)) for it in range(1, n_iter + 1)
                          for kind, p in [("episode", episode)] + ([("variant_accepted", {"slot": it % 64, "d": 0.5})]
                                                                    if it % 7 == 0 else [])])
    s.write_tasks(run_id, [{"uid": u, "slot": u % 64, "version": u // 64, "family": "gridworld",
                            "params_json": json.dumps({"params": {"size": 5 + u % 10}, "seed": u}),
                            "difficulty": rng.random(), "status": "active" if u < 64 else "retired",
                            "last_acc": rng.random(), "created_iteration": u // 64} for u in range(256)])
    s.set_status(run_id, "completed")
    count = s.db.execute("SELECT count(*) FROM metrics WHERE run_id = ?", [run_id]).fetchone()[0]
    s.close()
    print(f"built run {run_id}: {count} metric rows ({len(keys)} keys x {n_iter} iterations), "
          f"{n_iter + n_iter // 7} events, 256 task rows")
    return run_id


def time_export(db: Path, run_id: str, fmt: str, out: Path, repeat: int) -> tuple[float, int, str]:
    env = {**os.environ}
    if fmt in ("html", "pdf"):
        env.setdefault("QT_QPA_PLATFORM", "offscreen")
    best, line = float("inf"), ""
    for _ in range(repeat):
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "rla_gui.report", "--db", str(db), "--format", fmt,
                            "--out", str(out), "--force", run_id], capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t
        if r.returncode != 0:
            raise RuntimeError(f"exit {r.returncode}: {r.stderr.strip()[-300:]}")
        best, line = min(best, wall), r.stdout.strip()
    size = sum(p.stat().st_size for p in out.parent.iterdir() if p.name.startswith(out.stem))
    return best, size, line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        db = tmp / "bench.db"
        run_id = build(db, a.rows)
        s = open_store(db, create=False)
        t = time.perf_counter()
        s.export_run(run_id)
        print(f"Store.export_run in process: {time.perf_counter() - t:.3f} s")
        s.close()
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import rla_engine.export.tabular"], check=True)
        print(f"interpreter start + imports (csv/json path): {time.perf_counter() - t:.3f} s\n")
        print(f"{'format':<6} {'wall s':>7} {'target':>7} {'size':>11}   tool's own line")
        for fmt in ("csv", "json", "html", "pdf"):
            if fmt in ("html", "pdf") and importlib.util.find_spec(f"rla_gui.report.{fmt}") is None:
                print(f"{fmt:<6} {'-':>7}   (rla_gui.report.{fmt} not present)")
                continue
            folder = tmp / fmt
            folder.mkdir()
            try:
                wall, size, line = time_export(db, run_id, fmt, folder / f"run.{fmt}", a.repeat)
            except RuntimeError as e:
                print(f"{fmt:<6} failed: {e}")
                continue
            target = TARGET_S[fmt]
            verdict = "" if target is None else (" ok" if wall < target else " SLOW")
            print(f"{fmt:<6} {wall:7.2f} {(f'< {target:.0f} s') if target else '-':>7} {size:>11,} B{verdict}   {line}")


if __name__ == "__main__":
    main()
