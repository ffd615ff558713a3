"""A concrete task, torch-free (every family kind and the console's readers share it).

A concrete task is `Task(family, params, seed)`: `params` are the family's knobs (JSON-able,
they decide the difficulty), `seed` draws the concrete instance (a layout, the numbers), so a
task is small to store and rebuilt exactly from its row. Training seeds and held-out seeds come
from disjoint halves of the seed space, so no held-out task is ever trained on.

Per-step `info` rows describe what happened at a step in terms the environment model's critic
understands; they are never given to the judge or the policy.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

TRAIN_SEEDS = (0, 2**31)           # [lo, hi) — every task the pool ever holds
HELD_OUT_SEEDS = (2**31, 2**32)    # [lo, hi) — the evaluation suite only


@dataclass
class Task:
    family: str
    params: dict
    seed: int
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def to_json(self) -> dict:
        return {"params": self.params, "seed": int(self.seed)}

    @classmethod
    def from_json(cls, family: str, data: dict) -> Task:
        return cls(family, dict(data["params"]), int(data["seed"]))


def draw_seed(rng: np.random.Generator, held_out: bool = False) -> int:
    lo, hi = HELD_OUT_SEEDS if held_out else TRAIN_SEEDS
    return int(rng.integers(lo, hi))


def fresh_seed(rng: np.random.Generator, old: int) -> int:
    """A training seed other than `old`: a variant is always a new concrete task."""
    seed = draw_seed(rng)
    while seed == old:
        seed = draw_seed(rng)
    return seed
