"""The procedural coding problems' shared machinery: knobs, difficulty, ground truth (coding.py).

A template is a problem kind (sum and extremes, bracket balance, …) with four knobs:
- `size` in [0, 1]: how long the input is (n, the number of lines, a string's length);
- `values` in [0, 1]: how wide its values range (numbers, an alphabet, run lengths);
- `twist` in {0, 1, 2}: a composed operation or a stricter output format (each template says which);
- `edge` in {0, 1}: the input domain takes in its awkward cases (negatives, zeros, empty lines,
  ties), and the question says so.
Difficulty = base + (1 − base) · (0.35·size + 0.2·values + 0.15·twist + 0.15·edge), where `base`
is the template's own floor (merging intervals is harder than summing at equal knobs). `size` and
`values` are continuous, so every difficulty above a template's base is reachable exactly.

Ground-truth outputs come from the template's trusted reference program, run in this process
with `input` and `print` replaced (`run_reference`). That is safe because a reference is our own
code, read from this package, never a model's program (those run only in rla_engine.sandbox); it
is also fast (no process per test) and touches no global stream, so other threads are unaffected.
"""
from __future__ import annotations

import builtins
import io
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

WEIGHTS = {"size": 0.35, "values": 0.2, "twist": 0.15, "edge": 0.15}   # twist counts 0..2, so it weighs 0.3
TWISTS = (0, 1, 2)
KINDS = ("min", "max", "edge", "rand", "rand", "rand")   # one ground-truth test of each, in this order
TIME_LIMIT = 2.0         # seconds per test: every reference runs in well under 0.1 s


@dataclass(frozen=True)
class Knobs:
    size: float
    values: float
    twist: int
    edge: int

    def n(self, lo: int, hi: int) -> int:
        """An input length from lo (size 0) to hi (size 1), geometric: small sizes matter more."""
        return round(lo * (hi / lo) ** self.size)

    def v(self, lo: int, hi: int) -> int:
        """A value bound from lo (values 0) to hi (values 1), geometric."""
        return round(lo * (hi / lo) ** self.values)

    def as_dict(self) -> dict:
        return {"size": self.size, "values": self.values, "twist": self.twist, "edge": self.edge}

    @classmethod
    def of(cls, data: dict) -> Knobs:
        return cls(float(data["size"]), float(data["values"]), int(data["twist"]), int(data["edge"]))


@dataclass(frozen=True)
class Template:
    name: str
    base: float                                                  # difficulty at zero knobs
    question: Callable[[Knobs], str]                             # the statement, constraints included
    make: Callable[[Knobs, np.random.Generator, str], str]       # one test input of a kind (KINDS)
    references: tuple[str, str, str]                             # the trusted program per twist


def knob_score(k: Knobs) -> float:
    return (WEIGHTS["size"] * k.size + WEIGHTS["values"] * k.values + WEIGHTS["twist"] * k.twist
            + WEIGHTS["edge"] * k.edge)


def knob_difficulty(t: Template, k: Knobs) -> float:
    # rounded so that a value rebuilt from JSON compares equal to the sampled one
    return round(t.base + (1.0 - t.base) * knob_score(k), 6)


def solve_knobs(t: Template, d: float, twist: int, edge: int, rng: np.random.Generator) -> Knobs | None:
    """Knobs of difficulty d with the given twist and edge, the rest split at random between size
    and values; None when d is out of reach of this twist and edge."""
    if t.base > d + 1e-9:
        return None
    u = (d - t.base) / (1.0 - t.base)
    rest = u - WEIGHTS["twist"] * twist - WEIGHTS["edge"] * edge
    ws, wv = WEIGHTS["size"], WEIGHTS["values"]
    if rest < -1e-9 or rest > ws + wv + 1e-9:
        return None
    rest = min(max(rest, 0.0), ws + wv)
    lo, hi = max(0.0, (rest - wv) / ws), min(1.0, rest / ws)   # size range that leaves values in [0, 1]
    size = round(float(rng.uniform(lo, hi)), 4)
    values = round(min(max((rest - ws * size) / wv, 0.0), 1.0), 4)
    return Knobs(size, values, twist, edge)


def draw_knobs(t: Template, d: float, rng: np.random.Generator) -> Knobs | None:
    """Knobs close to difficulty d with a random feasible twist and edge."""
    combos = [(tw, e) for tw in TWISTS for e in (0, 1)]
    for i in rng.permutation(len(combos)):
        k = solve_knobs(t, d, *combos[int(i)], rng)
        if k is not None:
            return k
    return None


def run_reference(source: str, stdin: str) -> str:
    """The stdout of a trusted program (ours, never a model's) run in-process on `stdin`."""
    lines = stdin.split("\n")
    if stdin.endswith("\n"):
        lines.pop()
    lines.reverse()
    out = io.StringIO()

    def _input(prompt: object = "") -> str:
        if not lines:
            raise EOFError("EOF when reading a line")
        return lines.pop()

    def _print(*args: object, sep: str | None = " ", end: str | None = "\n", file: object = None,
               flush: bool = False) -> None:
        out.write((" " if sep is None else sep).join(map(str, args)) + ("\n" if end is None else end))

    env = {"__name__": "__main__", "__builtins__": {**vars(builtins), "input": _input, "print": _print}}
    exec(compile(source, "<reference>", "exec"), env)   # our own reference program: see the module doc
    return out.getvalue()


def build_params(t: Template, k: Knobs, rng: np.random.Generator) -> dict:
    """A whole concrete task: question, tests (inputs drawn, outputs from the reference)."""
    ref = t.references[k.twist]
    inputs = [t.make(k, rng, kind) for kind in KINDS]
    return {"template": t.name, "knobs": k.as_dict(), "question": t.question(k), "test_method": "stdio",
            "test_time_limit": TIME_LIMIT, "test_input": inputs,
            "test_output": [run_reference(ref, s) for s in inputs]}


# -- input helpers the catalogs share ---------------------------------------------------------
def ints(rng: np.random.Generator, n: int, lo: int, hi: int) -> list[int]:
    return [int(x) for x in rng.integers(lo, hi + 1, size=n)]


def row(xs: list) -> str:
    return " ".join(map(str, xs))


def lines(*parts: str) -> str:
    return "\n".join(parts) + "\n"


def top_length(k: Knobs, hi: int) -> int:
    """The longest input the question allows: 5 at size 0, hi at size 1."""
    return k.n(5, hi)


def length(k: Knobs, rng: np.random.Generator, kind: str, lo: int, hi: int) -> int:
    """An input length for a test kind: lo for "min", the knob's top (`top`) for "max", else between."""
    top = max(lo, top_length(k, hi))
    if kind == "min":
        return lo
    if kind == "max":
        return top
    return int(rng.integers(max(lo, top // 2), top + 1))


def word(rng: np.random.Generator, n: int, alphabet: int) -> str:
    return "".join(chr(97 + int(c)) for c in rng.integers(0, alphabet, size=n))
