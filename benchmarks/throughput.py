"""Throughput of the embedded loop at the quickstart shape (16 tasks × 8 rollouts).

Prints (1) rollout throughput — policy + judge + environment — in env-steps/s, measured on a
policy warmed up by real training so episode lengths are realistic, and (2) the time split of
full iterations run through the engine's Runner with a real SQLite store and checkpoints.

    .venv/bin/python benchmarks/throughput.py [--iterations 300] [--family gridworld]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from rla_engine.config import build
from rla_engine.loop.trainer import Trainer
from rla_engine.runner import Runner
from rla_engine.store import open_store


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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--family", default="gridworld")
    ap.add_argument("--repeats", type=int, default=200)
    a = ap.parse_args()
    cfg = build(preset="quickstart", sets=[f"task.family={a.family}", f"run.iterations={a.iterations}"])
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "bench.db")
        tr = Trainer(cfg, torch.device("cpu"))
        store.create_run("bench", name="bench", preset="quickstart", config=cfg.to_dict(), device="cpu")
        timings: list[dict] = []
        Runner(store, "bench", tr, a.iterations, out=lambda s: None, observe=lambda r: timings.append(r.timings)).run()
        rate, per_rollout = rollout_throughput(tr, a.repeats)

    print(f"family {a.family}, shape {cfg.rollout.tasks_per_iter} tasks × {cfg.rollout.rollouts_per_task} rollouts, "
          f"torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    print(f"rollout throughput (policy + judge + environment): {rate:,.0f} env-steps/s "
          f"({per_rollout:.0f} env-steps per batch, {a.repeats} batches, after {a.iterations} training iterations)")
    phases = list(timings[0])
    total = sum(sum(t.values()) for t in timings)
    print(f"time split over {len(timings)} iterations (mean {1000 * total / len(timings):.1f} ms per iteration):")
    for p in phases:
        s = sum(t[p] for t in timings)
        med = statistics.median(t[p] for t in timings)
        print(f"  {p:<11} {100 * s / total:5.1f} %   median {1000 * med:6.2f} ms")


if __name__ == "__main__":
    main()
