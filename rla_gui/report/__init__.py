"""Run reports and data exports: `python -m rla_gui.report` (what `rla export` runs) and the
console's File ▸ Export.

    bundle.py    run bundles from the store; the environment a report names
    tabular.py   CSV (long format, plus an events file) and JSON
    files.py     atomic, no-overwrite, regular-files-only file writing (mode 0600)
    html.py      render_html(bundles) -> str           (HTML report; Qt, offscreen)
    pdf.py       write_pdf(bundles, path) -> None       (PDF report; Qt, offscreen)
    __main__.py  the command line

Importing this package is cheap and Qt-free; CSV and JSON exports never import Qt or torch.
Several run ids make one comparison report (HTML/PDF) or one file holding every run (CSV/JSON).
"""
from __future__ import annotations

import importlib
from pathlib import Path

FORMATS = ("html", "pdf", "csv", "json")


class ExportInputError(ValueError):
    """Invalid input (unknown run, existing file without force, bad format, an output that is
    not a regular file or cannot be created): the command prints it as one line and exits 2."""


def output_paths(fmt: str, out: str | Path) -> list[Path]:
    """The files an export to `out` writes (CSV writes two: see tabular)."""
    out = Path(out).expanduser()
    if fmt == "csv":
        from .tabular import csv_paths
        return list(csv_paths(out))
    return [out]


def _renderer(fmt: str, name: str):
    try:
        module = importlib.import_module(f"{__name__}.{fmt}")
    except ModuleNotFoundError as e:
        if e.name == f"{__name__}.{fmt}":
            raise RuntimeError(f"{fmt} export is not available in this installation") from None
        raise
    return getattr(module, name)


def export(db_path: str | Path, run_ids: list[str], fmt: str, out: str | Path,
           force: bool = False) -> list[tuple[Path, int]]:
    """Export runs of the database at `db_path` to `out`; return (path, size in bytes) of each
    file written. Raises ExportInputError for invalid input (checked before any work), and lets
    runtime failures through; either way no partial or temporary file is left."""
    from .files import OutputError, atomic_path, refuse_existing, write_atomic, write_atomic_many

    if fmt not in FORMATS:
        raise ExportInputError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    paths = output_paths(fmt, out)
    try:   # only regular files, in a folder that takes a new file (files.py has the rules)
        refuse_existing(paths, force)
    except OutputError as e:
        raise ExportInputError(str(e)) from None
    from .bundle import load_bundles
    bundles = load_bundles(db_path, run_ids)
    try:
        if fmt == "csv":
            from .tabular import csv_files
            write_atomic_many(csv_files(bundles, paths[0]), force)
        elif fmt == "json":
            from .tabular import to_json
            write_atomic(paths[0], to_json(bundles), force)
        elif fmt == "html":
            write_atomic(paths[0], _renderer("html", "render_html")(bundles), force)
        else:
            write_pdf = _renderer("pdf", "write_pdf")
            with atomic_path(paths[0], force) as tmp:
                write_pdf(bundles, tmp)
                if tmp.stat().st_size == 0:
                    raise RuntimeError("the PDF writer produced an empty file")
    except OutputError as e:   # the name appeared (or turned special) while we were rendering
        raise ExportInputError(str(e)) from None
    return [(p, p.stat().st_size) for p in paths]
