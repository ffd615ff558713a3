"""What runs inside a role's Ray actor: a replica of the run's backend (`RoleWorker`), and what
it and a whole run's actor (run_worker.RunWorker) share. Plain classes, wrapped by `ray.remote`
where they are started, so this module imports without Ray. Workers return values and never
touch the database.
"""
from __future__ import annotations

import json
import os
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np
import torch

from ..config import Config, from_dict
from ..paths import use_games
from ..tasks import load_family
from ..tasks.task import Task
from .backend import Episodes, VariantRequest
from .backend_factory import make_backend
from .device import limit_threads, resolve_device
from .executor import to_device

CPU = torch.device("cpu")
KEPT_TASKS = 4096        # concrete tasks a worker keeps built (the pool, its variants, the held-out suite)


def bare(task: Task) -> Task:
    """The task without what was built from it (a layout, its distances): what travels. A worker
    rebuilds that once and keeps it (RoleWorker._intern)."""
    return Task(task.family, task.params, task.seed)


def bare_request(r: VariantRequest) -> VariantRequest:
    return replace(r, root=bare(r.root), task=bare(r.task))


@dataclass
class Draw:
    """The random state a call draws from: the driver's own generators' states (one worker does
    exactly what the driver would have done, and hands the states back), or a seed of its own
    for one of several chunks (so a chunk's result never depends on which worker was faster)."""
    seed: int | None = None
    torch_state: torch.Tensor | None = None
    np_state: Mapping[str, Any] | None = None
    chained: bool = False      # the state the roll-out this call is chained on handed back
    # the process-wide generator, which language-model sampling reseeds from the run's (generation.py):
    # handed back so that the driver's dropout draws are the local run's
    global_state: torch.Tensor | None = None


class Answer(NamedTuple):
    """A RoleWorker's answer: the weights version it acted with (the driver checks it is the one
    it pushed), what was asked for, and the generator states it drew on to (None: nothing to hand
    back)."""
    version: int
    value: Any
    drawn: Draw | None


def _pack(t: torch.Tensor) -> tuple:
    t = t.detach().cpu().contiguous()
    return str(t.dtype).removeprefix("torch."), tuple(t.shape), t.reshape(-1).view(torch.uint8).numpy()


def _unpack(packed: tuple) -> torch.Tensor:
    dtype, shape, raw = packed
    return torch.from_numpy(raw.copy()).view(getattr(torch, dtype)).reshape(shape)


def tensor_transport() -> None:
    """Tensors cross between Ray processes as raw bytes in a numpy array, which Ray moves out of
    band (half the time of pickling a tensor, measured here on a 550 kB roll-out); every dtype,
    bfloat16 included, as its bytes. Called in every process of a Ray run."""
    import ray
    ray.util.register_serializer(torch.Tensor, serializer=_pack, deserializer=_unpack)


def where() -> dict:
    import ray
    return {"node": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}


def local_config(config: dict) -> Config:
    """The run's configuration as the process that hosts a part of it sees it: everything in
    that process (an actor never starts actors of its own)."""
    cfg = from_dict(config)
    cfg.executor.kind = "local"
    return cfg


class RoleWorker:
    """One worker of one role (rollout, judge, env): the backend built from the run's config, with
    the learners' weights the driver pushed (loaded when their version changes)."""

    def __init__(self, config: dict, games: str | None = None):
        use_games(games)
        tensor_transport()
        cfg = local_config(config)
        self.device = resolve_device(cfg.run.device)
        family = load_family(cfg.task.family)
        limit_threads(family, self.device)
        self.gen = torch.Generator(device=self.device)
        self.rng = np.random.default_rng()
        self.backend = make_backend(cfg, family, self.device, self.gen, learners=False)
        self.reseeds_global = family.kind == "text"
        self.version = -1
        self.tasks: OrderedDict[tuple, Task] = OrderedDict()

    def where(self) -> dict:
        return {**where(), "device": self.device.type}

    def collect(self, weights: list, draw: Draw | None, tasks: list[Task], rollouts: int,
                greedy: bool) -> Answer:
        self._load(weights)
        self._seed(draw)
        ep = self.backend.collect([self._intern(t) for t in tasks], rollouts, greedy=greedy)
        return Answer(self.version, to_device(ep, CPU), self._drawn(draw))

    def successes(self, weights: list, tasks: list[Task]) -> Answer:
        """Greedy held-out roll-outs, of which the driver needs only who succeeded."""
        self._load(weights)
        ep = self.backend.collect([self._intern(t) for t in tasks], 1, greedy=True)
        return Answer(self.version, ep.success.cpu(), None)

    def judge(self, weights: list, draw: Draw | None, ep: Episodes | Answer, m: int) -> Answer:
        """`ep` is the episodes, or a rollout worker's whole answer (passed by reference, so that
        it goes from worker to worker without a round trip through the driver)."""
        self._load(weights)
        self._seed(draw)
        if isinstance(ep, Answer):          # chained on a roll-out: draw on from where it stopped
            episodes = ep.value
            if draw is not None and draw.chained:
                self._seed(ep.drawn)
        else:
            episodes = ep
        judgement = self.backend.judge(to_device(episodes, self.device), m)
        return Answer(self.version, to_device(self.backend.travelling(judgement), CPU), self._drawn(draw))

    def propose(self, draw: Draw | None, requests: list[VariantRequest],
                tries: int) -> Answer:
        self._seed(draw)
        requests = [replace(r, root=self._intern(r.root), task=self._intern(r.task)) for r in requests]
        proposals = [replace(p, task=None if p.task is None else bare(p.task))
                     for p in self.backend.propose(requests, tries, self.rng)]
        return Answer(self.version, proposals, self._drawn(draw))

    def _intern(self, task: Task) -> Task:
        key = (task.family, task.seed, json.dumps(task.params, sort_keys=True))
        kept = self.tasks.get(key)
        if kept is None:
            kept = self.tasks[key] = task
            if len(self.tasks) > KEPT_TASKS:
                self.tasks.popitem(last=False)
        else:
            self.tasks.move_to_end(key)
        return kept

    def _load(self, weights: list) -> None:
        """`weights` is [version, ObjectRef]: a list, so that Ray hands over the reference and
        the weights are fetched only when their version is new to this worker."""
        version, ref = weights
        if version != self.version:
            import ray
            self.backend.load_weights(to_device(ray.get(ref), self.device))
            self.version = version

    def _seed(self, draw: Draw | None) -> None:
        if draw is None:
            return
        if draw.seed is not None:
            self.gen.manual_seed(draw.seed)
            self.rng = np.random.default_rng(draw.seed)
            return
        if draw.torch_state is not None:
            self.gen.set_state(draw.torch_state)
        if draw.np_state is not None:
            self.rng.bit_generator.state = draw.np_state

    def _drawn(self, draw: Draw | None) -> Draw | None:
        if draw is None or draw.seed is not None:
            return None
        return Draw(torch_state=self.gen.get_state(), np_state=self.rng.bit_generator.state,
                    global_state=torch.random.get_rng_state() if self.reseeds_global else None)
