"""Arithmetic: write the running value of a chain of k operations mod 10 (DESIGN §3).

Params {"ops": ["+", "-", "*", ...]} with k = len(ops) in 1..8. The seed draws the start value
(0..9) and one operand per op (0..9; 3, 7 or 9 for "*"). Difficulty = 0.5·(k−1)/7 +
0.5·mean(level) with level "+" 0, "-" 0.5, "*" 1.

"*" operands are the units mod 10 so that every op is a permutation of the digits. With ×2, ×4,
×5, ×6, ×8 two different running values collapse onto one, so a wrong earlier digit is healed
by the chain: a noisy policy then succeeds *more* often on "*"-heavy (harder) chains — measured
0.27 at d = 0.7 against 0.33 at d = 0.9 — and difficulty would not mean what it says.

Episodes last exactly k steps; at step i the policy writes a digit (the value after op i).
Observation (25 float32): one-hot of the previously written value (the start value at step 0)
(10), one-hot op (3), one-hot operand (10), step/8, (k−step)/8.

A task has at most 9 × 10 states (step, previously written value), so the whole episode —
next state, oracle label, info row, observation, active/success flags — is tabulated per task
and a batch step is a few gathers; a finished episode sits in its step-k state, which maps
every action to itself with label +1 and a zero info row.
"""
from __future__ import annotations

import zlib
from collections import Counter

import numpy as np
import torch

from .base import HELD_OUT_SEEDS, BatchEnv, Family, Task, draw_seed, fresh_seed

OPS = ("+", "-", "*")
LEVEL = {"+": 0.0, "-": 0.5, "*": 1.0}
K_MAX = 8
ROWS = K_MAX + 1                       # steps 0..8, the last one only as the finished state
MAX_DELTA = 0.15
MUL_OPERANDS = np.array([3, 7, 9])


def _difficulty(ops: list[str]) -> float:
    k = len(ops)
    return float(np.clip(0.5 * (k - 1) / 7 + 0.5 * np.mean([LEVEL[o] for o in ops]), 0.0, 1.0))


def _apply(code, value, operand):
    """Works on ints and numpy arrays alike; op codes 0 '+', 1 '-', 2 '*'."""
    return np.where(code == 0, value + operand, np.where(code == 1, value - operand, value * operand)) % 10


def _stream_bit(start: int, ops: list[str], operands: list[int]) -> int:
    return zlib.crc32(f"{start}|{''.join(ops)}|{','.join(map(str, operands))}".encode()) & 1



def instance(task: Task) -> dict:
    """start, operands, answer of a task. Training seeds only yield instances whose hash bit is
    0 and held-out seeds bit 1, so the two are disjoint even where k = 1 leaves ~100 instances."""
    inst = task._cache.get("instance")
    if inst is None:
        ops = list(task.params["ops"])
        codes = np.array([OPS.index(o) for o in ops])
        rng = np.random.default_rng(task.seed)
        want = int(task.seed >= HELD_OUT_SEEDS[0])
        for _ in range(256):                 # each draw matches with probability ~½
            start = int(rng.integers(10))
            plain, mul = rng.integers(0, 10, len(ops)), rng.choice(MUL_OPERANDS, len(ops))
            operands = [int(v) for v in np.where(codes == 2, mul, plain)]
            if _stream_bit(start, ops, operands) == want:
                break
        else:
            raise RuntimeError("no instance of the seed's stream")
        value = start
        for c, v in zip(codes, operands):
            value = int(_apply(c, value, v))
        inst = {"start": start, "operands": operands, "answer": value}
        task._cache["instance"] = inst
    return inst


class ArithmeticEnv(BatchEnv):
    def __init__(self, tasks: list[Task], rollouts: int, device: torch.device | str = "cpu"):
        T = len(tasks)
        self.n = T * rollouts
        insts = [instance(t) for t in tasks]
        k = np.array([len(t.params["ops"]) for t in tasks])
        code = np.zeros((T, ROWS), np.int64)
        operand = np.zeros((T, ROWS), np.int64)
        for i, (t, inst) in enumerate(zip(tasks, insts)):
            code[i, :k[i]] = [OPS.index(o) for o in t.params["ops"]]
            operand[i, :k[i]] = inst["operands"]
        answer = np.array([inst["answer"] for inst in insts])

        step = np.arange(ROWS)[None, :, None, None]              # [1, R, 1, 1]
        prev = np.arange(10)[None, None, :, None]                # [1, 1, 10, 1]
        act = np.arange(10)[None, None, None, :]                 # [1, 1, 1, 10]
        running = (step < k[:, None, None, None])                # [T, R, 1, 1]
        right = _apply(code[:, :, None], np.arange(10)[None, None, :], operand[:, :, None])   # [T, R, 10]
        shape = (T, ROWS, 10, 10)
        state = np.arange(T)[:, None, None, None] * ROWS * 10
        nxt = np.where(running, state + (step + 1) * 10 + act, state + step * 10 + prev)
        oracle = np.where(running & (act != right[..., None]), -1, 1)
        info = np.stack([np.broadcast_to(step, shape), np.broadcast_to(code[:, :, None, None], shape),
                         np.broadcast_to(operand[:, :, None, None], shape), np.broadcast_to(act, shape),
                         np.broadcast_to(prev, shape)], -1) * running[..., None]

        s_step = np.arange(ROWS)[None, :, None]                  # per state (task, step, prev)
        s_running = s_step < k[:, None, None]
        obs = np.zeros((T, ROWS, 10, 25), np.float32)
        obs[..., :10] = np.eye(10, dtype=np.float32)
        obs[..., 10:13] = (np.eye(3, dtype=np.float32)[code] * s_running[..., 0, None])[:, :, None]
        obs[..., 13:23] = (np.eye(10, dtype=np.float32)[operand] * s_running[..., 0, None])[:, :, None]
        obs[..., 23] = s_step / K_MAX
        obs[..., 24] = (k[:, None, None] - s_step) / K_MAX
        finished_right = ~s_running & (np.arange(10)[None, None, :] == answer[:, None, None])

        dev = torch.device(device)
        self._next = torch.as_tensor(nxt.ravel(), device=dev)
        self._oracle = torch.as_tensor(oracle.ravel().astype(np.int8), device=dev)
        self._info = torch.as_tensor(info.reshape(-1, 5).astype(np.int32), device=dev)
        self._obs = torch.as_tensor(obs.reshape(-1, 25), device=dev)
        self._running = torch.as_tensor(np.broadcast_to(s_running, (T, ROWS, 10)).ravel(), device=dev)
        self._right = torch.as_tensor(finished_right.ravel(), device=dev)
        self._best = torch.as_tensor(right.ravel(), device=dev)
        ep_task = np.arange(self.n) // rollouts
        self._start = torch.as_tensor(ep_task * ROWS * 10 + np.array([i["start"] for i in insts])[ep_task], device=dev)
        self.max_steps = int(k.max()) if T else 0
        self.reset()

    def reset(self) -> torch.Tensor:
        self.state = self._start.clone()
        self.active = self._running.index_select(0, self.state)
        self.success = self._right.index_select(0, self.state)
        return self._obs.index_select(0, self.state)

    def step(self, actions: torch.Tensor):
        # index_select, not tensor[idx]: advanced indexing of a 2-D table may start an intra-op
        # parallel region, which costs milliseconds when the cores are busy
        idx = self.state * 10 + actions
        self.state = self._next.index_select(0, idx)
        self.active = self._running.index_select(0, self.state)
        self.success = self._right.index_select(0, self.state)
        return (self._obs.index_select(0, self.state), self._oracle.index_select(0, idx),
                self._info.index_select(0, idx))

    def oracle_action(self) -> torch.Tensor:
        return self._best.index_select(0, self.state)


class ArithmeticFamily(Family):
    name = "arithmetic"
    obs_dim = 25
    n_actions = 10
    info_dim = 5
    info_names = ("step", "op", "operand", "written", "prev_written")

    def difficulty(self, params: dict) -> float:
        return _difficulty(params["ops"])

    def sample(self, d: float, rng: np.random.Generator, held_out: bool = False) -> Task:
        d = float(np.clip(d, 0.0, 1.0))
        # (k, j): k ops whose levels sum to j/2. Every d has one within 0.05; among them a k near
        # the diagonal ((k−1)/7 ≈ d) is favoured so length and operators grow together
        cands, weights = [], []
        for k in range(1, K_MAX + 1):
            for j in range(2 * k + 1):
                if abs(0.5 * (k - 1) / 7 + j / (4 * k) - d) <= 0.045:
                    cands.append((k, j))
                    weights.append(np.exp(-0.5 * (((k - 1) / 7 - d) / 0.2) ** 2))
        k, j = cands[rng.choice(len(cands), p=np.array(weights) / sum(weights))]
        n_mul = int(rng.integers(max(0, j - k), j // 2 + 1))
        n_minus = j - 2 * n_mul
        ops = ["*"] * n_mul + ["-"] * n_minus + ["+"] * (k - n_mul - n_minus)
        ops = [ops[i] for i in rng.permutation(k)]
        return Task(self.name, {"ops": ops}, draw_seed(rng, held_out))

    def validate(self, task: Task) -> str | None:
        if task.family != self.name:
            return f"task of family {task.family!r}, not {self.name!r}"
        p = task.params
        if not isinstance(p, dict) or set(p) != {"ops"} or not isinstance(p["ops"], (list, tuple)):
            return "params must be {'ops': [...]}"
        if not 1 <= len(p["ops"]) <= K_MAX:
            return f"the chain must have 1..{K_MAX} operations"
        bad = [o for o in p["ops"] if o not in OPS]
        if bad:
            return f"unknown operations {bad}; allowed: {', '.join(OPS)}"
        if not 0 <= task.seed < HELD_OUT_SEEDS[1]:
            return "seed outside the seed space"
        return None

    def critic(self, task: Task, steps: list[tuple[int, list[int]]]) -> dict:
        counts = Counter(OPS[int(row[1])] for _, row in steps)
        out = {"n": len(steps), **{o: counts[o] for o in OPS}, "steps": sorted({int(i) for i, _ in steps})}
        # ties and an empty list go to the harder operator; with no risky steps, the task's own mix
        pool = counts or Counter(task.params["ops"])
        out["focus"] = max(OPS, key=lambda o: (pool[o], LEVEL[o]))
        return out

    def mutate(self, task: Task, direction: str, critic: dict, rng: np.random.Generator) -> Task:
        if direction not in ("harder", "easier"):
            raise ValueError(f"direction must be 'harder' or 'easier', not {direction!r}")
        sign = 1 if direction == "harder" else -1
        ops = list(task.params["ops"])
        focus = (critic or {}).get("focus")
        focus = focus if focus in OPS else max(OPS, key=lambda o: (ops.count(o), LEVEL[o]))
        d0 = _difficulty(ops)

        def insert(op):
            pos = int(rng.integers(len(ops) + 1))
            return [*ops[:pos], op, *ops[pos:]] if len(ops) < K_MAX else None

        def replace(old, new):
            where = [i for i, o in enumerate(ops) if o == old]
            if not where or old == new:
                return None
            i = where[int(rng.integers(len(where)))]
            return [*ops[:i], new, *ops[i + 1:]]

        def remove(old):
            where = [i for i, o in enumerate(ops) if o == old]
            if not where or len(ops) == 1:
                return None
            i = where[int(rng.integers(len(where)))]
            return ops[:i] + ops[i + 1:]

        if sign > 0:      # stress the focus operator: more of it, or it instead of an easier one
            preferred = [insert(focus), replace("+", focus), replace("-", focus)]
        else:             # relieve it: fewer of it, or "+" in its place
            preferred = [remove(focus), replace(focus, "+"), replace(focus, "-")]
        # any single edit, should the critic's one overshoot or go the wrong way
        others = [insert(o) for o in OPS] + [remove(o) for o in OPS] + [replace(a, b) for a in OPS for b in OPS]
        others = [others[i] for i in rng.permutation(len(others))]
        new_ops = ops
        for cand in preferred + others:
            if cand is not None and 0 < sign * (_difficulty(cand) - d0) <= MAX_DELTA:
                new_ops = cand
                break
        return Task(self.name, {"ops": new_ops}, fresh_seed(rng, task.seed))

    def make_env(self, tasks: list[Task], rollouts: int, device: torch.device | str = "cpu") -> ArithmeticEnv:
        return ArithmeticEnv(tasks, rollouts, device)

    def describe(self, task: Task) -> dict:
        inst = instance(task)
        return {"start": inst["start"], "ops": list(task.params["ops"]), "operands": list(inst["operands"]),
                "answer": inst["answer"], "difficulty": self.difficulty(task.params)}


FAMILY = ArithmeticFamily()
