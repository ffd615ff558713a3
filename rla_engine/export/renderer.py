"""The HTML/PDF renderer, found through an entry point so that the engine never names the
package that provides it (that package imports Qt; the engine must not, not even by name).

A package registers, in its pyproject.toml:

    [project.entry-points."rla.renderers"]
    report = "some_package.report_cli:main"

where `main()` takes the `rla export` arguments from sys.argv (`report_args`: `--db PATH --format
FMT --out PATH [--force] [--chart KEY,KEY …] [--group-by COLUMN] -- RUN_ID…`), prints one line and
returns the exit code. It runs in a subprocess, so
Qt is loaded there and never in the engine's process.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from importlib.metadata import entry_points
from pathlib import Path

GROUP = "rla.renderers"
NAME = "report"
MISSING = (f"HTML and PDF export need a report renderer (an entry point {NAME!r} in group {GROUP!r}, "
           "registered by the console package), and none is installed")


def renderer_command(python: str = sys.executable, name: str = NAME) -> list[str] | None:
    """The command line that runs the registered renderer `name` (its arguments follow), or None
    when no package registers one. `report` renders runs; `ablation` an ablation group's figures
    (`--db PATH --group GROUP --out PREFIX`)."""
    found = entry_points(group=GROUP, name=name)
    if not found:
        return None
    ep = next(iter(found))
    call = f"import importlib, sys; sys.exit(getattr(importlib.import_module({ep.module!r}), {ep.attr!r})())"
    return [python, "-c", call]


def report_args(db: str | Path, fmt: str, out: str | Path, run_ids: Sequence[str], force: bool = False,
                charts: Iterable[Sequence[str]] = (), group_by: str | None = None) -> list[str]:
    """The renderer's arguments, as `rla export` and the console pass them: `charts` are the added
    charts (each a list of metric keys), `group_by` a History column (a group report)."""
    args = ["--db", str(db), "--format", fmt, "--out", str(out)]
    if force:
        args.append("--force")
    for keys in charts:
        args += ["--chart", ",".join(keys)]
    if group_by:
        args += ["--group-by", group_by]
    return [*args, "--", *run_ids]
