"""The contract every tensor task family implements (DESIGN §3): a batched torch environment
played by the embedded networks. The task itself (`Task`, the seed spaces) is torch-free, in
task.py, and so are the held-out sets by tier (eval_sets.py); text families (text_base.py) share both.
"""
from __future__ import annotations

import abc

import numpy as np
import torch

from .task import HELD_OUT_SEEDS, TRAIN_SEEDS, Task, draw_seed, fresh_seed

__all__ = ["HELD_OUT_SEEDS", "TRAIN_SEEDS", "BatchEnv", "Family", "Task", "draw_seed", "fresh_seed"]


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
    kind = "tensor"          # played by the embedded backend (text families: text_base.TextFamily)
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
