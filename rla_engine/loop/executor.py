"""Where an iteration's rollouts, verdicts and variants are made (DESIGN §2): in this process
(`LocalExecutor`, the default) or by workers on a Ray cluster (`loop/ray_executor.py`, imported
only when `executor.kind = "ray"`: a local run never imports Ray). Both are interfaces.Executor;
executor_factory.make_executor picks one.

The trainer asks an executor for exactly what it would ask its backend for (collect, judge,
propose) and tells it when the learners' weights have changed; the pool, the rewards, the
advantages, the updates and every decision stay with the trainer.
"""
from __future__ import annotations

import copy
import itertools

import numpy as np
import torch

from collections.abc import Callable

from ..tasks.base import Task
from .backend import Backend, Episodes, Judgement, Proposal, VariantRequest


class LocalExecutor:
    """Every role in this process, on the backend itself: nothing to wait on, so nothing to interrupt."""
    kind = "local"

    def __init__(self, backend: Backend):
        self.backend = backend
        self.interrupted: Callable[[], bool] = lambda: False

    def collect(self, tasks: list[Task], rollouts: int, *, greedy: bool = False) -> Episodes:
        return self.backend.collect(tasks, rollouts, greedy=greedy)

    def successes(self, tasks: list[Task]) -> torch.Tensor:
        """Who succeeded, one greedy roll-out per task (the held-out evaluation)."""
        return self.backend.collect(tasks, 1, greedy=True).success

    def judge(self, ep: Episodes, m: int) -> Judgement:
        return self.backend.judge(ep, m)

    def propose(self, requests: list[VariantRequest], tries: int, rng: np.random.Generator) -> list[Proposal]:
        return self.backend.propose(requests, tries, rng)

    def weights_changed(self) -> None:
        """The learners were updated or loaded: workers must act with the new weights."""

    def take_events(self) -> list[tuple[str, dict]]:
        return []

    def close(self) -> None:
        pass


def chunks(n: int, parts: int) -> list[tuple[int, int]]:
    """`n` items in at most `parts` contiguous, non-empty, near-equal ranges [lo, hi), in order."""
    parts = max(1, min(parts, n))
    edges = [round(k * n / parts) for k in range(parts + 1)]
    return [(lo, hi) for lo, hi in itertools.pairwise(edges) if hi > lo]


def to_device(obj, device: torch.device):
    """`obj` with every tensor it holds (in lists, tuples, dicts and the attributes of Episodes
    and Judgements) on `device`: what crosses between a worker and the driver travels on the CPU."""
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: to_device(v, device) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        if not obj or isinstance(obj[0], int | float | str):   # token ids, texts: nothing to move
            return obj
        return type(obj)(to_device(v, device) for v in obj)
    if isinstance(obj, Episodes | Judgement):     # a copy: the caller's own object stays where it is
        moved = copy.copy(obj)
        for name, value in vars(obj).items():
            setattr(moved, name, to_device(value, device))
        return moved
    return obj
