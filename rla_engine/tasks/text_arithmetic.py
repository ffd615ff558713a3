"""Text arithmetic: a word problem of k operations, answered as one written derivation (text_base).

Params hold the whole problem, because the environment model rewrites it as JSON:
{"name": "Mia", "item": "apples", "start": 12, "ops": [["+", 5], ["*", 3], ["-", 20]]}.
k = len(ops) in 1..8; "+" and "-" take 1..999, "*" takes 2..9; every running value (the start
included) stays an integer in 0..999. Names and items come from a small vocabulary so that the
story's templates stay grammatical whatever a rewrite proposes.

The policy answers in one turn, one step per line, as asked: `value = N` after each operation,
then `\\boxed{N}`. Lines are read leniently, because small models rarely keep a format they were
shown once: a line's *last* integer is what it wrote ("14 + 1 = 15 apples" writes 15). In order:
- the first k lines holding an integer are the value lines: the j-th is +1 iff its number is
  operation j applied to the previous *written* value (the start for j = 0), as the embedded
  arithmetic family judges a digit;
- the next line holding an integer (or the first `\\boxed{N}` line, wherever it comes) is the
  answer: +1 iff its number (the boxed one, if boxed) is the true answer;
- anything else is −1 ("junk"): a line without a number, a blank line, a line after the answer.
Lines are matched case-insensitively, with surrounding spaces, `*`, `` ` `` and `$` and a
trailing period ignored.
Success: the k value lines are all right and the answer is right; without an answer line, the
k-th value stands for the answer. Junk lines are bad steps but do not fail the episode: prose
between the lines is the model's business, the numbers are what is checked.

The observation after the turn is neutral ("Answer received."): the judge reads it, and an
outcome written there would let it label every line by the outcome.

Difficulty rises with k, the share of "-" and "*" and the operands' size; it is a function of the
chain's shape (operator and operand size per step), see `text_arithmetic_shapes`: sampling and
mutation choose a shape, then draw fresh numbers for it.

Held-out tasks are disjoint from sampled and mutated training tasks (`text_support.half`).
"""
from __future__ import annotations

import re
from collections import Counter

import numpy as np

from .task import Task, draw_seed
from .text_base import TextEpisode, TextFamily, TurnResult
from .text_arithmetic_parse import ITEMS, NAMES, OPS, apply_op, parse
from .text_arithmetic_shapes import LEVEL, Shape, edits, random_shape, realise, shape_difficulty, shape_of
from .text_support import checked, half, sample_near, variant_seed

MAX_DELTA = 0.15
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_INT = re.compile(r"-?\d{1,9}")


def _draw_task(shape: Shape, g: np.random.Generator, want: int, avoid: dict | None = None) -> dict | None:
    """A concrete problem of the shape in half `want` (text_support.half) that differs from `avoid`."""
    for _ in range(64):
        got = realise(shape, g)
        if got is None:
            return None
        params = {"name": str(g.choice(NAMES)), "item": str(g.choice(list(ITEMS))), "start": got[0], "ops": got[1]}
        if half(params) == want and params != avoid:
            return params
    return None


def values(params: dict) -> list[int]:
    """The running values after each operation."""
    out, v = [], params["start"]
    for op, n in params["ops"]:
        v = apply_op(op, v, n)
        out.append(v)
    return out


def story(params: dict) -> str:
    name, item = params["name"], params["item"]

    def count(n):
        return f"{n} {ITEMS[item] if n == 1 else item}"
    lines = [f"{name} has {count(params['start'])}."]
    for i, (op, n) in enumerate(params["ops"]):
        then = "Then " if i else ""
        more = f"{n} more {ITEMS[item] if n == 1 else item}"
        lines.append(then + {"+": f"{name} gets {more}.", "-": f"{name} gives away {count(n)}.",
                             "*": f"{name}'s {item} are multiplied by {n}."}[op])
    lines.append(f"How many {item} does {name} have now?")
    return " ".join(lines)


def _norm(line: str) -> str:
    return line.strip().strip("*`$ ").rstrip(".").strip("*`$ ").lower()


class ArithmeticEpisode(TextEpisode):
    def __init__(self, params: dict):
        self.params, self.answer = params, values(params)[-1]
        self.done = self.success = False

    def _line(self, line: str, state: dict) -> dict:
        """One line's info; `state` carries the previous written value, the value lines seen, the
        answer once given and whether every value line was right."""
        s = _norm(line)
        if not s or state["answer"] is not None:
            return {"kind": "junk", "op": None, "index": None, "right": False}
        boxed = _BOXED.search(s)
        numbers = _INT.findall(boxed.group(1) if boxed else s)
        if not numbers:
            if boxed:                   # a box without a number is a wrong answer, not prose
                state["answer"] = -1
                return {"kind": "answer", "op": None, "index": None, "right": False}
            return {"kind": "junk", "op": None, "index": None, "right": False}
        written = int(numbers[-1])
        if boxed or state["j"] == len(self.params["ops"]):
            state["answer"] = written
            return {"kind": "answer", "op": None, "index": None, "right": written == self.answer}
        j, (op, n) = state["j"], self.params["ops"][state["j"]]
        right = written == apply_op(op, state["prev"], n)
        state.update(j=j + 1, prev=written, all_right=state["all_right"] and right)
        return {"kind": "value", "op": op, "index": j, "right": right}

    def respond(self, steps: list[str]) -> TurnResult:
        if self.done:
            infos = [{"kind": "junk", "op": None, "index": None, "right": False} for _ in steps]
            return TurnResult([-1] * len(steps), infos, "The episode is over.", True, self.success)
        state: dict = {"prev": self.params["start"], "j": 0, "answer": None, "all_right": True}
        infos = [self._line(str(line), state) for line in steps]
        answer = state["answer"] if state["answer"] is not None else state["prev"]
        self.done = True
        self.success = state["j"] == len(self.params["ops"]) and state["all_right"] and answer == self.answer
        return TurnResult([1 if i["right"] else -1 for i in infos], infos, "Answer received.", True, self.success)


class TextArithmeticFamily(TextFamily):
    name = "text_arithmetic"
    lines_are_steps = True
    max_turns = 1

    def difficulty(self, params: dict) -> float:
        return shape_difficulty(shape_of(params))

    def sample(self, d: float, rng: np.random.Generator, held_out: bool = False) -> Task:
        def draw(d, g):
            return _draw_task(random_shape(d, g), g, int(held_out))
        params, seed = sample_near(d, rng, held_out, 400, draw, self.difficulty)
        return Task(self.name, params, seed)

    def validate(self, task: Task) -> str | None:
        return checked(self.name, task, lambda data: parse(data, None))[1]

    def instruction(self, task: Task) -> str:
        # the worked example is for small models, which follow a shown format far better than a described one
        return (story(task.params) + "\nWrite one line per step: value = N (the number after that step). "
                "Then a last line \\boxed{N} with the answer.\n"
                "Example: for \"Ann has 3 pens. Ann gets 4 more pens. Then Ann gives away 2 pens.\" write:\n"
                "value = 7\nvalue = 5\n\\boxed{5}")

    def start(self, task: Task) -> TextEpisode:
        return ArithmeticEpisode(task.params)

    def critic(self, task: Task, steps: list[tuple[int, dict]]) -> dict:
        infos = [info for _, info in steps if isinstance(info, dict)]
        kinds = Counter(i.get("kind") for i in infos)
        ops = Counter(i.get("op") for i in infos if i.get("kind") == "value")
        # ties and no value step go to the harder operator; without any, the task's own mix
        pool = ops or Counter(o for o, _ in task.params["ops"])
        return {"n": len(steps), "ops": {o: ops[o] for o in OPS}, "answer": kinds["answer"], "junk": kinds["junk"],
                "focus": max(OPS, key=lambda o: (pool[o], LEVEL[o])), "steps": sorted(int(i) for i, _ in steps)[:16]}

    def mutate(self, task: Task, direction: str, critic: dict, rng: np.random.Generator) -> Task:
        if direction not in ("harder", "easier"):
            raise ValueError(f"direction must be 'harder' or 'easier', not {direction!r}")
        sign = 1 if direction == "harder" else -1
        shape = shape_of(task.params)
        focus = critic.get("focus") if isinstance(critic, dict) else None
        if focus not in OPS:
            focus = max(OPS, key=lambda o: (sum(op == o for op, _ in shape), LEVEL[o]))
        d0 = shape_difficulty(shape)
        for cand in [*edits(shape, focus, sign, rng), shape]:
            delta = shape_difficulty(cand) - d0
            if cand is shape or 0 < sign * delta <= MAX_DELTA:
                params = _draw_task(cand, rng, 0, avoid=task.params)
                if params is not None:
                    return Task(self.name, params, draw_seed(rng))
        raise RuntimeError("no fresh numbers for the task's own shape")       # unreachable: it was feasible

    def variant_schema(self) -> str:
        return ('{"name": one of ' + ", ".join(NAMES) + '; "item": one of ' + ", ".join(ITEMS)
                + '; "start": integer 0..999; "ops": 1 to 8 pairs [op, n] applied in order, op "+" or "-" '
                'with n 1..999, op "*" with n 2..9}. Every running value must stay an integer in 0..999. '
                "More operations, more '*' and '-', and larger numbers make it harder.")

    def task_json(self, task: Task) -> dict:
        p = task.params
        return {"name": p["name"], "item": p["item"], "start": p["start"], "ops": [list(op) for op in p["ops"]]}

    def from_json(self, data: object, root: Task) -> Task:
        params = parse(data, root.params if isinstance(root.params, dict) else None)
        return Task(self.name, params, variant_seed(params))

    def describe(self, task: Task) -> dict:
        p = task.params
        vals = values(p)
        return {"text": story(p), "start": p["start"], "ops": [list(op) for op in p["ops"]], "values": vals,
                "answer": vals[-1], "difficulty": self.difficulty(p)}


FAMILY = TextArithmeticFamily()
