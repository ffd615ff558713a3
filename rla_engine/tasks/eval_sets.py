"""Held-out sets of tasks (SPEC §7), for both kinds of family: a tensor family is always measured
by difficulty tier; a text family by tier too unless it names its own sets (a dataset's splits).

Torch-free, like task.py: text families import it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .task import Task


@dataclass
class EvalSet:
    """A fixed held-out set: by difficulty tier (`tier` set) or by name (a dataset's split)."""
    name: str
    tasks: list[Task] = field(default_factory=list)
    tier: float | None = None


def tier_sets(family, tiers: list[float], per_tier: int, rng_for) -> list[EvalSet]:
    """`per_tier` held-out tasks per difficulty tier of any family, each tier drawn with `rng_for(tier)`."""
    def one_tier(d: float) -> EvalSet:
        rng = rng_for(d)                    # one stream per tier: the set is the same whatever the other tiers
        return EvalSet(f"{float(d):g}", [family.sample(float(d), rng, held_out=True) for _ in range(per_tier)],
                       tier=float(d))
    return [one_tier(d) for d in tiers]
