"""What every concern of the Store shares: the connection, the one way to write, read snapshots, JSON, the clock."""
from __future__ import annotations

import contextlib
import json
import math
import numbers
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .sqlite_lib import sqlite_utils

from .schema import StoreError, connect, database_id, expand, signed_checkpoints_since, write_transaction

LOCK_WAIT_S = 30.0              # how long a reader's write (notes, a command) waits for the engine's
EVENT_EXCERPT_CHARS = 300       # how much of a rejected payload its event keeps


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


def insert_events(conn: sqlite3.Connection, rows: Iterable[tuple], with_ids: bool = False) -> int:
    """Add events in the caller's transaction: rows of (run_id, iteration, t, kind, payload as
    JSON text), each led by its id where `with_ids` (an import that keeps them). Returns the id
    of the last one (of the connection's last insert when there were none)."""
    columns = ("id", "run_id", "iteration", "t", "kind", "payload_json")[0 if with_ids else 1:]
    conn.executemany(f"INSERT INTO events ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", rows)
    return int(conn.execute("SELECT last_insert_rowid()").fetchone()[0])


class RunGone(StoreError):
    """A write for a run whose row is gone (deleted while its engine ran, by an older version or
    by hand): nothing of the write is kept, so no row is left without its run."""

    def __init__(self, run_id: str, path: Path):
        super().__init__(f"run {run_id} is no longer in {path}: it was deleted while its engine ran")


def require_run(conn: sqlite3.Connection, run_id: str, path: Path) -> None:
    """In the caller's write transaction: raise RunGone if the run's row is not there."""
    if conn.execute("SELECT 1 FROM runs WHERE id = ?", [run_id]).fetchone() is None:
        raise RunGone(run_id, path)


def _now() -> float:
    return time.time()


def _finite(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


class StoreBase:
    """One open database file; each mixin of `Store` adds one concern's reads and writes on it."""

    def __init__(self, path: str | Path, create: bool = True, lock_wait_s: float = LOCK_WAIT_S):
        self.path = expand(path)
        self.lock_wait_s = lock_wait_s
        self.db = sqlite_utils.Database(connect(self.path, create))
        self._gone: set[str] = set()    # runs found crashed that this reader could not mark so

    def close(self) -> None:
        self.db.conn.close()

    @property
    def database_id(self) -> str:
        """The id stored inside the file (migration 004): what checkpoint folders and files name."""
        return database_id(self.db.conn, self.path)

    def signs_checkpoints(self) -> bool:
        """Has an engine of this database written a signed checkpoint (format 2)? Then its runs
        never load an unsigned one unless the user says so (checkpoint.load's `unowned_ok`)."""
        return signed_checkpoints_since(self.db.conn) is not None

    def mark_signed_checkpoints(self) -> None:
        """Said by an engine before it writes its first signed checkpoint; the first time counts."""
        with self._write() as conn:
            conn.execute("UPDATE _database SET signed_checkpoints_since = ? WHERE signed_checkpoints_since IS NULL",
                         [_now()])

    def _write(self):
        return write_transaction(self.db.conn, self.path, self.lock_wait_s)

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
