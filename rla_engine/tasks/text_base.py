"""The contract of a text task family, played by the language-model backend (rla_engine/llm).

A text task is still `Task(family, params, seed)`, but `params` holds the whole concrete task
(the numbers of a word problem, the rooms and objects of a household), because the environment
model proposes variants as JSON and a variant must be storable and rebuilt from its row alone.

An episode is a dialogue. The policy receives `instruction(task)` (the first user message) and,
after each of its turns, the environment's `observation`. A turn's response is one step, or, for
a family with `lines_are_steps`, one step per line (the backend splits the response's tokens at
each token that holds a newline, so every step is an exact span of sampled tokens).

What is optional, because a language task may come from a dataset:
- `difficulty` may return None (no parametric difficulty: the pool shows none, tiers do not apply);
- oracle step labels: a step's label is 0 when the family cannot tell (its `FamilySpec` says
  `has_oracle=False`);
- `mutate` (the procedural environment model): a family that only takes LM-proposed variants
  raises NotImplementedError.
Validation (`validate`) may be slow (running code, a planner): it is called once per proposed
variant, never per step.

Nothing here imports torch: a text family is plain Python.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np

from .eval_sets import EvalSet, tier_sets
from .task import Task


@dataclass
class TurnResult:
    """What the environment makes of one policy turn."""
    labels: list[int]          # per step of the turn: oracle +1 good, −1 bad, 0 unknown (diagnostics only)
    infos: list[dict]          # per step: JSON-able facts for the environment model's critic (never shown to learners)
    observation: str           # the environment's answer (the next user message; the judge sees it too)
    done: bool
    success: bool = False      # meaningful once done
    score: float | None = None  # a graded share in [0, 1] once done (coding: ground-truth tests passed); None: ungraded


class TextEpisode(abc.ABC):
    """One rollout's state. `respond` is called once per turn until it returns done."""

    @abc.abstractmethod
    def respond(self, steps: list[str]) -> TurnResult:
        """`steps`: the turn's response as its steps (one string, or one per line). The result has
        one label and one info per step. Text that cannot be understood is a step, judged bad by
        the oracle; it never raises."""


class TextFamily(abc.ABC):
    name: str
    kind = "text"
    lines_are_steps: bool = False      # True: every line of a response is a step (a written derivation)
    # True: a response may span lines and is still one step (a program); else, without lines_are_steps,
    # generation stops at the first newline (one command per turn)
    multiline_step: bool = False
    max_turns: int = 1                 # an upper bound over every task; `turns(task)` is the task's own

    # -- tasks -----------------------------------------------------------------------------
    @abc.abstractmethod
    def difficulty(self, params: dict) -> float | None:
        """Difficulty in [0, 1], or None when the family has none."""

    @abc.abstractmethod
    def sample(self, d: float, rng: np.random.Generator, held_out: bool = False) -> Task:
        """A fresh concrete task close to difficulty d (families without difficulty ignore d)."""

    @abc.abstractmethod
    def validate(self, task: Task) -> str | None:
        """None if the task is well-formed and solvable within its turn budget, else why not."""

    def eval_sets(self, tiers: list[float], per_tier: int, rng_for) -> list[EvalSet]:
        """The held-out sets; by default `per_tier` tasks per tier (`tier_sets`). A dataset family
        returns its named splits instead."""
        return tier_sets(self, tiers, per_tier, rng_for)

    def has_procedural_model(self) -> bool:
        """Whether the family defines `mutate` (else only a language model proposes variants)."""
        return type(self).mutate is not TextFamily.mutate

    # -- the dialogue ------------------------------------------------------------------------
    @abc.abstractmethod
    def instruction(self, task: Task) -> str:
        """The first user message: the task and how to answer."""

    @abc.abstractmethod
    def start(self, task: Task) -> TextEpisode:
        """A fresh episode of `task`."""

    def turns(self, task: Task) -> int:
        """The task's turn budget (an episode that has not finished after it fails)."""
        return self.max_turns

    def prepare(self, tasks: list[Task]) -> None:  # noqa: B027 - a hook most families leave empty
        """Called with an iteration's tasks before their episodes start: a family whose tasks need
        something made first (textworld: a compiled game) makes all of it at once. Nothing by default."""

    def respond_all(self, episodes: list[TextEpisode], responses: list[list[str]]) -> list[TurnResult]:
        """One turn of many episodes, in order: each episode's `respond` by default. A family whose
        answer is costly (the coding family runs programs in a sandbox) answers them together."""
        return [e.respond(r) for e, r in zip(episodes, responses)]

    # -- the environment model ---------------------------------------------------------------
    @abc.abstractmethod
    def critic(self, task: Task, steps: list[tuple[int, dict]]) -> dict:
        """A short structured summary (JSON-able) of high-risk steps, given as (step index, info)."""

    def mutate(self, task: Task, direction: str, critic: dict, rng: np.random.Generator) -> Task:
        """A procedural variant (|Δd| ≤ 0.15). Families without one leave it to the language model."""
        raise NotImplementedError(f"{self.name} has no procedural environment model")

    @abc.abstractmethod
    def variant_schema(self) -> str:
        """How a task is written as JSON, told to the environment model (keys, types, limits)."""

    def prompt_json(self, task: Task) -> dict:
        """The task as the environment model's prompt shows it: `task_json` by default; a family
        whose tasks carry long data (a coding task's tests) may cut it there."""
        return self.task_json(task)

    @abc.abstractmethod
    def task_json(self, task: Task) -> dict:
        """The task as the environment model reads and rewrites it (the schema's shape)."""

    @abc.abstractmethod
    def from_json(self, data: object, root: Task) -> Task:
        """A task from a proposed JSON value; raises ValueError naming what is wrong. `root` is the
        slot's original task (a family may keep what the rewrite must not change)."""

    @abc.abstractmethod
    def describe(self, task: Task) -> dict:
        """What a viewer shows of the task (JSON-able); must hold "text": the task in words."""
