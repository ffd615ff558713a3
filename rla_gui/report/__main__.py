"""`python -m rla_gui.report --db PATH --format html|pdf|csv|json --out PATH [--force] RUN_ID…`

What `rla export` runs as a subprocess (so the engine package never imports Qt). Exit codes as
the `rla` command: 0 written; 2 invalid input (one line: unknown run, existing file without
--force, bad format, an output that is not a regular file — a device, pipe, socket, folder or
symbolic link, refused even with --force — or cannot be created there); 1 runtime failure.
Files are written atomically, mode 0600 (rla_gui/report/files.py). Rendering runs offscreen
when there is no display; CSV and JSON never import Qt or torch.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from ..headless import ensure_offscreen
from . import FORMATS, ExportInputError, export

PROG = "rla export"


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
    return p


def _one_line(message: object) -> str:
    """A message as one line, even when a path in it holds a line break."""
    return str(message).replace("\r", "\\r").replace("\n", "\\n")


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    if a.db:
        db = a.db
    else:
        from rla_engine.paths import default_db_path
        db = default_db_path()
    if a.format in ("html", "pdf"):
        ensure_offscreen()
    t0 = time.perf_counter()
    try:
        written = export(db, a.run_ids, a.format, a.out, force=a.force)
    except ExportInputError as e:
        print(f"{PROG}: {_one_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; nothing written", file=sys.stderr)
        return 130
    except Exception as e:
        if os.environ.get("RLA_DEBUG"):
            raise
        print(f"{PROG}: failed: {type(e).__name__}: {_one_line(e)}", file=sys.stderr)
        return 1
    dt = time.perf_counter() - t0
    print("wrote " + " and ".join(f"{p} ({n} bytes)" for p, n in written) + f" in {dt:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
