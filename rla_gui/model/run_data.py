"""A run's metric history in growing numpy buffers: what the plots draw from.

Appends are amortised O(1) (capacity doubles); a plot asks for views, never copies. The x-axis
can be the iteration, the environment steps (`perf/env_steps` of that iteration) or the wall
time since the run's first stored iteration.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np

from rla_engine import metrics

X_AXES = ("iteration", "env steps", "wall time (s)")

# On the wall-time axis a run that was paused or stopped, then resumed, has a stretch with no
# commits: its curves break there rather than draw a line across time nothing ran. A gap is a
# step between two commits longer than PAUSE_FACTOR typical steps (the median step, so the
# pauses themselves do not raise it) and longer than PAUSE_MIN_S (a run committing every few
# milliseconds is not paused by a hiccup of a second).
PAUSE_FACTOR = 10.0
PAUSE_MIN_S = 30.0


class Column:
    """One metric key: parallel buffers of iteration, value and commit time."""

    def __init__(self, capacity: int = 256):
        self.it = np.empty(capacity, np.float64)
        self.val = np.empty(capacity, np.float64)
        self.t = np.empty(capacity, np.float64)
        self.n = 0

    def extend(self, its, vals, ts) -> None:
        k = len(its)
        if self.n + k > len(self.it):
            cap = max(2 * len(self.it), self.n + k)
            for name in ("it", "val", "t"):
                buf = np.empty(cap, np.float64)
                buf[: self.n] = getattr(self, name)[: self.n]
                setattr(self, name, buf)
        self.it[self.n:self.n + k] = its
        self.val[self.n:self.n + k] = vals
        self.t[self.n:self.n + k] = ts
        self.n += k

    def truncate_after(self, iteration: int) -> None:
        self.n = int(np.searchsorted(self.it[: self.n], iteration, side="right"))

    def pauses(self) -> np.ndarray:
        """Indices i where the commits of points i-1 and i are a pause apart (see PAUSE_FACTOR)."""
        steps = np.diff(self.t[: self.n])
        moving = steps[steps > 0]
        if len(moving) == 0:
            return np.empty(0, np.intp)
        limit = max(PAUSE_MIN_S, PAUSE_FACTOR * float(np.median(moving)))
        return np.flatnonzero(steps > limit) + 1


class RunData:
    def __init__(self) -> None:
        self.columns: dict[str, Column] = {}
        self.version = 0            # bumped on every change; plots redraw when it moved
        self.t0: float | None = None
        self._pauses: dict[str, tuple[int, np.ndarray]] = {}     # key -> (version, Column.pauses())

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping]) -> RunData:
        """A run's metric rows as a bundle holds them (dicts of key, iteration, value and t), each
        key's in iteration order: the report reads a run through the console's one container. A
        value that is no number (None) is NaN, as the store reads a damaged row back."""
        cols: dict[str, tuple[list, list, list]] = {}
        for r in rows:
            c = cols.get(r["key"])
            if c is None:
                c = cols[r["key"]] = ([], [], [])
            c[0].append(r["iteration"])
            c[1].append(r["value"])
            c[2].append(r.get("t"))
        chunk = {}
        for key, lists in cols.items():
            its, vals, ts = (np.array(v, dtype=np.float64) for v in lists)     # None → nan
            if len(its) > 1 and np.any(np.diff(its) < 0):
                order = np.argsort(its, kind="stable")
                its, vals, ts = its[order], vals[order], ts[order]
            chunk[key] = (its, vals, ts)
        data = cls()
        data.add(chunk)
        return data

    def __contains__(self, key: object) -> bool:
        """Whether `key` has any point."""
        col = self.columns.get(key) if isinstance(key, str) else None
        return col is not None and col.n > 0

    def clear(self) -> None:
        self.columns.clear()
        self._pauses.clear()
        self.t0 = None
        self.version += 1

    def add(self, chunk: Mapping[str, tuple[np.ndarray | list, ...]]) -> set[str]:
        for key, (its, vals, ts) in chunk.items():
            col = self.columns.get(key)
            if col is None:
                col = self.columns[key] = Column(max(256, len(its)))
            col.extend(its, vals, ts)
            if len(ts) and (self.t0 is None or ts[0] < self.t0):
                self.t0 = ts[0]
        if chunk:
            self.version += 1
        return set(chunk)

    def truncate_after(self, iteration: int) -> None:
        """A resume rewound the run: forget what came after its checkpoint."""
        for col in self.columns.values():
            col.truncate_after(iteration)
        self.version += 1

    def keys(self) -> list[str]:
        return sorted(self.columns)

    def tier_keys(self) -> list[str]:
        return sorted((k for k in self.columns if metrics.tier_of(k) is not None),
                      key=lambda k: metrics.tier_of(k) or 0.0)

    def last(self, key: str) -> float | None:
        col = self.columns.get(key)
        return float(col.val[col.n - 1]) if col and col.n else None

    def last_iteration(self) -> int:
        return max((int(c.it[c.n - 1]) for c in self.columns.values() if c.n), default=0)

    def xy(self, key: str, x_axis: str = X_AXES[0]) -> tuple[np.ndarray, np.ndarray]:
        col = self.columns.get(key)
        if col is None or col.n == 0:
            return np.empty(0), np.empty(0)
        y = col.val[: col.n]
        if x_axis == X_AXES[1]:
            return self._env_steps_at(col.it[: col.n]), y
        if x_axis == X_AXES[2]:
            return col.t[: col.n] - (self.t0 or 0.0), y
        return col.it[: col.n], y

    def breaks(self, key: str, x_axis: str) -> np.ndarray:
        """Indices i of xy(key, x_axis) where no line may join point i-1 to point i: on the
        wall-time axis, where the run was paused or stopped (nothing ran in between)."""
        col = self.columns.get(key)
        if x_axis != X_AXES[2] or col is None:
            return np.empty(0, np.intp)
        cached = self._pauses.get(key)
        if cached is None or cached[0] != self.version:
            cached = self._pauses[key] = (self.version, col.pauses())
        return cached[1]

    def x_of_iteration(self, iterations: np.ndarray, x_axis: str) -> np.ndarray:
        """Where an iteration sits on the chosen axis (for event markers)."""
        if x_axis == X_AXES[1]:
            return self._env_steps_at(iterations)
        if x_axis == X_AXES[2]:
            col = self.columns.get(metrics.ENV_STEPS)
            if col is None or col.n == 0:
                return iterations
            idx = np.clip(np.searchsorted(col.it[: col.n], iterations), 0, col.n - 1)
            return col.t[idx] - (self.t0 or 0.0)
        return iterations

    def _env_steps_at(self, iterations: np.ndarray) -> np.ndarray:
        col = self.columns.get(metrics.ENV_STEPS)
        if col is None or col.n == 0:
            return iterations
        idx = np.clip(np.searchsorted(col.it[: col.n], iterations), 0, col.n - 1)
        return col.val[idx]


# From here a value's EMA weights (up to e**600 in a chunk) could overflow a float: the series is
# scaled by a power of two first (exact, and the average is linear, so scaled back it is the same)
SCALE_ABOVE = 1e40


def ema(y: np.ndarray, weight: float, state: float = 0.0, seen: int = 0) -> np.ndarray:
    """Debiased exponential moving average (as TensorBoard's smoothing), vectorised in chunks
    short enough that weight**-k cannot overflow, at any magnitude (an imported 1.5e308 too).
    `state`/`seen` continue an earlier call (see ema_state), so appends cost only their own length."""
    if weight <= 0 or len(y) == 0:
        return np.asarray(y, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    finite = np.abs(y[np.isfinite(y)])
    top = max(float(finite.max()) if len(finite) else 0.0, abs(state) if math.isfinite(state) else 0.0)
    if top <= SCALE_ABOVE:
        return _ema(y, weight, state, seen)
    exponent = int(np.frexp(top)[1])
    return np.ldexp(_ema(np.ldexp(y, -exponent), weight, math.ldexp(state, -exponent), seen), exponent)


def _ema(y: np.ndarray, weight: float, state: float, seen: int) -> np.ndarray:
    out = np.empty(len(y), dtype=np.float64)
    chunk = int(max(1, min(4096, 600 / -np.log(weight))))
    for start in range(0, len(y), chunk):
        seg = y[start:start + chunk]
        k = np.arange(1, len(seg) + 1, dtype=np.float64)
        acc = np.cumsum(seg * (1 - weight) * weight ** -k)
        raw = weight ** k * (state + acc)
        state = raw[-1]
        out[start:start + len(seg)] = raw / (1 - weight ** (seen + k))
        seen += len(seg)
    return out


def ema_state(smoothed_last: float, weight: float, seen: int) -> float:
    """The undebiased EMA state behind the last smoothed value of `seen` points."""
    return smoothed_last * (1 - weight ** seen)


def hidden_on_log(y: np.ndarray) -> int:
    """How many of a curve's points a log y axis cannot show (zero or negative: a policy loss is
    negative about as often as not)."""
    return int(np.count_nonzero(np.asarray(y) <= 0))


def log_y_note(hidden: int, total: int) -> str:
    """What a chart on log y says of the points it cannot draw; empty when it draws them all."""
    return f"log y: {hidden:,} of {total:,} points ≤ 0 hidden" if hidden else ""
