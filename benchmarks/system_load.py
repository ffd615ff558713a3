"""Cost of the sys/* keys: the sampler against a quickstart iteration.

Prints (1) one sample's cost and the cost of a call that is not due (every iteration makes one),
measured alone, and (2) quickstart iterations run through the engine's Runner with a real SQLite
store and checkpoints, sampling every `--every` seconds (the default run.system_every_s) and then
at every iteration (the worst case): the sampler's share of the iterations' time, as measured in
the loop, and one sample's cost over one iteration.

    .venv/bin/python benchmarks/system_load.py [--iterations 200] [--every 5]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from rla_engine import metrics
from rla_engine.config import build
from rla_engine.loop.trainer import Trainer
from rla_engine.runner import Runner
from rla_engine.store import open_store
from rla_engine.system_load import SystemSampler

ALWAYS_S = 1e-3     # run.system_every_s below any iteration's time: a sample at every iteration


def call_costs(calls: int) -> tuple[float, float, list[str]]:
    """Median seconds of a sample and of a call that is not due, and the keys sampled."""
    due = SystemSampler.for_device(ALWAYS_S, torch.device("cpu"))
    keys = sorted(due.sample_if_due(0.0))
    sampled = []
    for i in range(1, calls + 1):
        t = time.perf_counter()
        due.sample_if_due(float(i))
        sampled.append(time.perf_counter() - t)
    idle = SystemSampler.for_device(1e9, torch.device("cpu"))
    idle.sample_if_due(0.0)
    waited = []
    for i in range(1, calls + 1):
        t = time.perf_counter()
        idle.sample_if_due(float(i))
        waited.append(time.perf_counter() - t)
    return statistics.median(sampled), statistics.median(waited), keys


def in_loop(iterations: int, every_s: float) -> dict:
    cfg = build(preset="quickstart", sets=[f"run.iterations={iterations}", f"run.system_every_s={every_s}"])
    seen: list[tuple[dict, bool]] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "bench.db")
        tr = Trainer(cfg, torch.device("cpu"))
        store.create_run("bench", name="bench", preset="quickstart", config=cfg.to_dict(), device="cpu")
        Runner(store, "bench", tr, iterations, out=lambda s: None,
               observe=lambda r: seen.append((dict(r.timings), metrics.SYS_RSS_MB in r.metrics))).run()
        store.close()
    total = sum(sum(t.values()) for t, _ in seen)
    system = sum(t["system"] for t, _ in seen)
    samples = [t["system"] for t, s in seen if s]
    return {"iterations": len(seen), "iteration_s": total / len(seen), "share": system / total,
            "samples": len(samples), "sample_s": statistics.median(samples) if samples else float("nan")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--every", type=float, default=5.0)
    ap.add_argument("--calls", type=int, default=5000)
    a = ap.parse_args()
    sample_s, idle_s, keys = call_costs(a.calls)
    print(f"sampler alone ({a.calls} calls each, keys {', '.join(keys)}): one sample {1e6 * sample_s:.1f} µs "
          f"(median), a call that is not due {1e6 * idle_s:.2f} µs")
    for every_s, n in ((a.every, a.iterations), (ALWAYS_S, max(a.iterations // 4, 10))):
        r = in_loop(n, every_s)
        label = "every iteration" if every_s == ALWAYS_S else f"every {every_s:g} s"
        one = r["sample_s"] / r["iteration_s"]
        print(f"quickstart, sampling {label}: {r['iterations']} iterations of {1000 * r['iteration_s']:.1f} ms "
              f"(mean), {r['samples']} samples of {1e6 * r['sample_s']:.1f} µs (median): the sampler is "
              f"{100 * r['share']:.4f} % of the iterations' time, one sample {100 * one:.3f} % of one iteration")


if __name__ == "__main__":
    main()
