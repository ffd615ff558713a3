"""What the loop's parts promise each other, checked by mypy against every implementation.

    RunLoop    what the Runner drives (launch.make_run_loop makes one): the Trainer in this
               process, or remote_run.RemoteTrainer, a handle on a Trainer that Ray places.
    Executor   where a Trainer's rollouts, verdicts and variants are made: executor.LocalExecutor
               or ray_executor.RayExecutor (executor_factory.make_executor picks).
    Backend    what learns (backend.py): the embedded networks or language models.

Torch-free at import: the Runner and launch read these types without loading torch.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np
    import torch

    from ..config import Config
    from ..tasks.base import Task
    from .backend import Episodes, Judgement, Proposal, VariantRequest


class Interrupted(Exception):
    """A stop arrived while the loop waited on its workers: the outstanding work was cancelled
    and this iteration will never be committed."""


@dataclass
class IterationResult:
    """One iteration's outcome, as the Runner commits it."""
    iteration: int
    metrics: dict[str, float]
    events: list[tuple[str, dict]]
    task_rows: list[dict]
    env_steps: int                   # the run's total after this iteration
    wall_s: float
    # seconds per phase; the trainer's are stored too, as perf/seconds@<phase>
    timings: dict[str, float] = field(default_factory=dict)


def budget_reached(budget: int, env_steps: int) -> bool:
    """run.env_step_budget: a budget > 0 is spent once the run has taken that many steps."""
    return budget > 0 and env_steps >= budget


class RunLoop(Protocol):
    """One run's loop, one iteration per `step`, resumable from its state_dict."""
    cfg: Config
    iteration: int                   # the last completed iteration (0 before the first)
    env_steps: int

    @property
    def device(self) -> torch.device | str: ...     # a RemoteTrainer knows only its actor's device name

    def step(self, final: bool = False) -> IterationResult:
        """The next iteration; `final`: the last one asked for (it is evaluated). Interrupted
        when a stop arrives while it waits on workers."""

    def budget_spent(self) -> bool: ...

    def set_interrupt(self, interrupted: Callable[[], bool]) -> None:
        """`interrupted()` is asked while the loop waits on workers: True cancels the outstanding
        work (Interrupted is raised, and that iteration must not be committed)."""

    def pending_events(self) -> list[tuple[str, dict]]:
        """Events of an iteration that never completed (a worker restarted before it failed)."""

    def set_override(self, difficulty: float | None) -> list[dict]:
        """Hold the pool at a difficulty (None: release it); the task rows that changed."""

    def task_rows(self, live: bool) -> list[dict]:
        """The pool's rows: all live ones (a resume rewrites them), else those changed since asked."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


class Executor(Protocol):
    """Makes an iteration's rollouts, verdicts and variants, exactly as the backend would; the
    pool, rewards, advantages, updates and every decision stay with the Trainer."""
    kind: str                               # executor.kind: "local" or "ray"
    interrupted: Callable[[], bool]         # asked while waiting on workers (RunLoop.set_interrupt)

    def collect(self, tasks: list[Task], rollouts: int, *, greedy: bool = False) -> Episodes: ...

    def successes(self, tasks: list[Task]) -> torch.Tensor:
        """Who succeeded, one greedy roll-out per task (the held-out evaluation)."""

    def judge(self, ep: Episodes, m: int) -> Judgement: ...

    def propose(self, requests: list[VariantRequest], tries: int, rng: np.random.Generator) -> list[Proposal]: ...

    def weights_changed(self) -> None:
        """The learners were updated or loaded: workers must act with the new weights."""

    def take_events(self) -> list[tuple[str, dict]]: ...

    def close(self) -> None: ...
