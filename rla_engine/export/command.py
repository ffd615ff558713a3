"""One export as the `rla export` command reports it: an exit code (0 written, 2 invalid input,
1 runtime failure, 130 interrupted) and one line to print — the same from the `rla` command,
the report renderer's own command line, and the console (which shows the line). Which process
writes it is `render_command`'s to say, for the `rla` command and the console alike."""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from .dispatch import check_targets, export, output_paths
from .formats import DATA_FORMATS, ExportInputError, Render
from .renderer import MISSING, charts_json, read_charts, renderer_command, report_args

PROG = "rla export"
RENDERER_GRACE_S = 30.0    # an interrupted HTML/PDF renderer's time to remove its temporary file


def one_line(message: object) -> str:
    """A message as one line, even when a path in it holds a line break."""
    return str(message).replace("\r", "\\r").replace("\n", "\\n")


def run_export(db_path: str | Path, run_ids: list[str], fmt: str, out: str | Path, force: bool = False,
               render: Render | None = None) -> tuple[int, str]:
    """Export (see `export`) and return (exit code, the line that reports it). With RLA_DEBUG
    set, a runtime failure is raised with its traceback instead."""
    t0 = time.perf_counter()
    before: dict[Path, tuple | None] = {}
    try:
        with terminate_as_interrupt():
            before = identities(output_paths(fmt, out))
            written = export(db_path, run_ids, fmt, out, force=force, render=render)
            dt = time.perf_counter() - t0
            return 0, "wrote " + " and ".join(f"{p} ({n} bytes)" for p, n in written) + f" in {dt:.2f} s"
    except ExportInputError as e:
        return 2, f"{PROG}: {one_line(e)}"
    except KeyboardInterrupt:
        return 130, interrupted_line(before)
    except Exception as e:
        if os.environ.get("RLA_DEBUG"):
            raise
        return 1, f"{PROG}: failed: {type(e).__name__}: {one_line(e)}"


def identities(paths: Iterable[Path]) -> dict[Path, tuple | None]:
    """What is at each path now (device, inode, change time; None: nothing), to tell afterwards
    which files an interrupted export did write: each is a new file (files.py), never an edit."""
    def identity(p: Path) -> tuple | None:
        try:
            st = os.lstat(p)
        except (OSError, ValueError):
            return None
        return st.st_dev, st.st_ino, st.st_ctime_ns
    return {p: identity(p) for p in paths}


def interrupted_line(before: dict[Path, tuple | None]) -> str:
    """What an interrupted export left, truthfully: nothing, or which of its files it wrote."""
    now = identities(before)
    written = [str(p) for p, was in before.items() if now[p] is not None and now[p] != was]
    if not written:
        return f"{PROG}: interrupted; nothing written"
    missing = [str(p) for p in before if str(p) not in written]
    rest = f"; not written: {' and '.join(missing)}" if missing else ""
    return one_line(f"{PROG}: interrupted after it wrote {' and '.join(written)}{rest}")


class RendererMissing(RuntimeError):
    """An HTML or PDF export where no report renderer is installed; the message is MISSING."""


class ReportCommand(NamedTuple):
    """How to run the renderer for one export: its command line, what to give it on stdin (the
    added charts), and the files it is to write."""
    argv: list[str]
    stdin: bytes
    outputs: list[Path]


def render_command(db_path: str | Path, run_ids: Sequence[str], fmt: str, out: str | Path, force: bool = False,
                   charts: Iterable[Sequence[str]] = (), group_by: str | None = None,
                   python: str = sys.executable) -> ReportCommand | None:
    """None for a data format: CSV, Parquet and JSON are written in the caller's process
    (`run_export`). Else how to run the registered renderer that writes the HTML or PDF in a
    subprocess (it imports Qt, which the engine never does), with the console's added `charts`
    and `group_by` (renderer.report_args); RendererMissing where none is installed. The target
    is checked first (ExportInputError): a refused one costs no renderer."""
    if fmt in DATA_FORMATS:
        return None
    outputs = check_targets(db_path, fmt, out, force)
    renderer = renderer_command(python)
    if renderer is None:
        raise RendererMissing(MISSING)
    return ReportCommand([*renderer, *report_args(db_path, fmt, out, run_ids, force, group_by)],
                         charts_json(charts), outputs)


def run_renderer(command: ReportCommand) -> tuple[int, str, str]:
    """Run the renderer as `rla export` does; (exit code, its stdout, its stderr). It runs in a
    session of its own, so Ctrl-C at the terminal reaches this process only: on Ctrl-C or SIGTERM
    this process stops the renderer (SIGTERM: it removes its temporary file) and gives (130, "",
    the one line that says what was written) — one line, not one from each process."""
    before = identities(command.outputs)
    proc: subprocess.Popen | None = None
    try:
        with terminate_as_interrupt():
            proc = subprocess.Popen(command.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True)
            out, err = proc.communicate(command.stdin)
            return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")
    except KeyboardInterrupt:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=RENDERER_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return 130, "", interrupted_line(before)


def chart_option(text: str) -> list[str]:
    """`--chart KEY[,KEY…]`: the keys of one added chart, split at commas, spaces trimmed."""
    return [k.strip() for k in text.split(",") if k.strip()]


def chart_json_option(text: str) -> list[str]:
    """`--chart-json '["a,b", "-x"]'`: one added chart's keys exactly, whatever they hold."""
    try:
        charts: list[list[str]] | None = read_charts(f"[{text}]")
    except ValueError:
        charts = None
    if charts is None or len(charts) > 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected one JSON list of metric keys, e.g. '[\"a,b\", \"-x\"]'")
    return charts[0] if charts else []


def added_charts(charts: list) -> list[list[str]]:
    """The charts of `--chart`/`--chart-json` (one list, in the order given); ExportInputError for
    an option that came without keys (`--chart=--`: argparse takes `--` as the end of options)."""
    for keys in charts:
        if not keys:
            raise ExportInputError("--chart: no metric key given (for a key such as '--', '-x' or one with a "
                                   "comma, use --chart-json '[\"--\"]')")
    return charts


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
