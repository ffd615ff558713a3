"""Learning evidence: the `quickstart` preset from scratch, one real `rla run` per seed.

For each seed prints key points over time and checks its targets on the mean of the
last 10 iterations (eval: the last stored value, which is the final iteration's evaluation):
eval/success@0.5 ≥ 0.6, env/difficulty_mean above its start, rm/mu ≥ 1.2,
rm/process_agreement ≥ 0.65 and above its start; and wall time ≤ 300 s.

    .venv/bin/python benchmarks/learning.py [--seeds 0 1 2] [--set key=value …]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rla_engine import metrics
from rla_engine.store import open_store

COLUMNS = (metrics.SUCCESS, metrics.EVAL_SUCCESS, metrics.eval_tier_key(0.5), metrics.MU, metrics.PROCESS_AGREEMENT,
           metrics.OUTCOME_AGREEMENT, metrics.DIFFICULTY_MEAN, metrics.IN_BAND, metrics.ENV_STEPS)


def window_mean(series: dict[int, float], upto: int, n: int = 10) -> float | None:
    vals = [v for it, v in series.items() if upto - n < it <= upto]
    return statistics.fmean(vals) if vals else None


def last_value(series: dict[int, float], upto: int) -> float | None:
    its = [it for it in series if it <= upto]
    return series[max(its)] if its else None


def report(store, run_id: str, wall: float) -> dict:
    by_key = {k: dict(zip(*store.series(run_id, k))) for k in COLUMNS}
    iterations = [r["iteration"] for r in store.iterations(run_id) if r["iteration"] > 0]
    times = {r["iteration"]: r["t"] for r in store.iterations(run_id)}
    t0, last = times[0], iterations[-1]
    print(f"{'iter':>6} {'t(s)':>6} " + " ".join(f"{k.split('/')[-1][:12]:>12}" for k in COLUMNS))
    for frac in (0.02, 0.1, 0.25, 0.5, 0.75, 1.0):
        it = max(10, round(frac * last / 10) * 10) if frac < 1 else last
        row = []
        for k in COLUMNS:
            latest = k.startswith("eval/") or k == metrics.ENV_STEPS
            v = last_value(by_key[k], it) if latest else window_mean(by_key[k], it)
            row.append("-" if v is None else (f"{v:,.0f}" if k == metrics.ENV_STEPS else f"{v:.3f}"))
        print(f"{it:>6} {times[it] - t0:>6.0f} " + " ".join(f"{c:>12}" for c in row))
    def measured(v: float | None, key: str) -> float:
        if v is None:           # the run stored none: no target can be checked on it
            raise SystemExit(f"{run_id}: no {key} stored to check the targets on")
        return v

    def first(k: str) -> float:     # the mean of the first 10 iterations
        return measured(window_mean(by_key[k], 10), k)

    def final(k: str) -> float:     # the mean of the last 10 iterations
        return measured(window_mean(by_key[k], last), k)

    mid = metrics.eval_tier_key(0.5)
    eval_mid = measured(last_value(by_key[mid], last), mid)
    checks = {
        "eval/success@0.5 ≥ 0.6": eval_mid >= 0.6,
        "difficulty_mean rising": final(metrics.DIFFICULTY_MEAN) > first(metrics.DIFFICULTY_MEAN),
        "mu ≥ 1.2": final(metrics.MU) >= 1.2,
        "process_agreement ≥ 0.65": final(metrics.PROCESS_AGREEMENT) >= 0.65,
        "process_agreement rising": final(metrics.PROCESS_AGREEMENT) > first(metrics.PROCESS_AGREEMENT),
        "within 300 s": wall <= 300,
    }
    print(f"final (mean of last 10 iterations): eval@0.5 {eval_mid:.3f}, "
          f"difficulty {first(metrics.DIFFICULTY_MEAN):.3f} -> {final(metrics.DIFFICULTY_MEAN):.3f}, "
          f"μ {final(metrics.MU):.3f}, "
          f"process agreement {first(metrics.PROCESS_AGREEMENT):.3f} -> {final(metrics.PROCESS_AGREEMENT):.3f}, "
          f"wall {wall:.0f} s, {last} iterations")
    print("targets: " + ", ".join(f"{name} {'OK' if ok else 'MISSED'}" for name, ok in checks.items()))
    return checks


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--preset", default="quickstart")
    ap.add_argument("--db", help="keep the runs in this database (default: a temporary one)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(a.db) if a.db else Path(tmp) / "learning.db"
        all_ok = True
        for seed in a.seeds:
            print(f"\n== {a.preset}, seed {seed} ==", flush=True)
            sets = [x for s in a.set for x in ("--set", s)]
            t0 = time.perf_counter()
            res = subprocess.run([sys.executable, "-m", "rla_engine.cli", "run", "--preset", a.preset, "--seed",
                                  str(seed), "--db", str(db), "--name", f"learning seed {seed}", *sets],
                                 capture_output=True, text=True)
            wall = time.perf_counter() - t0
            if res.returncode != 0:
                print(res.stderr)
                sys.exit(1)
            store = open_store(db)
            run_id = next(r["id"] for r in store.list_runs() if r["name"] == f"learning seed {seed}")
            all_ok &= all(report(store, run_id, wall).values())
            store.close()
        print("\nall targets met" if all_ok else "\nsome targets MISSED")


if __name__ == "__main__":
    main()
