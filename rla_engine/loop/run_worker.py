"""What runs inside the Ray actor of a whole run (executor.distribute = "run"): the run's loop, a
Trainer, where the cluster placed it. remote_run.RemoteTrainer is its handle in the `rla run`
process, which keeps the database, the commands, the heartbeat and the checkpoints. A plain
class, wrapped by `ray.remote` where it is started.
"""
from __future__ import annotations

from ..paths import use_games
from .device import resolve_device
from .executor import to_device
from .interfaces import IterationResult
from .trainer import Trainer
from .workers import CPU, local_config, tensor_transport, where


class RunWorker:
    """A whole run's loop (a Trainer) where the cluster placed it; the `rla run` process that
    started it keeps the database, the commands, the heartbeat and the checkpoints."""

    def __init__(self, config: dict, games: str | None = None):
        use_games(games)
        tensor_transport()
        cfg = local_config(config)
        self.device = resolve_device(cfg.run.device)
        self.trainer = Trainer(cfg, self.device)

    def where(self) -> dict:
        return {**where(), "device": str(self.device)}

    def step(self, final: bool) -> IterationResult:
        return self.trainer.step(final=final)

    def set_override(self, d: float | None) -> list[dict]:
        return self.trainer.set_override(d)

    def task_rows(self, live: bool) -> list[dict]:
        return self.trainer.task_rows(live)

    def state_dict(self) -> dict:
        return to_device(self.trainer.state_dict(), CPU)

    def load_state_dict(self, state: dict) -> int:
        self.trainer.load_state_dict(state)
        return self.trainer.iteration

    def budget_spent(self) -> bool:
        return self.trainer.budget_spent()
