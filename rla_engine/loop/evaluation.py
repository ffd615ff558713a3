"""Held-out evaluation (SPEC §7): a fixed suite per family and tier, greedy policy, one rollout each.

The suite's seeds come from the held-out half of the seed space and its generator is fixed per
family (not per run), so every run of a family is measured on the same tasks.
"""
from __future__ import annotations

import zlib

import numpy as np
import torch

from .. import metrics
from ..models.networks import PolicyNet
from ..tasks.base import Family, Task
from .rollout import collect

SUITE_STREAM = 0x5EED_E7A1


def held_out_suite(family: Family, tiers: list[float], per_tier: int) -> list[tuple[float, list[Task]]]:
    suite = []
    for d in tiers:
        rng = np.random.default_rng([SUITE_STREAM, zlib.crc32(family.name.encode()), round(d * 1000)])
        suite.append((d, [family.sample(float(d), rng, held_out=True) for _ in range(per_tier)]))
    return suite


def evaluate(policy: PolicyNet, family: Family, suite: list[tuple[float, list[Task]]],
             device: torch.device) -> dict[str, float]:
    tasks = [t for _, ts in suite for t in ts]
    roll = collect(policy, family, tasks, 1, temperature=1.0, generator=None, device=device, greedy=True)
    success = roll.success.float().cpu()
    out, start = {}, 0
    for d, ts in suite:
        out[metrics.eval_tier_key(d)] = float(success[start:start + len(ts)].mean())
        start += len(ts)
    out[metrics.EVAL_SUCCESS] = float(np.mean([out[metrics.eval_tier_key(d)] for d, _ in suite]))
    return out
