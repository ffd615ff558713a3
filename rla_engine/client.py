"""EngineClient: start and steer engine processes, and watch them through the database.

Torch-free and asyncio-native, for the console (qasync) and for scripts. Every database call
runs on one worker thread of the client (a CSV/JSON export on a second one, with its own
connection), so an event loop never waits on SQLite.
"""
from __future__ import annotations

import asyncio
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import AsyncIterator, Callable
from typing import Concatenate, ParamSpec, TypeVar

import numpy as np

from .ablation.arms import run_id_of
from .config import Config, validate
from .commandline import resume_command, rla, run_command
from .export.command import PROG, ReportCommand, RendererMissing, one_line, render_command, run_export
from .export.formats import ExportInputError
from .names import config_label, default_group, default_run_name
from .paths import UnsafeRunId, default_db_path, log_path, logs_dir, make_private_dir, open_private, run_config_path
from .store import RunInUse, Store, new_run_id, open_store
from .vocabulary import FINAL, LIVE, CommandKind, EventKind, EventRow, RunRow, TaskRow

POLL_S = 0.1          # ≤ 10 Hz, DESIGN §1
START_TIMEOUT_S = 60.0


class EngineError(RuntimeError):
    """A request the client could not carry out: the engine (or the report tool) failed, or the
    request was refused. `log` is the failed process's output, worth showing in full (None for a
    refusal); the message is the one-line cause followed by that output. `run_id` names the run
    (or ablation group) whose engine failed, where there is one: a console must not guess it."""

    def __init__(self, cause: str, log: str | None = None, run_id: str | None = None):
        super().__init__(cause if log is None else f"{cause}:\n{log}")
        self.cause, self.log, self.run_id = cause, log, run_id


@dataclass
class Update:
    """What changed in a run since the previous update."""
    run: RunRow
    # key -> (iterations, values, t) as numpy columns, in iteration order
    metrics: dict[str, tuple[np.ndarray, ...]] = field(default_factory=dict)
    events: list[EventRow] = field(default_factory=list)
    rewound: bool = False                                 # iterations were deleted (a resume)
    # where a watch that picks up after this update starts (EngineClient.watch's after_*)
    after_iteration: int = 0
    after_event: int = 0

P = ParamSpec("P")
R = TypeVar("R")


class EngineClient:
    def __init__(self, db_path: str | Path | None = None, python: str = sys.executable):
        self.db_path = Path(db_path) if db_path else default_db_path()
        self.python = python
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rla-store")
        # CSV/JSON exports get their own thread: a long one must not hold up the store's calls,
        # and the loop's default executor may be Qt's (qasync), whose threads outlive a test
        self._export_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rla-export")
        self._store: Store | None = None
        self.processes: dict[str, asyncio.subprocess.Process] = {}

    @property
    def location(self) -> Path:
        """Where the database is (a RemoteClient's is an ssh:// address)."""
        return self.db_path

    async def _db(self, fn: Callable[Concatenate[Store, P], R], *args: P.args, **kw: P.kwargs) -> R:
        """Call a Store method (`Store.get_run`, …) on the store's own thread: SQLite work never
        runs on the event loop, and one connection serves every call in order."""
        def call() -> R:
            if self._store is None:
                self._store = open_store(self.db_path)
            return fn(self._store, *args, **kw)
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    async def close(self) -> None:
        if self._store is not None:
            await asyncio.get_running_loop().run_in_executor(self._pool, self._store.close)
            self._store = None
        self._pool.shutdown(wait=False)
        self._export_pool.shutdown(wait=False)

    # -- launching -------------------------------------------------------------------------
    async def _spawn(self, run_id: str, command: list[str]) -> asyncio.subprocess.Process:
        """Start an engine process (commandline.py) whose output goes to the log of `run_id`."""
        try:
            make_private_dir(logs_dir(self.db_path))
            log = open_private(log_path(self.db_path, run_id), "ab")
        except (OSError, UnsafeRunId) as e:
            raise EngineError(f"cannot write the log of run {run_id} in {logs_dir(self.db_path)}: "
                              f"{getattr(e, 'strerror', None) or e}") from None
        try:
            # Own session: the engine outlives a console that is closed with "let it run on".
            proc = await asyncio.create_subprocess_exec(
                *command, stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=asyncio.subprocess.STDOUT,
                start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        finally:
            log.close()
        self.processes[run_id] = proc
        return proc

    async def _await_row(self, run_id: str, proc: asyncio.subprocess.Process) -> None:
        """Return once this engine process has taken the run, or raise.

        A short run can start, finish and exit between two polls, so a row that carries this
        process's pid counts whatever its status, and the row is read once more after the exit.
        """
        deadline = asyncio.get_running_loop().time() + START_TIMEOUT_S
        while True:
            exited = proc.returncode is not None
            run = await self._db(Store.get_run, run_id)
            if run is not None and run["pid"] == proc.pid:
                return
            if exited and proc.returncode == 0 and run is not None:
                return          # done before this poll saw it (a resume with nothing left): no failure
            if exited:
                raise EngineError(f"engine exited with code {proc.returncode}", self.log_tail(run_id), run_id)
            if asyncio.get_running_loop().time() > deadline:
                raise EngineError(f"engine did not start within {START_TIMEOUT_S:.0f} s", self.log_tail(run_id),
                                  run_id)
            await asyncio.sleep(POLL_S)

    def _write_config(self, name: str, cfg: Config, what: str) -> Path:
        """The TOML an engine process is handed, next to the logs, readable by this user only."""
        path = run_config_path(self.db_path, name)
        try:
            make_private_dir(path.parent)
            with open_private(path, "w") as f:
                f.write(cfg.to_toml())
        except OSError as e:
            raise EngineError(f"cannot write the {what}'s config {path}: {e.strerror}") from None
        return path

    async def start(self, cfg: Config, *, preset: str | None = None, name: str | None = None,
                    group: str | None = None) -> str:
        """Validate, write the config next to the logs, spawn `rla run`; return the run id."""
        validate(cfg)
        run_id = new_run_id()
        path = self._write_config(run_id, cfg, "run")
        name = name or default_run_name(config_label(preset, None, cfg.task.family))
        proc = await self._spawn(run_id, run_command(self.python, self.db_path, config=path, run_id=run_id,
                                                     name=name, preset=preset, group=group))
        await self._await_row(run_id, proc)
        return run_id

    async def start_ablation(self, cfg: Config, *, preset: str | None, seeds: list[int], budget: int,
                             arms: list[str], jobs: int = 1) -> tuple[str, str]:
        """Spawn `rla ablate` over `cfg`; once its first run exists return (group, first run id).
        The group is new each time (a timestamp), so a console ablation never meets an old one."""
        validate(cfg)
        group = default_group(config_label(preset, None, cfg.task.family))
        path = self._write_config(group, cfg, "ablation")
        args = ["ablate", *(["--preset", preset] if preset else []), "--config", str(path),
                "--seeds", ",".join(map(str, seeds)), "--budget", str(budget), "--arms", ",".join(arms),
                "--group", group, "--jobs", str(jobs), "--out", str(logs_dir(self.db_path) / f"{group}.md")]
        proc = await self._spawn(group, rla(self.python, self.db_path, *args))
        first = run_id_of(group, arms[0], seeds[0])
        deadline = asyncio.get_running_loop().time() + START_TIMEOUT_S
        while await self._db(Store.get_run, first) is None:
            if proc.returncode is not None:
                raise EngineError(f"rla ablate exited with code {proc.returncode}", self.log_tail(group), group)
            if asyncio.get_running_loop().time() > deadline:
                raise EngineError(f"the ablation did not start within {START_TIMEOUT_S:.0f} s", self.log_tail(group),
                                  group)
            await asyncio.sleep(POLL_S)
        return group, first

    async def group_runs(self, group: str) -> list[str]:
        return [r["id"] for r in await self.list_runs(include_archived=True) if r.get("group_id") == group]

    async def resume_run(self, run_id: str, iterations: int | None = None, accept_unowned: bool = False) -> None:
        """Continue a stopped, crashed or failed run from its last checkpoint (`rla resume`);
        `accept_unowned`: also from checkpoints this database did not sign."""
        proc = await self._spawn(run_id, resume_command(self.python, self.db_path, run_id, iterations, accept_unowned))
        await self._await_row(run_id, proc)

    # -- commands --------------------------------------------------------------------------
    async def command(self, run_id: str, kind: str, payload: dict | None = None) -> int:
        """Send a CommandKind to the run's engine; its outcome comes back as an event (`watch`)."""
        return await self._db(Store.add_command, run_id, kind, payload or {})

    async def stop(self, run_id: str) -> int:
        return await self.command(run_id, CommandKind.STOP)

    # -- reading and editing the history ---------------------------------------------------
    async def list_runs(self, include_archived: bool = False) -> list[RunRow]:
        await self._db(Store.refresh_liveness)
        return await self._db(Store.list_runs, include_archived)

    async def run_summaries(self, keys: list[str], include_archived: bool = False) -> list[dict]:
        await self._db(Store.refresh_liveness)
        return await self._db(Store.run_summaries, keys, include_archived)

    async def metric_names(self) -> list[str]:
        """Every metric key of the database (Store.metric_names)."""
        return await self._db(Store.metric_names)

    async def config_fields(self) -> list[str]:
        """Every dotted configuration field of the database's runs (Store.config_fields)."""
        return await self._db(Store.config_fields)

    async def flat_configs(self, run_ids: list[str] | None = None) -> dict[str, dict]:
        return await self._db(Store.flat_configs, run_ids)

    async def final_values(self, keys: list[str], run_ids: list[str] | None = None) -> dict[str, dict[str, float]]:
        """run id → key → final value, every run in one query (Store.final_values)."""
        return await self._db(Store.final_values, keys, run_ids)

    async def best_values(self, keys: list[str], run_ids: list[str] | None = None) -> dict[str, dict[str, float]]:
        """run id → key → best value, every run in one query (Store.best_values)."""
        return await self._db(Store.best_values, keys, run_ids)

    async def latest_metrics(self, run_id: str) -> dict[str, float]:
        return await self._db(Store.latest_metrics, run_id)

    async def columns(self, run_id: str, after_iteration: int = 0) -> dict:
        """A run's metrics as numpy columns by key (see Store.columns_since)."""
        return await self._db(Store.columns_since, run_id, after_iteration)

    async def events_at(self, run_id: str, iteration: int, kinds: list[str] | None = None) -> list[EventRow]:
        """The run's events of one iteration (only these kinds): one iteration looked back at."""
        return await self._db(Store.events_at, run_id, iteration, kinds)

    async def tasks(self, run_id: str, statuses: list[str] | None = None) -> list[TaskRow]:
        return await self._db(Store.tasks, run_id, statuses)

    async def series(self, run_id: str, key: str) -> tuple[list[int], list[float]]:
        return await self._db(Store.series, run_id, key)

    async def search_runs(self, query: str, include_archived: bool = False) -> list[str]:
        """Run ids whose name, notes or tags match (the database's full-text index)."""
        return await self._db(Store.search_runs, query, include_archived)

    async def export(self, run_ids: list[str], fmt: str, out: Path, force: bool = False,
                     charts: list[list[str]] | None = None, group_by: str | None = None) -> str:
        """Export runs; return the line that reports it, raise EngineError on failure. CSV and
        JSON are written on the client's export thread; HTML and PDF by the registered
        renderer in a subprocess (Qt offscreen there, the console's loop free here), with the
        console's added `charts` (each a list of metric keys). With `group_by` (a history column,
        e.g. "config:policy.lam") the report compares the runs' groups by that column, as mean
        curves with a band."""
        try:     # its checks touch the file system (a slow mount): on the export thread, not the loop
            renderer = await asyncio.get_running_loop().run_in_executor(
                self._export_pool, render_command, self.db_path, run_ids, fmt, out, force, charts or [], group_by,
                self.python)
        except RendererMissing as e:
            raise EngineError("export failed (exit 1)", str(e)) from None
        except ExportInputError as e:     # a refused target (the database's own file…): no renderer started
            raise EngineError("export failed (exit 2)", f"{PROG}: {one_line(e)}") from None
        if renderer is None:
            code, text = await asyncio.get_running_loop().run_in_executor(
                self._export_pool, run_export, self.db_path, run_ids, fmt, out, force)
        else:
            code, text = await self._render(renderer)
        if code != 0:
            raise EngineError(f"export failed (exit {code})", text)
        return text

    @staticmethod
    async def _render(command: ReportCommand) -> tuple[int, str]:
        proc = await asyncio.create_subprocess_exec(
            *command.argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            stdin=asyncio.subprocess.PIPE)
        output, _ = await proc.communicate(command.stdin)     # the added charts, as JSON
        return proc.returncode or 0, output.decode(errors="replace").strip()

    async def set_notes(self, run_id: str, notes: str) -> None:
        await self._db(Store.set_notes, run_id, notes)

    async def set_tags(self, run_id: str, tags: list[str]) -> None:
        await self._db(Store.set_tags, run_id, tags)

    async def set_archived(self, run_id: str, archived: bool = True) -> None:
        await self._db(Store.set_archived, run_id, archived)

    async def delete_run(self, run_id: str) -> None:
        """Delete the run's rows, its checkpoints and its log (refused while it is live: its status
        says so, or an engine holds its lock, one that is starting too; see Store.delete_run)."""
        run = await self.run(run_id)
        if run and run["status"] in LIVE:
            raise EngineError(f"run {run_id} is {run['status']}; stop it before deleting it")
        try:
            await self._db(Store.delete_run, run_id)
        except RunInUse as e:
            raise EngineError(str(e)) from None

    # -- watching --------------------------------------------------------------------------
    async def run(self, run_id: str) -> RunRow | None:
        await self._db(Store.refresh_liveness)
        return await self._db(Store.get_run, run_id)

    async def watch(self, run_id: str, interval: float = POLL_S, after_iteration: int = 0, after_event: int = 0,
                    status: str | None = None) -> AsyncIterator[Update]:
        """Yield new metrics and events as the engine commits them; end once the run is over and
        everything was delivered. The first update holds the whole history so far, or what came
        after an earlier update's `after_iteration` and `after_event` (a watch picked up again
        over a new connection: nothing twice, nothing lost); `status`, that update's."""
        last_iteration, last_event, last_status = after_iteration, after_event, status
        while True:
            run = await self.run(run_id)
            if run is None:
                return
            events = await self._db(Store.events, run_id, last_event)
            # a `rewound` in the first read is old history (the run was resumed once); only one
            # that arrives while watching means the rows already delivered were deleted
            rewinds = [e["payload"]["to"] for e in events if e["kind"] == EventKind.REWOUND
                       and isinstance(e["payload"], dict) and isinstance(e["payload"].get("to"), int)]
            rewound = last_event > 0 and bool(rewinds)
            if rewound:
                last_iteration = min(last_iteration, *rewinds)
            metrics = await self._db(Store.columns_since, run_id, last_iteration)
            if metrics:
                last_iteration = int(max(cols[0][-1] for cols in metrics.values()))
            if events:
                last_event = events[-1]["id"]
            # a status change alone is news: the run row may be read just before a pause and its
            # event just after, and a paused engine writes nothing more
            if metrics or events or rewound or run["status"] != last_status:
                last_status = run["status"]
                yield Update(run, metrics, events, rewound, last_iteration, last_event)
            if run["status"] in FINAL and run_id not in self.live_processes():
                return
            await asyncio.sleep(interval)

    def live_processes(self) -> set[str]:
        """The runs (or ablation groups) whose engine process this client started and that has not exited."""
        return {rid for rid, p in self.processes.items() if p.returncode is None}

    async def wait(self, run_id: str, poll: float = 0.2) -> str:
        """Wait for the run to end; return its final status. A failed engine raises EngineError."""
        proc = self.processes.get(run_id)
        if proc is not None:
            code = await proc.wait()
            run = await self.run(run_id)
            if code != 0:
                raise EngineError(f"engine exited with code {code} ({run and run['status']})",
                                  self.log_tail(run_id), run_id)
            return run["status"] if run else "missing"
        while True:
            run = await self.run(run_id)
            if run is None or run["status"] in FINAL:
                return run["status"] if run else "missing"
            await asyncio.sleep(poll)

    def log_tail(self, run_id: str, lines: int = 20) -> str:
        try:
            path = log_path(self.db_path, run_id)
            text = path.read_text(encoding="utf-8", errors="replace")
        except UnsafeRunId:
            return "(no log: the run id is not a file name)"
        except FileNotFoundError:
            return f"(no log at {path})"
        return "\n".join(text.splitlines()[-lines:])
