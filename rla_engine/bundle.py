"""The run bundle: the JSON form of one stored run (export, import, reports), and the checks
that turn an untrusted bundle into rows ready to insert. Pure Python: the store does the SQL."""
from __future__ import annotations

import json
import math
import time
from typing import Any

from .paths import RUN_ID_RE, RUN_ID_RULE
from .vocabulary import FINAL, LIVE, Status

BUNDLE_FORMAT = "rlanything-run/1"           # one run: Store.export_run / import_run
MULTI_FORMAT = "rlanything-runs/1"           # a JSON export of several: {"format", "runs": [bundle…]}
TASK_COLUMNS = ("run_id", "uid", "slot", "version", "family", "params_json", "difficulty", "status",
                "last_acc", "direction", "prev_acc", "new_acc", "critic_json", "created_iteration",
                "decided_iteration")


class BundleError(ValueError):
    """A malformed bundle; the message names the first bad field."""


_KIND_TEXT = {"INTEGER": "an integer", "FLOAT": "a finite number", "TEXT": "text", "JSON": "a JSON value"}


def _kind_ok(kind: str, v: Any) -> bool:
    if kind == "FLOAT":
        return (type(v) is float or type(v) is int) and math.isfinite(v)
    if kind == "INTEGER":
        return type(v) is int
    if kind == "TEXT":
        return type(v) is str
    return True


def _check_row(where: str, row: Any, spec: dict[str, tuple[str, bool]]) -> tuple:
    """The values of `row` in `spec`'s order, each checked against its kind; spec maps a field to
    (kind, required). A field that is not required may be missing or null; unknown fields are
    refused (a newer format is a new format name, not silently dropped data)."""
    if not isinstance(row, dict):
        raise BundleError(f"{where}: expected an object, got {type(row).__name__}")
    if len(row) > len(spec) or not row.keys() <= spec.keys():
        extra = sorted(str(k) for k in row.keys() - spec.keys())
        raise BundleError(f"{where}: unknown field {extra[0]!r}")
    out = []
    for field, (kind, required) in spec.items():
        v = row.get(field)
        if v is None:
            if required:
                raise BundleError(f"{where}.{field}: missing (expected {_KIND_TEXT[kind]})")
        elif not _kind_ok(kind, v):
            raise BundleError(f"{where}.{field}: expected {_KIND_TEXT[kind]}, got {json.dumps(v, default=repr)[:60]}")
        out.append(v)
    return tuple(out)



def _check_shape(bundle: Any, where: str) -> None:
    """The bundle is an object of this format with every part, each part a list."""
    if not isinstance(bundle, dict):
        raise BundleError(f"{where}: expected an object, got {type(bundle).__name__}")
    if bundle.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"{where}.format: {bundle.get('format')!r} is not a run bundle "
                         f"(expected {BUNDLE_FORMAT!r})")
    missing = [k for k in ("run", "iterations", "metrics", "events", "tasks") if k not in bundle]
    if missing:
        raise BundleError(f"{where}: missing {', '.join(missing)}")
    for k in ("iterations", "metrics", "events", "tasks"):
        if not isinstance(bundle[k], list):
            raise BundleError(f"{where}.{k}: expected a list, got {type(bundle[k]).__name__}")


def bundle_rows(bundle: Any, run_id: str | None, where: str, run_kinds: dict[str, str],
            task_kinds: dict[str, str]) -> dict:
    """Check a bundle and turn it into rows ready to insert; raise BundleError naming the
    first bad field."""
    _check_shape(bundle, where)
    kinds = dict(run_kinds)
    kinds.pop("config_json")
    spec = {c: (k, c in ("id", "name", "status")) for c, k in kinds.items()}
    spec["config"] = ("JSON", True)
    run = dict(zip(spec, _check_row(f"{where}.run", bundle["run"], spec)))
    if not isinstance(run["config"], dict):
        raise BundleError(f"{where}.run.config: expected an object, got {type(run['config']).__name__}")
    if run_id is not None:
        run["id"] = run_id
    if not RUN_ID_RE.match(run["id"]):
        raise BundleError(f"{'run id' if run_id is not None else where + '.run.id'} {run['id']!r}: "
                         f"expected {RUN_ID_RULE}")
    if run["status"] not in LIVE + FINAL:
        raise BundleError(f"{where}.run.status: {run['status']!r} is not one of {', '.join(LIVE + FINAL)}")
    if run["status"] in LIVE:
        run["error"] = run["error"] or f"imported while {run['status']}: its engine writes to the source database"
        run["status"], run["ended_at"] = Status.STOPPED.value, run["ended_at"] or run["heartbeat_at"] or time.time()
    run["config_json"] = json.dumps(run.pop("config"))
    for k, default in (("notes", ""), ("tags", ""), ("archived", 0), ("iteration", 0)):
        run[k] = default if run.get(k) is None else run[k]
    it_spec = {"iteration": ("INTEGER", True), "t": ("FLOAT", False), "env_steps": ("INTEGER", False),
               "wall_s": ("FLOAT", False)}
    m_spec = {"iteration": ("INTEGER", True), "key": ("TEXT", True), "value": ("FLOAT", True), "t": ("FLOAT", False)}
    ev_spec = {"id": ("INTEGER", False), "iteration": ("INTEGER", False), "t": ("FLOAT", False),
               "kind": ("TEXT", True), "payload": ("JSON", False)}
    tk = task_kinds
    task_spec = {c: (tk[c], c == "uid") for c in TASK_COLUMNS[1:]}
    events = []
    for n, e in enumerate(bundle["events"]):
        i, it, t, kind, payload = _check_row(f"{where}.events[{n}]", e, ev_spec)
        events.append((i, it, t, kind, json.dumps(payload if "payload" in e else {})))
    return {"run": run,
            "iterations": [_check_row(f"{where}.iterations[{n}]", r, it_spec)
                           for n, r in enumerate(bundle["iterations"])],
            "metrics": [_check_row(f"{where}.metrics[{n}]", r, m_spec) for n, r in enumerate(bundle["metrics"])],
            "events": events,
            "tasks": [_check_row(f"{where}.tasks[{n}]", r, task_spec) for n, r in enumerate(bundle["tasks"])]}
