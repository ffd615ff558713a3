"""Which executor a run's iterations use (executor.kind, executor.distribute). Above both
executors in the import graph: the Ray one is imported only when asked for, so a local run never
loads Ray."""
from __future__ import annotations

import torch

from ..config import Config
from .backend import Backend
from .executor import LocalExecutor
from .interfaces import Executor


def make_executor(cfg: Config, backend: Backend, device: torch.device, gen: torch.Generator) -> Executor:
    if cfg.executor.kind == "ray" and cfg.executor.distribute == "roles":
        from .ray_executor import RayExecutor
        return RayExecutor(cfg, backend, device, gen)
    return LocalExecutor(backend)
