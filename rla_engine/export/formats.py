"""The export formats, the renderer's signature and the error an invalid export raises: what
every module of the package shares (rla_engine.export re-exports them)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import InputError

DATA_FORMATS = ("csv", "parquet", "json")
REPORT_FORMATS = ("html", "pdf")
FORMATS = REPORT_FORMATS + DATA_FORMATS

# (format, bundles, output path, force) -> None: writes the report at the path, atomically
Render = Callable[[str, list[dict], Path, bool], None]


class ExportInputError(InputError, ValueError):
    """Invalid input (unknown run, existing file without force, bad format, an output that is
    not a regular file or cannot be created): the command prints it as one line and exits 2."""
