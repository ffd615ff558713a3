"""Opening the database file: what counts as one of ours, the schema version guard, migrations,
and the one way to write (an IMMEDIATE transaction that waits for another writer)."""
from __future__ import annotations

import contextlib
import errno
import os
import secrets
import sqlite3
import time
import typing
from pathlib import Path
from typing import Any
from collections.abc import Iterator

from .sqlite_lib import sqlite_utils

from ..errors import StoreError
from ..paths import PRIVATE_FILE, make_private_dir
from ..vocabulary import TASK_COLUMNS, TaskRow

# sqlite's own wait for a lock, per attempt; writers retry attempts up to their lock_wait_s
BUSY_TIMEOUT_MS = 5_000
REQUIRED_TABLES = ("runs", "iterations", "metrics", "events", "commands", "tasks")
FTS_COLUMNS = ("name", "notes", "tags")


class WriteError(StoreError):
    """A write that was not made (nothing of it was kept): a full disk, a read-only file, a lock
    held longer than the writer waits."""

    def __init__(self, message: str, *, disk_full: bool = False):
        super().__init__(message)
        self.disk_full = disk_full


_REASONS = {
    "SQLITE_FULL": "the disk is full",
    "SQLITE_READONLY": "the file or its folder is read-only",
    "SQLITE_READONLY_DIRECTORY": "its folder is read-only",
    "SQLITE_CANTOPEN": "the file cannot be opened (is its folder writable?)",
    "SQLITE_BUSY": "another process holds its write lock",
    "SQLITE_LOCKED": "another connection holds its write lock",
    "SQLITE_CORRUPT": "the file is damaged",
    "SQLITE_NOTADB": "it is not an SQLite database",
    "SQLITE_PERM": "permission denied",
}


def describe(e: sqlite3.Error) -> str:
    """The cause in words, from SQLite's error code (the message alone is often misleading:
    a read-only folder surfaces as "unable to open database file")."""
    name = getattr(e, "sqlite_errorname", "") or ""
    base = "_".join(name.split("_")[:2])          # SQLITE_READONLY_DBMOVED -> SQLITE_READONLY
    reason = _REASONS.get(name) or _REASONS.get(base)
    if base == "SQLITE_IOERR":
        reason = "an I/O error (is the disk full or failing?)"
    return f"{reason} ({e})" if reason else str(e)


def is_disk_full(e: BaseException) -> bool:
    if isinstance(e, WriteError):
        return e.disk_full
    if isinstance(e, sqlite3.Error):
        return getattr(e, "sqlite_errorname", "") == "SQLITE_FULL" or "disk is full" in str(e)
    return isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _is_busy(e: sqlite3.Error) -> bool:
    return getattr(e, "sqlite_errorname", "").startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in str(e)


@contextlib.contextmanager
def write_transaction(conn: sqlite3.Connection, path: Path, lock_wait_s: float) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE takes the write lock up front, so the transaction never fails half-way for
    a lock (a DEFERRED one that reads first cannot wait for a writer: SQLITE_BUSY at once).
    Another writer is waited for up to `lock_wait_s`; every sqlite error becomes a WriteError."""
    deadline = time.monotonic() + lock_wait_s
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
            break
        except sqlite3.OperationalError as e:
            if _is_busy(e) and time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            advice = (f"; waited {lock_wait_s:.0f} s. Try again once the other program is done: an engine "
                      "holds it for well under a second, so a long hold is an open sqlite3 shell, a backup "
                      "or a hung process (see `fuser` or `lsof` on the file)") if _is_busy(e) else ""
            raise WriteError(f"cannot write database {path}: {describe(e)}{advice}",
                             disk_full=is_disk_full(e)) from None
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException as e:
        with contextlib.suppress(sqlite3.Error):
            conn.rollback()
        if isinstance(e, sqlite3.Error):
            raise WriteError(f"cannot write database {path}: {describe(e)}", disk_full=is_disk_full(e)) from None
        raise


# -- migrations -----------------------------------------------------------------------------
def _column_types(row: type, columns: tuple[str, ...]) -> dict[str, type]:
    """The SQL column types of a row shape (vocabulary.TaskRow), in `columns`' order: a column
    that may be None is of the type it holds otherwise. A change to the shape's columns is a new
    migration that alters the existing databases (this one only makes new files)."""
    hints = typing.get_type_hints(row)
    return {c: next(t for t in typing.get_args(hints[c]) or (hints[c],) if t is not type(None)) for c in columns}


def _m001_schema(db: sqlite_utils.Database) -> None:
    db.table("runs").create({
        "id": str, "name": str, "status": str, "preset": str, "config_json": str, "group_id": str,
        "created_at": float, "started_at": float, "ended_at": float, "heartbeat_at": float,
        "pid": int, "host": str, "iteration": int, "device": str, "error": str, "notes": str,
        "tags": str, "archived": int,
    }, pk="id", defaults={"notes": "", "tags": "", "archived": 0, "iteration": 0})
    db.table("iterations").create({"run_id": str, "iteration": int, "t": float, "env_steps": int,
                             "wall_s": float}, pk=("run_id", "iteration"))
    db.table("metrics").create({"run_id": str, "iteration": int, "key": str, "value": float, "t": float},
                         pk=("run_id", "iteration", "key"))
    db.table("metrics").create_index(["run_id", "key", "iteration"])
    db.table("events").create({"id": int, "run_id": str, "iteration": int, "t": float, "kind": str,
                         "payload_json": str}, pk="id")
    db.table("events").create_index(["run_id", "id"])
    db.table("commands").create({"id": int, "run_id": str, "kind": str, "payload_json": str,
                           "created_at": float, "applied_at": float, "result": str}, pk="id")
    db.table("commands").create_index(["run_id", "applied_at"])
    # `uid` names one task row for its whole life (pending -> active -> retired); DESIGN's
    # columns plus this key, since (slot, version) repeats across rejected candidates.
    db.table("tasks").create(_column_types(TaskRow, TASK_COLUMNS), pk=("run_id", "uid"))
    db.table("tasks").create_index(["run_id", "slot", "version"])


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
    db.table("runs").enable_fts(list(FTS_COLUMNS), create_triggers=True)
    db.execute("DROP TRIGGER runs_au")
    db.execute("CREATE TRIGGER runs_au AFTER UPDATE OF name, notes, tags ON runs BEGIN "
               "INSERT INTO runs_fts (runs_fts, rowid, name, notes, tags) "
               "VALUES ('delete', old.rowid, old.name, old.notes, old.tags); "
               "INSERT INTO runs_fts (rowid, name, notes, tags) VALUES (new.rowid, new.name, new.notes, new.tags); "
               "END")


def _m003_process_start(db: sqlite_utils.Database) -> None:
    """When the engine process started (boot id + start time): a pid alone is no proof of life,
    since pids are reused (after a reboot, most of all)."""
    db.execute("ALTER TABLE runs ADD COLUMN pid_start TEXT")


def _m004_database_id(db: sqlite_utils.Database) -> None:
    """An id stored inside the file: the checkpoints of its runs name it, so a database moved or
    copied together with its folder still owns them (a path would not), and an imported copy of a
    run in another database in the same folder does not."""
    db.execute("CREATE TABLE _database (id TEXT NOT NULL)")
    db.execute("INSERT INTO _database (id) VALUES (?)", [secrets.token_hex(16)])


def _m005_command_outcome(db: sqlite_utils.Database) -> None:
    """A command's outcome (vocabulary.CommandOutcome) and its detail apart, where `result` held
    both as one text; rows written before keep only `result`, which the store reads back."""
    db.execute("ALTER TABLE commands ADD COLUMN outcome TEXT")
    db.execute("ALTER TABLE commands ADD COLUMN detail TEXT")


def _m006_signed_checkpoints(db: sqlite_utils.Database) -> None:
    """Since when the database's engines sign their checkpoints (format 2; NULL: never yet): from
    then on a resume of its runs refuses an unsigned file (checkpoint.load's `unowned_ok`). A
    database that already has runs started or resumed by a program that signs (the one that
    added migration 004, the database id the signature names) is marked from the first of them."""
    db.execute("ALTER TABLE _database ADD COLUMN signed_checkpoints_since FLOAT")
    db.execute("UPDATE _database SET signed_checkpoints_since = (SELECT min(t) FROM ("
               "SELECT created_at AS t FROM runs UNION ALL SELECT t FROM events WHERE kind = ?) "
               "WHERE t >= (SELECT applied_at FROM _migrations WHERE name = '004_database_id'))",
               [RESUMED_EVENT])


# the event a resume writes (vocabulary.EventKind.RESUMED_FROM_CHECKPOINT), as stored when 006 was written
RESUMED_EVENT = "resumed_from_checkpoint"

MIGRATIONS: list[tuple[str, Any]] = [("001_schema", _m001_schema), ("002_runs_fts", _m002_runs_fts),
                                     ("003_process_start", _m003_process_start),
                                     ("004_database_id", _m004_database_id),
                                     ("005_command_outcome", _m005_command_outcome),
                                     ("006_signed_checkpoints", _m006_signed_checkpoints)]
SCHEMA_VERSION = len(MIGRATIONS)   # what this program writes; `migrate` reads MIGRATIONS itself


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Apply missing migrations, each in its own IMMEDIATE transaction (DDL is not transactional
    under sqlite3's default mode; a second process opening the same file waits for the first),
    and stamp `user_version`. Refuse a database written by a newer program: reading or writing it
    with an older schema in mind could lose data."""
    db = sqlite_utils.Database(conn)
    has_table = conn.execute("SELECT 1 FROM sqlite_master WHERE name = '_migrations'").fetchone()
    done = {r[0] for r in conn.execute("SELECT name FROM _migrations")} if has_table else set()
    known = [name for name, _ in MIGRATIONS]
    unknown = sorted(done - set(known))
    theirs = max(conn.execute("PRAGMA user_version").fetchone()[0], len(done))
    if unknown or theirs > len(known):
        raise StoreError(f"database {path} has schema version {theirs}"
                         + (f" (migration {unknown[0]})" if unknown else "")
                         + f", from a newer version of RLAnything; this program knows schema version "
                         f"{len(known)}: upgrade it to use this database")
    for n, (name, apply) in enumerate(MIGRATIONS, 1):
        if name in done:
            continue
        with write_transaction(conn, path, lock_wait_s=60.0):
            conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at FLOAT)")
            if conn.execute("SELECT 1 FROM _migrations WHERE name = ?", [name]).fetchone() is None:
                try:
                    apply(db)
                except sqlite3.Error as e:
                    raise StoreError(f"database {path}: migration {name} failed: {describe(e)}") from None
                conn.execute("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", [name, time.time()])
                conn.execute(f"PRAGMA user_version = {n}")


def database_id(conn: sqlite3.Connection, path: Path) -> str:
    try:
        row = conn.execute("SELECT id FROM _database LIMIT 1").fetchone()
    except sqlite3.Error as e:
        raise StoreError(f"database {path} has no id: {describe(e)}") from None
    if row is None or not isinstance(row[0], str) or not row[0]:
        raise StoreError(f"database {path} is damaged: its id (table _database) is missing")
    return row[0]


def signed_checkpoints_since(conn: sqlite3.Connection) -> float | None:
    """When the database's engines began signing checkpoints (migration 006), None if never yet."""
    row = conn.execute("SELECT signed_checkpoints_since FROM _database LIMIT 1").fetchone()
    return row[0] if row is not None and isinstance(row[0], (int, float)) else None


# -- opening --------------------------------------------------------------------------------
def _check_not_empty(path: Path) -> None:
    """A 0-byte file would silently become a database; our own are never empty (see _create).
    Only stat, never open(): closing any descriptor of the database file drops every POSIX lock
    this process holds on it, the SQLite connections' too, and that corrupts the database."""
    try:
        size = path.stat().st_size
    except OSError as e:
        raise StoreError(f"cannot read database {path}: {e.strerror}") from None
    if size == 0:
        raise StoreError(f"{path} is an empty file, not an RLAnything database",
                         hint="remove it, or name a new path with --db")


def _create(path: Path) -> None:
    """Make a new database whole, then link it into place: another process never sees a
    half-made file, and a 0-byte file is never one of ours (so it can be refused)."""
    try:
        make_private_dir(path.parent)
    except OSError as e:
        raise StoreError(f"cannot create the folder of database {path}: {e.strerror}") from None
    tmp = path.parent / f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.new"
    try:
        os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, PRIVATE_FILE))
        conn = sqlite3.connect(str(tmp))
        try:
            migrate(conn, path)
            conn.execute("PRAGMA journal_mode = WAL")
        finally:
            conn.close()
        try:
            with contextlib.suppress(FileExistsError):   # another process made it first: use theirs
                os.link(tmp, path)
        except OSError:              # a file system without hard links
            if not path.exists():
                os.replace(tmp, path)
    except OSError as e:
        raise StoreError(f"cannot create database {path}: {e.strerror}") from None
    except sqlite3.Error as e:
        raise StoreError(f"cannot create database {path}: {describe(e)}") from None
    finally:
        for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm"), Path(f"{tmp}-journal")):
            with contextlib.suppress(OSError):
                leftover.unlink()


class _OpenError(StoreError):
    """SQLite could not open or read the file (as opposed to: it is not one of ours)."""

    def __init__(self, message: str, cause: sqlite3.Error | None = None):
        name = getattr(cause, "sqlite_errorname", "") or ""
        super().__init__(message, hint="name a new path with --db" if name == "SQLITE_NOTADB" else "")
        # a file this process may read but not write next to: not a lock, not damage
        self.cannot_write = name.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_FULL"))


def shorten(text: str, most: int = 200) -> str:
    return text if len(text) <= most else f"{text[:most]}… ({len(text)} characters)"


def expand(path: str | Path) -> Path:
    """`~` and `~user` expanded; a user without a home folder is a StoreError, not a traceback."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        raise StoreError(f"database path {shorten(str(path))}: cannot expand "
                         f"{str(path).split('/')[0]!r} (no such user's home folder)") from None


def connect(path: Path, create: bool) -> sqlite3.Connection:
    """An open, migrated connection to an RLAnything database, or a StoreError saying why not.

    A reader (`create=False`) that cannot open the file normally — a full disk where SQLite
    cannot size its shared-memory file, a read-only folder — still reads it when no write-ahead
    log holds commits outside the main file: then that file alone is the whole history."""
    try:
        linked_to_nothing = path.is_symlink() and not path.exists()
        if path.is_dir():
            raise StoreError(f"database path {path} is a directory, not a file")
        missing = not path.exists()
    except OSError as e:      # a name too long for the file system, a folder we may not look in
        raise StoreError(f"database path {shorten(str(path))}: {e.strerror}") from None
    if linked_to_nothing:
        raise StoreError(f"database path {path} is a symbolic link to {os.readlink(path)}, which does not exist")
    if missing:
        if not create:
            raise StoreError(f"database {path} does not exist")
        _create(path)
    elif not path.is_file():
        raise StoreError(f"database path {path} is not a regular file")
    _check_not_empty(path)
    try:
        return _open(path, read_only=False)
    except _OpenError as e:
        wal = Path(f"{path}-wal")
        if create or not e.cannot_write or (wal.exists() and wal.stat().st_size > 0):
            raise
        try:
            return _open(path, read_only=True)
        except StoreError:
            pass
        raise


def _open(path: Path, read_only: bool) -> sqlite3.Connection:
    try:
        if read_only:
            conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro&immutable=1", uri=True,
                                   check_same_thread=False)
        else:
            conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
    except sqlite3.Error as e:
        raise _OpenError(f"cannot open database {path}: {describe(e)}", e) from None
    # text written by someone else may not be UTF-8; a reader must still show the rest
    conn.text_factory = lambda b: b.decode("utf-8", "replace")
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if tables and "_migrations" not in tables:
            raise StoreError(f"database {path} is a SQLite file but not an RLAnything database "
                             f"(tables: {', '.join(sorted(tables)[:5])})")
        migrate(conn, path)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        missing = [t for t in REQUIRED_TABLES if t not in tables]
        if missing:
            raise StoreError(f"database {path} is damaged: table {', '.join(missing)} is missing")
        if not read_only:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
    except StoreError:
        conn.close()
        raise
    except sqlite3.Error as e:
        conn.close()
        raise _OpenError(f"cannot open database {path}: {describe(e)}", e) from None
    return conn
