"""What a report is made of: run bundles from the store, and the environment that renders them.

Qt-free and torch-free, so CSV/JSON exports and the console's own process can import it.
A bundle is `Store.export_run`'s dict (format "rlanything-run/1"): the run row with its parsed
config, iterations, metrics, events and task rows.
"""
from __future__ import annotations

import platform
import sqlite3
from importlib import metadata
from pathlib import Path

from rla_engine.store import StoreError, open_store

from . import ExportInputError

# Distribution names as installed (importlib.metadata), in the order a report lists them.
PACKAGES = ("rlanything", "torch", "numpy", "PySide6", "pyqtgraph", "sqlite-utils", "qasync")


def load_bundles(db_path: str | Path, run_ids: list[str]) -> list[dict]:
    """The bundles of `run_ids`, in that order (duplicates dropped). An unknown id or a missing
    database raises ExportInputError naming it. Live runs whose engine is gone are marked
    crashed first, as `rla show` does, so a report never calls a dead run running."""
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
        except sqlite3.Error:   # a read-only copy of a database: report what it says
            pass
        return [store.export_run(i) for i in ids]
    finally:
        store.close()


def package_version(name: str) -> str | None:
    """The installed version of a distribution, from its metadata (importing nothing)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def environment_info() -> dict:
    """Python, platform and package versions of the machine that writes the report (never
    imports torch: versions come from the installed metadata). The device a run trained on is
    in its run row, not here."""
    versions: dict[str, str | None] = {name: package_version(name) for name in PACKAGES}
    return {"python": platform.python_version(), "implementation": platform.python_implementation(),
            "platform": platform.platform(), "machine": platform.machine(),
            "sqlite": sqlite3.sqlite_version, "packages": versions}
