"""`python -m rla_gui.report --db PATH --format html|pdf|csv|json --out PATH [--force] [--chart KEY,KEY…]
[--charts-json FILE|-] [--group-by COLUMN] RUN_ID…`

The renderer `rla export` and the console run as a subprocess for HTML and PDF (so the engine's
process never imports Qt); it is registered as the engine's `rla.renderers` entry point in
pyproject.toml. It writes CSV and JSON too, through the engine's own export. Exit codes as
the `rla` command: 0 written; 2 invalid input (one line: unknown run, existing file without
--force, bad format, an output that is not a regular file — a device, pipe, socket, folder or
symbolic link, refused even with --force — or cannot be created there); 1 runtime failure.
Files are written atomically, mode 0600 (rla_engine/export/files.py), never over the database's
own files. Rendering runs offscreen when there is no display; CSV and JSON never import Qt or torch.
`rla export` and the console give the added charts as JSON on stdin (`--charts-json -`, see
rla_engine/export/renderer.py), so a metric key arrives exactly as it is, whatever it holds.
"""
from __future__ import annotations

import argparse
import functools
import sys

from rla_engine.errors import InputError
from rla_engine.export import FORMATS, Render
from rla_engine.export.command import PROG, chart_option, run_export
from rla_engine.export.renderer import CHARTS_ON_STDIN, read_charts

from ..headless import ensure_offscreen
from .rendering import render

CHARTS_FILE_CAP = 4 << 20     # bytes: thousands of charts' keys


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
    p.add_argument("--chart", action="append", default=[], metavar="KEY[,KEY…]", type=chart_option,
                   help="an added chart of these metric keys (HTML and PDF; repeat for several)")
    p.add_argument("--charts-json", metavar="FILE",
                   help=f"added charts as JSON, a list of lists of metric keys, from FILE ({CHARTS_ON_STDIN}: stdin)")
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
    try:
        added = [*a.chart, *_charts_json(a.charts_json)]
    except (OSError, ValueError, InputError) as e:
        print(f"{PROG}: --charts-json {a.charts_json}: {e}", file=sys.stderr)
        return 2
    renderer: Render = functools.partial(render, added=[c for c in added if c])
    if a.group_by and a.format in ("html", "pdf"):
        from ..model.run_columns import parse
        if parse(a.group_by) is None:
            print(f"{PROG}: --group-by {a.group_by!r}: not a history column (e.g. config:policy.lam, run:arm)",
                  file=sys.stderr)
            return 2
        from .groups import render as group_render     # Qt: only for a report
        renderer = group_render(a.group_by)
    code, line = run_export(db, a.run_ids, a.format, a.out, force=a.force, render=renderer)
    print(line, file=sys.stdout if code == 0 else sys.stderr)
    return code


def _charts_json(source: str | None) -> list[list[str]]:
    if source is None:
        return []
    if source == CHARTS_ON_STDIN:
        return read_charts(sys.stdin.read())
    from rla_engine.user_files import read_user_file      # a regular file under a cap, never a FIFO
    return read_charts(read_user_file(source, CHARTS_FILE_CAP, "a JSON file of charts").decode("utf-8"))


if __name__ == "__main__":
    sys.exit(main())
