"""Composition root: `rla-gui [--db PATH | --db ssh://[user@]host[:port]/path]` / `python -m rla_gui`."""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
from typing import cast
import sys
from pathlib import Path

import qasync
from PySide6 import QtCore, QtWidgets

from rla_engine.paths import default_db_path
from rla_engine.remote import AddressError, RemoteError, SshAddress, connected, parse_location

from . import gc_guard
from .main_window import MainWindow
from .model.location import Location
from .session import check_database
from .theme import apply_plot_theme
from .widgets.plain_text import message_box


def build_app(argv: list[str]) -> QtWidgets.QApplication:
    app = cast(QtWidgets.QApplication, QtWidgets.QApplication.instance() or QtWidgets.QApplication(argv))
    app.setOrganizationName("RLAnything")
    app.setApplicationName("RLAnything console")
    apply_plot_theme()
    gc_guard.install(app)       # cyclic garbage is collected on this thread only (see gc_guard)
    return app


def watch_signals() -> QtCore.QSocketNotifier:
    """Python runs a signal handler only when it next gets control; a wake-up pipe watched by
    the Qt loop makes that immediate. When the display dies together with us (`timeout
    xvfb-run …` ends both), Qt's "X11 connection broke" is then no error: leave quietly."""
    rfd, wfd = os.pipe()
    for fd in (rfd, wfd):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wfd)
    notifier = QtCore.QSocketNotifier(rfd, QtCore.QSocketNotifier.Type.Read)
    notifier.activated.connect(lambda *_: None)     # control returns to Python: the handler runs

    def messages(mode, context, text):
        if "X11 connection broke" in text:
            try:
                signalled = bool(os.read(rfd, 64))
            except BlockingIOError:
                signalled = False
            if not signalled:
                print("rla-gui: the display went away", file=sys.stderr)
            os._exit(0 if signalled else 1)
        print(text, file=sys.stderr)
    QtCore.qInstallMessageHandler(messages)
    return notifier


def refuse(problem: str) -> int:
    """A database that cannot be opened: said on stderr and in a box; exit code 2 (bad input)."""
    print(f"rla-gui: {problem}", file=sys.stderr)
    message_box(QtWidgets.QMessageBox.Icon.Critical, "Cannot open the database", problem).exec()   # a path: plain
    return 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rla-gui", description="The RLAnything desktop console.")
    parser.add_argument("--db", help="database file, or a database on another machine as "
                                     "ssh://[user@]host[:port]/path/to/runs.db[?rla=/path/to/rla] "
                                     "(default: $RLA_DB or the user data dir)")
    args = parser.parse_args(argv)
    app = build_app(sys.argv[:1])
    try:
        db: Location = parse_location(args.db) if args.db else default_db_path()
    except AddressError as e:
        return refuse(str(e))
    if isinstance(db, Path):
        problem = check_database(db)
        if problem:
            return refuse(problem)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with loop:
        # one run of the loop to the end: between two run_until_complete calls qasync's loop is not
        # running, yet Qt still delivers the close-time work's callbacks, and a step of it then failed
        # with "no running event loop" (seen closing with "let it run on" after a database switch)
        problem = loop.run_until_complete(console(app, db))
    return refuse(problem) if problem else 0


async def console(app: QtWidgets.QApplication, db: Location) -> str | None:
    """The window on `db`, until it is closed and its close-time work is done; a remote database
    that cannot be reached is not opened: why, returned (the window never shows)."""
    client = None
    if isinstance(db, SshAddress):
        print(f"rla-gui: connecting to {db.label}…", file=sys.stderr)
        try:
            client = await connected(db)
        except RemoteError as e:
            return e.cause
    window = MainWindow(db, client=client)
    window.show()
    closed = asyncio.Event()
    # the loop outlives the window so the close-time work (a stop command) can finish
    app.setQuitOnLastWindowClosed(False)
    app.lastWindowClosed.connect(closed.set)

    def on_signal(signum, _frame):
        # SIGTERM/SIGINT (a logout, Ctrl+C, `timeout`): leave at once, as "let it run on" would —
        # the display may be going away too, so no dialog and no more drawing. Engines run in
        # their own sessions and keep going; the console holds nothing that needs flushing
        # beyond its preferences.
        with contextlib.suppress(Exception):
            window.save_state()
            window.settings.sync()
        os._exit(0)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    window.signal_notifier = watch_signals()   # kept alive with the window
    await closed.wait()
    if window.finished is not None:
        await window.finished
    return None


if __name__ == "__main__":
    sys.exit(main())
