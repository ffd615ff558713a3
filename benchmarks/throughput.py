"""Throughput of the embedded loop at the quickstart shape (16 tasks × 8 rollouts).

Prints (1) the whole loop's environment steps per second — iterations run through the engine's
Runner with a real SQLite store and a checkpoint every iteration, as `rla run` does; (2) the time
split of those iterations; (3) rollout throughput — policy + judge + environment — on the policy
they trained, so that episode lengths are realistic.

    .venv/bin/python benchmarks/throughput.py [--iterations 300] [--family gridworld]
    .venv/bin/python benchmarks/throughput.py --against HEAD~3 [--rounds 3]

`--against REV` measures the whole loop side by side with the code of a git revision: a worktree
of REV in a temporary folder, then `--rounds` alternating runs of each tree (the same script, the
same settings, one process per run), and the medians and their ratio.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from rla_engine.config import build
from rla_engine.loop.trainer import Trainer
from rla_engine.runner import Runner
from rla_engine.store import open_store

sys.path.insert(0, str(Path(__file__).resolve().parent))
from revision import ROOT, tree_at


def rollout_throughput(tr: Trainer, repeats: int) -> tuple[float, float]:
    cfg = tr.cfg
    steps = 0
    t0 = time.perf_counter()
    for _ in range(repeats):
        slots = tr.pool.sample_slots(cfg.rollout.tasks_per_iter, tr.rng)
        tasks = [tr.pool.active[s].task for s in slots]
        roll = tr.backend.collect(tasks, cfg.rollout.rollouts_per_task)
        tr.backend.judge(roll, cfg.judge.m)
        steps += roll.env_steps
    wall = time.perf_counter() - t0
    return steps / wall, steps / repeats


def whole_loop(family: str, iterations: int, tmp: Path, device: str = "cpu") -> tuple[float, list[dict], Trainer]:
    """Environment steps per second of `iterations` iterations run by the Runner, start-up excluded."""
    cfg = build(preset="quickstart", sets=[f"task.family={family}", f"run.iterations={iterations}",
                                           "run.checkpoint_every=1", f'run.device="{device}"'])
    store = open_store(tmp / "bench.db")
    tr = Trainer(cfg, torch.device(device))
    store.create_run("bench", name="bench", preset="quickstart", config=cfg.to_dict(), device=device)
    timings: list[dict] = []
    runner = Runner(store, "bench", tr, iterations, out=lambda s: None, observe=lambda r: timings.append(r.timings))
    t0 = time.perf_counter()
    runner.run()
    wall = time.perf_counter() - t0
    store.close()
    return tr.env_steps / wall, timings, tr


def print_split(timings: list[dict]) -> None:
    phases = list(timings[0])
    total = sum(sum(t.values()) for t in timings)
    print(f"time split over {len(timings)} iterations (mean {1000 * total / len(timings):.1f} ms per iteration):")
    for p in phases:
        s = sum(t[p] for t in timings)
        med = statistics.median(t[p] for t in timings)
        print(f"  {p:<11} {100 * s / total:5.1f} %   median {1000 * med:6.2f} ms")


def against(rev: str, family: str, iterations: int, rounds: int) -> None:
    """Alternate runs of this tree and of `rev`'s, one process each, and print both medians."""
    with tree_at(rev) as old:
        trees = {"this tree": ROOT, rev: old}
        rates: dict[str, list[float]] = {name: [] for name in trees}
        for n in range(rounds):
            for name, tree in trees.items():
                out = subprocess.run([sys.executable, __file__, "--loop-only", "--family", family,
                                      "--iterations", str(iterations)], check=True, capture_output=True,
                                     text=True, env={**os.environ, "PYTHONPATH": str(tree)}).stdout
                rate = json.loads(out.splitlines()[-1])["env_steps_per_s"]
                rates[name].append(rate)
                print(f"round {n + 1}: {name:<12} {rate:9,.0f} env-steps/s")
    mine, theirs = statistics.median(rates["this tree"]), statistics.median(rates[rev])
    print(f"whole loop, {family}, {iterations} iterations, checkpoint every iteration, median of {rounds}: "
          f"this tree {mine:,.0f} env-steps/s, {rev} {theirs:,.0f} env-steps/s, ratio {mine / theirs:.2f}×")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--family", default="gridworld")
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--against", metavar="REV", help="measure the whole loop side by side with this git revision")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--loop-only", action="store_true", help="print only the whole loop's rate, as JSON")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    a = ap.parse_args()
    if a.against:
        against(a.against, a.family, a.iterations, a.rounds)
        return
    with tempfile.TemporaryDirectory() as tmp:
        rate, timings, tr = whole_loop(a.family, a.iterations, Path(tmp), a.device)
        if a.loop_only:
            print(json.dumps({"env_steps_per_s": rate}))
            return
        rollout_rate, per_rollout = rollout_throughput(tr, a.repeats)
    cfg = tr.cfg
    print(f"family {a.family} on {a.device}, shape {cfg.rollout.tasks_per_iter} tasks × "
          f"{cfg.rollout.rollouts_per_task} rollouts, torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    print(f"whole loop (Runner, SQLite store, a checkpoint every iteration): {rate:,.0f} env-steps/s")
    print_split(timings)
    print(f"rollout throughput (policy + judge + environment): {rollout_rate:,.0f} env-steps/s "
          f"({per_rollout:.0f} env-steps per batch, {a.repeats} batches, after {a.iterations} training iterations)")


if __name__ == "__main__":
    main()
