"""The held-out suite (SPEC §7): fixed sets of tasks, by difficulty tier or by name.

The suite's seeds come from the held-out half of the seed space and its generator is fixed per
family and tier (not per run), so every run of a family is measured on the same tasks.
"""
from __future__ import annotations

import zlib

import numpy as np

from ..tasks.eval_sets import EvalSet, tier_sets

SUITE_STREAM = 0x5EED_E7A1


def held_out_suite(family, tiers: list[float], per_tier: int) -> list[EvalSet]:
    def rng_for(d: float) -> np.random.Generator:
        return np.random.default_rng([SUITE_STREAM, zlib.crc32(family.name.encode()), round(d * 1000)])

    if hasattr(family, "eval_sets"):        # a text family may hold named sets (a dataset's splits)
        return family.eval_sets(tiers, per_tier, rng_for)
    return tier_sets(family, tiers, per_tier, rng_for)
