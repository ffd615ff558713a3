"""Reads of a run's history: iterations, metrics (rows, series, numpy columns, last values), events, tasks."""
from __future__ import annotations

from typing import Any, cast
from collections.abc import Iterable

import numpy as np

from ..vocabulary import EventRow, TaskRow
from .base import StoreBase, _loads

_COLUMN_DTYPE = np.dtype([("it", np.float64), ("value", np.float64), ("t", np.float64)])


def _where_in(sql: str, args: list, column: str, values: Iterable | None) -> tuple[str, list]:
    """Append `AND column IN (…)` when values are given."""
    if values is None:
        return sql, args
    values = list(values)
    return sql + f" AND {column} IN ({', '.join('?' for _ in values)})", args + values


class ReadsMixin(StoreBase):
    def last_iteration(self, run_id: str) -> int:
        row = self.db.execute("SELECT max(iteration) FROM iterations WHERE run_id = ?", [run_id]).fetchone()
        return int(row[0] or 0)

    def iterations(self, run_id: str) -> list[dict]:
        return list(self.db.query("SELECT * FROM iterations WHERE run_id = ? ORDER BY iteration", [run_id]))

    def metrics(self, run_id: str, after_iteration: int = 0, keys: Iterable[str] | None = None) -> list[dict]:
        sql = "SELECT iteration, key, value, t FROM metrics WHERE run_id = ? AND iteration > ?"
        args: list[Any] = [run_id, after_iteration]
        sql, args = _where_in(sql, args, "key", keys)
        return list(self.db.query(sql + " ORDER BY iteration, key", args))

    def metric_keys(self, run_id: str) -> list[str]:
        """Distinct keys of a run by hopping along the (run_id, key, iteration) index: one seek
        per key, not a scan of a long history."""
        keys: list[str] = []
        last = ""
        while True:
            row = self.db.execute("SELECT min(key) FROM metrics WHERE run_id = ? AND key > ?",
                                  [run_id, last]).fetchone()
            if row[0] is None:
                return keys
            keys.append(last := row[0])

    def columns_since(self, run_id: str, after_iteration: int = 0) -> dict[str, tuple[np.ndarray, ...]]:
        """Metrics after an iteration, by key, as numpy columns (iterations, values, t) — what a
        plot appends to its buffers; a million-row history loads without a Python object per row."""
        out: dict[str, tuple[np.ndarray, ...]] = {}
        with self._snapshot() as conn:   # an iteration committed between two keys must not split
            for key in self.metric_keys(run_id):
                cur = conn.execute("SELECT iteration, value, t FROM metrics WHERE run_id = ? AND key = ? "
                                   "AND iteration > ? ORDER BY iteration", [run_id, key, after_iteration])
                rows = np.fromiter(cur, dtype=_COLUMN_DTYPE)
                if len(rows):
                    out[key] = (rows["it"], rows["value"], rows["t"])
        return out

    def metrics_by_iteration(self, run_id: str) -> dict[int, dict[str, float]]:
        out: dict[int, dict[str, float]] = {}
        for row in self.metrics(run_id):
            out.setdefault(row["iteration"], {})[row["key"]] = row["value"]
        return out

    def series(self, run_id: str, key: str) -> tuple[list[int], list[float]]:
        rows = self.db.execute("SELECT iteration, value FROM metrics WHERE run_id = ? AND key = ? "
                               "ORDER BY iteration", [run_id, key]).fetchall()
        return [r[0] for r in rows], [r[1] for r in rows]

    def latest_metrics(self, run_id: str) -> dict[str, float]:
        """The last stored value of every key (keys like eval/* are not stored every iteration)."""
        rows = self.db.execute(
            "SELECT key, value FROM metrics m WHERE run_id = ? AND iteration = "
            "(SELECT max(iteration) FROM metrics WHERE run_id = m.run_id AND key = m.key)", [run_id]).fetchall()
        return {k: v for k, v in rows}

    def last_values(self, run_id: str, keys: Iterable[str]) -> dict[str, float]:
        """The last value of each key, one index seek each (cheap even for a huge run)."""
        out = {}
        for k in keys:
            row = self.db.execute("SELECT value FROM metrics WHERE run_id = ? AND key = ? "
                                  "ORDER BY iteration DESC LIMIT 1", [run_id, k]).fetchone()
            if row is not None:
                out[k] = row[0]
        return out

    def events(self, run_id: str, after_id: int = 0, kinds: Iterable[str] | None = None) -> list[EventRow]:
        sql = "SELECT * FROM events WHERE run_id = ? AND id > ?"
        args: list[Any] = [run_id, after_id]
        sql, args = _where_in(sql, args, "kind", kinds)
        rows = list(self.db.query(sql + " ORDER BY id", args))
        for r in rows:
            r["payload"] = _loads(r.pop("payload_json"), "event payload")
        return cast(list[EventRow], rows)

    def tasks(self, run_id: str, statuses: Iterable[str] | None = None) -> list[TaskRow]:
        sql, args = "SELECT * FROM tasks WHERE run_id = ?", [run_id]
        sql, args = _where_in(sql, args, "status", statuses)
        return cast(list[TaskRow], list(self.db.query(sql + " ORDER BY slot, version, uid", args)))
