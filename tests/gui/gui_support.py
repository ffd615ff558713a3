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


def _geometry(widgets) -> list:
    from PySide6 import QtWidgets
    tree = [w for top in widgets for w in (top, *top.findChildren(QtWidgets.QWidget))]
    return [(w.geometry().getRect(), w.isVisible()) for w in tree]


async def laid_out(*widgets, timeout=10.0):
    """Until Qt has laid the widgets out: two turns of the event loop in a row (each delivers what
    was posted before it: layout requests, resizes) that change no geometry or visibility anywhere
    in their trees. The positive sign to wait for before checking that something did not appear (a
    scroll bar): a fixed wait could look before the layout ran, and pass having checked nothing.
    (Not processEvents: called from a task of the console's loop it would run other tasks inside it.)"""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    seen, same = None, 0
    while loop.time() < deadline:
        await asyncio.sleep(0.02)       # the loop turns: Qt delivers its posted events
        now = _geometry(widgets)
        same = same + 1 if now == seen else 0
        if same == 2:
            return
        seen = now
    raise AssertionError("the layout never settled")


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


def runs_with_data(db, with_config=False):
    """Every run of the database at `db`, by id, with its metrics read into a RunData: what a
    comparison is given. `with_config` adds the run's configuration as the controller does."""
    import json

    from rla_engine.store import open_store
    from rla_gui.model.run_data import RunData

    store = open_store(db, create=False)
    try:
        out = []
        for run in sorted(store.list_runs(), key=lambda r: r["id"]):
            data = RunData()
            data.add(store.columns_since(run["id"]))
            out.append(({**run, "config": json.loads(run["config_json"])} if with_config else run, data))
        return out
    finally:
        store.close()


def shown_dashboard(qtbot, size=(1400, 900)):
    """A dashboard on a session with no database, shown at `size`: (session, panel)."""
    from rla_gui.panels.dashboard import DashboardPanel
    from rla_gui.session import RunSession

    session = RunSession(None)
    panel = DashboardPanel(session)
    qtbot.addWidget(panel)
    panel.resize(*size)
    panel.show()
    qtbot.waitExposed(panel)
    return session, panel
