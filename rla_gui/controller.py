"""The console's workflows, apart from any widget: start, resume, clone, compare, export, delete,
notes, search, archive, commands and the history refresh (napari's pattern: the window composes,
this object acts, panels show).

Every workflow runs as an asyncio task on the Qt loop. What a user must see comes back as a
signal: `message` for the status bar (every error too, in one line), and `engine_failed` when an
engine or the report tool failed with a log worth reading (an EngineError that carries one).

The database is a local file (a Path) or one on another machine (an SshAddress, reached with a
RemoteClient over the user's ssh): `location` is either; `connection_changed` tells how the
link to a remote one stands.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from PySide6 import QtCore

from rla_engine.ablation.arms import AblationSpec
from rla_engine.client import EngineError
from rla_engine.commandline import UNOWNED_FLAG
from rla_engine.config import Config
from rla_engine.remote import RemoteClient, RemoteError, SshAddress, client_for, connected
from rla_engine.summary import SUMMARY_KEYS
from rla_engine.text import counted
from rla_engine.vocabulary import LIVE, RunRow

from .model.location import Client, Location, as_location
from .model.run_data import RunData
from .session import RunSession, check_database
from .model.run_columns import ARM_COLUMN, ColumnValues, arm_groups

HISTORY_EVERY_S = 2.0


class ConsoleController(QtCore.QObject):
    message = QtCore.Signal(str, int)            # status-bar text, how long in ms (0: until the next)
    engine_failed = QtCore.Signal(str, str)      # run id ("" when none), the error with its log
    unowned_refused = QtCore.Signal(str, int)    # run id, iterations (0: to its target): only unsigned checkpoints
    database_opened = QtCore.Signal(object)      # its location: a Path or an SshAddress
    database_refused = QtCore.Signal(object, str)  # location, why it cannot be opened (the old one stays open)
    # a remote database's link: "connecting", "connected", "lost", "failed", with one line to show;
    # ("", "") for a local database (nothing to show)
    connection_changed = QtCore.Signal(str, str)
    run_opened = QtCore.Signal(str)
    # rows travel as Python objects (`object`): a `list` signal copies them into Qt variants, and a
    # value no 64-bit integer holds (a hand-edited 10**400) stopped every refresh with an OverflowError
    history_changed = QtCore.Signal(object)      # one summary row per run (SUMMARY_KEYS)
    search_matched = QtCore.Signal(str, object)  # the query, the set of run ids whose text matches it
    clone_ready = QtCore.Signal(object, str)     # a past run's config and preset, for the form
    comparison_ready = QtCore.Signal(object)     # [(run row with "config", RunData), …]
    group_comparison_ready = QtCore.Signal(str, object)   # grouping column id, [(label, [(row, RunData), …]), …]
    column_choices_ready = QtCore.Signal(list, list)    # the database's configuration fields, metric keys
    # the database is about to be left (another one opened, the console closed): what was typed
    # and not yet saved (History's notes and tags) is to be handed to save_notes now
    leaving_database = QtCore.Signal()
    # a database was opened (at start-up, File ▸ Open) with runs still live or paused in it: engines
    # a console closed with "let it run on", or started from a terminal; the person is told, once
    live_runs_found = QtCore.Signal(object)       # [run row, …]

    def __init__(self, location: Location, parent: QtCore.QObject | None = None, client: Client | None = None):
        """`client`: the database's client when it is already made (a remote one connected at
        start-up); else one is made, and a remote one connects with its first call."""
        super().__init__(parent)
        self.location: Location = as_location(location)
        self.session = RunSession(client or client_for(self.location), self)
        self._listen(self.session.client)
        self.session.failed.connect(self.engine_failed)
        self.session.trouble.connect(lambda text: self.message.emit(text, 10_000))
        self.include_archived = False
        self.history_columns: list[str] = []      # History's chosen columns (ids): read with each refresh
        self.column_values = ColumnValues()
        self.closing = False
        self._history_task: asyncio.Task | None = None
        self._workflows: set[asyncio.Task] = set()
        self._note_writes: set[asyncio.Task] = set()    # never cancelled: a close or a switch waits for them
        self._closed: asyncio.Task | None = None
        self._rows: list[dict] = []          # the history as last read: what live_runs() lists
        self._announce_live = False          # the first read of a newly opened database tells of its live runs

    @property
    def client(self) -> Client:
        return self.session.client

    @property
    def db_path(self) -> Location:
        """The database's location (the name from when it could only be a local file)."""
        return self.location

    # -- a remote database's link --------------------------------------------------------------
    def _listen(self, client: Client) -> None:
        if isinstance(client, RemoteClient):
            client.on_state.append(self._connection_state)

    def _unlisten(self, client: Client) -> None:
        if isinstance(client, RemoteClient) and self._connection_state in client.on_state:
            client.on_state.remove(self._connection_state)

    def _connection_state(self, state: str, text: str) -> None:
        # RemoteClient calls this on the asyncio loop, which is Qt's thread under qasync
        if not self.closing:
            with contextlib.suppress(RuntimeError):     # the window, and this controller, are gone
                self.connection_changed.emit(state, text)

    def connection_state(self) -> tuple[str, str]:
        """How the link to the database stands now: ("", "") for a local database."""
        client = self.client
        if not isinstance(client, RemoteClient):
            return "", ""
        if client.state == "new":         # its first call connects it
            return "connecting", "connecting over ssh…"
        return client.state, client.state_text

    # -- database and runs ---------------------------------------------------------------------
    def switch_database(self, where: Location, stop_runs: Sequence[str] = ()) -> asyncio.Task:
        """File ▸ Open / New database: a local file is opened (or created) and checked first, in
        the store's thread; a remote database is connected to (ssh, its `rla serve`). One that
        cannot be is refused and the console stays where it was. `stop_runs`: the old
        database's live runs the person chose to stop as it is left."""
        location = as_location(where)

        async def run() -> None:
            client: Client | None = None
            if isinstance(location, SshAddress):
                if location != self.location:
                    try:
                        client = await connected(location)
                    except RemoteError as e:
                        self.database_refused.emit(location, e.cause)
                        return
            else:
                # a thread of our own: qasync's default executor is made of QThreads that nobody stops,
                # and Qt aborts the process at exit over a QThread still running
                with ThreadPoolExecutor(1, thread_name_prefix="rla-check") as pool:
                    problem = await asyncio.get_running_loop().run_in_executor(pool, check_database, location)
                if problem is not None:
                    self.database_refused.emit(location, problem)
                    return
            try:
                await self._write_pending_notes()
                for run_id in stop_runs:
                    await self.client.stop(run_id)
            except BaseException:
                if client is not None:        # connected for nothing: its ssh goes now
                    await asyncio.shield(client.close())
                raise
            self.open_database(location, client)
        return self.spawn(run())

    def open_database(self, where: Location, client: Client | None = None) -> None:
        """Show the runs of the database at `where`; `client` is its client when already made
        (connected)."""
        self.location = location = as_location(where)
        if client is not None or self.session.client.location != location:
            self._unlisten(self.session.client)
            new = client or client_for(location)
            self._listen(new)
            self.session.use_client(new)
        else:
            self.session.open(None)
        self.column_values = ColumnValues()
        self._rows, self._announce_live = [], True
        self.database_opened.emit(location)
        self.connection_changed.emit(*self.connection_state())
        if self._history_task is not None:
            self._history_task.cancel()
        self._history_task = asyncio.ensure_future(self._history_loop())

    def open_run(self, run_id: str | None) -> None:
        self.session.open(run_id)
        if run_id is not None:
            self.run_opened.emit(run_id)

    def live_run_id(self) -> str | None:
        s = self.session
        return s.run_id if s.run and s.run["status"] in LIVE else None

    def live_runs(self) -> list[dict]:
        """Every run of the database that is running or paused, as last read (History's refresh,
        the open run's fresher row): what a quit or a switch of database leaves running."""
        rows = {r["id"]: r for r in self._rows}
        run = self.session.run
        if run is not None:
            rows[run["id"]] = {**rows.get(run["id"], {}), **run}
        return [r for r in rows.values() if r.get("status") in LIVE]

    def stop_runs(self, run_ids: Sequence[str]) -> asyncio.Task:
        """Ask each run's engine to stop (it checkpoints first); a paused one stops too."""
        async def run() -> None:
            for run_id in run_ids:
                await self.client.stop(run_id)
            self.message.emit(f"asked {counted(len(run_ids), 'run')} to stop", 5000)
        return self.spawn(run())

    # -- the history ---------------------------------------------------------------------------
    async def _history_loop(self) -> None:
        while not self.closing:
            with contextlib.suppress(Exception):    # a locked or vanished database: try again later
                await self.refresh_history()
            await asyncio.sleep(HISTORY_EVERY_S)

    async def refresh_history(self) -> None:
        client = self.client
        rows = await client.run_summaries(list(SUMMARY_KEYS), self.include_archived)
        if client is not self.client:       # another database was opened meanwhile: these rows are the old one's
            return
        if self.history_columns:
            await self.column_values.fill(self.client, rows, self.history_columns)
        self._rows = rows
        self.history_changed.emit(rows)
        if self._announce_live:
            self._announce_live = False
            live = self.live_runs()
            if live and self.session.run_id is None:
                self.live_runs_found.emit(live)

    def set_history_columns(self, column_ids: list[str]) -> None:
        if list(column_ids) == self.history_columns:    # the same (a database's columns restored): no second read
            return
        self.history_columns = list(column_ids)
        self.spawn(self.refresh_history())

    def column_choices(self) -> asyncio.Task:
        async def run() -> None:
            self.column_choices_ready.emit(await self.client.config_fields(), await self.client.metric_names())
        return self.spawn(run())

    def show_archived(self, shown: bool) -> None:
        self.include_archived = shown
        self.spawn(self.refresh_history())

    def search(self, text: str) -> None:
        async def run() -> None:
            ids = await self.client.search_runs(text) if text.strip() else []
            self.search_matched.emit(text, set(ids))
        self.spawn(run())

    # -- workflows -----------------------------------------------------------------------------
    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self._workflows.add(task)
        task.add_done_callback(self._workflows.discard)
        task.add_done_callback(self._report)
        return task

    def _report(self, task: asyncio.Task) -> None:
        if task.cancelled() or task.exception() is None:
            return
        error = task.exception()
        if self.closing:        # retrieved; the window that would show it is gone
            return
        if isinstance(error, EngineError) and error.log is not None:    # a process failed: show its log
            self.message.emit(f"error: {error.cause}", 10_000)
            # the run the error names: the open run may be another one (a start, an export)
            self.engine_failed.emit(error.run_id or "", str(error))
        elif isinstance(error, EngineError):                           # a refusal says all in one line
            self.message.emit(f"error: {error.cause}", 10_000)
        else:
            self.message.emit(f"error: {type(error).__name__}: {' '.join(str(error).split())}", 10_000)

    def command(self, kind: str, payload: dict | None = None) -> None:
        """Send a command to the open run, if it is live (a click on a dead run does nothing)."""
        run_id = self.live_run_id()
        if run_id is not None:
            self.spawn(self.client.command(run_id, kind, payload))

    def start(self, cfg: Config, preset: str, name: str) -> asyncio.Task:
        async def run() -> None:
            self.message.emit("starting the engine…", 0)
            run_id = await self.client.start(cfg, preset=preset or None, name=name or None)
            self.session.track(run_id)
            self.open_run(run_id)
            await self.refresh_history()
            self.message.emit(f"run {run_id} started", 5000)
        return self.spawn(run())

    def start_ablation(self, cfg: Config, preset: str, plan: AblationSpec) -> asyncio.Task:
        """Start `rla ablate`, show its first run live, and open the group as a comparison when
        it ends (also when an arm failed: the others are still worth comparing)."""
        async def run() -> None:
            self.message.emit("starting the ablation…", 0)
            group, first = await self.client.start_ablation(cfg, preset=preset or None, seeds=plan.seeds,
                                                            budget=plan.budget, arms=plan.arms, jobs=plan.jobs)
            self.open_run(first)
            await self.refresh_history()
            self.message.emit(f"ablation {group} started: {counted(len(plan.arms), 'arm')} × "
                              f"{counted(len(plan.seeds), 'seed')}", 8000)
            failure = None
            try:
                await self.client.wait(group)
            except EngineError as e:
                failure = e
            ids = await self.client.group_runs(group)
            await self.refresh_history()
            runs = await self.load_runs(ids)
            by_arm = arm_groups(runs, plan.arms)
            if any(len(members) > 1 for _, members in by_arm):    # seeds: each arm's mean and its band
                self.group_comparison_ready.emit(ARM_COLUMN.id, by_arm)
            else:
                self.comparison_ready.emit(runs)
            if failure is not None:
                raise failure
            self.message.emit(f"ablation {group} finished: its {len(ids)} runs are open as a comparison"
                              + (" of their arms" if len(by_arm) < len(runs) else ""), 8000)
        return self.spawn(run())

    def resume(self, run_id: str, iterations: int | None = None, accept_unowned: bool = False) -> asyncio.Task:
        """`rla resume`: a stopped, crashed or failed run up to its target; a completed one (or any,
        with `iterations`) that many iterations further. A resume refused because only checkpoints
        this database did not sign are left is offered again with `accept_unowned` (unowned_refused)."""
        async def run() -> None:
            self.message.emit(f"resuming run {run_id}…", 0)
            try:
                await self.client.resume_run(run_id, iterations, accept_unowned)
            except EngineError as e:
                if not accept_unowned and UNOWNED_FLAG in str(e):
                    self.unowned_refused.emit(run_id, iterations or 0)
                raise
            self.session.track(run_id)
            self.open_run(run_id)
            await self.refresh_history()
            self.message.emit(f"run {run_id} resumed" + (f" for {iterations} more iterations" if iterations else ""),
                              5000)
        return self.spawn(run())


    def clone(self, run_id: str) -> asyncio.Task:
        async def run() -> None:
            row = await self.client.run(run_id)
            if row is not None:
                self.clone_ready.emit(json.loads(row["config_json"]), row.get("preset") or "")
        return self.spawn(run())

    def compare(self, run_ids: list[str]) -> asyncio.Task:
        async def run() -> None:
            self.comparison_ready.emit(await self.load_runs(run_ids))
        return self.spawn(run())

    def compare_groups(self, column_id: str, groups: list[tuple[str, list[str]]]) -> asyncio.Task:
        async def run() -> None:
            loaded = [(label, await self.load_runs(ids)) for label, ids in groups]
            self.group_comparison_ready.emit(column_id, [(label, runs) for label, runs in loaded if runs])
        return self.spawn(run())

    def follow_comparison(self, runs: list[tuple[dict, RunData]]) -> asyncio.Task:
        """A comparison's live runs go on: their new rows are added to its data in place and their
        status and iteration updated. The task's result says whether anything changed."""
        async def run() -> bool:
            changed = False
            for row, data in runs:
                if row.get("status") not in LIVE:
                    continue
                fresh = await self.client.run(row["id"])
                chunk = await self.client.columns(row["id"], data.last_iteration())
                if chunk:
                    data.add(chunk)
                    changed = True
                if fresh is not None and (fresh["status"], fresh["iteration"]) != (row["status"], row["iteration"]):
                    row.update(status=fresh["status"], iteration=fresh["iteration"], ended_at=fresh["ended_at"])
                    changed = True
            return changed
        return self.spawn(run())

    async def load_runs(self, run_ids: list[str]) -> list[tuple[RunRow, RunData]]:
        """Each run's row (with its parsed "config") and all its columns; unknown ids are skipped."""
        runs = []
        for run_id in run_ids:
            row = await self.client.run(run_id)
            if row is None:
                continue
            data = RunData()
            data.add(await self.client.columns(run_id))
            row["config"] = json.loads(row["config_json"])    # type: ignore[typeddict-unknown-key]
            runs.append((row, data))
        return runs

    def set_archived(self, run_id: str, archived: bool) -> asyncio.Task:
        async def run() -> None:
            await self.client.set_archived(run_id, archived)
            await self.refresh_history()
        return self.spawn(run())

    def save_notes(self, run_id: str, notes: str, tags: list[str]) -> asyncio.Task:
        """A run's notes and tags, written through the client of the database they were typed in;
        the write itself outlives a close (which waits for it), the refresh after it does not."""
        client = self.client
        write = asyncio.ensure_future(self._write_notes(client, run_id, notes, tags))
        self._note_writes.add(write)
        write.add_done_callback(self._note_writes.discard)

        async def run() -> None:
            await asyncio.shield(write)
            if client is self.client:      # still the same database: show the saved text
                await self.refresh_history()
                self.message.emit(f"notes of {run_id} saved", 3000)
        return self.spawn(run())

    @staticmethod
    async def _write_notes(client: Client, run_id: str, notes: str, tags: list[str]) -> None:
        await client.set_notes(run_id, notes)
        await client.set_tags(run_id, tags)

    async def _write_pending_notes(self) -> None:
        """Everything typed is written before the client goes: asked for (leaving_database), then
        waited for, until asking brings nothing new (a keystroke may land while we wait)."""
        self.leaving_database.emit()
        while self._note_writes:
            await asyncio.gather(*self._note_writes, return_exceptions=True)   # each one's error: its own task's
            self.leaving_database.emit()

    def export(self, run_ids: list[str], fmt: str, path: Path, force: bool,
               charts: list[list[str]] | None = None, group_by: str | None = None) -> asyncio.Task:
        async def run() -> str:
            self.message.emit(f"exporting {len(run_ids)} run(s) to {path}…", 0)
            text = await self.client.export(run_ids, fmt, path, force, charts, group_by=group_by)
            self.message.emit(text.splitlines()[-1] if text else f"wrote {path}", 8000)
            return text
        return self.spawn(run())

    def delete(self, run_id: str) -> asyncio.Task:
        async def run() -> None:
            await self.client.delete_run(run_id)
            if self.session.run_id == run_id:
                self.open_run(None)
            await self.refresh_history()
        return self.spawn(run())

    # -- closing -------------------------------------------------------------------------------
    def close(self, stop_runs: Sequence[str] = ()) -> asyncio.Task:
        """What must happen after the window closed: the stop commands land, the client closes.
        Everything else ends now (its answer has nowhere to go); a second call is the first."""
        if self._closed is not None:
            return self._closed
        self.leaving_database.emit()      # typed notes are written before anything is cancelled
        self.closing = True
        if self._history_task is not None:
            self._history_task.cancel()
        for task in list(self._workflows):
            task.cancel()
        self.session.close_watch()

        async def run() -> None:
            try:
                await self._write_pending_notes()
                for run_id in stop_runs:
                    await self.client.stop(run_id)
            finally:
                await self.session.shutdown()
        self._closed = asyncio.ensure_future(run())
        return self._closed
