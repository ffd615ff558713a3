"""One export as the `rla export` command reports it: an exit code (0 written, 2 invalid input,
1 runtime failure, 130 interrupted) and one line to print — the same from the `rla` command,
the report renderer's own command line, and the console (which shows the line). Which process
writes it is `render_command`'s to say, for the `rla` command and the console alike."""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from .dispatch import export
from .formats import DATA_FORMATS, ExportInputError, Render
from .renderer import MISSING, renderer_command, report_args

PROG = "rla export"


def one_line(message: object) -> str:
    """A message as one line, even when a path in it holds a line break."""
    return str(message).replace("\r", "\\r").replace("\n", "\\n")


def run_export(db_path: str | Path, run_ids: list[str], fmt: str, out: str | Path, force: bool = False,
               render: Render | None = None) -> tuple[int, str]:
    """Export (see `export`) and return (exit code, the line that reports it). With RLA_DEBUG
    set, a runtime failure is raised with its traceback instead."""
    t0 = time.perf_counter()
    try:
        with terminate_as_interrupt():
            written = export(db_path, run_ids, fmt, out, force=force, render=render)
    except ExportInputError as e:
        return 2, f"{PROG}: {one_line(e)}"
    except KeyboardInterrupt:
        return 130, f"{PROG}: interrupted; nothing written"
    except Exception as e:
        if os.environ.get("RLA_DEBUG"):
            raise
        return 1, f"{PROG}: failed: {type(e).__name__}: {one_line(e)}"
    dt = time.perf_counter() - t0
    return 0, "wrote " + " and ".join(f"{p} ({n} bytes)" for p, n in written) + f" in {dt:.2f} s"


class RendererMissing(RuntimeError):
    """An HTML or PDF export where no report renderer is installed; the message is MISSING."""


def render_command(db_path: str | Path, run_ids: Sequence[str], fmt: str, out: str | Path, force: bool = False,
                   charts: Iterable[Sequence[str]] = (), group_by: str | None = None,
                   python: str = sys.executable) -> list[str] | None:
    """None for a data format: CSV, Parquet and JSON are written in the caller's process
    (`run_export`). Else the command line of the registered renderer that writes the HTML or PDF
    in a subprocess (it imports Qt, which the engine never does), with the console's added
    `charts` and `group_by` (renderer.report_args); RendererMissing where none is installed."""
    if fmt in DATA_FORMATS:
        return None
    renderer = renderer_command(python)
    if renderer is None:
        raise RendererMissing(MISSING)
    return [*renderer, *report_args(db_path, fmt, out, run_ids, force, charts, group_by)]


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt for the block, as Ctrl-C does: the export's temporary
    files are removed on the way out (SIGTERM's default would leave a half-written one behind)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(_signum, _frame):
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)
