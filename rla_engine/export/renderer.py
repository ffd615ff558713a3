"""The HTML/PDF renderer, found through an entry point so that the engine never names the
package that provides it (that package imports Qt; the engine must not, not even by name).

A package registers, in its pyproject.toml:

    [project.entry-points."rla.renderers"]
    report = "some_package.report_cli:main"

where `main()` takes the `rla export` arguments from sys.argv (`--db PATH --format FMT --out PATH
[--force] -- RUN_ID…`), prints one line and returns the exit code. It runs in a subprocess, so
Qt is loaded there and never in the engine's process.
"""
from __future__ import annotations

import sys
from importlib.metadata import entry_points

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
