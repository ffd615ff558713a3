"""`python -m rla_gui.report --db PATH --format html|pdf|csv|json --out PATH [--force] [--chart KEY,KEY…]
[--group-by COLUMN] RUN_ID…`

The renderer `rla export` and the console run as a subprocess for HTML and PDF (so the engine's
process never imports Qt); it is registered as the engine's `rla.renderers` entry point in
pyproject.toml. It writes CSV and JSON too, through the engine's own export. Exit codes as
the `rla` command: 0 written; 2 invalid input (one line: unknown run, existing file without
--force, bad format, an output that is not a regular file — a device, pipe, socket, folder or
symbolic link, refused even with --force — or cannot be created there); 1 runtime failure.
Files are written atomically, mode 0600 (rla_engine/export/files.py). Rendering runs offscreen
when there is no display; CSV and JSON never import Qt or torch.
"""
from __future__ import annotations

import argparse
import functools
import sys

from rla_engine.export import FORMATS, Render
from rla_engine.export.command import PROG, run_export

from ..headless import ensure_offscreen
from .rendering import render


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):   # one line, exit 2 (argparse's usage block is noise here)
        print(f"{PROG}: {message}", file=sys.stderr)
        sys.exit(2)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Export runs as an HTML/PDF report or CSV/JSON data.")
    p.add_argument("run_ids", nargs="+", metavar="RUN_ID", help="one run, or several for a comparison")
    p.add_argument("--format", required=True, choices=FORMATS)
    p.add_argument("--out", required=True, help="output file (CSV also writes OUT.events.csv)")
    p.add_argument("--force", action="store_true", help="overwrite existing files")
    p.add_argument("--db", help="database file (default: $RLA_DB or the user data dir)")
    p.add_argument("--chart", action="append", default=[], metavar="KEY[,KEY…]",
                   help="an added chart of these metric keys (HTML and PDF; repeat for several)")
    p.add_argument("--group-by", metavar="COLUMN",
                   help="HTML and PDF: compare the runs' groups of equal value in this history column "
                        "(config:policy.lam, run:arm, final:KEY, best:KEY) as mean curves with a band")
    return p


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    if a.db:
        db = a.db
    else:
        from rla_engine.paths import default_db_path
        db = default_db_path()
    if a.format in ("html", "pdf"):
        ensure_offscreen()
    added = [[k.strip() for k in chart.split(",") if k.strip()] for chart in a.chart]
    renderer: Render = functools.partial(render, added=[c for c in added if c])
    if a.group_by and a.format in ("html", "pdf"):
        from ..widgets.run_columns import parse
        if parse(a.group_by) is None:
            print(f"{PROG}: --group-by {a.group_by!r}: not a history column (e.g. config:policy.lam, run:arm)",
                  file=sys.stderr)
            return 2
        from .groups import render as group_render     # Qt: only for a report
        renderer = group_render(a.group_by)
    code, line = run_export(db, a.run_ids, a.format, a.out, force=a.force, render=renderer)
    print(line, file=sys.stdout if code == 0 else sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
