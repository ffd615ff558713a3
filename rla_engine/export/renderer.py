"""The HTML/PDF renderer, found through an entry point so that the engine never names the
package that provides it (that package imports Qt; the engine must not, not even by name).

A package registers, in its pyproject.toml:

    [project.entry-points."rla.renderers"]
    report = "some_package.report_cli:main"

where `main()` takes the `rla export` arguments from sys.argv (`report_args`: `--db=PATH
--format=FMT --out=PATH [--force] [--group-by=COLUMN] --charts-json=- -- RUN_ID…`), reads the added
charts from its stdin (`charts_json`), prints one line and returns the exit code. It runs in a
subprocess, so Qt is loaded there and never in the engine's process.

Nothing a person typed or a database holds becomes an argv word of its own: a value is attached
to its option (`--out=-x` is a path, never an option), and metric keys, which may be anything
(`-x`, `--help`, `a,b`, ` edge `), travel as JSON on stdin.
"""
from __future__ import annotations

import json
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


CHARTS_ON_STDIN = "-"     # `--charts-json -`: the added charts are the renderer's stdin


def report_args(db: str | Path, fmt: str, out: str | Path, run_ids: Sequence[str], force: bool = False,
                group_by: str | None = None) -> list[str]:
    """The renderer's arguments, as `rla export` and the console pass them: `group_by` a History
    column (a group report). The added charts go to its stdin (`charts_json`)."""
    args = [f"--db={db}", f"--format={fmt}", f"--out={out}", f"--charts-json={CHARTS_ON_STDIN}"]
    if force:
        args.append("--force")
    if group_by:
        args.append(f"--group-by={group_by}")
    return [*args, "--", *run_ids]


def charts_json(charts: Iterable[Sequence[str]]) -> bytes:
    """The added charts (each a list of metric keys) as the renderer reads them (`read_charts`)."""
    return json.dumps([list(keys) for keys in charts]).encode("utf-8")


def read_charts(text: str) -> list[list[str]]:
    """The added charts from `charts_json`'s text, every key exactly as it was; ValueError naming
    what is wrong (not a list of lists of strings, a NUL in a key)."""
    try:
        charts = json.loads(text)
    except ValueError as e:
        raise ValueError(f"not JSON ({e})") from None
    if not isinstance(charts, list) or not all(isinstance(c, list) and all(isinstance(k, str) for k in c)
                                               for c in charts):
        raise ValueError("expected a list of charts, each a list of metric keys (strings)")
    for key in (k for c in charts for k in c):
        if "\0" in key:
            raise ValueError(f"metric key {key!r} holds a NUL character")
    return [c for c in charts if c]
