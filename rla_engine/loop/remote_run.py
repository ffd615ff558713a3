"""A run whose loop is one Ray actor placed by the cluster (`executor.distribute = "run"`, what
`rla ablate --executor ray` uses to spread its runs over nodes). The `rla run` process holds this
handle in place of a Trainer: it stays the run's only writer of the database, applies the
commands at iteration boundaries, beats the heartbeat and writes the checkpoints on this machine,
while every iteration is computed where the actor lives.

A dead actor is a dead learner: the iteration fails (nothing is retried), the run is marked
failed, and `rla resume` continues from the last checkpoint, which is on this machine.
"""
from __future__ import annotations

import time
from collections.abc import Callable

import ray

from ..config import Config
from ..errors import ExecutorError, InputError
from ..paths import games_named
from ..ray_cluster import connect, first_line
from ..vocabulary import EventKind
from .interfaces import Interrupted, IterationResult, budget_reached
from .ray_executor import DEAD, WAIT_S
from .run_worker import RunWorker


class RunActorDied(ExecutorError):
    pass


class RemoteTrainer:
    def __init__(self, cfg: Config):
        self.cfg = cfg
        ex = cfg.executor
        self.owns_connection = connect(ex.address, ex.connect_timeout_s)
        have = ray.cluster_resources()
        if ex.run_cpus > have.get("CPU", 0.0) or ex.run_gpus > have.get("GPU", 0.0):
            raise InputError(f"invalid config: executor.run_cpus = {ex.run_cpus!r}, executor.run_gpus = "
                             f"{ex.run_gpus!r}: no node of the cluster can hold the run (it has CPU "
                             f"{have.get('CPU', 0):g}, GPU {have.get('GPU', 0):g})")
        self.interrupted: Callable[[], bool] = lambda: False
        self.actor = ray.remote(RunWorker).options(num_cpus=ex.run_cpus, num_gpus=ex.run_gpus, max_restarts=0,
                                                   scheduling_strategy="SPREAD").remote(cfg.to_dict(), games_named())
        placed = self._wait(self.actor.where.remote(), "starting", start=True)
        self.device = placed.pop("device")
        self.events: list[tuple[str, dict]] = [(EventKind.PLACED, {
            "executor": "ray", "distribute": "run", "address": ray.get_runtime_context().gcs_address,
            "run": placed, "device": self.device})]
        self.iteration = self.env_steps = 0

    def step(self, final: bool = False) -> IterationResult:
        result: IterationResult = self._wait(self.actor.step.remote(final), f"iteration {self.iteration + 1}",
                                             interruptible=True)
        self.iteration, self.env_steps = result.iteration, result.env_steps
        result.events, self.events = self.events + result.events, []
        return result

    def budget_spent(self) -> bool:
        return budget_reached(self.cfg.run.env_step_budget, self.env_steps)

    def set_override(self, d: float | None) -> list[dict]:
        return self._wait(self.actor.set_override.remote(d), "the difficulty override")

    def task_rows(self, live: bool) -> list[dict]:
        return self._wait(self.actor.task_rows.remote(live), "reading the task pool")

    def state_dict(self) -> dict:
        return self._wait(self.actor.state_dict.remote(), "taking a checkpoint")

    def load_state_dict(self, state: dict) -> None:
        self.iteration = self._wait(self.actor.load_state_dict.remote(state), "loading the checkpoint")
        self.env_steps = int(state["env_steps"])

    def set_interrupt(self, interrupted: Callable[[], bool]) -> None:
        self.interrupted = interrupted

    def pending_events(self) -> list[tuple[str, dict]]:
        out, self.events = self.events, []
        return out

    def _wait(self, ref, doing: str, *, interruptible: bool = False, start: bool = False):
        """The call's answer. Only an iteration is cut short by a stop: a checkpoint or an override
        the runner asks for at a boundary always completes. Starting, the actor has as long as
        the cluster takes to place it, up to executor.start_timeout_s."""
        deadline = time.monotonic() + self.cfg.executor.start_timeout_s
        while True:
            ready, _ = ray.wait([ref], timeout=WAIT_S)
            if ready:
                try:
                    return ray.get(ref)
                except DEAD as e:
                    raise RunActorDied(f"the run's actor died while {doing}: {first_line(e)}") from None
            if interruptible and self.interrupted():
                self._kill()
                raise Interrupted(f"stopped during {doing}")
            if start and time.monotonic() > deadline:
                self._kill()
                raise RunActorDied(f"the cluster placed and started no actor for the run within "
                                   f"{self.cfg.executor.start_timeout_s:g} s (executor.start_timeout_s; "
                                   f"executor.run_cpus = {self.cfg.executor.run_cpus:g}, run_gpus = "
                                   f"{self.cfg.executor.run_gpus:g}: no node may have that much free)")

    def _kill(self) -> None:
        try:
            ray.kill(self.actor, no_restart=True)
        except Exception:   # already gone
            pass

    def close(self) -> None:
        self._kill()
        if self.owns_connection:
            ray.shutdown()
