"""The one package that touches SQLite (through sqlite-utils): the run history, read and written
through `Store`, which composes one mixin per concern: `runs`, `writes` (an iteration's commit,
rewind), `reads`, `search`, `transfer` (export and import of bundles), `commands`, `liveness`
(crash marks); `base` holds the connection they share, `schema` the opening, versions and migrations.

The database file is both the bus between engine and console and the run history
(DESIGN §1, §4). The engine is the only writer of a run's rows; readers write only commands,
notes/tags/archive and the `crashed` mark. An iteration exists iff its `iterations` row
exists: its metrics, events, task rows and that row are committed in one transaction.
Every write is one IMMEDIATE transaction that waits for another writer (`lock_wait_s`).
"""
from __future__ import annotations

from pathlib import Path

from ..bundle import BUNDLE_FORMAT, MULTI_FORMAT, BundleError, bundle_rows
from ..paths import RUN_ID_RE, UnsafeRunId, check_run_id
from ..vocabulary import TASK_COLUMNS
from .base import EVENT_EXCERPT_CHARS, LOCK_WAIT_S, RunGone, dumps
from .commands import COMMAND_MAX_BYTES, CommandsMixin, parse_command, payload_excerpt
from .liveness import LivenessMixin, engine_gone, pid_alive, process_start
from .reads import ReadsMixin
from .runs import RUN_TABLES, RunInUse, RunsMixin, new_run_id
from .schema import (FTS_COLUMNS, MIGRATIONS, SCHEMA_VERSION, StoreError, WriteError, connect, is_disk_full,
                     write_transaction)
from .search import SearchMixin
from .transfer import TransferMixin
from .writes import KEPT_ON_REWIND, WritesMixin

__all__ = [
    "BUNDLE_FORMAT", "COMMAND_MAX_BYTES", "EVENT_EXCERPT_CHARS", "FTS_COLUMNS", "KEPT_ON_REWIND", "LOCK_WAIT_S",
    "MIGRATIONS", "MULTI_FORMAT", "RUN_ID_RE", "RUN_TABLES", "SCHEMA_VERSION", "TASK_COLUMNS", "BundleError",
    "RunGone", "RunInUse", "Store", "StoreError", "UnsafeRunId", "WriteError", "bundle_rows", "check_run_id",
    "connect", "dumps", "engine_gone", "is_disk_full", "new_run_id", "open_store", "parse_command",
    "payload_excerpt", "pid_alive", "process_start", "write_transaction",
]


class Store(RunsMixin, WritesMixin, ReadsMixin, SearchMixin, TransferMixin, CommandsMixin, LivenessMixin):
    """The run history in one database file (see the package's docstring)."""


def open_store(path: str | Path, create: bool = True, lock_wait_s: float = LOCK_WAIT_S) -> Store:
    return Store(path, create=create, lock_wait_s=lock_wait_s)
