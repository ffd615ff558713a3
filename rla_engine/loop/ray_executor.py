"""The Ray executor (`executor.kind = "ray"`, `distribute = "roles"`): rollout, judge and
environment-model workers are actors in one placement group; this process (the driver) keeps the
pool, rewards, advantages, decisions and learners, pushes the learners' weights with a version
number, and checks that every answer was made with the version it expects.

Determinism: a role served by one worker on the driver's device type gets the driver's own
generator states and hands them back, so the run is the local executor's, draw for draw. Work
split among several workers gets one seed per chunk, drawn from the driver's generator, and is
put together in chunk order: the result never depends on which worker finished first.

Faults: a worker that dies is replaced in its bundle and its call resubmitted with the same
arguments and draw (so with the same result), and a `worker_restarted` event says so; after
`executor.restarts` replacements within one call the iteration fails, and `rla resume` goes on
from the last checkpoint. An error raised by the work itself is never retried.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import ray
import torch
from ray.exceptions import NodeDiedError, OutOfMemoryError, RayActorError, WorkerCrashedError
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from ..config import Config
from ..errors import ExecutorError, InputError
from ..paths import games_named
from ..ray_cluster import connect, first_line
from ..tasks.base import Task
from ..vocabulary import EventKind
from .backend import Backend, Episodes, Judgement, Proposal, VariantRequest
from .executor import chunks, to_device
from .interfaces import Interrupted
from .workers import CPU, Answer, Draw, RoleWorker, bare, bare_request, tensor_transport

WAIT_S = 0.2             # how often a wait on workers looks for a stop
DEAD = (RayActorError, WorkerCrashedError, NodeDiedError, OutOfMemoryError)   # the worker, not the work, failed
ROLES = ("rollout", "judge", "env")


class WorkerFailed(ExecutorError):
    pass


@dataclass
class ChainedRollout:
    """The last roll-out, its worker's answer (an object reference: a judge worker reads it
    without a round trip through the driver) and the judging already started on it (None: none)."""
    episodes: Episodes
    answer: ray.ObjectRef
    judging: ray.ObjectRef | None


def _bundle(cpus: float, gpus: float) -> dict[str, float]:
    return {"CPU": cpus, **({"GPU": gpus} if gpus else {})}


class RayExecutor:
    kind = "ray"

    def __init__(self, cfg: Config, backend: Backend, device: torch.device, gen: torch.Generator):
        self.cfg, self.backend, self.device, self.gen = cfg, backend, device, gen
        self.interrupted: Callable[[], bool] = lambda: False
        self.events: list[tuple[str, dict]] = []
        self.owns_connection = connect(cfg.executor.address, cfg.executor.connect_timeout_s)
        tensor_transport()
        ex = cfg.executor
        self.counts = counts = {"rollout": ex.rollout_workers, "judge": ex.judge_workers,
                                "env": 1 if cfg.env.strategy == "rlanything" else 0}
        self.resources = {"rollout": _bundle(ex.rollout_cpus, ex.rollout_gpus),
                          "judge": _bundle(ex.judge_cpus, ex.judge_gpus), "env": _bundle(ex.env_cpus, ex.env_gpus)}
        order = [(role, k) for role in ROLES for k in range(counts[role])]    # one bundle per worker
        self.bundle_of = {worker: i for i, worker in enumerate(order)}
        bundles = [self.resources[role] for role, _ in order]
        self._check_fits(bundles)
        self.pg = placement_group(bundles, strategy=ex.placement.upper())
        try:
            ray.get(self.pg.ready(), timeout=ex.start_timeout_s)
        except ray.exceptions.GetTimeoutError:
            remove_placement_group(self.pg)
            raise InputError(f"invalid config: executor.placement = {ex.placement!r}: the cluster could not place "
                             f"{len(bundles)} workers ({self._asked()}) within {ex.start_timeout_s:g} s "
                             f"(executor.start_timeout_s); it has {self._has()}") from None
        self.config = cfg.to_dict()
        self.workers = {role: [self._spawn(role, k) for k in range(counts[role])] for role in ROLES}
        try:    # unbounded: their resources are held, and loading a large model may take minutes
            placed = {role: ray.get([w.where.remote() for w in ws]) for role, ws in self.workers.items()}
        except DEAD as e:
            self.close()
            raise ExecutorError(f"the run's Ray workers could not start: {first_line(e)}") from None
        # the driver's generator states go to a worker only where they mean the same there
        self.ship_state = {role: all(p["device"] == device.type for p in placed[role]) for role in ROLES}
        self.events.append((EventKind.PLACED, {
            "executor": "ray", "distribute": "roles", "address": ray.get_runtime_context().gcs_address,
            "workers": [{"role": role, "index": k, **p} for role in ROLES for k, p in enumerate(placed[role])]}))
        self.version, self.stale, self.weights_ref = 0, True, None
        self.last: ChainedRollout | None = None      # None: the next judging is not chained on a roll-out
        self.closed = False

    # -- placement ---------------------------------------------------------------------------
    def _check_fits(self, bundles: list[dict]) -> None:
        have = ray.cluster_resources()
        for res, key in (("CPU", "cpus"), ("GPU", "gpus")):
            asked = sum(b.get(res, 0.0) for b in bundles)
            if asked > have.get(res, 0.0) + 1e-9:
                raise InputError(f"invalid config: executor.rollout_workers = {self.cfg.executor.rollout_workers}: "
                                 f"the workers ask for {asked:g} {res} in all ({self._asked()}) and the "
                                 f"cluster has {have.get(res, 0.0):g}; use fewer workers or fewer {key} each "
                                 f"(executor.*_{key})")

    def _asked(self) -> str:
        return ", ".join(f"{role} {n}×{self.resources[role]}" for role, n in self.counts.items() if n)

    @staticmethod
    def _has() -> str:
        have = ray.cluster_resources()
        return ", ".join(f"{k} {have.get(k, 0):g}" for k in ("CPU", "GPU"))

    def _spawn(self, role: str, k: int):
        res = self.resources[role]
        strategy = PlacementGroupSchedulingStrategy(self.pg, placement_group_bundle_index=self.bundle_of[role, k])
        return ray.remote(RoleWorker).options(num_cpus=res["CPU"], num_gpus=res.get("GPU", 0.0), max_restarts=0,
                                              scheduling_strategy=strategy).remote(self.config, games_named())

    # -- what the trainer asks for -------------------------------------------------------------
    def collect(self, tasks: list[Task], rollouts: int, *, greedy: bool = False) -> Episodes:
        self._drop_unused_judging()
        parts = chunks(len(tasks), len(self.workers["rollout"]))
        draws = self._draws("rollout", len(parts), greedy)
        weights = self._weights()
        bare_tasks = [bare(t) for t in tasks]
        calls = [("collect", (weights, d, bare_tasks[lo:hi], rollouts, greedy)) for (lo, hi), d in zip(parts, draws)]
        refs = self._submit("rollout", calls)
        # the loop judges what it just rolled out: the judge starts as soon as the roll-out ends, on
        # the worker's answer and from the generator state it hands back, as the driver would
        judging = None
        if len(refs) == 1 and not greedy and self._chainable():
            judging = self._submit("judge", [("judge", (weights, Draw(chained=True), refs[0], self.cfg.judge.m))])[0]
        answers, refs, restarted = self._gather("rollout", calls, refs)
        eps = [self._accept(a, "rollout") for a in answers]
        out = eps[0]
        for more in eps[1:]:
            out = self.backend.then(out, more)
        self.last = ChainedRollout(out, refs[0], None if restarted else judging) if len(refs) == 1 else None
        return out

    def successes(self, tasks: list[Task]) -> torch.Tensor:
        parts = chunks(len(tasks), len(self.workers["rollout"]))
        weights = self._weights()
        bare_tasks = [bare(t) for t in tasks]
        answers, _, _ = self._gather("rollout", [("successes", (weights, bare_tasks[lo:hi])) for lo, hi in parts])
        return torch.cat([self._accept(a, "rollout") for a in answers])

    def _chainable(self) -> bool:
        """Chain the judge on the roll-out when it will judge exactly that roll-out: one judge, the
        driver's generator states on both, and no DAPO (which may roll out more first)."""
        return (len(self.workers["judge"]) == 1 and self.ship_state["judge"] and self.ship_state["rollout"]
                and self.cfg.env.strategy != "dapo")

    def _drop_unused_judging(self) -> None:
        if self.last is not None and self.last.judging is not None:
            try:
                ray.cancel(self.last.judging)
            except Exception:   # finished or gone meanwhile
                pass
            self.last.judging = None

    def judge(self, ep: Episodes, m: int) -> Judgement:
        last = self.last if self.last is not None and self.last.episodes is ep else None
        if last is not None and last.judging is not None and m == self.cfg.judge.m:
            call = ("judge", (self._weights(), Draw(chained=True), last.answer, m))
            judging, last.judging = last.judging, None
            answers, _, _ = self._gather("judge", [call], [judging])
            return self._accept(answers[0], "judge")
        self._drop_unused_judging()
        parts = chunks(ep.groups, len(self.workers["judge"]))
        draws = self._draws("judge", len(parts), False)
        weights = self._weights()
        if len(parts) == 1 and last is not None:
            pieces = [last.answer]       # the rollout worker's answer, by reference
        else:
            cpu_ep = to_device(ep, CPU) if self.device.type != "cpu" else ep
            pieces = [cpu_ep if len(parts) == 1 else cpu_ep.part(lo, hi) for lo, hi in parts]
        answers, _, _ = self._gather("judge", [("judge", (weights, d, piece, m)) for piece, d in zip(pieces, draws)])
        judged = [self._accept(a, "judge") for a in answers]
        if len(judged) == 1:
            return judged[0]
        return self.backend.join_judgements(judged, [lo * ep.rollouts for lo, _ in parts])

    def propose(self, requests: list[VariantRequest], tries: int, rng: np.random.Generator) -> list[Proposal]:
        if not requests:
            return []
        draw = Draw(torch_state=self.gen.get_state(), np_state=rng.bit_generator.state) \
            if self.ship_state["env"] else Draw(seed=int(rng.integers(2**62)))
        answers, _, _ = self._gather("env", [("propose", (draw, [bare_request(r) for r in requests], tries))])
        answer: Answer = answers[0]
        if answer.drawn is not None:
            self._take_back(answer.drawn, rng)
        return answer.value

    def weights_changed(self) -> None:
        self.stale = True

    def take_events(self) -> list[tuple[str, dict]]:
        out, self.events = self.events, []
        return out

    # -- the machinery -------------------------------------------------------------------------
    def _weights(self) -> list:
        if self.stale:
            self.version += 1
            self.weights_ref = ray.put(to_device(self.backend.weights(), CPU))
            self.stale = False
        return [self.version, self.weights_ref]

    def _draws(self, role: str, n: int, greedy: bool) -> list[Draw | None]:
        if greedy:
            return [None] * n
        if n == 1 and self.ship_state[role]:
            return [Draw(torch_state=self.gen.get_state())]
        seeds = torch.randint(0, 2**62, (n,), generator=self.gen, device=self.gen.device).tolist()
        return [Draw(seed=s) for s in seeds]

    def _accept(self, answer: Answer, role: str):
        if answer.version != self.version:
            raise RuntimeError(f"a {role} worker answered with weights version {answer.version}, "
                               f"expected {self.version}")
        if answer.drawn is not None:
            self._take_back(answer.drawn)
        return to_device(answer.value, self.device)

    def _take_back(self, back: Draw, rng: np.random.Generator | None = None) -> None:
        """The generator states a worker drew on from, as the driver's own."""
        if back.torch_state is not None:
            self.gen.set_state(back.torch_state)
        if back.global_state is not None:
            torch.random.set_rng_state(back.global_state)
        if rng is not None and back.np_state is not None:
            rng.bit_generator.state = back.np_state

    def _submit(self, role: str, calls: list[tuple[str, tuple]]) -> list:
        """Each call on worker k of `role` (k = its position in `calls`); their object references."""
        if self.closed:
            raise RuntimeError("the Ray executor was closed")
        return [getattr(self.workers[role][k], method).remote(*args) for k, (method, args) in enumerate(calls)]

    def _gather(self, role: str, calls: list[tuple[str, tuple]], refs: list | None = None) -> tuple[list, list, bool]:
        """The answers of `calls` (submitted now, or already as `refs`), in call order, with their
        references and whether a worker had to be restarted. A dead worker is replaced and its
        call resubmitted as it was; a stop cancels everything outstanding."""
        refs = list(refs) if refs is not None else self._submit(role, calls)
        pending = {ref: k for k, ref in enumerate(refs)}
        answers: list = [None] * len(calls)
        restarts = [0] * len(calls)
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=WAIT_S)
            if self.interrupted():
                self.cancel(list(pending))
                raise Interrupted(f"stopped while {len(pending)} {role} call(s) were outstanding")
            for ref in ready:
                k = pending.pop(ref)
                try:
                    answers[k] = ray.get(ref)
                except DEAD as e:
                    self._replace(role, k, e, restarts, pending)
                    method, args = calls[k]
                    refs[k] = getattr(self.workers[role][k], method).remote(*args)
                    pending[refs[k]] = k
        return answers, refs, any(restarts)

    def _replace(self, role: str, k: int, error: BaseException, restarts: list[int], pending: dict) -> None:
        """A new worker k of `role` in its bundle, up to executor.restarts times per call (a
        replacement that dies starting counts as one more); then the iteration fails."""
        while True:
            restarts[k] += 1
            if restarts[k] > self.cfg.executor.restarts:
                self.cancel(list(pending))
                raise WorkerFailed(f"{role} worker {k} died {restarts[k]} times in one call "
                                   f"(executor.restarts = {self.cfg.executor.restarts}): {first_line(error)}")
            try:
                self._restart(role, k, error, restarts[k])
                return
            except DEAD as e:
                error = e

    def _restart(self, role: str, k: int, error: BaseException, n: int) -> None:
        try:
            ray.kill(self.workers[role][k], no_restart=True)
        except Exception:   # already gone: nothing to stop
            pass
        self.workers[role][k] = self._spawn(role, k)
        ref = self.workers[role][k].where.remote()
        deadline = time.monotonic() + self.cfg.executor.start_timeout_s
        while not ray.wait([ref], timeout=WAIT_S)[0]:      # a lost node's bundle may never come back
            if self.interrupted():
                self.cancel([ref])
                raise Interrupted(f"stopped while a {role} worker was being restarted")
            if time.monotonic() > deadline:
                self.cancel([ref])
                raise WorkerFailed(f"{role} worker {k} could not be restarted within "
                                   f"{self.cfg.executor.start_timeout_s:g} s (executor.start_timeout_s; after: "
                                   f"{first_line(error)}); the cluster has {self._has()}")
        placed = ray.get(ref)
        self.events.append((EventKind.WORKER_RESTARTED, {"role": role, "index": k, "restart": n,
                                                          "error": first_line(error), **placed}))

    def cancel(self, refs: list) -> None:
        """Outstanding work cancelled and every worker stopped: the executor is done."""
        for ref in refs:
            try:
                ray.cancel(ref, force=False)
            except Exception:   # finished or gone meanwhile
                pass
        self._kill_all()
        self.closed = True

    def _kill_all(self) -> None:
        for ws in self.workers.values():
            for w in ws:
                try:
                    ray.kill(w, no_restart=True)
                except Exception:
                    pass

    def close(self) -> None:
        self._kill_all()
        self.closed = True
        try:
            remove_placement_group(self.pg)
        except Exception:   # the cluster may be gone already
            pass
        if self.owns_connection:
            ray.shutdown()
