"""The text arithmetic problem as JSON: its vocabulary, limits and the defensive parser.

A proposed variant is arbitrary language-model output, so `parse` accepts any JSON value and
either returns canonical params or raises ValueError with one line naming the offending key or
value. It is lenient only where the intent is unambiguous: integral floats (12.0), "×"/"x" and
"−" for the operators, and a missing name or item (kept from the slot's root task).
"""
from __future__ import annotations

import math

NAMES = ("Ana", "Ben", "Cleo", "Dev", "Eli", "Fay", "Gus", "Ivy", "Jon", "Kim",
         "Leo", "Mia", "Noor", "Omar", "Pia", "Raj", "Sam", "Tess", "Uma", "Zoe")
ITEMS = {"apples": "apple", "marbles": "marble", "stickers": "sticker", "coins": "coin", "cards": "card",
         "pencils": "pencil", "shells": "shell", "stamps": "stamp", "beads": "bead", "books": "book"}
OPS = ("+", "-", "*")
VMAX = 999
K_MAX = 8
# operand size buckets per operator (the difficulty's size term is bucket / 2)
RANGES = {"+": ((1, 9), (10, 99), (100, 999)), "-": ((1, 9), (10, 99), (100, 999)), "*": ((2, 2), (3, 5), (6, 9))}
_OP_ALIASES = {"+": "+", "-": "-", "−": "-", "*": "*", "×": "*", "x": "*"}
_KEYS = ("name", "item", "start", "ops")


def apply_op(op, value, n):
    """Works on ints and numpy arrays alike."""
    return value + n if op == "+" else value - n if op == "-" else value * n


def bucket(op: str, n: int) -> int:
    return next(b for b, (lo, hi) in enumerate(RANGES[op]) if lo <= n <= hi)


def _short(v: object) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _int(v: object, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{where} must be an integer, not {_short(v)}")
    if isinstance(v, float) and not (math.isfinite(v) and v.is_integer()):
        raise ValueError(f"{where} must be an integer, not {_short(v)}")
    if abs(v) > 10**6:
        raise ValueError(f"{where} = {_short(v)} is far out of range")
    return int(v)


def _word(data: dict, key: str, allowed, root: dict | None) -> str:
    if key not in data:
        if root is not None and root.get(key) in allowed:
            return root[key]
        raise ValueError(f"missing key {key!r}")
    v = data[key]
    if not isinstance(v, str) or v not in allowed:
        raise ValueError(f"{key} {_short(v)} is not one of: {', '.join(allowed)}")
    return v


def _op(entry: object, i: int) -> list:
    if not isinstance(entry, (list, tuple)) or len(entry) != 2:
        raise ValueError(f"ops[{i}] must be a pair [op, n], not {_short(entry)}")
    op = _OP_ALIASES.get(entry[0].strip()) if isinstance(entry[0], str) else None
    if op is None:
        raise ValueError(f"ops[{i}]: unknown operator {_short(entry[0])}; allowed: + - *")
    n = _int(entry[1], f"ops[{i}] operand")
    lo, hi = RANGES[op][0][0], RANGES[op][-1][1]
    if not lo <= n <= hi:
        raise ValueError(f"ops[{i}]: operand {n} of {op!r} must be in {lo}..{hi}")
    return [op, n]


def parse(data: object, root: dict | None) -> dict:
    """Canonical params from a proposed JSON value (see the module docstring)."""
    if not isinstance(data, dict):
        raise ValueError(f"the task must be a JSON object with keys {', '.join(_KEYS)}, not {type(data).__name__}")
    unknown = [k for k in data if k not in _KEYS]
    if unknown:
        raise ValueError(f"unknown key {_short(unknown[0])}; keys are {', '.join(_KEYS)}")
    name, item = _word(data, "name", NAMES, root), _word(data, "item", tuple(ITEMS), root)
    if "start" not in data or "ops" not in data:
        raise ValueError(f"missing key {'start' if 'start' not in data else 'ops'!r}")
    start = _int(data["start"], "start")
    if not 0 <= start <= VMAX:
        raise ValueError(f"start {start} must be in 0..{VMAX}")
    raw = data["ops"]
    if not isinstance(raw, list) or not 1 <= len(raw) <= K_MAX:
        raise ValueError(f"ops must be a list of 1 to {K_MAX} pairs, not {_short(raw)}")
    ops = [_op(entry, i) for i, entry in enumerate(raw)]
    value = start
    for i, (op, n) in enumerate(ops):
        new = apply_op(op, value, n)
        if not 0 <= new <= VMAX:
            raise ValueError(f"ops[{i}]: {value} {op} {n} = {new} leaves 0..{VMAX}")
        value = new
    return {"name": name, "item": item, "start": start, "ops": ops}
