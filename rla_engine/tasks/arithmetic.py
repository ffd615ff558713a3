"""Arithmetic: write the running value of a chain of k operations mod 10 (DESIGN §3).

Params {"ops": ["+", "-", "*", ...]} with k = len(ops) in 1..8. The seed draws the start value
(0..9) and one operand per op (0..9; 3, 7 or 9 for "*"). Difficulty = 0.5·(k−1)/7 +
0.5·mean(level) with level "+" 0, "-" 0.5, "*" 1.

"*" operands are the units mod 10 so that every op is a permutation of the digits. With ×2, ×4,
×5, ×6, ×8 two different running values collapse onto one, so a wrong earlier digit is healed
by the chain: a noisy policy then succeeds *more* often on "*"-heavy (harder) chains — measured
0.27 at d = 0.7 against 0.33 at d = 0.9 — and difficulty would not mean what it says.

Episodes last exactly k steps. At step i the policy writes the new running value as the digit it
adds to the previous one (mod 10): "+ a" is written as a, "− a" as −a, "× m" as prev·(m−1). An
absolute digit made every (prev, op, operand) a separate entry of a 230-entry table that a small
MLP neither generalises over (supervised on half of the entries it scored 0.02 on the rest;
offsets: 0.93 for "+", 0.89 for "−") nor finds by RL (greedy accuracy stayed at chance). The
chain, the oracle and the info row still speak of the written running value.

Success: every written value is right. Judging only the last digit let a wrong chain end right
one time in ten, and a policy memorised per task a wrong path that ends on the answer.

Observation (33 float32): one-hot of the running value (the start value at step 0) (10), one-hot
of the term (op, operand) (23: "+ 0".."+ 9", "− 0".."− 9", "× 3", "× 7", "× 9"). With separate
op and operand one-hots the policy carried "+ a" over to "− a" and stayed confidently wrong on half
the "−" terms (seed 0: greedy "−" accuracy 0.5 after 1500 iterations; 1.0 with the term one-hot).
No step position: the right digit depends on nothing else, and a position let the policy memorise
a path per task instead of computing.

Instances: rollout r of a task plays instance r of its seed (instance 0 is the task's own, the one
`describe` shows and a one-rollout held-out evaluation plays). With one instance per group a
deterministic policy scores 0 or 1 on a task, so no group is mixed, no candidate is ever accepted
and the pool freezes; with an instance per rollout acc is the policy's accuracy on the task's chain
shape (its difficulty), which is what the environment model adapts.
"""
from __future__ import annotations

import zlib
from collections import Counter

import numpy as np
import torch
from torch.nn import functional

from .base import HELD_OUT_SEEDS, TRAIN_SEEDS, BatchEnv, Family, Task, draw_seed, fresh_seed

OPS = ("+", "-", "*")
LEVEL = {"+": 0.0, "-": 0.5, "*": 1.0}
K_MAX = 8
ROWS = K_MAX + 1                       # steps 0..8, the last one only as the finished state
MAX_DELTA = 0.15
MUL_OPERANDS = np.array([3, 7, 9])
# one input unit per (op, operand): "+ 7" and "− 7" share nothing, so what is learnt for one cannot
# be generalised onto the other (they need opposite digits)
TERM = np.full((3, 10), 0, np.int64)
TERM[0], TERM[1] = np.arange(10), 10 + np.arange(10)
TERM[2, MUL_OPERANDS] = 20 + np.arange(3)
N_TERMS = 23


def _difficulty(ops: list[str]) -> float:
    k = len(ops)
    return float(np.clip(0.5 * (k - 1) / 7 + 0.5 * np.mean([LEVEL[o] for o in ops]), 0.0, 1.0))


def _apply(code, value, operand):
    """Works on ints and numpy arrays alike; op codes 0 '+', 1 '-', 2 '*'."""
    return np.where(code == 0, value + operand, np.where(code == 1, value - operand, value * operand)) % 10


def _stream_bit(start: int, ops: list[str], operands: list[int]) -> int:
    return zlib.crc32(f"{start}|{''.join(ops)}|{','.join(map(str, operands))}".encode()) & 1


def _rollout_seed(seed: int, r: int) -> int:
    """Seed of instance r of a task: r = 0 is the task's own; others stay in the seed's half, so
    training and held-out instances never mix."""
    if r == 0:
        return seed
    lo, hi = HELD_OUT_SEEDS if seed >= HELD_OUT_SEEDS[0] else TRAIN_SEEDS
    return lo + zlib.crc32(f"{seed}|{r}".encode()) % (hi - lo)


def _draw(seed: int, ops: list[str]) -> dict:
    """start, operands, answer. Training seeds only yield instances whose hash bit is 0 and
    held-out seeds bit 1, so the two are disjoint even where k = 1 leaves ~100 instances."""
    codes = np.array([OPS.index(o) for o in ops])
    rng = np.random.default_rng(seed)
    want = int(seed >= HELD_OUT_SEEDS[0])
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
    return {"start": start, "operands": operands, "answer": value}


def instances(task: Task, n: int) -> list[dict]:
    """Instances 0..n−1 of a task (cached on the task: pool tasks are rolled out many times)."""
    got = task._cache.setdefault("instances", [])
    ops = list(task.params["ops"])
    while len(got) < n:
        got.append(_draw(_rollout_seed(task.seed, len(got)), ops))
    return got[:n]


def instance(task: Task) -> dict:
    """The task's own instance (instance 0)."""
    return instances(task, 1)[0]


class ArithmeticEnv(BatchEnv):
    """Episode b plays instance b % rollouts of task b // rollouts. The state is (step, running
    value, broken): a few small tensors, each step a handful of gathers; a finished episode keeps
    its state, every action ignored."""

    def __init__(self, tasks: list[Task], rollouts: int, device: torch.device | str = "cpu"):
        self.n = len(tasks) * rollouts
        code = np.zeros((self.n, ROWS), np.int64)
        operand = np.zeros((self.n, ROWS), np.int64)
        k, start, answer = (np.zeros(self.n, np.int64) for _ in range(3))
        for i, t in enumerate(tasks):
            codes = [OPS.index(o) for o in t.params["ops"]]
            for r, inst in enumerate(instances(t, rollouts)):
                b = i * rollouts + r
                k[b], start[b], answer[b] = len(codes), inst["start"], inst["answer"]
                code[b, :k[b]], operand[b, :k[b]] = codes, inst["operands"]
        # right[b, step, prev]: the value step should write after the running value prev
        right = _apply(code[:, :, None], np.arange(10)[None, None, :], operand[:, :, None])
        dev = torch.device(device)
        as_t = lambda a: torch.as_tensor(a, device=dev)     # noqa: E731
        self._code, self._operand, self._right = as_t(code), as_t(operand), as_t(right.reshape(self.n, -1))
        self._term = as_t(TERM[code, operand])
        self._k, self._start, self._answer = as_t(k), as_t(start), as_t(answer)
        self.max_steps = int(k.max()) if self.n else 0
        self.reset()

    def _at(self, table: torch.Tensor) -> torch.Tensor:
        return table.gather(1, self.step_i.unsqueeze(1)).squeeze(1)

    def _obs(self) -> torch.Tensor:
        running = self.active.unsqueeze(1).float()
        return torch.cat([functional.one_hot(self.value, 10).float(),
                          functional.one_hot(self._at(self._term), N_TERMS).float() * running], 1)

    def _success(self) -> torch.Tensor:
        return ~self.active & ~self.broken & (self.value == self._answer)

    def reset(self) -> torch.Tensor:
        self.step_i = torch.zeros_like(self._k)
        self.value = self._start.clone()
        self.broken = torch.zeros_like(self._k, dtype=torch.bool)
        self.active = self.step_i < self._k
        self.success = self._success()
        return self._obs()

    def _right_now(self) -> torch.Tensor:
        return self._right.gather(1, (self.step_i * 10 + self.value).unsqueeze(1)).squeeze(1)

    def step(self, actions: torch.Tensor):
        running = self.active
        written = (self.value + actions) % 10
        wrong = running & (written != self._right_now())
        oracle = torch.where(wrong, -1, 1).to(torch.int8)
        info = torch.stack([self.step_i, self._at(self._code), self._at(self._operand), written, self.value], 1)
        info = (info * running.unsqueeze(1)).to(torch.int32)
        self.broken = self.broken | wrong
        self.value = torch.where(running, written, self.value)
        self.step_i = self.step_i + running.long()
        self.active = self.step_i < self._k
        self.success = self._success()
        return self._obs(), oracle, info

    def oracle_action(self) -> torch.Tensor:
        return (self._right_now() - self.value) % 10


class ArithmeticFamily(Family):
    name = "arithmetic"
    obs_dim = 10 + N_TERMS
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
