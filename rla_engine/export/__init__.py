"""Exports of stored runs, and reading them back for `rla import`. Torch-free and Qt-free.

    formats.py    the formats, the renderer's signature (Render) and ExportInputError
    dispatch.py   `export` (one call, any format) and the files a format writes
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

from .dispatch import export, output_paths
from .formats import DATA_FORMATS, FORMATS, REPORT_FORMATS, ExportInputError, Render

__all__ = ["DATA_FORMATS", "FORMATS", "REPORT_FORMATS", "ExportInputError", "Render", "export", "output_paths"]
