"""The Ray executor against the local one, on a simulated two-node Ray cluster on this machine
(ray.cluster_utils.Cluster: two raylets, `--cpus-per-node` logical CPUs each).

Prints (1) roll-out throughput (env steps/s of the executor's `collect`, policy warmed up by real
training) with 1, 2 and 4 rollout workers, beside the local executor; (2) the overhead of a whole
iteration on the Ray executor (one worker per role) over the local executor at the quickstart's
batch, as the ratio of median iteration times over interleaved blocks; (3) a fault: a rollout
worker killed in the middle of a run, the time its iteration took against the median, and
whether the run's metrics match an unkilled run's.

    .venv/bin/python benchmarks/scale.py [--iterations 40] [--batch 16] [--repeats 20] [--json out.json]

On a 2-core machine the workers share two physical cores with the driver, the raylets and the
GCS: throughput cannot exceed 2 cores' worth whatever the worker count (docs/SCALE.md).
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import signal
import statistics
import threading
import time

import ray
import torch
from ray.cluster_utils import Cluster

from rla_engine.config import build
from rla_engine.metrics import is_machine_key
from rla_engine.loop.trainer import Trainer
from rla_engine.vocabulary import EventKind


def trainer(kind: str, *sets: str, state: dict | None = None) -> Trainer:
    """A quickstart trainer on `kind`, from a copy of `state` (loading shares tensors with the dict
    it is given: the optimiser would train the shared state in place)."""
    tr = Trainer(build(preset="quickstart", sets=[f"executor.kind={kind}", *sets], seed=0), torch.device("cpu"))
    if state is not None:
        tr.load_state_dict(copy.deepcopy(state))
    return tr


def warm_policy_state(iterations: int) -> dict:
    tr = trainer("local")
    for _ in range(iterations):
        tr.step()
    return tr.state_dict()


def throughput(kind: str, workers: int, state: dict, batch: int, repeats: int) -> float:
    tr = trainer(kind, f"executor.rollout_workers={workers}", "executor.rollout_cpus=1", "executor.judge_cpus=0.5",
                 "env.strategy=fixed", f"rollout.tasks_per_iter={batch}", f"task.pool_size={max(64, batch)}",
                 state=state)
    try:
        tasks = [tr.pool.active[s].task for s in tr.pool.sample_slots(batch, tr.rng)]
        tr.executor.collect(tasks, tr.cfg.rollout.rollouts_per_task)     # workers load weights, build tasks
        steps, t0 = 0, time.perf_counter()
        for _ in range(repeats):
            steps += tr.executor.collect(tasks, tr.cfg.rollout.rollouts_per_task).env_steps
        return steps / (time.perf_counter() - t0)
    finally:
        tr.close()


def iteration_times(kind: str, state: dict, n: int, batch: int = 16) -> list[float]:
    tr = trainer(kind, f"rollout.tasks_per_iter={batch}", f"task.pool_size={max(64, batch)}", state=state)
    try:
        tr.step()                                     # first use: weights to the workers
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            tr.step()
            out.append(time.perf_counter() - t0)
        return out
    finally:
        tr.close()


def fault(state: dict, n: int) -> dict:
    def run(kill_at: int | None) -> tuple[list[dict], list[float], list[tuple[str, dict]]]:
        tr = trainer("ray", state=state)
        values: list[dict] = []
        times: list[float] = []
        events: list[tuple[str, dict]] = []
        try:
            for i in range(n):
                if i == kill_at:
                    pid = next(w["pid"] for k, p in events if k == EventKind.PLACED for w in p["workers"]
                               if w["role"] == "rollout")
                    threading.Timer(0.005, os.kill, (pid, signal.SIGKILL)).start()
                t0 = time.perf_counter()
                r = tr.step()
                times.append(time.perf_counter() - t0)
                values.append({k: v for k, v in r.metrics.items() if not is_machine_key(k)})
                events += r.events
        finally:
            tr.close()
        return values, times, events

    clean, _, _ = run(None)
    kill_at = n // 2
    killed, times, events = run(kill_at)
    restarts = [p for k, p in events if k == EventKind.WORKER_RESTARTED]
    return {"iterations": n, "killed_in_iteration": kill_at + 1, "restarts": len(restarts),
            "restart_event": restarts[0] if restarts else None, "metrics_equal_unkilled": clean == killed,
            "killed_iteration_s": times[kill_at], "median_iteration_s": statistics.median(times)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=40, help="timed iterations per block (overhead)")
    ap.add_argument("--blocks", type=int, default=3, help="interleaved local/ray blocks (overhead)")
    ap.add_argument("--batch", type=int, default=64, help="tasks per collect (throughput), × 8 roll-outs each")
    ap.add_argument("--repeats", type=int, default=20, help="collects per throughput figure")
    ap.add_argument("--cpus-per-node", type=int, default=4)
    ap.add_argument("--warm", type=int, default=100, help="training iterations before measuring")
    ap.add_argument("--json", help="also write the figures here")
    a = ap.parse_args()

    state = warm_policy_state(a.warm)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": a.cpus_per_node})
    cluster.add_node(num_cpus=a.cpus_per_node)
    ray.init(address=cluster.address, logging_level="warning", log_to_driver=False)
    out: dict = {"cpu_count": os.cpu_count(), "nodes": 2, "cpus_per_node": a.cpus_per_node}
    try:
        local_tp = throughput("local", 1, state, a.batch, a.repeats)
        out["throughput"] = {"local": local_tp}
        print(f"roll-out throughput, {a.batch} tasks × 8 roll-outs per collect (env steps/s):")
        print(f"  local executor       {local_tp:9.0f}")
        for w in (1, 2, 4):
            tp = out["throughput"][f"ray x{w}"] = throughput("ray", w, state, a.batch, a.repeats)
            print(f"  ray, {w} worker(s)    {tp:9.0f}   ({tp / local_tp:.2f}× local)")

        local_t, ray_t = [], []
        for _ in range(a.blocks):
            local_t += iteration_times("local", state, a.iterations)
            ray_t += iteration_times("ray", state, a.iterations)
        lm, rm = statistics.median(local_t), statistics.median(ray_t)
        out["overhead"] = {"local_median_s": lm, "ray_median_s": rm, "ratio": rm / lm,
                           "iterations": len(local_t)}
        print(f"whole iteration at the quickstart batch (median of {len(local_t)}): local {lm * 1000:.1f} ms, "
              f"ray (1 worker per role) {rm * 1000:.1f} ms: overhead {100 * (rm / lm - 1):+.0f} %")
        for batch in (64, 256):      # the fixed cost of a call spread over more work
            lt = iteration_times("local", state, a.iterations // 4, batch)
            rt = iteration_times("ray", state, a.iterations // 4, batch)
            lm, rm = statistics.median(lt), statistics.median(rt)
            out["overhead"][f"batch {batch}"] = {"local_median_s": lm, "ray_median_s": rm, "ratio": rm / lm}
            print(f"  at {batch} tasks × 8 roll-outs: local {lm * 1000:.0f} ms, ray {rm * 1000:.0f} ms: "
                  f"overhead {100 * (rm / lm - 1):+.0f} %")

        out["fault"] = f = fault(state, 12)
        print(f"fault: rollout worker killed in iteration {f['killed_in_iteration']}: {f['restarts']} restart(s); "
              f"that iteration {f['killed_iteration_s']:.2f} s against a median {f['median_iteration_s']:.2f} s; "
              f"metrics equal to the unkilled run: {f['metrics_equal_unkilled']}")
    finally:
        ray.shutdown()
        cluster.shutdown()
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=2, default=str)


if __name__ == "__main__":
    main()
