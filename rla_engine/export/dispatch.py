"""`export`, which writes runs in any format, and the files a format writes: the package's public
face (rla_engine.export) re-exports them."""
from __future__ import annotations

from pathlib import Path

from .formats import FORMATS, ExportInputError, Render


def output_paths(fmt: str, out: str | Path) -> list[Path]:
    """The files an export to `out` writes (CSV and Parquet write two: see tabular, columnar)."""
    if not str(out):      # Path("") is the current folder: say what was given instead
        raise ExportInputError("--out is empty: give the file to write")
    out = Path(out).expanduser()
    if fmt == "csv":
        from .tabular import csv_paths
        return list(csv_paths(out))
    if fmt == "parquet":
        from .columnar import parquet_paths
        return list(parquet_paths(out))
    return [out]


def check_targets(db_path: str | Path | None, fmt: str, out: str | Path, force: bool) -> list[Path]:
    """The files an export writes, once each may be written (files.refuse_existing: never the
    database's own files, only regular files, an existing one only with `force`); raises
    ExportInputError naming the path and why, before any work."""
    from .files import OutputError, refuse_existing

    if fmt not in FORMATS:
        raise ExportInputError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    paths = output_paths(fmt, out)
    try:
        refuse_existing(paths, force, db=db_path)
    except OutputError as e:
        raise ExportInputError(str(e)) from None
    return paths


def export(db_path: str | Path, run_ids: list[str], fmt: str, out: str | Path,
           force: bool = False, render: Render | None = None) -> list[tuple[Path, int]]:
    """Export runs of the database at `db_path` to `out`; return (path, size in bytes) of each
    file written. HTML and PDF are written by `render`. Raises ExportInputError for invalid
    input (checked before any work), and lets runtime failures through; either way no partial
    or temporary file is left."""
    from . import tabular
    from .bundles import load_bundles
    from .files import OutputError, write_atomic, write_atomic_many

    paths = check_targets(db_path, fmt, out, force)
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
