"""The one package that touches SQLite (through sqlite-utils): reads and writes of the run
history; opening, versions and migrations live in `schema`, process liveness in `liveness`.

The database file is both the bus between engine and console and the run history
(DESIGN §1, §4). The engine is the only writer of a run's rows; readers write only commands,
notes/tags/archive and the `crashed` mark. An iteration exists iff its `iterations` row
exists: its metrics, events, task rows and that row are committed in one transaction.
Every write is one IMMEDIATE transaction that waits for another writer (`lock_wait_s`).
"""
from __future__ import annotations

import contextlib
import json
import math
import numbers
import os
import secrets
import socket
import sqlite3
import time
from pathlib import Path
from typing import Any, cast
from collections.abc import Iterable

import numpy as np
import sqlite_utils

from ..bundle import (BUNDLE_FORMAT, MULTI_FORMAT, TASK_COLUMNS,  # noqa: F401
                      BundleError, bundle_rows)
from ..paths import RUN_ID_RE, UnsafeRunId, check_run_id  # noqa: F401
from ..summary import run_duration
from ..vocabulary import FINAL, LIVE, CommandRow, EventKind, EventRow, RunRow, Status, TaskRow
from .liveness import engine_gone, pid_alive, process_start  # noqa: F401
from .schema import (FTS_COLUMNS, MIGRATIONS, SCHEMA_VERSION, StoreError, WriteError,  # noqa: F401
                     connect, is_disk_full, write_transaction)

_COLUMN_DTYPE = np.dtype([("it", np.float64), ("value", np.float64), ("t", np.float64)])
LOCK_WAIT_S = 30.0              # how long a reader's write (notes, a command) waits for the engine's
COMMAND_MAX_BYTES = 65_536      # a command payload is a few numbers; more is not a command
EVENT_EXCERPT_CHARS = 300       # how much of a rejected payload its event keeps
KEPT_ON_REWIND = (EventKind.FAILED.value,)    # a resume replays iterations, but a failure stays in the history


def _clean(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return repr(obj)
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def dumps(obj: Any) -> str:
    """Strict JSON (no NaN/Infinity tokens, which other parsers reject): a non-finite number in a
    payload is kept as its text, e.g. "nan"."""
    try:
        return json.dumps(obj, allow_nan=False)
    except ValueError:
        return json.dumps(_clean(obj), allow_nan=False)


def _loads(text: str | None, what: str) -> Any:
    """A stored JSON payload; a damaged one is shown as such rather than ending the read."""
    try:
        return json.loads(text or "{}")
    except (ValueError, RecursionError):
        return {"unreadable": f"damaged {what}", "text": (text or "")[:EVENT_EXCERPT_CHARS]}


def parse_command(kind: bytes | None, payload: bytes | None) -> tuple[str, Any, str | None]:
    """(kind, payload, problem) of a stored command row written by anyone: the bytes may be
    anything, so every way they can be wrong is a reason to reject, never an exception."""
    kind_text = (kind or b"").decode("utf-8", "replace")[:80]
    if kind is None or not kind.isascii() or not kind_text.isidentifier():
        return kind_text, None, f"command kind {kind_text!r} is not a command name"
    raw = payload or b"{}"
    if len(raw) > COMMAND_MAX_BYTES:
        return kind_text, None, f"payload is {len(raw)} bytes; at most {COMMAND_MAX_BYTES}"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return kind_text, None, f"payload is not UTF-8 text (byte {e.start})"
    try:
        value = json.loads(text)
    except RecursionError:
        return kind_text, None, "payload is nested too deeply"
    except ValueError as e:       # also a number of thousands of digits (int conversion limit)
        return kind_text, None, f"payload is not valid JSON ({str(e)[:120]})"
    return kind_text, value, None


def payload_excerpt(payload: bytes | None) -> Any:
    """What a command's event keeps of its payload: small ones whole, big ones cut."""
    text = (payload or b"").decode("utf-8", "replace")
    if len(text) <= EVENT_EXCERPT_CHARS:
        return text
    return text[:EVENT_EXCERPT_CHARS] + f"… ({len(payload or b'')} bytes)"


def _marks(values: tuple) -> str:
    """`?, ?, ?` for an IN (…) over these values."""
    return ", ".join("?" * len(values))


def _where_in(sql: str, args: list, column: str, values: Iterable | None) -> tuple[str, list]:
    """Append `AND column IN (…)` when values are given."""
    if values is None:
        return sql, args
    values = list(values)
    return sql + f" AND {column} IN ({', '.join('?' for _ in values)})", args + values


def new_run_id() -> str:
    """Sortable by start time, unique enough for one user's history: `20261130-142501-3fa2`."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def _now() -> float:
    return time.time()


def _finite(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


class Store:
    def __init__(self, path: str | Path, create: bool = True, lock_wait_s: float = LOCK_WAIT_S):
        self.path = Path(path).expanduser()
        self.lock_wait_s = lock_wait_s
        self.db = sqlite_utils.Database(connect(self.path, create))
        self._gone: set[str] = set()    # runs found crashed that this reader could not mark so

    def close(self) -> None:
        self.db.conn.close()

    def _write(self):
        return write_transaction(self.db.conn, self.path, self.lock_wait_s)

    # -- runs ----------------------------------------------------------------------------
    def create_run(self, run_id: str, *, name: str, preset: str | None, config: dict, device: str,
                   group_id: str | None = None, first_events: list[tuple[str, dict]] | None = None,
                   first_tasks: list[dict] | None = None) -> None:
        """A new live run; with first_events/first_tasks, its iteration 0 is committed in the
        same transaction (a run row never exists without its starting state)."""
        try:
            check_run_id(run_id)
        except UnsafeRunId as e:
            raise StoreError(str(e)) from None
        t = _now()
        row = {"id": run_id, "name": name, "status": Status.RUNNING.value, "preset": preset or "",
               "config_json": dumps(config), "group_id": group_id, "created_at": t, "started_at": t,
               "heartbeat_at": t, "pid": os.getpid(), "host": socket.gethostname(),
               "pid_start": process_start(os.getpid()), "iteration": 0, "device": device, "error": None,
               "notes": "", "tags": "", "archived": 0}
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM runs WHERE id = ?", [run_id]).fetchone() is not None:
                raise StoreError(f"run id {run_id!r} already exists in {self.path}")
            conn.execute(f"INSERT INTO runs ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
                         list(row.values()))
            if first_events is not None or first_tasks is not None:
                self._commit_rows(conn, run_id, 0, env_steps=0, wall_s=0.0, metrics={},
                                  events=first_events or [], tasks=first_tasks or [], t=t)

    def run_exists(self, run_id: str) -> bool:
        return self.get_run(run_id) is not None

    def get_run(self, run_id: str) -> RunRow | None:
        rows = self._shown(self.db.query("SELECT * FROM runs WHERE id = ?", [run_id]))
        return rows[0] if rows else None

    def list_runs(self, include_archived: bool = False) -> list[RunRow]:
        where = "" if include_archived else "WHERE archived = 0"
        return self._shown(self.db.query(f"SELECT * FROM runs {where} ORDER BY created_at DESC"))

    def _shown(self, rows: Iterable[dict]) -> list[RunRow]:
        shown = [cast(RunRow, r) for r in rows]
        for r in shown:
            if r["id"] in self._gone and r["status"] in LIVE:
                r["status"], r["ended_at"] = Status.CRASHED.value, r["heartbeat_at"]
                r["error"] = r["error"] or "engine process is gone"
        return shown

    def run_config(self, run_id: str) -> dict:
        run = self.get_run(run_id)
        if run is None:
            raise StoreError(f"no run {run_id!r} in {self.path}")
        try:
            config = json.loads(run["config_json"] or "")
        except (ValueError, RecursionError) as e:
            raise StoreError(f"run {run_id}: its stored configuration is damaged ({str(e)[:80]})") from None
        if not isinstance(config, dict):
            raise StoreError(f"run {run_id}: its stored configuration is not a table of settings")
        return config

    def _update_run(self, run_id: str, **fields: Any) -> None:
        with self._write() as conn:
            conn.execute(f"UPDATE runs SET {', '.join(f'{k} = ?' for k in fields)} WHERE id = ?",
                         [*fields.values(), run_id])

    def claim_run(self, run_id: str, device: str) -> None:
        """The engine process (re)takes a run: it records its pid and host, and goes live."""
        self._update_run(run_id, status=Status.RUNNING.value, pid=os.getpid(), host=socket.gethostname(),
                         pid_start=process_start(os.getpid()), heartbeat_at=_now(), ended_at=None,
                         error=None, device=device)

    def set_status(self, run_id: str, status: str, error: str | None = None) -> None:
        fields: dict[str, Any] = {"status": status, "heartbeat_at": _now()}
        if status in FINAL:
            fields["ended_at"] = _now()
        if error is not None:
            fields["error"] = error
        self._update_run(run_id, **fields)

    def end_run(self, run_id: str, iteration: int, status: str, payload: dict, error: str | None = None) -> None:
        """The run's last words, in one transaction: its final event (at a committed iteration, so
        a later resume's rewind keeps it) and its final status."""
        t = _now()
        with self._write() as conn:
            conn.execute("INSERT INTO events (run_id, iteration, t, kind, payload_json) VALUES (?, ?, ?, ?, ?)",
                         [run_id, iteration, t, status, dumps(payload)])
            conn.execute("UPDATE runs SET status = ?, heartbeat_at = ?, ended_at = ?, error = coalesce(?, error) "
                         "WHERE id = ?", [status, t, t, error, run_id])

    def heartbeat(self, run_id: str) -> None:
        self._update_run(run_id, heartbeat_at=_now())

    def set_notes(self, run_id: str, notes: str) -> None:
        self._update_run(run_id, notes=notes)

    def set_tags(self, run_id: str, tags: Iterable[str]) -> None:
        self._update_run(run_id, tags=",".join(t.strip() for t in tags if t.strip()))

    def set_archived(self, run_id: str, archived: bool = True) -> None:
        self._update_run(run_id, archived=int(archived))

    def delete_run(self, run_id: str) -> None:
        with self._write() as conn:
            for table in ("metrics", "iterations", "events", "commands", "tasks"):
                conn.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
            conn.execute("DELETE FROM runs WHERE id = ?", [run_id])

    # -- iterations ----------------------------------------------------------------------
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
        conn.executemany("INSERT OR REPLACE INTO metrics (run_id, iteration, key, value, t) "
                         "VALUES (?, ?, ?, ?, ?)",
                         [(run_id, iteration, k, float(v), t) for k, v in metrics.items()])
        conn.executemany("INSERT INTO events (run_id, iteration, t, kind, payload_json) "
                         "VALUES (?, ?, ?, ?, ?)",
                         [(run_id, iteration, t, kind, dumps(p)) for kind, p in events])
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
            self._upsert_tasks(conn, run_id, tasks)

    def last_iteration(self, run_id: str) -> int:
        row = self.db.execute("SELECT max(iteration) FROM iterations WHERE run_id = ?", [run_id]).fetchone()
        return int(row[0] or 0)

    def rewind(self, run_id: str, iteration: int) -> int:
        """Delete what came after `iteration` (the checkpoint a resume starts from); return rows gone.
        Failures stay: they are history, not training state."""
        gone = 0
        kept = ", ".join(f"'{k}'" for k in KEPT_ON_REWIND)
        with self._write() as conn:
            for table, col, extra in (("metrics", "iteration", ""), ("iterations", "iteration", ""),
                                      ("events", "iteration", f" AND kind NOT IN ({kept})"),
                                      ("tasks", "created_iteration", "")):
                gone += conn.execute(f"DELETE FROM {table} WHERE run_id = ? AND {col} > ?{extra}",
                                     [run_id, iteration]).rowcount
            conn.execute("UPDATE runs SET iteration = ? WHERE id = ?", [iteration, run_id])
            conn.execute("INSERT INTO events (run_id, iteration, t, kind, payload_json) VALUES (?, ?, ?, ?, ?)",
                         [run_id, iteration, _now(), "rewound", dumps({"to": iteration, "rows": gone})])
        return gone

    def add_event(self, run_id: str, iteration: int, kind: str, payload: dict | None = None) -> int:
        with self._write() as conn:
            cur = conn.execute("INSERT INTO events (run_id, iteration, t, kind, payload_json) VALUES (?, ?, ?, ?, ?)",
                               [run_id, iteration, _now(), kind, dumps(payload or {})])
            return int(cur.lastrowid)

    # -- reads ---------------------------------------------------------------------------
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

    @contextlib.contextmanager
    def _snapshot(self):
        """Several reads that see one committed state (a read transaction, rolled back)."""
        conn = self.db.conn
        own = not conn.in_transaction
        if own:
            conn.execute("BEGIN")
        try:
            yield conn
        finally:
            if own:
                conn.rollback()

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

    def run_summaries(self, keys: Iterable[str], include_archived: bool = False) -> list[dict]:
        """Run rows with the last value of `keys` and a duration, for history tables."""
        keys, now = list(keys), _now()
        rows: list[dict] = [dict(r) for r in self.list_runs(include_archived)]
        for r in rows:
            r.update(self.last_values(r["id"], keys))
            r["duration"] = run_duration(r, now)
        return rows

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

    # -- search --------------------------------------------------------------------------
    def search_runs(self, query: str, include_archived: bool = False) -> list[str]:
        """Ids of runs whose name, notes or tags contain every word of `query` (a word matches as
        a prefix: `grid` finds `gridworld`), best match first, then newest. User text never
        reaches FTS syntax: each word is quoted, so `OR`, `"`, `*` or `NEAR(` are plain words.
        An empty query lists every run; one with no searchable word matches none."""
        where = "" if include_archived else " AND r.archived = 0"
        if not query.strip():
            return [r[0] for r in self.db.execute(
                f"SELECT id FROM runs r WHERE 1{where} ORDER BY created_at DESC")]
        words = [w for w in query.split() if any(ch.isalnum() for ch in w)]
        if not words:
            return []
        if not self._has_search_index():
            return self._search_like(words, where)
        match = " ".join('"' + w.replace('"', '""') + '"*' for w in words)
        return [r[0] for r in self.db.execute(
            "SELECT r.id FROM runs_fts JOIN runs r ON r.rowid = runs_fts.rowid "
            f"WHERE runs_fts MATCH ?{where} ORDER BY runs_fts.rank, r.created_at DESC", [match])]

    def _has_search_index(self) -> bool:
        return self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs_fts'").fetchone() is not None

    def _search_like(self, words: list[str], where: str) -> list[str]:
        """The same contract without FTS5 (substring rather than word-prefix match)."""
        cond, args = [], []
        for w in words:
            pat = "%" + w.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            cond.append("(" + " OR ".join(f"r.{c} LIKE ? ESCAPE '\\'" for c in FTS_COLUMNS) + ")")
            args += [pat] * len(FTS_COLUMNS)
        return [r[0] for r in self.db.execute(
            f"SELECT r.id FROM runs r WHERE {' AND '.join(cond)}{where} ORDER BY r.created_at DESC", args)]

    def rebuild_search(self) -> None:
        """Rebuild the search index from the runs table (after a VACUUM, which may renumber the
        rowids the index refers to)."""
        if self._has_search_index():
            with self._write() as conn:
                conn.execute("INSERT INTO runs_fts (runs_fts) VALUES ('rebuild')")

    # -- export / import -----------------------------------------------------------------
    def export_run(self, run_id: str) -> dict:
        """Everything stored about one run as plain JSON-able data (the "bundle", BUNDLE_FORMAT),
        read in one snapshot so a live engine's next commit cannot split an iteration.
        Nested rows omit run_id (the run row carries it); payloads are parsed, task rows are kept
        as stored (params_json and critic_json stay strings)."""
        with self._snapshot() as conn:
            cur = conn.execute("SELECT * FROM runs WHERE id = ?", [run_id])
            row = cur.fetchone()
            if row is None:
                raise StoreError(f"no run {run_id!r} in {self.path}")
            run = dict(zip([d[0] for d in cur.description], row))
            run.pop("pid_start", None)     # a fact about this host's processes, not the run's history
            run["config"] = _loads(run.pop("config_json"), "configuration")
            args = [run_id]
            iterations = [{"iteration": i, "t": t, "env_steps": n, "wall_s": w} for i, t, n, w in conn.execute(
                "SELECT iteration, t, env_steps, wall_s FROM iterations WHERE run_id = ? ORDER BY iteration", args)]
            metrics = [{"iteration": i, "key": k, "value": v, "t": t} for i, k, v, t in conn.execute(
                "SELECT iteration, key, value, t FROM metrics WHERE run_id = ? ORDER BY iteration, key", args)]
            events = [{"id": i, "iteration": it, "t": t, "kind": k, "payload": _loads(p, "event payload")}
                      for i, it, t, k, p in conn.execute(
                          "SELECT id, iteration, t, kind, payload_json FROM events WHERE run_id = ? ORDER BY id", args)]
            cols = TASK_COLUMNS[1:]
            tasks = [dict(zip(cols, r)) for r in conn.execute(
                f"SELECT {', '.join(cols)} FROM tasks WHERE run_id = ? ORDER BY uid", args)]
        return {"format": BUNDLE_FORMAT, "run": run, "iterations": iterations, "metrics": metrics,
                "events": events, "tasks": tasks}

    def import_run(self, bundle: dict, run_id: str | None = None) -> str:
        """Rebuild a run from a bundle (export_run's form) in one transaction; `run_id` renames it.
        See import_runs."""
        return self.import_runs([bundle], [run_id])[0]

    def import_runs(self, bundles: list[dict], run_ids: list[str | None] | None = None) -> list[str]:
        """Import several bundles all or nothing; return their ids in this database.

        Every bundle is checked first (format, required keys, the type of every field); a
        malformed one, or an id this database already has, raises StoreError naming it and
        writes nothing. A run that was live in its source (running/paused) arrives `stopped`:
        no engine here drives it. Event ids are kept when all are free here (a fresh database
        gets an exact copy), else the run's events get new ids in the same order."""
        if not isinstance(bundles, list) or not bundles:
            raise StoreError("nothing to import: expected a non-empty list of runs")
        run_ids = list(run_ids) if run_ids is not None else [None] * len(bundles)
        if len(run_ids) != len(bundles):
            raise StoreError(f"{len(run_ids)} new ids for {len(bundles)} runs")
        plans = [self._import_plan(b, rid, "bundle" if len(bundles) == 1 else f"runs[{n}]")
                 for n, (b, rid) in enumerate(zip(bundles, run_ids))]
        ids = [p["run"]["id"] for p in plans]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise StoreError(f"run id {dup[0]!r} appears more than once in the import")
        with self._write() as conn:
            for p in plans:
                try:
                    self._insert_plan(conn, p)
                except sqlite3.IntegrityError as e:
                    raise StoreError(f"import into {self.path} failed: {e}") from None
        return ids

    def _insert_plan(self, conn: sqlite3.Connection, p: dict) -> None:
        run, rid = p["run"], p["run"]["id"]
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", [rid]).fetchone() is not None:
            raise StoreError(f"run id {rid!r} already exists in {self.path} (import it under another id)")
        conn.execute(f"INSERT INTO runs ({', '.join(run)}) VALUES ({', '.join('?' for _ in run)})", list(run.values()))
        conn.executemany("INSERT INTO iterations (run_id, iteration, t, env_steps, wall_s) VALUES (?, ?, ?, ?, ?)",
                         ((rid, *r) for r in p["iterations"]))
        try:
            conn.executemany("INSERT INTO metrics (run_id, iteration, key, value, t) VALUES (?, ?, ?, ?, ?)",
                             ((rid, *r) for r in p["metrics"]))
        except sqlite3.IntegrityError as e:
            raise StoreError(f"run {rid}: two metric rows share an iteration and key ({e})") from None
        cols = ", ".join(TASK_COLUMNS)
        try:
            conn.executemany(f"INSERT INTO tasks ({cols}) VALUES ({', '.join('?' for _ in TASK_COLUMNS)})",
                             ((rid, *r) for r in p["tasks"]))
        except sqlite3.IntegrityError as e:
            raise StoreError(f"run {rid}: two task rows share a uid ({e})") from None
        events = p["events"]
        if events and all(e[0] is not None for e in events):
            conn.execute("SAVEPOINT keep_ids")
            try:
                conn.executemany("INSERT INTO events (id, run_id, iteration, t, kind, payload_json) "
                                 "VALUES (?, ?, ?, ?, ?, ?)", ((e[0], rid, *e[1:]) for e in events))
                conn.execute("RELEASE keep_ids")
                return
            except sqlite3.IntegrityError:   # an id is taken here: fall back to fresh ids
                conn.execute("ROLLBACK TO keep_ids")
                conn.execute("RELEASE keep_ids")
        conn.executemany("INSERT INTO events (run_id, iteration, t, kind, payload_json) VALUES (?, ?, ?, ?, ?)",
                         ((rid, *e[1:]) for e in events))

    def _column_kinds(self, table: str) -> dict[str, str]:
        return {r[1]: r[2].upper() for r in self.db.execute(f"PRAGMA table_info({table})")}

    def _import_plan(self, bundle: Any, run_id: str | None, where: str) -> dict:
        try:
            return bundle_rows(bundle, run_id, where, self._column_kinds("runs"), self._column_kinds("tasks"))
        except BundleError as e:
            raise StoreError(str(e)) from None

    # -- commands ------------------------------------------------------------------------
    def add_command(self, run_id: str, kind: str, payload: dict | None = None) -> int:
        with self._write() as conn:
            cur = conn.execute("INSERT INTO commands (run_id, kind, payload_json, created_at) VALUES (?, ?, ?, ?)",
                               [run_id, kind, dumps(payload if payload is not None else {}), _now()])
            return int(cur.lastrowid)

    def pending_commands(self, run_id: str) -> list[CommandRow]:
        """Commands not yet applied, oldest first, as {id, kind, payload, problem, excerpt}. Any
        process can insert a row, so the raw bytes are parsed here and a bad row comes back with
        its `problem` (the engine rejects it with that reason) rather than raising."""
        rows = self.db.execute("SELECT id, CAST(kind AS BLOB), CAST(payload_json AS BLOB) FROM commands "
                               "WHERE run_id = ? AND applied_at IS NULL ORDER BY id", [run_id]).fetchall()
        out: list[CommandRow] = []
        for command_id, kind, payload in rows:
            kind_text, value, problem = parse_command(kind, payload)
            out.append({"id": command_id, "kind": kind_text, "payload": value, "problem": problem,
                        "excerpt": payload_excerpt(payload)})
        return out

    def expire_commands(self, run_id: str, result: str) -> int:
        """Close every command still pending for a run without applying it; return how many."""
        with self._write() as conn:
            return conn.execute("UPDATE commands SET applied_at = ?, result = ? "
                                "WHERE run_id = ? AND applied_at IS NULL",
                                [_now(), result, run_id]).rowcount

    def finish_command(self, command_id: int, result: str, run_id: str | None = None, iteration: int = 0,
                       event: tuple[str, dict] | None = None) -> None:
        """Stamp a command applied with its result, and record its event in the same transaction."""
        with self._write() as conn:
            conn.execute("UPDATE commands SET applied_at = ?, result = ? WHERE id = ?", [_now(), result, command_id])
            if event is not None:
                conn.execute("INSERT INTO events (run_id, iteration, t, kind, payload_json) VALUES (?, ?, ?, ?, ?)",
                             [run_id, iteration, _now(), event[0], dumps(event[1])])

    def command(self, command_id: int) -> dict | None:
        rows = list(self.db.query("SELECT * FROM commands WHERE id = ?", [command_id]))
        return rows[0] if rows else None

    # -- liveness ------------------------------------------------------------------------
    def refresh_liveness(self, stale_after_s: float | None = None) -> list[str]:
        """Mark live runs whose engine is gone as crashed; return their ids.

        On this host the process settles it (its pid and start time); elsewhere only the
        heartbeat can (DESIGN §1). A reader that cannot write (a full disk, a read-only copy)
        still reads: the mark is left for the next reader."""
        host, now, crashed = socket.gethostname(), _now(), []
        for run in self.db.query("SELECT id, pid, pid_start, host, heartbeat_at, config_json FROM runs "
                                 f"WHERE status IN ({_marks(LIVE)})", LIVE):
            limit = stale_after_s or self._stale_after(run["config_json"])
            age = now - (run["heartbeat_at"] or 0)
            if run["host"] == host:
                dead = engine_gone(run["pid"], run["pid_start"], age, limit)
            else:
                dead = age > limit
            if dead:
                crashed.append(run["id"])
        for run_id in crashed:
            try:
                with self._write() as conn:
                    # it ended when it last beat, not when a reader noticed
                    conn.execute("UPDATE runs SET status = ?, ended_at = coalesce(heartbeat_at, ?), "
                                 "error = coalesce(error, 'engine process is gone') "
                                 f"WHERE id = ? AND status IN ({_marks(LIVE)})", [Status.CRASHED, now, run_id, *LIVE])
            except WriteError:
                self._gone.add(run_id)
        return crashed

    @staticmethod
    def _stale_after(config_json: str | None) -> float:
        try:
            value = json.loads(config_json or "{}").get("run", {}).get("stale_after_s", 15.0)
        except (ValueError, AttributeError, RecursionError):
            return 15.0
        return float(value) if _finite(value) and value > 0 else 15.0


def open_store(path: str | Path, create: bool = True, lock_wait_s: float = LOCK_WAIT_S) -> Store:
    return Store(path, create=create, lock_wait_s=lock_wait_s)
