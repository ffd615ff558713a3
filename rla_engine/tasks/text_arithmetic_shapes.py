"""The shape of a text arithmetic problem: (operator, operand size) per step, and its numbers.

Difficulty is a function of the shape alone: 0.5·(k−1)/7 + 0.3·min(1, mean op level / 0.75)
+ 0.2·mean operand size, with op level "+" 0, "-" 0.5, "*" 1 and operand size 0 / 0.5 / 1 for the
buckets 1..9 / 10..99 / 100..999 ("+", "-") and 2 / 3..5 / 6..9 ("*"). The op term saturates at
0.75 because eight "*" cannot stay below 1000: the hardest feasible chains alternate "*" and "-"
(100 ×9 −800 ×9 …). So sampling and mutation choose a shape, then draw fresh numbers for it;
a backward pass over the 1000 running values says which numbers a shape allows.
"""
from __future__ import annotations

import numpy as np

from .text_arithmetic_parse import K_MAX, OPS, RANGES, VMAX, apply_op, bucket

LEVEL = {"+": 0.0, "-": 0.5, "*": 1.0}
Shape = list[tuple[str, int]]          # (op, size bucket 0..2) per operation


def shape_difficulty(shape: Shape) -> float:
    k = len(shape)
    ops = 0.3 * min(1.0, float(np.mean([LEVEL[o] for o, _ in shape])) / 0.75)
    size = 0.2 * float(np.mean([b / 2 for _, b in shape]))
    return float(np.clip(0.5 * (k - 1) / (K_MAX - 1) + ops + size, 0.0, 1.0))


def shape_of(params: dict) -> Shape:
    return [(o, bucket(o, n)) for o, n in params["ops"]]


def _feasible(shape: Shape) -> list[np.ndarray]:
    """F[i][v]: from running value v before operation i, the rest of the shape can be written
    within 0..999 ("*" never applied to 0, which would make the rest trivial)."""
    v = np.arange(VMAX + 1)
    feas = [np.ones(VMAX + 1, bool)]
    for op, b in reversed(shape):
        nxt, (lo, hi) = feas[0], RANGES[op][b]
        if op == "*":
            cur = np.zeros(VMAX + 1, bool)
            for m in range(lo, hi + 1):
                ok = (v >= 1) & (v * m <= VMAX)
                cur[ok] |= nxt[v[ok] * m]
        else:                          # any allowed result in a window of the next row
            prefix = np.concatenate([[0], np.cumsum(nxt)])
            a, z = (v + lo, v + hi + 1) if op == "+" else (v - hi, v - lo + 1)
            a, z = np.clip(a, 0, VMAX + 1), np.clip(z, 0, VMAX + 1)
            cur = (z > a) & (prefix[z] - prefix[a] > 0)
        feas.insert(0, cur)
    return feas


def realise(shape: Shape, g: np.random.Generator) -> tuple[int, list[list]] | None:
    """Fresh numbers for a shape (start, ops), or None when the shape cannot stay in 0..999."""
    feas = _feasible(shape)
    cap = (20, 100, VMAX)[round(np.mean([b for _, b in shape]))]
    starts = np.flatnonzero(feas[0][1:cap + 1]) + 1
    if not len(starts):
        starts = np.flatnonzero(feas[0][1:]) + 1
    if not len(starts):
        return None
    value = start = int(g.choice(starts))
    ops = []
    for i, (op, b) in enumerate(shape):
        lo, hi = RANGES[op][b]
        ns = np.arange(lo, hi + 1)
        res = apply_op(op, value, ns)
        ok = (res >= 0) & (res <= VMAX)
        ok[ok] &= feas[i + 1][res[ok]]
        n = int(g.choice(ns[ok]))
        ops.append([op, n])
        value = apply_op(op, value, n)
    return start, ops


def random_shape(d: float, g: np.random.Generator) -> Shape:
    """A shape drawn around difficulty d: k near the diagonal, op levels and sizes near what the
    rest of d asks for."""
    k = int(np.clip(round(1 + (K_MAX - 1) * d + g.normal(0, 1.0)), 1, K_MAX))
    rest = float(np.clip((d - 0.5 * (k - 1) / (K_MAX - 1)) / 0.5, 0.0, 1.0))
    levels = np.clip(g.normal(0.75 * rest, 0.3, k), 0, 1)
    sizes = np.clip(g.normal(rest, 0.3, k), 0, 1)
    return [(OPS[round(lv * 2)], round(s * 2)) for lv, s in zip(levels, sizes)]


def edits(shape: Shape, focus: str, sign: int, rng: np.random.Generator) -> list[Shape]:
    """Single edits of a shape: those on the focus operator first (harder: one more of it, a
    larger one, it in place of an easier op; easier: one fewer, a smaller one, "+" in its place),
    then every other single edit in a random order."""
    k, mean_b = len(shape), round(np.mean([b for _, b in shape]))
    where = [i for i, (o, _) in enumerate(shape) if o == focus]
    at = where[int(rng.integers(len(where)))] if where else None

    def insert(op, b):
        pos = int(rng.integers(k + 1))
        return [*shape[:pos], (op, b), *shape[pos:]] if k < K_MAX else None

    def put(i, op, b):
        return [*shape[:i], (op, b), *shape[i + 1:]] if i is not None and 0 <= b <= 2 else None

    def remove(i):
        return shape[:i] + shape[i + 1:] if i is not None and k > 1 else None

    if sign > 0:
        easier = [i for i, (o, _) in enumerate(shape) if LEVEL[o] < LEVEL[focus]]
        swap = easier[int(rng.integers(len(easier)))] if easier else None
        first = [insert(focus, mean_b), put(at, focus, shape[at][1] + 1) if at is not None else None,
                 put(swap, focus, shape[swap][1]) if swap is not None else None]
    else:
        first = [remove(at), put(at, focus, shape[at][1] - 1) if at is not None else None,
                 put(at, "+", shape[at][1]) if at is not None and focus != "+" else None]
    others = ([insert(o, b) for o in OPS for b in range(3)] + [remove(i) for i in range(k)]
              + [put(i, o, b) for i in range(k) for o in OPS for b in range(3)])
    others = [others[i] for i in rng.permutation(len(others))]
    return [s for s in first + others if s is not None and s != shape]
