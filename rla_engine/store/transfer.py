"""Transfer of runs between databases: export of one as a bundle of plain data, import of bundles all or nothing."""
from __future__ import annotations

import sqlite3
from typing import Any

from ..bundle import BUNDLE_FORMAT, BundleError, bundle_rows
from ..vocabulary import TASK_COLUMNS, TASK_FIELDS
from .base import StoreBase, _loads, insert_events
from .schema import StoreError


class TransferMixin(StoreBase):
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
            tasks = [dict(zip(TASK_FIELDS, r)) for r in conn.execute(
                f"SELECT {', '.join(TASK_FIELDS)} FROM tasks WHERE run_id = ? ORDER BY uid", args)]
        return {"format": BUNDLE_FORMAT, "run": run, "iterations": iterations, "metrics": metrics,
                "events": events, "tasks": tasks}

    def import_run(self, bundle: dict, run_id: str | None = None) -> str:
        """Rebuild a run from a bundle (export_run's form) in one transaction; `run_id` renames it.
        See import_runs."""
        return self.import_runs([bundle], [run_id])[0]

    def import_runs(self, bundles: list[dict], run_ids: list[str | None] | None = None) -> list[str]:
        """Import several bundles all or nothing; return their ids in this database.

        Every field of every bundle is checked first (bundle_check: types, ranges, sizes, text
        that encodes); a malformed one, or an id this database already has, raises StoreError
        naming it and writes nothing. A run that was live in its source (running/paused)
        arrives `stopped`: no engine here drives it. Event ids are kept when all are free here
        (a fresh database gets an exact copy), else the run's events get new ids in the same order."""
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
                insert_events(conn, ((e[0], rid, *e[1:]) for e in events), with_ids=True)
                conn.execute("RELEASE keep_ids")
                return
            except sqlite3.IntegrityError:   # an id is taken here: fall back to fresh ids
                conn.execute("ROLLBACK TO keep_ids")
                conn.execute("RELEASE keep_ids")
        insert_events(conn, ((rid, *e[1:]) for e in events))

    @staticmethod
    def _import_plan(bundle: Any, run_id: str | None, where: str) -> dict:
        try:
            return bundle_rows(bundle, run_id, where)
        except BundleError as e:
            raise StoreError(str(e)) from None
