"""Run bundles in and out: from the store for an export, from a JSON export for `rla import`.

A bundle is `Store.export_run`'s dict (format "rlanything-run/1"): the run row with its parsed
config, iterations, metrics, events and task rows. A JSON export holds one bundle, or several in
the form {"format": "rlanything-runs/1", "runs": [bundle, …]}.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from ..errors import InputError
from ..store import BUNDLE_FORMAT, MULTI_FORMAT, StoreError, open_store
from . import ExportInputError


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


def _read_json(path: Path):
    try:
        return json.loads(path.read_bytes())
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path} is a folder, not a JSON export") from None
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{path}: not a JSON export ({e})") from None
    except RecursionError:
        raise InputError(f"{path}: not a JSON export (nested too deeply)") from None


def read_bundles(file: str | Path) -> list[dict]:
    """The runs of a JSON export: one bundle, or the several-runs form. Raises InputError for a
    file that cannot be read or is no export; the bundles themselves are checked on import."""
    path = Path(file).expanduser()
    doc = _read_json(path)
    if isinstance(doc, dict) and doc.get("format") == MULTI_FORMAT:
        if not isinstance(doc.get("runs"), list) or not doc["runs"]:
            raise InputError(f"{path}: 'runs' must be a non-empty list of run bundles")
        return doc["runs"]
    if isinstance(doc, dict) and doc.get("format") == BUNDLE_FORMAT:
        return [doc]
    fmt = doc.get("format") if isinstance(doc, dict) else None
    raise InputError(f"{path}: format {fmt!r} is not an RLAnything export "
                     f"(expected {BUNDLE_FORMAT!r} or {MULTI_FORMAT!r})")
