"""Return starts a run only where a person asked for one (issue 35, Part 2, item 2): the New run
form shares its dock area with History, and a form tabbed behind History is moved out of sight, not
hidden, so its Start button (the default button) and name field kept the focus and a Return pressed
"in History", or to dismiss a message box, launched a run nobody saw asked for. A double-click on
Start launched two runs of one name. Real main window, real engine, tiny runs."""
import warnings

import pytest
from PySide6 import QtCore, QtWidgets
from PySide6.QtTest import QTest

from rla_engine.config import build
from rla_engine.store import open_store

from gui_support import shown_window, until

Key, Mod = QtCore.Qt.Key, QtCore.Qt.KeyboardModifier
LEFT = QtCore.Qt.MouseButton.LeftButton
RUN_NAME = "asked once"


@pytest.fixture
def window(qtbot, tmp_path, aloop):
    with shown_window(qtbot, tmp_path / "h.db", tmp_path, close_choice="stop") as win:
        win.run_form.load_config(build(preset="tiny", sets=["run.iterations=40"]).to_dict(), "tiny")
        win.run_form.name_edit.setText(RUN_NAME)
        win.asked = []          # every start the form asked for
        win.run_form.start_requested.connect(lambda *args: win.asked.append(args))
        yield win


def activate(win) -> None:
    # offscreen, no window manager gives the window its activation back after a box closed
    win.activateWindow()
    if QtWidgets.QApplication.activeWindow() is not win:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            QtWidgets.QApplication.setActiveWindow(win)


def press(win, key, modifier=Mod.NoModifier) -> None:
    """A key where a person's key goes: to the widget with the focus, else to the window."""
    activate(win)
    QTest.keyClick(QtWidgets.QApplication.focusWidget() or win, key, modifier)


def click_dock_tab(win, title: str) -> None:
    bar, index = next((bar, i) for bar in win.findChildren(QtWidgets.QTabBar) if bar.isVisible()
                      for i in range(bar.count()) if bar.tabText(i) == title)
    QTest.mouseClick(bar, LEFT, pos=bar.tabRect(index).center())


def runs(win) -> list[str]:
    store = open_store(win.controller.db_path)
    try:
        return [row["name"] for row in store.list_runs()]
    finally:
        store.close()


async def events_handled() -> None:
    """A positive signal that what the keys queued has run: a timer posted after them fired."""
    fired: list[bool] = []
    QtCore.QTimer.singleShot(0, lambda: fired.append(True))
    await until(lambda: fired, what="the events after the keys")


async def nothing_started(win) -> None:
    await events_handled()
    assert win.asked == [], "a key started a run"
    assert not win.statusBar().currentMessage().startswith("starting the engine")
    assert runs(win) == []


@pytest.mark.parametrize("focus", ["start_button", "name_edit"])
def test_return_with_history_in_front_starts_nothing(window, drive, focus):
    async def scenario():
        form = window.run_form
        activate(window)
        QTest.mouseClick(form.name_edit, LEFT)          # the person was in the form…
        getattr(form, focus).setFocus()
        assert form.start_button.isDefault()
        click_dock_tab(window, "History")               # …then looked at History
        await until(lambda: window.history.isVisible() and not window.history.visibleRegion().isEmpty(),
                    what="History in front")
        press(window, Key.Key_Return)
        press(window, Key.Key_Enter)
        press(window, Key.Key_Return, Mod.ControlModifier)
        QTest.mouseClick(window.history.filter, LEFT)   # Return in History's filter box and its table
        QTest.keyClicks(window.history.filter, "asked")
        press(window, Key.Key_Return)
        window.history.table.setFocus()
        press(window, Key.Key_Return)
        await nothing_started(window)
        assert not form.start_button.isDefault()        # nor shown as the button Return presses

    drive(scenario(), timeout=60)


def test_return_that_dismisses_a_message_box_starts_nothing(window, drive, tmp_path):
    not_a_database = tmp_path / "notes.db"
    not_a_database.write_text("these are notes, not a database\n" * 20, encoding="utf-8")

    async def scenario():
        activate(window)
        window.run_form.start_button.setFocus()
        click_dock_tab(window, "History")
        await until(lambda: not window.history.visibleRegion().isEmpty(), what="History in front")
        window.controller.switch_database(not_a_database)       # File ▸ Open database… chose it
        box = await until(lambda: getattr(window, "_refusal_box", None), what="the refusal box")
        await until(box.isVisible, what="the box shown")
        box.activateWindow()
        QTest.keyClick(QtWidgets.QApplication.focusWidget() or box, Key.Key_Return)
        await until(lambda: not box.isVisible(), what="the box dismissed by Return")
        press(window, Key.Key_Return)                   # and once more, in case it was not seen
        await nothing_started(window)
        assert window.controller.db_path.name == "h.db"

    drive(scenario(), timeout=60)


def test_a_double_click_on_start_launches_one_run(window, drive):
    async def scenario():
        start = window.run_form.start_button
        QTest.mouseClick(start, LEFT)                   # two clicks in one turn of the loop
        QTest.mouseClick(start, LEFT)
        assert not start.isEnabled(), "Start is enabled while its launch is in flight"
        press(window, Key.Key_Return)                   # Return on the focused Start: no second launch either
        await until(lambda: runs(window), timeout=60, what="the run launched")
        await until(start.isEnabled, timeout=60, what="Start back once the launch finished")
        await events_handled()
        assert len(window.asked) == 1
        assert runs(window) == [RUN_NAME]

    drive(scenario(), timeout=120)


def test_return_in_the_form_in_front_still_starts_one_run(window, drive):
    async def scenario():
        form = window.run_form
        activate(window)
        QTest.mouseClick(form.name_edit, LEFT)
        press(window, Key.Key_Return)
        press(window, Key.Key_Return)                   # a second Return while the engine starts
        await until(lambda: runs(window), timeout=60, what="the run Return started")
        await until(form.start_button.isEnabled, timeout=60, what="Start back once the launch finished")
        await events_handled()
        assert len(window.asked) == 1 and runs(window) == [RUN_NAME]

    drive(scenario(), timeout=120)
