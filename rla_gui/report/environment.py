"""The environment a report names: Python, platform and package versions of the machine that
writes it. Qt-free and torch-free (versions come from the installed metadata)."""
from __future__ import annotations

import platform
import sqlite3
from importlib import metadata

# Distribution names as installed (importlib.metadata), in the order a report lists them.
PACKAGES = ("rlanything", "torch", "numpy", "PySide6", "pyqtgraph", "sqlite-utils", "qasync")


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
