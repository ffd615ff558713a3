"""RunSession: the console's view of one run, fed from the database by an asyncio task.

The session lives as long as the window; `use_client` points it at another database. It holds
the open run's columns (`data`, a RunData) and fills them before `metrics_added` fires, so every
panel that draws them sees the same state. `open(run_id)` starts watching a run (live or
finished — the same path serves both, DESIGN §1); panels are given the session when they are
built, connect to its signals themselves and never touch the database.
"""
from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from PySide6 import QtCore

from rla_engine.client import EngineError
from rla_engine.store import StoreError, open_store
from rla_engine.vocabulary import LIVE, EventRow, RunRow, TaskStatus

from .model.location import Client
from .model.run_data import RunData

POOL_EVERY_S = 1.0


def check_database(path: Path) -> str | None:
    """Why `path` cannot be the console's database (not SQLite, not ours, unreadable), or None.
    It is opened (created if missing) and closed again."""
    try:
        open_store(path).close()
    except StoreError as e:
        return str(e)
    return None


class RunSession(QtCore.QObject):
    cleared = QtCore.Signal()                 # a different run was opened, or it was rewound; data is empty
    run_changed = QtCore.Signal(dict)         # the run row, as often as it is read
    metrics_added = QtCore.Signal(dict)       # key -> (iterations, values, t), already in data
    events_added = QtCore.Signal(object)      # a list (not Signal(list): Qt variants overflow on a 10**400 payload)
    pool_changed = QtCore.Signal(list)        # active and pending task rows
    failed = QtCore.Signal(str, str)          # run id, message with the log's tail
    trouble = QtCore.Signal(str)              # watching the run failed (the database went away…): one line

    def __init__(self, client: Client, parent=None):
        super().__init__(parent)
        self.client = client
        self.data = RunData()
        self.run_id: str | None = None
        self.run: RunRow | None = None
        self._task: asyncio.Task | None = None
        self._pool_task: asyncio.Task | None = None
        self._waiters: dict[str, asyncio.Task] = {}

    # -- opening -----------------------------------------------------------------------------
    def use_client(self, client: Client) -> asyncio.Task:
        """Switch to another database: no run open; the old client closes in the returned task."""
        old, self.client = self.client, client
        self.open(None)
        waiters, self._waiters = list(self._waiters.values()), {}
        return asyncio.ensure_future(self._close(old, waiters))

    def open(self, run_id: str | None) -> None:
        self.close_watch()
        self.run_id, self.run = run_id, None
        self.data.clear()
        self.cleared.emit()
        if run_id is not None:
            self._task = self._own(self._watch(run_id), run_id)
            self._pool_task = self._own(self._poll_pool(run_id), run_id)

    def _own(self, coro, run_id: str) -> asyncio.Task:
        """A watching task whose failure is said on the status bar, never left unretrieved."""
        task = asyncio.ensure_future(coro)

        def done(t: asyncio.Task) -> None:
            if not t.cancelled() and t.exception() is not None and t in (self._task, self._pool_task):
                error = t.exception()
                with contextlib.suppress(RuntimeError):      # the window, and this session, are gone
                    self.trouble.emit(f"error: watching run {run_id}: {' '.join(str(error).split())}")
        task.add_done_callback(done)
        return task

    def close_watch(self) -> None:
        for task in (self._task, self._pool_task):
            if task is not None and not task.done():
                task.cancel()
        self._task = self._pool_task = None

    def reopen(self) -> None:
        """Watch the same run again from scratch (after a resume started a new engine)."""
        self.open(self.run_id)

    async def _watch(self, run_id: str) -> None:
        async for update in self.client.watch(run_id):
            if run_id != self.run_id:
                return
            if update.rewound:
                self.data.clear()
                self.cleared.emit()
                # the rewound history is re-read in full on the next open
                asyncio.get_running_loop().call_soon(self.reopen)
                return
            self.run = update.run
            if update.metrics:
                self.data.add(update.metrics)
                self.metrics_added.emit(update.metrics)
            if update.events:
                self.events_added.emit(update.events)
            self.run_changed.emit(update.run)
        # the run ended: one last read so buttons follow the final status
        run = await self.client.run(run_id)
        if run is not None and run_id == self.run_id:
            self.run = run
            self.run_changed.emit(run)

    async def _poll_pool(self, run_id: str) -> None:
        last = None
        while run_id == self.run_id:
            rows = await self.client.tasks(run_id, [TaskStatus.ACTIVE, TaskStatus.PENDING])
            if rows != last:
                last = rows
                self.pool_changed.emit(rows)
            run = self.run
            if run is not None and run["status"] not in LIVE:
                return
            await asyncio.sleep(POOL_EVERY_S)

    # -- engine processes this console started -------------------------------------------------
    async def events_at(self, run_id: str, iteration: int, kinds: list[str]) -> list[EventRow]:
        """A run's events of one earlier iteration (a panel looking back, e.g. Samples)."""
        return await self.client.events_at(run_id, iteration, kinds)

    def track(self, run_id: str) -> None:
        """Await the engine's exit; a failure is reported with its log's tail, never swallowed."""
        async def waiter():
            try:
                await self.client.wait(run_id)
            except EngineError as e:   # its text carries the log's tail
                self.failed.emit(run_id, str(e))
            except Exception as e:     # the database went away while waiting: still say so
                self.failed.emit(run_id, f"{type(e).__name__}: {e}")
            finally:
                self._waiters.pop(run_id, None)
        self._waiters[run_id] = asyncio.ensure_future(waiter())

    def tracking(self, run_id: str) -> bool:
        """Whether the exit of the run's engine is still awaited (`track`): False once it has been
        handled, its failure (if any) reported."""
        return run_id in self._waiters

    async def shutdown(self) -> None:
        self.close_watch()
        await self._close(self.client, list(self._waiters.values()))

    @staticmethod
    async def _close(client: Client, waiters: list[asyncio.Task]) -> None:
        for task in waiters:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await client.close()
