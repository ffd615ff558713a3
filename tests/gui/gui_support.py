"""Helpers shared by the GUI tests."""
import asyncio
import contextlib

TINY = ["--preset", "tiny"]          # resources/presets/tiny.toml: seconds per run



async def until(predicate, timeout=60.0, what="condition"):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@contextlib.contextmanager
def shown_window(qtbot, db, folder, close_choice="detach"):
    """The real main window on `db`, its settings in `folder`; closed afterwards, waiting for its
    engines' ends to be handled."""
    from PySide6 import QtCore

    from rla_gui.main_window import MainWindow
    settings = QtCore.QSettings(str(folder / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(db, settings=settings)
    win.ask_close_choice = lambda run_id: close_choice
    qtbot.addWidget(win)
    win.show()
    yield win
    win.close()
    if win.finished is not None:
        qtbot.waitUntil(win.finished.done, timeout=30_000)
