"""Runs: creating one, the fields of its row (status, heartbeat, notes, tags, archive), listing,
ending, deleting (under the run's engine lock), and the rows a deleted run left behind."""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import time
from typing import Any, cast
from collections.abc import Iterable, Iterator

from ..paths import (LOCK, RunBusy, UnsafeRunId, check_run_id, checkpoints_dir, hold_lock, owned_by,
                     remove_run_files, unlock_run)
from ..summary import run_duration
from ..text import printable
from ..vocabulary import FINAL, LIVE, RunRow, Status
from .base import _now, dumps, insert_events, require_run
from .liveness import process_start
from .reads import RUN_COLUMNS, TEXT, ReadsMixin, checked
from .schema import StoreError
from .writes import WritesMixin


# every table whose rows belong to one run (by run_id): what deleting a run deletes
RUN_TABLES = ("metrics", "iterations", "events", "commands", "tasks")


class RunInUse(StoreError):
    """A run whose engine holds it (its lock, or a live status): it cannot be deleted now."""


def new_run_id() -> str:
    """Sortable by start time, unique enough for one user's history: `20261130-142501-3fa2`."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


class RunsMixin(WritesMixin, ReadsMixin):
    """A new run commits its iteration 0 as any iteration is committed; its summary reads its last metrics."""

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
        """The run's row, read whole or with its `damaged` note (see reads.py). An id that is not
        plain text (control characters, a blob) is also found by the form `rla runs` prints."""
        rows = self._shown(self.db.query("SELECT * FROM runs WHERE id = ?", [run_id]))
        if not rows and ("\\" in run_id or "\ufffd" in run_id):
            rowids = [rowid for rowid, raw in self.db.execute("SELECT rowid, id FROM runs")
                      if printable(TEXT.salvage(raw)) == run_id]
            rows = self._shown(self.db.query("SELECT * FROM runs WHERE rowid = ?", rowids[:1])) if rowids else []
        return rows[0] if rows else None

    def list_runs(self, include_archived: bool = False) -> list[RunRow]:
        """Newest first. Only a run stored as archived (1) is left out: one whose flag cannot be
        read is listed (and shown as damaged), never hidden."""
        runs = self._shown(self.db.query("SELECT * FROM runs ORDER BY created_at DESC"))
        return runs if include_archived else [r for r in runs if r["archived"] != 1]

    def _shown(self, rows: Iterable[dict]) -> list[RunRow]:
        shown = [cast(RunRow, checked(r, RUN_COLUMNS)) for r in rows]
        for r in shown:
            if r["id"] in self._gone and r["status"] in LIVE:
                r["status"], r["ended_at"] = Status.CRASHED.value, r["heartbeat_at"]
                r["error"] = r["error"] or "engine process is gone"
        return shown

    def run_config(self, run_id: str, damaged_ok: bool = False) -> dict:
        """The run's configuration. A run whose row is damaged (a hand edit, see reads.py) is
        refused unless `damaged_ok` (showing it): resuming or rerunning it would build on a row
        whose state cannot be known; the message names the run, the column and what it holds."""
        run = self.get_run(run_id)
        if run is None:
            raise StoreError(f"no run {run_id!r} in {self.path}")
        damaged = run.get("damaged")
        if damaged and not damaged_ok:
            what = ", ".join(f"{column} = {printable(value)}" for column, value in damaged.items())
            raise StoreError(f"run {printable(run['id'])}: its row in {self.path} is damaged ({what}); "
                             "repair or delete it before resuming")
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
            require_run(conn, run_id, self.path)
            insert_events(conn, [(run_id, iteration, t, status, dumps(payload))])
            conn.execute("UPDATE runs SET status = ?, heartbeat_at = ?, ended_at = ?, error = coalesce(?, error) "
                         "WHERE id = ?", [status, t, t, error, run_id])

    def heartbeat(self, run_id: str) -> bool:
        """Stamp the run's heartbeat; False if its row is gone (deleted under its engine)."""
        with self._write() as conn:
            return conn.execute("UPDATE runs SET heartbeat_at = ? WHERE id = ?", [_now(), run_id]).rowcount > 0

    def set_notes(self, run_id: str, notes: str) -> None:
        self._update_run(run_id, notes=notes)

    def set_tags(self, run_id: str, tags: Iterable[str]) -> None:
        self._update_run(run_id, tags=",".join(t.strip() for t in tags if t.strip()))

    def set_archived(self, run_id: str, archived: bool = True) -> None:
        self._update_run(run_id, archived=int(archived))

    def delete_run(self, run_id: str) -> None:
        """Delete the run's rows, then its files (checkpoints, log, config: paths.remove_run_files),
        holding the run's engine lock throughout. An engine that took the lock first (a `rla
        resume` that has not yet marked the run live, too) makes this a RunInUse; one that
        comes after finds the run gone and changes nothing."""
        with self._engine_lock(run_id):
            with self._write() as conn:
                for table in RUN_TABLES:
                    conn.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
                conn.execute("DELETE FROM runs WHERE id = ?", [run_id])
            with contextlib.suppress(UnsafeRunId):     # a row from elsewhere whose id is no file name has no files
                remove_run_files(self.path, run_id, self.database_id)

    @contextlib.contextmanager
    def _engine_lock(self, run_id: str) -> Iterator[None]:
        """The run's engine lock (paths.lock_run), not waited for. Only in a checkpoint folder of
        this database: an imported copy's folder is another database's run, and a link is never
        followed; a lock file that cannot be opened (a planted link) keeps engines out as well."""
        try:
            folder = checkpoints_dir(self.path, run_id)
            ours = not folder.is_symlink() and folder.is_dir() and owned_by(folder, self.database_id, self.path)
        except UnsafeRunId:
            ours = False
        fd = None
        if ours:
            try:
                fd = hold_lock(folder / LOCK, "an engine")
            except RunBusy as e:      # "unknown": caught between taking the lock and writing its pid
                who = "an engine holds its lock" if e.holder == "unknown" else f"engine {e.holder}"
                raise RunInUse(f"run {run_id} is live ({who}); stop it before deleting it") from None
            except OSError:
                pass
        try:
            yield
        finally:
            if fd is not None:
                unlock_run(fd)

    def orphaned_rows(self, remove: bool = False) -> dict[str, int]:
        """Rows of runs whose run row is gone (an engine that went on after its run was deleted
        by an older version, a hand edit), by table; with `remove`, deleted in one transaction."""
        orphan = "NOT EXISTS (SELECT 1 FROM runs WHERE runs.id = {0}.run_id)"     # a NULL run_id too
        with self._write() if remove else self._snapshot() as conn:
            counts = {table: conn.execute(f"SELECT count(*) FROM {table} WHERE {orphan.format(table)}").fetchone()[0]
                      for table in RUN_TABLES}
            if remove:
                for table in RUN_TABLES:
                    conn.execute(f"DELETE FROM {table} WHERE {orphan.format(table)}")
        return counts

    def run_summaries(self, keys: Iterable[str], include_archived: bool = False) -> list[dict]:
        """Run rows with the last value of `keys` and a duration, for history tables."""
        keys, now = list(keys), _now()
        rows: list[dict] = [dict(r) for r in self.list_runs(include_archived)]
        finals = self.final_values(keys, [r["id"] for r in rows])     # one query for all runs
        for r in rows:
            r.update(finals.get(r["id"], {}))
            r["duration"] = run_duration(r, now)
        return rows
