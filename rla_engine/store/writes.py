"""Writes of a run's training history: an iteration's rows in one commit, tasks, events, bulk history, rewind."""
from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from ..vocabulary import TASK_COLUMNS, EventKind
from .base import StoreBase, _finite, _now, dumps, insert_events, require_run

KEPT_ON_REWIND = (EventKind.FAILED.value,)    # a resume replays iterations, but a failure stays in the history


class WritesMixin(StoreBase):
    def commit_iteration(self, run_id: str, iteration: int, *, env_steps: int, wall_s: float,
                         metrics: dict[str, float], events: list[tuple[str, dict]],
                         tasks: list[dict]) -> None:
        """Everything of one iteration, atomically; the `iterations` row is written last."""
        bad = [k for k, v in metrics.items() if not _finite(v)]
        if bad:
            raise ValueError(f"refusing to store non-finite metrics: {', '.join(bad)}")
        with self._write() as conn:
            self._commit_rows(conn, run_id, iteration, env_steps=env_steps, wall_s=wall_s, metrics=metrics,
                              events=events, tasks=tasks, t=_now())

    def _commit_rows(self, conn: sqlite3.Connection, run_id: str, iteration: int, *, env_steps: int,
                     wall_s: float, metrics: dict[str, float], events: list[tuple[str, dict]],
                     tasks: list[dict], t: float) -> None:
        require_run(conn, run_id, self.path)
        conn.executemany("INSERT OR REPLACE INTO metrics (run_id, iteration, key, value, t) "
                         "VALUES (?, ?, ?, ?, ?)",
                         [(run_id, iteration, k, float(v), t) for k, v in metrics.items()])
        insert_events(conn, [(run_id, iteration, t, kind, dumps(p)) for kind, p in events])
        self._upsert_tasks(conn, run_id, tasks)
        conn.execute("UPDATE runs SET iteration = ?, heartbeat_at = ? WHERE id = ?", [iteration, t, run_id])
        conn.execute("INSERT OR REPLACE INTO iterations (run_id, iteration, t, env_steps, wall_s) "
                     "VALUES (?, ?, ?, ?, ?)", [run_id, iteration, t, int(env_steps), float(wall_s)])

    @staticmethod
    def _upsert_tasks(conn: sqlite3.Connection, run_id: str, tasks: list[dict]) -> None:
        cols = ", ".join(TASK_COLUMNS)
        marks = ", ".join("?" for _ in TASK_COLUMNS)
        conn.executemany(f"INSERT OR REPLACE INTO tasks ({cols}) VALUES ({marks})",
                         [tuple(run_id if c == "run_id" else row.get(c) for c in TASK_COLUMNS)
                          for row in tasks])

    def write_tasks(self, run_id: str, tasks: list[dict]) -> None:
        with self._write() as conn:
            require_run(conn, run_id, self.path)
            self._upsert_tasks(conn, run_id, tasks)

    def rewind(self, run_id: str, iteration: int, since: int | None = None) -> int:
        """Delete what came after `iteration` (the checkpoint a resume starts from); return rows gone.
        Failures stay: they are history, not training state. `since`: the last committed
        iteration before the rewind, recorded in its event."""
        gone = 0
        kept = ", ".join(f"'{k}'" for k in KEPT_ON_REWIND)
        with self._write() as conn:
            for table, col, extra in (("metrics", "iteration", ""), ("iterations", "iteration", ""),
                                      ("events", "iteration", f" AND kind NOT IN ({kept})"),
                                      ("tasks", "created_iteration", "")):
                gone += conn.execute(f"DELETE FROM {table} WHERE run_id = ? AND {col} > ?{extra}",
                                     [run_id, iteration]).rowcount
            conn.execute("UPDATE runs SET iteration = ? WHERE id = ?", [iteration, run_id])
            payload = {"to": iteration, "rows": gone, **({"from": since} if since is not None else {})}
            insert_events(conn, [(run_id, iteration, _now(), EventKind.REWOUND, dumps(payload))])
        return gone

    def add_event(self, run_id: str, iteration: int, kind: str, payload: dict | None = None) -> int:
        """One event of a run that is there (else RunGone: no event outlives its run)."""
        with self._write() as conn:
            require_run(conn, run_id, self.path)
            return insert_events(conn, [(run_id, iteration, _now(), kind, dumps(payload or {}))])

    def insert_history(self, run_id: str, metrics: Iterable[tuple[int, str, float, float]],
                       iterations: Iterable[tuple[int, float, int, float]]) -> None:
        """Bulk-load stored history (an import, a benchmark): (iteration, key, value, t) rows and
        (iteration, t, env_steps, wall_s) rows, in one transaction."""
        with self._write() as conn:
            conn.executemany("INSERT OR REPLACE INTO metrics (run_id, iteration, key, value, t) VALUES (?, ?, ?, ?, ?)",
                             ((run_id, it, k, float(v), t) for it, k, v, t in metrics))
            conn.executemany("INSERT OR REPLACE INTO iterations (run_id, iteration, t, env_steps, wall_s) "
                             "VALUES (?, ?, ?, ?, ?)", ((run_id, it, t, n, w) for it, t, n, w in iterations))
            conn.execute("UPDATE runs SET iteration = (SELECT max(iteration) FROM iterations WHERE run_id = ?) "
                         "WHERE id = ?", [run_id, run_id])
