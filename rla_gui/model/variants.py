"""Every variant decision of a run, as the difficulty chart shows it: all of them kept, a sample drawn.

A run decides a variant or more every iteration, so a long one has tens of thousands of points.
The chart (the dashboard's and the report's) draws at most a budget of them, picked evenly over
the whole run with the first and the last always among them, never only the newest: an early
rejection stays as visible as a late one. What is drawn is then a sample, and `Sample.caption`
says so ("2,000 of 5,321 variants drawn") wherever the chart appears.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeGuard

import numpy as np

from rla_engine.vocabulary import VARIANT_KINDS, EventKind

ACCEPTED, REJECTED = EventKind.VARIANT_ACCEPTED, EventKind.VARIANT_REJECTED
Points = tuple[np.ndarray, np.ndarray]       # (iterations, difficulties), in the run's order


def _finite(x: object) -> TypeGuard[float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def even_sample(n: int, budget: int) -> np.ndarray:
    """Indices of at most `budget` of `n` items in order, evenly spread from the first to the last."""
    if n <= budget:
        return np.arange(n)
    if budget <= 0:
        return np.arange(0)
    if budget == 1:
        return np.array([n - 1])
    # the step (n-1)/(budget-1) is over 1, so no two picks round to the same index
    return np.linspace(0, n - 1, budget).round().astype(np.int64)


def shares(counts: Sequence[int], budget: int) -> list[int]:
    """How many of each kind to draw within `budget`: a kind that fits its fair share is drawn
    whole and leaves the rest to the others (a rare kind is never thinned to make room)."""
    out = [0] * len(counts)
    left = budget
    for k, i in enumerate(sorted(range(len(counts)), key=lambda i: counts[i])):
        out[i] = min(counts[i], left // (len(counts) - k))
        left -= out[i]
    return out


@dataclass(frozen=True)
class Sample:
    """The points drawn, by kind, and how many there are in all."""
    points: dict[str, Points]
    kept: int

    @property
    def drawn(self) -> int:
        return sum(len(x) for x, _ in self.points.values())

    @property
    def thinned(self) -> bool:
        return self.drawn < self.kept

    def caption(self) -> str:
        """'' when every variant is drawn, else what share is."""
        return f"{self.drawn:,} of {self.kept:,} variants drawn, evenly over the run" if self.thinned else ""


def sample(points: Mapping[str, Points], budget: int) -> Sample:
    """At most `budget` of the points, each kind thinned evenly over the whole run."""
    kinds = list(points)
    counts = [len(points[k][0]) for k in kinds]
    drawn = {}
    for kind, n in zip(kinds, shares(counts, budget)):
        x, y = points[kind]
        pick = even_sample(len(x), n)
        drawn[kind] = (np.asarray(x, dtype=np.float64)[pick], np.asarray(y, dtype=np.float64)[pick])
    return Sample(drawn, sum(counts))


class VariantPoints:
    """(iteration, difficulty, accepted) of every variant event with a place on the chart, in
    the order they came; a sequence of such tuples. Columns grow by doubling, written in place:
    a live run appends one or two at a time."""

    def __init__(self) -> None:
        self._x = np.empty(0, dtype=np.float64)
        self._y = np.empty(0, dtype=np.float64)
        self._ok = np.empty(0, dtype=bool)
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[float, float, bool]:
        if not -self.n <= i < self.n:
            raise IndexError(i)
        i %= self.n
        return float(self._x[i]), float(self._y[i]), bool(self._ok[i])

    def add(self, events: Iterable[dict]) -> int:
        """Take the variant decisions among `events`; returns how many. An old or foreign row's
        payload may be null or no object, its difficulty missing or text: such a variant has no
        place on the chart (the event log still lists it)."""
        rows = []
        for e in events:
            if e.get("kind") not in VARIANT_KINDS:
                continue
            payload = e.get("payload")
            d = payload.get("difficulty") if isinstance(payload, dict) else None
            iteration = e.get("iteration")
            if _finite(iteration) and _finite(d):
                rows.append((float(iteration), float(d), e["kind"] == ACCEPTED))
        if rows:
            self._grow(self.n + len(rows))
            new = slice(self.n, self.n + len(rows))
            self._x[new], self._y[new], self._ok[new] = zip(*rows)
            self.n += len(rows)
        return len(rows)

    def _grow(self, size: int) -> None:
        if size <= len(self._x):
            return
        capacity = max(size, 2 * len(self._x), 256)
        for name in ("_x", "_y", "_ok"):
            old = getattr(self, name)
            new = np.empty(capacity, dtype=old.dtype)
            new[:self.n] = old[:self.n]
            setattr(self, name, new)

    def by_kind(self) -> dict[str, Points]:
        ok = self._ok[:self.n]
        x, y = self._x[:self.n], self._y[:self.n]
        return {ACCEPTED: (x[ok], y[ok]), REJECTED: (x[~ok], y[~ok])}

    def sample(self, budget: int) -> Sample:
        return sample(self.by_kind(), budget)

    def clear(self) -> None:
        self.n = 0
