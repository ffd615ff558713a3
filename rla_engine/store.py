"""The one module that touches SQLite (through sqlite-utils): schema, migrations, reads, writes.

The database file is both the bus between engine and console and the run history
(DESIGN §1, §4). The engine is the only writer of a run's rows; readers write only commands,
notes/tags/archive and the `crashed` mark. An iteration exists iff its `iterations` row
exists: its metrics, events, task rows and that row are committed in one transaction.
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
from typing import Any, Iterable

import numpy as np
import sqlite_utils

from .bundle import (BUNDLE_FORMAT, FINAL, LIVE, MULTI_FORMAT, RUN_ID_RE, TASK_COLUMNS,  # noqa: F401
                     BundleError, bundle_rows)

_COLUMN_DTYPE = np.dtype([("it", np.float64), ("value", np.float64), ("t", np.float64)])
BUSY_TIMEOUT_MS = 10_000
# A run id names folders (checkpoints/<id>/, logs/<id>.log): an imported one must not climb out.


class StoreError(RuntimeError):
    """A database that cannot be used; the message says which file and why."""


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


def _m001_schema(db: sqlite_utils.Database) -> None:
    db["runs"].create({
        "id": str, "name": str, "status": str, "preset": str, "config_json": str, "group_id": str,
        "created_at": float, "started_at": float, "ended_at": float, "heartbeat_at": float,
        "pid": int, "host": str, "iteration": int, "device": str, "error": str, "notes": str,
        "tags": str, "archived": int,
    }, pk="id", defaults={"notes": "", "tags": "", "archived": 0, "iteration": 0})
    db["iterations"].create({"run_id": str, "iteration": int, "t": float, "env_steps": int,
                             "wall_s": float}, pk=("run_id", "iteration"))
    db["metrics"].create({"run_id": str, "iteration": int, "key": str, "value": float, "t": float},
                         pk=("run_id", "iteration", "key"))
    db["metrics"].create_index(["run_id", "key", "iteration"])
    db["events"].create({"id": int, "run_id": str, "iteration": int, "t": float, "kind": str,
                         "payload_json": str}, pk="id")
    db["events"].create_index(["run_id", "id"])
    db["commands"].create({"id": int, "run_id": str, "kind": str, "payload_json": str,
                           "created_at": float, "applied_at": float, "result": str}, pk="id")
    db["commands"].create_index(["run_id", "applied_at"])
    # `uid` names one task row for its whole life (pending -> active -> retired); DESIGN's
    # columns plus this key, since (slot, version) repeats across rejected candidates.
    db["tasks"].create({
        "run_id": str, "uid": int, "slot": int, "version": int, "family": str, "params_json": str,
        "difficulty": float, "status": str, "last_acc": float, "direction": str, "prev_acc": float,
        "new_acc": float, "critic_json": str, "created_iteration": int, "decided_iteration": int,
    }, pk=("run_id", "uid"))
    db["tasks"].create_index(["run_id", "slot", "version"])


def _m002_runs_fts(db: sqlite_utils.Database) -> None:
    """Full-text search over runs(name, notes, tags), kept fresh by triggers (sqlite-utils'
    layout: `runs_fts` with content=runs, triggers runs_ai/_ad/_au). The update trigger is
    narrowed to those three columns: the engine updates its run row on every heartbeat and
    iteration, and those writes must not churn the index."""
    try:
        db.execute("CREATE VIRTUAL TABLE temp._fts5_probe USING fts5(x)")
        db.execute("DROP TABLE temp._fts5_probe")
    except sqlite3.OperationalError:   # an SQLite built without FTS5: search_runs falls back to LIKE
        return
    db["runs"].enable_fts(list(FTS_COLUMNS), create_triggers=True)
    db.execute("DROP TRIGGER runs_au")
    db.execute("CREATE TRIGGER runs_au AFTER UPDATE OF name, notes, tags ON runs BEGIN "
               "INSERT INTO runs_fts (runs_fts, rowid, name, notes, tags) "
               "VALUES ('delete', old.rowid, old.name, old.notes, old.tags); "
               "INSERT INTO runs_fts (rowid, name, notes, tags) VALUES (new.rowid, new.name, new.notes, new.tags); "
               "END")


FTS_COLUMNS = ("name", "notes", "tags")
MIGRATIONS: list[tuple[str, Any]] = [("001_schema", _m001_schema), ("002_runs_fts", _m002_runs_fts)]



def _finite(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped by its parent) is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


class Store:
    def __init__(self, path: str | Path, create: bool = True):
        self.path = Path(path).expanduser()
        self.db = self._connect(create)

    # -- opening -------------------------------------------------------------------------
    def _connect(self, create: bool) -> sqlite_utils.Database:
        p = self.path
        if p.is_dir():
            raise StoreError(f"database path {p} is a directory, not a file")
        if not p.exists():
            if not create:
                raise StoreError(f"database {p} does not exist")
            try:
                p.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise StoreError(f"cannot create the folder of database {p}: {e.strerror}") from None
            if not os.access(p.parent, os.W_OK):
                raise StoreError(f"cannot write database {p}: folder {p.parent} is not writable")
        elif not os.access(p, os.R_OK):
            raise StoreError(f"cannot read database {p}: permission denied")
        try:
            conn = sqlite3.connect(str(p), timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError as e:
            raise StoreError(f"database {p} is not a usable SQLite file ({e})") from None
        if tables and "_migrations" not in tables:
            conn.close()
            raise StoreError(f"database {p} is a SQLite file but not an RLAnything database "
                             f"(tables: {', '.join(sorted(tables)[:5])})")
        db = sqlite_utils.Database(conn)
        try:
            self._migrate(db)
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.enable_wal()
            db.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.OperationalError as e:
            conn.close()
            raise StoreError(f"cannot use database {p}: {e}") from None
        except StoreError:
            conn.close()
            raise
        return db

    @staticmethod
    def _migrate(db: sqlite_utils.Database) -> None:
        """Apply missing migrations, each in its own IMMEDIATE transaction: DDL is not
        transactional under sqlite3's default mode, and a second process opening the same new
        file waits for the first instead of racing it."""
        conn = db.conn
        conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at FLOAT)")
        conn.commit()
        done = {r[0] for r in conn.execute("SELECT name FROM _migrations")}
        for name, apply in MIGRATIONS:
            if name in done:
                continue
            conn.execute("BEGIN IMMEDIATE")
            try:
                if conn.execute("SELECT 1 FROM _migrations WHERE name = ?", [name]).fetchone() is None:
                    apply(db)
                    conn.execute("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", [name, _now()])
                conn.execute("COMMIT")
            except Exception as e:
                conn.execute("ROLLBACK")
                raise StoreError(f"migration {name} failed: {e}") from e

    def close(self) -> None:
        self.db.conn.close()

    # -- runs ----------------------------------------------------------------------------
    def create_run(self, run_id: str, *, name: str, preset: str | None, config: dict, device: str,
                   group_id: str | None = None) -> None:
        t = _now()
        with self.db.conn:
            self.db["runs"].insert({
                "id": run_id, "name": name, "status": "running", "preset": preset or "",
                "config_json": dumps(config), "group_id": group_id, "created_at": t,
                "started_at": t, "heartbeat_at": t, "pid": os.getpid(), "host": socket.gethostname(),
                "iteration": 0, "device": device, "error": None, "notes": "", "tags": "", "archived": 0,
            })

    def run_exists(self, run_id: str) -> bool:
        return self.get_run(run_id) is not None

    def get_run(self, run_id: str) -> dict | None:
        rows = list(self.db.query("SELECT * FROM runs WHERE id = ?", [run_id]))
        return rows[0] if rows else None

    def list_runs(self, include_archived: bool = False) -> list[dict]:
        where = "" if include_archived else "WHERE archived = 0"
        return list(self.db.query(f"SELECT * FROM runs {where} ORDER BY created_at DESC"))

    def run_config(self, run_id: str) -> dict:
        return json.loads(self.get_run(run_id)["config_json"])

    def _update_run(self, run_id: str, **fields: Any) -> None:
        with self.db.conn:
            self.db["runs"].update(run_id, fields)

    def claim_run(self, run_id: str, device: str) -> None:
        """The engine process (re)takes a run: it records its pid and host, and goes live."""
        self._update_run(run_id, status="running", pid=os.getpid(), host=socket.gethostname(),
                         heartbeat_at=_now(), ended_at=None, error=None, device=device)

    def set_status(self, run_id: str, status: str, error: str | None = None) -> None:
        fields: dict[str, Any] = {"status": status, "heartbeat_at": _now()}
        if status in FINAL:
            fields["ended_at"] = _now()
        if error is not None:
            fields["error"] = error
        self._update_run(run_id, **fields)

    def heartbeat(self, run_id: str) -> None:
        self._update_run(run_id, heartbeat_at=_now())

    def set_notes(self, run_id: str, notes: str) -> None:
        self._update_run(run_id, notes=notes)

    def set_tags(self, run_id: str, tags: Iterable[str]) -> None:
        self._update_run(run_id, tags=",".join(t.strip() for t in tags if t.strip()))

    def set_archived(self, run_id: str, archived: bool = True) -> None:
        self._update_run(run_id, archived=int(archived))

    def delete_run(self, run_id: str) -> None:
        with self.db.conn:
            for table in ("metrics", "iterations", "events", "commands", "tasks"):
                self.db.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
            self.db.execute("DELETE FROM runs WHERE id = ?", [run_id])

    # -- iterations ----------------------------------------------------------------------
    def commit_iteration(self, run_id: str, iteration: int, *, env_steps: int, wall_s: float,
                         metrics: dict[str, float], events: list[tuple[str, dict]],
                         tasks: list[dict]) -> None:
        """Everything of one iteration, atomically; the `iterations` row is written last."""
        t = _now()
        bad = [k for k, v in metrics.items() if not _finite(v)]
        if bad:
            raise ValueError(f"refusing to store non-finite metrics: {', '.join(bad)}")
        conn = self.db.conn
        with conn:
            conn.executemany("INSERT OR REPLACE INTO metrics (run_id, iteration, key, value, t) "
                             "VALUES (?, ?, ?, ?, ?)",
                             [(run_id, iteration, k, float(v), t) for k, v in metrics.items()])
            conn.executemany("INSERT INTO events (run_id, iteration, t, kind, payload_json) "
                             "VALUES (?, ?, ?, ?, ?)",
                             [(run_id, iteration, t, kind, dumps(p)) for kind, p in events])
            self._upsert_tasks(conn, run_id, tasks)
            conn.execute("UPDATE runs SET iteration = ?, heartbeat_at = ? WHERE id = ?",
                         [iteration, t, run_id])
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
        with self.db.conn as conn:
            self._upsert_tasks(conn, run_id, tasks)

    def last_iteration(self, run_id: str) -> int:
        row = self.db.execute("SELECT max(iteration) FROM iterations WHERE run_id = ?", [run_id]).fetchone()
        return int(row[0] or 0)

    def rewind(self, run_id: str, iteration: int) -> int:
        """Delete what came after `iteration` (the checkpoint a resume starts from); return rows gone."""
        gone = 0
        with self.db.conn as conn:
            for table, col in (("metrics", "iteration"), ("iterations", "iteration"),
                               ("events", "iteration"), ("tasks", "created_iteration")):
                gone += conn.execute(f"DELETE FROM {table} WHERE run_id = ? AND {col} > ?",
                                     [run_id, iteration]).rowcount
            conn.execute("UPDATE runs SET iteration = ? WHERE id = ?", [iteration, run_id])
            conn.execute("INSERT INTO events (run_id, iteration, t, kind, payload_json) VALUES (?, ?, ?, ?, ?)",
                         [run_id, iteration, _now(), "rewound", dumps({"to": iteration, "rows": gone})])
        return gone

    def add_event(self, run_id: str, iteration: int, kind: str, payload: dict | None = None) -> int:
        with self.db.conn as conn:
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
        keys, last = [], ""
        while True:
            row = self.db.execute("SELECT min(key) FROM metrics WHERE run_id = ? AND key > ?", [run_id, last]).fetchone()
            if row[0] is None:
                return keys
            keys.append(last := row[0])

    def columns_since(self, run_id: str, after_iteration: int = 0) -> dict[str, tuple[np.ndarray, ...]]:
        """Metrics after an iteration, by key, as numpy columns (iterations, values, t) — what a
        plot appends to its buffers; a million-row history loads without a Python object per row."""
        out = {}
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
        with self.db.conn as conn:
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
        rows = self.list_runs(include_archived)
        for r in rows:
            r.update(self.last_values(r["id"], keys))
            end = r["ended_at"] or (r["heartbeat_at"] if r["status"] in LIVE else None) or now
            r["duration"] = end - r["started_at"] if r["started_at"] else None
        return rows

    def events(self, run_id: str, after_id: int = 0, kinds: Iterable[str] | None = None) -> list[dict]:
        sql = "SELECT * FROM events WHERE run_id = ? AND id > ?"
        args: list[Any] = [run_id, after_id]
        sql, args = _where_in(sql, args, "kind", kinds)
        rows = list(self.db.query(sql + " ORDER BY id", args))
        for r in rows:
            r["payload"] = json.loads(r.pop("payload_json") or "{}")
        return rows

    def tasks(self, run_id: str, statuses: Iterable[str] | None = None) -> list[dict]:
        sql, args = "SELECT * FROM tasks WHERE run_id = ?", [run_id]
        sql, args = _where_in(sql, args, "status", statuses)
        return list(self.db.query(sql + " ORDER BY slot, version, uid", args))

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
            with self.db.conn:
                self.db.execute("INSERT INTO runs_fts (runs_fts) VALUES ('rebuild')")

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
            run["config"] = json.loads(run.pop("config_json") or "{}")
            args = [run_id]
            iterations = [{"iteration": i, "t": t, "env_steps": n, "wall_s": w} for i, t, n, w in conn.execute(
                "SELECT iteration, t, env_steps, wall_s FROM iterations WHERE run_id = ? ORDER BY iteration", args)]
            metrics = [{"iteration": i, "key": k, "value": v, "t": t} for i, k, v, t in conn.execute(
                "SELECT iteration, key, value, t FROM metrics WHERE run_id = ? ORDER BY iteration, key", args)]
            events = [{"id": i, "iteration": it, "t": t, "kind": k, "payload": json.loads(p or "{}")}
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
        conn = self.db.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as e:
            raise StoreError(f"cannot write database {self.path}: {e}") from None
        try:
            for p in plans:
                self._insert_plan(conn, p)
            conn.execute("COMMIT")
        except BaseException as e:
            conn.rollback()
            if isinstance(e, sqlite3.Error):
                raise StoreError(f"import into {self.path} failed: {e}") from None
            raise
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
        with self.db.conn as conn:
            cur = conn.execute("INSERT INTO commands (run_id, kind, payload_json, created_at) VALUES (?, ?, ?, ?)",
                               [run_id, kind, dumps(payload if payload is not None else {}), _now()])
            return int(cur.lastrowid)

    def pending_commands(self, run_id: str) -> list[dict]:
        rows = list(self.db.query("SELECT * FROM commands WHERE run_id = ? AND applied_at IS NULL ORDER BY id",
                                  [run_id]))
        for r in rows:
            try:
                r["payload"] = json.loads(r["payload_json"] or "{}")
            except json.JSONDecodeError:
                r["payload"] = None   # the engine rejects it with a reason
        return rows

    def expire_commands(self, run_id: str, result: str) -> int:
        """Close every command still pending for a run without applying it; return how many."""
        with self.db.conn as conn:
            return conn.execute("UPDATE commands SET applied_at = ?, result = ? WHERE run_id = ? AND applied_at IS NULL",
                                [_now(), result, run_id]).rowcount

    def finish_command(self, command_id: int, result: str) -> None:
        with self.db.conn as conn:
            conn.execute("UPDATE commands SET applied_at = ?, result = ? WHERE id = ?", [_now(), result, command_id])

    def command(self, command_id: int) -> dict | None:
        rows = list(self.db.query("SELECT * FROM commands WHERE id = ?", [command_id]))
        return rows[0] if rows else None

    # -- liveness ------------------------------------------------------------------------
    def refresh_liveness(self, stale_after_s: float | None = None) -> list[str]:
        """Mark live runs whose engine is gone as crashed; return their ids.

        On this host a pid settles it; elsewhere only the heartbeat can (DESIGN §1)."""
        host, now, crashed = socket.gethostname(), _now(), []
        for run in self.db.query("SELECT id, pid, host, heartbeat_at, config_json FROM runs "
                                 "WHERE status IN ('running', 'paused')"):
            if run["host"] == host and run["pid"]:
                dead = not pid_alive(run["pid"])
            else:
                limit = stale_after_s or json.loads(run["config_json"]).get("run", {}).get("stale_after_s", 15.0)
                dead = now - (run["heartbeat_at"] or 0) > limit
            if dead:
                crashed.append(run["id"])
        for run_id in crashed:
            with self.db.conn as conn:
                # it ended when it last beat, not when a reader noticed
                conn.execute("UPDATE runs SET status = 'crashed', ended_at = coalesce(heartbeat_at, ?), "
                             "error = coalesce(error, 'engine process is gone') "
                             "WHERE id = ? AND status IN ('running', 'paused')", [now, run_id])
        return crashed


def open_store(path: str | Path, create: bool = True) -> Store:
    return Store(path, create=create)
