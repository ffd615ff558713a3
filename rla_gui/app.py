"""Composition root: `rla-gui [--db PATH]` / `python -m rla_gui`."""
from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import qasync
from PySide6 import QtWidgets

from rla_engine.paths import default_db_path
from rla_engine.store import StoreError, open_store

from .main_window import MainWindow
from .theme import apply_plot_theme


def build_app(argv: list[str]) -> QtWidgets.QApplication:
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(argv)
    app.setOrganizationName("RLAnything")
    app.setApplicationName("RLAnything console")
    apply_plot_theme()
    return app


def check_database(path: Path) -> str | None:
    try:
        open_store(path).close()
    except StoreError as e:
        return str(e)
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rla-gui", description="The RLAnything desktop console.")
    parser.add_argument("--db", help="database file (default: $RLA_DB or the user data dir)")
    args = parser.parse_args(argv)
    db = Path(args.db) if args.db else default_db_path()
    app = build_app(sys.argv[:1])
    problem = check_database(db)
    if problem:
        print(f"rla-gui: {problem}", file=sys.stderr)
        QtWidgets.QMessageBox.critical(None, "Cannot open the database", problem)
        return 2
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    window = MainWindow(db)
    window.show()
    closed = asyncio.Event()
    # the loop outlives the window so the close-time work (a stop command) can finish
    app.setQuitOnLastWindowClosed(False)
    app.lastWindowClosed.connect(closed.set)
    with loop:
        loop.run_until_complete(closed.wait())
        if window.finished is not None:
            loop.run_until_complete(window.finished)
    return 0


if __name__ == "__main__":
    sys.exit(main())
