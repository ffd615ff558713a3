"""The HTML and PDF reports as rla_engine.export.Render, and `export` with them: what the
package's public face (rla_gui.report) offers and its command line (__main__) runs. Qt is
imported only by the format's own module, when one is written."""
from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path

from rla_engine.export import export as export_runs


def _renderer(fmt: str, name: str):
    try:
        module = importlib.import_module(f"{__package__}.{fmt}")
    except ModuleNotFoundError as e:
        if e.name == f"{__package__}.{fmt}":
            raise RuntimeError(f"{fmt} export is not available in this installation") from None
        raise
    return getattr(module, name)


def render(fmt: str, bundles: list[dict], path: Path, force: bool, added: Sequence[Sequence[str]] = ()) -> None:
    """Write the HTML or PDF report of `bundles` at `path`, atomically (rla_engine.export.Render);
    `added`: the console's added charts, each a list of metric keys."""
    from rla_engine.export.files import atomic_path, write_atomic

    if fmt == "html":
        write_atomic(path, _renderer("html", "render_html")(bundles, added=added), force)
        return
    write_pdf = _renderer("pdf", "write_pdf")
    with atomic_path(path, force) as tmp:
        write_pdf(bundles, tmp, added=added)
        if tmp.stat().st_size == 0:
            raise RuntimeError("the PDF writer produced an empty file")


def export(db_path: str | Path, run_ids: list[str], fmt: str, out: str | Path,
           force: bool = False) -> list[tuple[Path, int]]:
    """rla_engine.export.export with the HTML and PDF reports of this package."""
    return export_runs(db_path, run_ids, fmt, out, force=force, render=render)
