"""Exports of stored runs, and reading them back for `rla import`. Torch-free and Qt-free.

    tabular.py    CSV (long format, plus an events file) and JSON
    columnar.py   Parquet: the CSV's two files with typed columns (pyarrow, loaded only for it)
    files.py      atomic, no-overwrite, regular-files-only file writing (mode 0600)
    bundles.py    run bundles from the store (export) and from a JSON export (import)
    command.py    one export as the `rla export` command reports it: exit code and message
    renderer.py   the HTML/PDF renderer another package registers (an entry point)

CSV, Parquet and JSON are written here, in the caller's process. HTML and PDF need Qt, which the
engine never imports: `export` takes them from a `render` callable (the report package passes its
own), and the `rla` command runs the registered renderer as a subprocess.
Several run ids make one export holding every run (one JSON file, one pair of CSV or Parquet
files) or one comparison report (HTML/PDF).
"""
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


def output_paths(fmt: str, out: str | Path) -> list[Path]:
    """The files an export to `out` writes (CSV and Parquet write two: see tabular, columnar)."""
    out = Path(out).expanduser()
    if fmt == "csv":
        from .tabular import csv_paths
        return list(csv_paths(out))
    if fmt == "parquet":
        from .columnar import parquet_paths
        return list(parquet_paths(out))
    return [out]


def export(db_path: str | Path, run_ids: list[str], fmt: str, out: str | Path,
           force: bool = False, render: Render | None = None) -> list[tuple[Path, int]]:
    """Export runs of the database at `db_path` to `out`; return (path, size in bytes) of each
    file written. HTML and PDF are written by `render`. Raises ExportInputError for invalid
    input (checked before any work), and lets runtime failures through; either way no partial
    or temporary file is left."""
    from . import tabular
    from .bundles import load_bundles
    from .files import OutputError, refuse_existing, write_atomic, write_atomic_many

    if fmt not in FORMATS:
        raise ExportInputError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    paths = output_paths(fmt, out)
    try:   # only regular files, in a folder that takes a new file (files.py has the rules)
        refuse_existing(paths, force)
    except OutputError as e:
        raise ExportInputError(str(e)) from None
    bundles = load_bundles(db_path, run_ids)
    try:
        if fmt == "csv":
            write_atomic_many(tabular.csv_files(bundles, paths[0]), force)
        elif fmt == "parquet":
            from .columnar import write_parquet
            write_parquet(bundles, paths[0], force)
        elif fmt == "json":
            write_atomic(paths[0], tabular.to_json(bundles), force)
        elif render is None:
            raise RuntimeError(f"{fmt} export is not available in this installation")
        else:
            render(fmt, bundles, paths[0], force)
    except OutputError as e:   # the name appeared (or turned special) while we were rendering
        raise ExportInputError(str(e)) from None
    return [(p, p.stat().st_size) for p in paths]
