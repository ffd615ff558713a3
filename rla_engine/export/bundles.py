"""Run bundles in and out: from the store for an export, from a JSON export for `rla import`
(a regular file of bounded size, strict JSON, every field checked before a database is opened).

A bundle is `Store.export_run`'s dict (format "rlanything-run/1"): the run row with its parsed
config, iterations, metrics, events and task rows. A JSON export holds one bundle, or several in
the form {"format": "rlanything-runs/1", "runs": [bundle, …]}.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from ..bundle import BundleError, bundle_rows
from ..bundle_check import shown, strict_json
from ..errors import InputError
from ..store import BUNDLE_FORMAT, MULTI_FORMAT, StoreError, open_store
from ..user_files import read_user_file
from .formats import ExportInputError

# The largest export `rla import` reads. A long gridworld run exports about 5 KB per iteration
# (its metrics, a few events, task rows): 100,000 iterations come to ~500 MB, and a
# language-model run has far fewer, larger iterations. Twice that is room enough; parsing a file
# this big already takes several GB of memory, and beyond it an import should not be tried
# blindly (a hostile file must not take the machine's memory).
MAX_IMPORT_BYTES = 1 << 30


def load_bundles(db_path: str | Path, run_ids: list[str]) -> list[dict]:
    """The bundles of `run_ids`, in that order (duplicates dropped). An unknown id or a missing
    database raises ExportInputError naming it. Live runs whose engine is gone are marked
    crashed first, as `rla show` does, so an export never calls a dead run running."""
    ids = list(dict.fromkeys(run_ids))
    if not ids:
        raise ExportInputError("no run id given")
    try:
        store = open_store(db_path, create=False)
    except StoreError as e:
        raise ExportInputError(str(e)) from None
    try:
        unknown = [i for i in ids if not store.run_exists(i)]
        if unknown:
            raise ExportInputError(f"no run {', '.join(repr(i) for i in unknown)} in {store.path}")
        try:
            store.refresh_liveness()
        except sqlite3.Error:   # a read-only copy of a database: export what it says
            pass
        return [store.export_run(i) for i in ids]
    finally:
        store.close()


def _read_json(path: Path) -> Any:
    data = read_user_file(path, MAX_IMPORT_BYTES, "a JSON export")     # an InputError when refused
    try:
        return strict_json(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{path}: not a JSON export ({e})") from None
    except RecursionError:
        raise InputError(f"{path}: not a JSON export (nested too deeply)") from None


def _bundles_of(path: Path, doc: Any) -> list[tuple[str, Any]]:
    """(field path, bundle) of each run a parsed export holds."""
    if isinstance(doc, dict) and doc.get("format") == MULTI_FORMAT:
        if not isinstance(doc.get("runs"), list) or not doc["runs"]:
            raise InputError(f"{path}: 'runs' must be a non-empty list of run bundles")
        return [(f"runs[{n}]", b) for n, b in enumerate(doc["runs"])]
    if isinstance(doc, dict) and doc.get("format") == BUNDLE_FORMAT:
        return [("", doc)]
    fmt = doc.get("format") if isinstance(doc, dict) else None
    raise InputError(f"{path}: format {shown(fmt)} is not an RLAnything export "
                     f"(expected {BUNDLE_FORMAT!r} or {MULTI_FORMAT!r})")


def read_bundles(file: str | Path) -> list[dict]:
    """The runs of a JSON export (one bundle, or the several-runs form), every field of every
    run checked as the import will check it (bundle.bundle_rows), so a bad one is refused
    before any database is opened, let alone created. Raises InputError, one line naming the
    file and the field, for a file that is not a regular one, is too big, is not strict JSON
    (NaN and Infinity are not) or holds a bad field."""
    path = Path(file).expanduser()
    found = _bundles_of(path, _read_json(path))
    ids: dict[str, str] = {}
    for where, bundle in found:
        try:
            run_id = bundle_rows(bundle, None, where)["run"]["id"]
        except BundleError as e:
            raise InputError(f"{path}: {e}") from None
        if run_id in ids:
            raise InputError(f"{path}: {where}.run.id {run_id!r} is also {ids[run_id]}.run.id")
        ids[run_id] = where
    return [bundle for _, bundle in found]
