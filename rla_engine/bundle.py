"""The run bundle: the JSON form of one stored run (export, import, reports), and the checks
that turn an untrusted bundle into rows ready to insert (each field's rule: bundle_check.py).
Pure Python: the store does the SQL."""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from .bundle_check import EVENT, ITERATION, METRIC, RUN, TASK, BundleError, check_row, join, shown
from .paths import RUN_ID_RE, RUN_ID_RULE
from .vocabulary import FINAL, LIVE, TASK_FIELDS, Status

BUNDLE_FORMAT = "rlanything-run/1"           # one run: Store.export_run / import_run
MULTI_FORMAT = "rlanything-runs/1"           # a JSON export of several: {"format", "runs": [bundle…]}
# a task's fields are checked in the table's order: the store inserts them by position
TASK_RULES = {column: TASK[column] for column in TASK_FIELDS}
__all__ = ["BUNDLE_FORMAT", "MULTI_FORMAT", "BundleError", "bundle_rows"]


def _unique(where: str, part: str, rows: list[tuple], key: Callable[[tuple], tuple], what: str) -> None:
    """Rows the database would key alike are refused here, naming both, rather than by a
    constraint half-way through the insert."""
    seen: dict[tuple, int] = {}
    for n, row in enumerate(rows):
        first = seen.setdefault(key(row), n)
        if first != n:
            same = " and ".join(shown(k) for k in key(row))
            raise BundleError(f"{join(where, part)}[{n}]: {what} {same} already at {part}[{first}]")


def _check_shape(bundle: Any, where: str) -> None:
    """The bundle is an object of this format with every part, each part a list."""
    if not isinstance(bundle, dict):
        raise BundleError(f"{where or 'the export'}: expected an object, got {shown(bundle)}")
    if bundle.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"{join(where, 'format')}: {shown(bundle.get('format'))} is not a run bundle "
                          f"(expected {BUNDLE_FORMAT!r})")
    missing = [k for k in ("run", "iterations", "metrics", "events", "tasks") if k not in bundle]
    if missing:
        raise BundleError(f"{where or 'the export'}: missing {', '.join(missing)}")
    for k in ("iterations", "metrics", "events", "tasks"):
        if not isinstance(bundle[k], list):
            raise BundleError(f"{join(where, k)}: expected a list, got {shown(bundle[k])}")


def _run_row(run_part: Any, run_id: str | None, where: str) -> dict:
    run = dict(zip(RUN, check_row(join(where, "run"), run_part, RUN)))
    if run_id is not None:
        run["id"] = run_id
    if not RUN_ID_RE.match(run["id"]):
        raise BundleError(f"{'run id' if run_id is not None else join(where, 'run.id')} {run['id']!r}: "
                          f"expected {RUN_ID_RULE}")
    if run["status"] not in LIVE + FINAL:
        raise BundleError(f"{join(where, 'run.status')}: {shown(run['status'])} is not one of "
                          f"{', '.join(LIVE + FINAL)}")
    if run["status"] in LIVE:
        run["error"] = run["error"] or f"imported while {run['status']}: its engine writes to the source database"
        run["status"], run["ended_at"] = Status.STOPPED.value, run["ended_at"] or run["heartbeat_at"] or time.time()
    run["config_json"] = json.dumps(run.pop("config"), allow_nan=False)
    for k, default in (("notes", ""), ("tags", ""), ("archived", 0), ("iteration", 0)):
        run[k] = default if run.get(k) is None else run[k]
    return run


def bundle_rows(bundle: Any, run_id: str | None, where: str) -> dict:
    """Check every field of a bundle (bundle_check's rules) and turn it into rows ready to insert;
    raise BundleError naming the first bad field. `where` prefixes the field paths ("" at the top
    of a file); `run_id` renames the run."""
    _check_shape(bundle, where)
    run = _run_row(bundle["run"], run_id, where)

    def rows(part: str, spec: dict) -> list[tuple]:
        return [check_row(f"{join(where, part)}[{n}]", r, spec) for n, r in enumerate(bundle[part])]

    iterations, metrics, tasks = rows("iterations", ITERATION), rows("metrics", METRIC), rows("tasks", TASK_RULES)
    _unique(where, "iterations", iterations, lambda r: r[:1], "iteration")
    _unique(where, "metrics", metrics, lambda r: r[:2], "iteration and key")
    _unique(where, "tasks", tasks, lambda r: r[:1], "uid")
    events = [(i, it, t, kind, json.dumps({} if payload is None else payload, allow_nan=False))
              for i, it, t, kind, payload in rows("events", EVENT)]
    return {"run": run, "iterations": iterations, "metrics": metrics, "events": events, "tasks": tasks}
