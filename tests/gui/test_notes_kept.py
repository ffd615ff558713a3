"""Typed notes and tags are never lost (issue 35, part 2, item 1): they were kept only by "Save
notes", so selecting another run, opening another database or closing the window first threw
them away. Now they save a moment after the last keystroke, and at once whenever their run is
left — always into the run (and the database) they were typed for."""
from __future__ import annotations

import pytest
from PySide6 import QtCore, QtWidgets
from PySide6.QtTest import QTest

from rla_engine.store import open_store
from rla_gui.main_window import MainWindow

from gui_support import shown_window, until


def stored(db, run_id: str) -> tuple[str, str]:
    """The run's notes and tags as the database holds them, read with a store of our own."""
    store = open_store(db)
    try:
        run = store.get_run(run_id)
    finally:
        store.close()
    assert run is not None
    return run["notes"] or "", run["tags"] or ""


@pytest.fixture
def console(qtbot, tmp_path, aloop, recorded, recorded_db):
    """The window on a database of three runs, the second with notes and tags of its own."""
    db = recorded_db(*recorded("recorded_group"))
    store = open_store(db)
    try:
        a, b, _ = (r["id"] for r in store.list_runs())
        store.set_notes(b, "b's own notes")
        store.set_tags(b, ["b-tag"])
    finally:
        store.close()
    with shown_window(qtbot, db, tmp_path) as win:
        win.history_dock.raise_()
        yield win, db, a, b


def click_run(win: MainWindow, run_id: str) -> None:
    """A person's click on the run's row in History."""
    h = win.history
    row = next(r for r, run in enumerate(h.model.rows) if run["id"] == run_id)
    index = h.proxy.mapFromSource(h.model.index(row, 1))
    h.table.scrollTo(index)
    QTest.mouseClick(h.table.viewport(), QtCore.Qt.MouseButton.LeftButton, QtCore.Qt.KeyboardModifier.NoModifier,
                     h.table.visualRect(index).center())


def type_into(widget: QtWidgets.QWidget, text: str) -> None:
    widget.setFocus()
    QTest.keyClicks(widget, text)


async def listed(win: MainWindow) -> None:
    await until(lambda: len(win.history.model.rows) == 3, 30, "three runs in the history")


def test_notes_typed_then_another_run_selected_at_once_are_kept(console, drive):
    win, db, a, b = console
    h = win.history

    async def scenario():
        await listed(win)
        click_run(win, a)
        type_into(h.notes, "lr too high")
        type_into(h.tags, "baseline, lr")
        click_run(win, b)           # at once: no pause in typing has passed
        assert h.notes.toPlainText() == "b's own notes" and h.tags.text() == "b-tag"
        await until(lambda: stored(db, a) == ("lr too high", "baseline,lr"), 10, "a's notes saved")
        assert stored(db, b) == ("b's own notes", "b-tag")      # b's untouched
        click_run(win, a)
        assert h.notes.toPlainText() == "lr too high"           # shown again, even before a refresh
        assert [t.strip() for t in h.tags.text().split(",")] == ["baseline", "lr"]
    drive(scenario(), timeout=60)


def test_notes_save_after_a_pause_in_typing_without_a_click(console, drive):
    win, db, a, _ = console
    h = win.history

    async def scenario():
        await listed(win)
        click_run(win, a)
        await until(lambda: h.save_notes.text() == "Saved", 5, "nothing pending")
        assert not h.save_notes.isEnabled()
        type_into(h.notes, "judge collapsed")
        type_into(h.tags, "collapse")
        assert h.save_notes.isEnabled()          # something to save
        await until(lambda: stored(db, a) == ("judge collapsed", "collapse"), 10, "saved as typed")
        assert h.save_notes.text() == "Saved" and not h.save_notes.isEnabled()
    drive(scenario(), timeout=60)


def test_save_notes_button_saves_at_once(console, drive):
    win, db, a, _ = console
    h = win.history

    async def scenario():
        await listed(win)
        click_run(win, a)
        type_into(h.tags, "clicked")
        h.save_notes.click()
        assert not h.save_notes.isEnabled()
        await until(lambda: stored(db, a) == ("", "clicked"), 10, "saved on the click")
    drive(scenario(), timeout=60)


def test_notes_typed_then_window_closed_are_saved(console, drive, qtbot):
    win, db, a, _ = console
    h = win.history

    async def scenario():
        await listed(win)
        click_run(win, a)
        type_into(h.notes, "last words")
        type_into(h.tags, "closing")
        win.close()                 # at once
    drive(scenario(), timeout=60)
    qtbot.waitUntil(win.finished.done, timeout=30_000)
    assert stored(db, a) == ("last words", "closing")


def test_notes_typed_then_another_database_opened_stay_with_their_own(console, drive, recorded, recorded_db):
    win, db, a, _ = console
    h = win.history
    other = recorded_db(*recorded("recorded_arithmetic"))

    async def scenario():
        await listed(win)
        click_run(win, a)
        type_into(h.notes, "before the switch")
        type_into(h.tags, "old-db")
        await win.controller.switch_database(other)
        await until(lambda: win.controller.db_path == other, 10, "the other database open")
        await until(lambda: stored(db, a) == ("before the switch", "old-db"), 10, "saved in its own database")
        assert h.notes.toPlainText() == "" and h.tags.text() == ""     # no run of the new one shown yet
        assert "error" not in win.statusBar().currentMessage()
    drive(scenario(), timeout=60)
