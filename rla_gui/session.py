"""RunSession: the console's view of one run, fed from the database by an asyncio task.

The session owns the EngineClient of the open database. `open(run_id)` starts watching a run
(live or finished — the same path serves both, DESIGN §1); panels connect to its signals and
never touch the database themselves.
"""
from __future__ import annotations

import asyncio
import contextlib

from PySide6 import QtCore

from rla_engine.client import EngineClient
from rla_engine.vocabulary import LIVE, RunRow, TaskStatus

POOL_EVERY_S = 1.0


class RunSession(QtCore.QObject):
    cleared = QtCore.Signal()                 # a different run was opened, or it was rewound
    run_changed = QtCore.Signal(dict)         # the run row, as often as it is read
    metrics_added = QtCore.Signal(dict)       # key -> (iterations, values, t)
    events_added = QtCore.Signal(list)
    pool_changed = QtCore.Signal(list)        # active and pending task rows
    failed = QtCore.Signal(str, str)          # run id, message with the log's tail

    def __init__(self, client: EngineClient, parent=None):
        super().__init__(parent)
        self.client = client
        self.run_id: str | None = None
        self.run: RunRow | None = None
        self._task: asyncio.Task | None = None
        self._pool_task: asyncio.Task | None = None
        self._waiters: dict[str, asyncio.Task] = {}

    # -- opening -----------------------------------------------------------------------------
    def open(self, run_id: str | None) -> None:
        self.close_watch()
        self.run_id, self.run = run_id, None
        self.cleared.emit()
        if run_id is not None:
            self._task = asyncio.ensure_future(self._watch(run_id))
            self._pool_task = asyncio.ensure_future(self._poll_pool(run_id))

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
                self.cleared.emit()
                # the rewound history is re-read in full on the next open
                asyncio.get_running_loop().call_soon(self.reopen)
                return
            self.run = update.run
            if update.metrics:
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
    def track(self, run_id: str) -> None:
        """Await the engine's exit; a failure is reported with its log's tail, never swallowed."""
        async def waiter():
            try:
                await self.client.wait(run_id)
            except Exception as e:   # EngineError carries the log tail
                self.failed.emit(run_id, str(e))
            finally:
                self._waiters.pop(run_id, None)
        self._waiters[run_id] = asyncio.ensure_future(waiter())

    def live_children(self) -> list[str]:
        return [rid for rid, p in self.client.processes.items() if p.returncode is None]

    async def shutdown(self) -> None:
        self.close_watch()
        for task in list(self._waiters.values()):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.client.close()
