"""The task pool (SPEC §5): constant-size slots, versions, pending candidates, manual override.

Every task the pool ever held is a `TaskRecord` with a run-unique `uid`; the store keeps them
all (active, retired, pending, rejected, dropped), which is the adaptation log the console shows.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, fields

import numpy as np

from .. import rewards
from ..tasks.base import Task
from ..vocabulary import TaskFields, TaskStatus


@dataclass
class TaskRecord:
    uid: int
    slot: int
    version: int
    task: Task
    difficulty: float | None        # None: the family has no parametric difficulty
    status: str                     # active | retired | pending | rejected | dropped
    created_iteration: int
    last_acc: float | None = None
    direction: str | None = None    # for candidates: harder | easier
    prev_acc: float | None = None   # the slot's accuracy when the candidate was asked
    new_acc: float | None = None    # the candidate's measured accuracy
    critic: dict | None = None
    decided_iteration: int | None = None
    last_drawn: int | None = None   # the iteration that last sampled the slot (PLR's staleness)

    def row(self) -> dict:
        """The record as a task row: the shape of vocabulary.TaskFields, which the type checker holds it to."""
        row: TaskFields = {
            "uid": self.uid, "slot": self.slot, "version": self.version, "family": self.task.family,
            "params_json": json.dumps(self.task.to_json()), "difficulty": self.difficulty,
            "status": self.status, "last_acc": self.last_acc, "direction": self.direction,
            "prev_acc": self.prev_acc, "new_acc": self.new_acc,
            "critic_json": json.dumps(self.critic) if self.critic is not None else None,
            "created_iteration": self.created_iteration, "decided_iteration": self.decided_iteration}
        return dict(row)

    def to_state(self) -> dict:
        """The record's fields as they are, for json.dumps at once (a checkpoint): shallow, not
        dataclasses.asdict, whose deep copy of every critic made the pool's state 2/3 of a checkpoint."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["task"] = self.task.to_json()
        return d

    @classmethod
    def from_state(cls, family: str, d: dict) -> TaskRecord:
        d = dict(d)
        d["task"] = Task.from_json(family, d["task"])
        return cls(**d)


@dataclass
class Decision:
    slot: int
    accepted: bool
    record: TaskRecord


class TaskPool:
    def __init__(self, family, low: float = 0.2, high: float = 0.8, tries: int = 3):
        self.family, self.low, self.high, self.tries = family, low, high, tries
        self.active: list[TaskRecord] = []
        self.pending: dict[int, TaskRecord] = {}
        self.override: float | None = None
        # per slot, the task it was last given from outside the environment model (the initial
        # pool, an override, a uniform refresh): a language model's rewrites stay anchored to it
        self.roots: list[Task] = []
        self._next_uid = 0
        self._dirty: dict[int, TaskRecord] = {}

    # -- building --------------------------------------------------------------------------
    def _new_record(self, slot: int, version: int, task: Task, status: str, iteration: int, **kw) -> TaskRecord:
        d = self.family.difficulty(task.params)
        rec = TaskRecord(self._next_uid, slot, version, task, None if d is None else float(d), status, iteration, **kw)
        self._next_uid += 1
        self._dirty[rec.uid] = rec
        return rec

    def fill(self, size: int, low: float, high: float, rng: np.random.Generator) -> None:
        """The initial pool: difficulties evenly spread over [low, high], each a fresh task."""
        targets = [float(d) for d in (np.linspace(low, high, size) if size > 1 else [(low + high) / 2])]
        # a family whose tasks are costly to make (textworld builds games) makes them all at once
        many = getattr(self.family, "sample_many", None)
        tasks = many(targets, rng) if many is not None else [self.family.sample(d, rng) for d in targets]
        self.active = [self._new_record(slot, 0, task, TaskStatus.ACTIVE.value, 0) for slot, task in enumerate(tasks)]
        self.roots = [r.task for r in self.active]

    # -- sampling ----------------------------------------------------------------------------
    def free_slots(self) -> list[int]:
        return [r.slot for r in self.active if r.slot not in self.pending]

    def sample_slots(self, k: int, rng: np.random.Generator) -> list[int]:
        free = self.free_slots()
        k = min(k, len(free))
        return sorted(int(s) for s in rng.choice(free, size=k, replace=False)) if k else []

    def note_drawn(self, slots: list[int], iteration: int) -> None:
        for s in slots:
            self.active[s].last_drawn = iteration

    def refresh(self, slots: list[int], difficulties: list[float], iteration: int, rng: np.random.Generator) -> None:
        """Give each slot a fresh task at its difficulty (a new version; history kept)."""
        for slot, d in zip(slots, difficulties):
            self._replace_active(slot, self.family.sample(d, rng), iteration)

    def _replace_active(self, slot: int, task: Task, iteration: int) -> None:
        self.roots[slot] = task
        old = self.active[slot]
        old.status, old.decided_iteration = TaskStatus.RETIRED.value, iteration
        self._dirty[old.uid] = old
        self.active[slot] = self._new_record(slot, old.version + 1, task, TaskStatus.ACTIVE.value, iteration)

    def candidate_slots(self) -> list[int]:
        return sorted(self.pending)

    def record_acc(self, slot: int, acc: float) -> None:
        rec = self.active[slot]
        rec.last_acc = float(acc)
        self._dirty[rec.uid] = rec

    # -- candidates ------------------------------------------------------------------------
    def decide(self, slot: int, new_acc: float, iteration: int) -> Decision:
        cand = self.pending.pop(slot)
        cand.new_acc, cand.last_acc, cand.decided_iteration = float(new_acc), float(new_acc), iteration
        accepted = rewards.accept_candidate(cand.direction, cand.prev_acc, new_acc, self.low, self.high)
        if accepted:
            old = self.active[slot]
            old.status, old.decided_iteration = TaskStatus.RETIRED.value, iteration
            self._dirty[old.uid] = old
            cand.status = TaskStatus.ACTIVE.value
            self.active[slot] = cand
        else:
            cand.status = TaskStatus.REJECTED.value
        self._dirty[cand.uid] = cand
        return Decision(slot, accepted, cand)

    def wants_variant(self, slot: int, acc: float) -> str | None:
        """The direction of the variant to ask for (SPEC §5), or None: no trigger, an override in
        force, or a candidate already pending."""
        direction = rewards.adaptation_direction(acc, self.low, self.high)
        if direction is None or self.override is not None or slot in self.pending:
            return None
        return direction

    def add_pending(self, slot: int, variant: Task, direction: str, acc: float, critic: dict,
                    iteration: int) -> TaskRecord:
        """The environment model's valid variant becomes the slot's pending candidate."""
        rec = self._new_record(slot, self.active[slot].version + 1, variant, TaskStatus.PENDING.value, iteration,
                               direction=direction, prev_acc=float(acc), critic=critic)
        self.pending[slot] = rec
        return rec

    # -- manual override -----------------------------------------------------------------------
    def set_override(self, d: float | None, iteration: int, rng: np.random.Generator) -> None:
        """A number: every slot gets a fresh task at d and pending candidates are dropped;
        None: automatic adaptation resumes from the pool as it is."""
        self.override = d
        if d is None:
            return
        for cand in self.pending.values():
            cand.status, cand.decided_iteration = TaskStatus.DROPPED.value, iteration
            self._dirty[cand.uid] = cand
        self.pending.clear()
        for slot in range(len(self.active)):
            self._replace_active(slot, self.family.sample(d, rng), iteration)

    # -- views ---------------------------------------------------------------------------------
    def difficulties(self) -> np.ndarray:
        """The active tasks' difficulties (empty when the family has none)."""
        return np.array([r.difficulty for r in self.active if r.difficulty is not None])

    def take_dirty_rows(self) -> list[dict]:
        rows = [r.row() for r in self._dirty.values()]
        self._dirty.clear()
        return rows

    def live_rows(self) -> list[dict]:
        return [r.row() for r in self.active] + [r.row() for r in self.pending.values()]

    def state_dict(self) -> str:
        return json.dumps({"active": [r.to_state() for r in self.active],
                           "pending": [r.to_state() for r in self.pending.values()],
                           "roots": [t.to_json() for t in self.roots],
                           "override": self.override, "next_uid": self._next_uid})

    def load_state_dict(self, state: str) -> None:
        s = json.loads(state)
        name = self.family.name
        self.active = [TaskRecord.from_state(name, d) for d in s["active"]]
        self.pending = {r.slot: r for r in (TaskRecord.from_state(name, d) for d in s["pending"])}
        # a checkpoint written before roots were kept: each slot's current task stands for its root
        self.roots = ([Task.from_json(name, t) for t in s["roots"]] if "roots" in s
                      else [r.task for r in self.active])
        self.override, self._next_uid = s["override"], s["next_uid"]
        self._dirty.clear()
