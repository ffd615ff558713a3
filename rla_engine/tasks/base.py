"""The contract every task family implements (DESIGN §3).

A concrete task is `Task(family, params, seed)`: `params` are the family's knobs (JSON-able,
they decide the difficulty), `seed` draws the concrete instance (a layout, the numbers), so a
task is small to store and rebuilt exactly from its row. Training seeds and held-out seeds come
from disjoint halves of the seed space, so no held-out task is ever trained on.

Per-step `info` rows (small ints) describe what happened at a step in terms the environment
model's critic understands; they are never given to the judge or the policy.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:       # only annotations name torch: a text family (text_base) imports Task without it
    import torch

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


class BatchEnv(abc.ABC):
    """`len(tasks) * rollouts` episodes stepped together; episode b plays task b // rollouts.

    Episodes that finished keep receiving actions (ignored) so the batch keeps its shape;
    `active` says which episodes a step really advanced.
    """

    n: int
    max_steps: int           # no episode of this batch lasts longer
    active: torch.Tensor     # [n] bool: episode not finished before the coming step
    success: torch.Tensor    # [n] bool: valid once the episode finished

    @abc.abstractmethod
    def reset(self) -> torch.Tensor:
        """Return the first observation [n, obs_dim] (float32)."""

    @abc.abstractmethod
    def step(self, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Apply actions [n] (long). Return (next_obs [n, obs_dim], oracle [n] int8 in {+1,-1},
        info [n, info_dim] int32). Episodes with active=False are left unchanged."""

    @abc.abstractmethod
    def oracle_action(self) -> torch.Tensor:
        """The best action per episode now [n] (long). For scripted test policies and
        benchmarks only — never for learners."""


class Family(abc.ABC):
    name: str
    obs_dim: int
    n_actions: int
    info_dim: int
    info_names: tuple[str, ...]

    @abc.abstractmethod
    def difficulty(self, params: dict) -> float:
        """Difficulty in [0, 1] of a parameter set."""

    @abc.abstractmethod
    def sample(self, d: float, rng: np.random.Generator, held_out: bool = False) -> Task:
        """A fresh concrete task whose difficulty is close to d (within ~0.05)."""

    @abc.abstractmethod
    def validate(self, task: Task) -> str | None:
        """None if the task is well-formed and solvable, else the reason it is not."""

    @abc.abstractmethod
    def critic(self, task: Task, steps: list[tuple[int, list[int]]]) -> dict:
        """A short structured summary of high-risk steps, given as (step index, info row)."""

    @abc.abstractmethod
    def mutate(self, task: Task, direction: str, critic: dict, rng: np.random.Generator) -> Task:
        """A fresh concrete variant, harder or easier as `direction` says, moving the parameters
        the critic points at; |Δdifficulty| ≤ 0.15."""

    @abc.abstractmethod
    def make_env(self, tasks: list[Task], rollouts: int, device: torch.device | str = "cpu") -> BatchEnv:
        """A batched environment over tasks × rollouts."""

    @abc.abstractmethod
    def describe(self, task: Task) -> dict:
        """What a viewer needs to draw the task (JSON-able): the maze, the chain …"""
