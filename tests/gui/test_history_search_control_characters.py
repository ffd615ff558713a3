"""A NUL or another control character typed (or pasted) into History's search box (issue 34,
finding 8): the full-text search raised OperationalError ("unterminated string"), the status line
showed it, and runs matching by their notes were never shown. Now it separates words."""
from __future__ import annotations

import pytest

from rla_engine.store import open_store
from rla_gui.main_window import MainWindow

from gui_support import shown_window, until


@pytest.fixture
def window(qtbot, tmp_path, aloop, recorded, recorded_db):
    db = recorded_db(*recorded("recorded_group"))
    store = open_store(db)
    try:
        noted = store.list_runs()[0]["id"]
        store.set_notes(noted, "judge collapsed after the override; zebra")
    finally:
        store.close()
    with shown_window(qtbot, db, tmp_path) as win:
        yield win, noted


def _shown_ids(win: MainWindow) -> list[str]:
    proxy = win.history.proxy
    return [win.history.model.rows[proxy.mapToSource(proxy.index(r, 0)).row()]["id"] for r in range(proxy.rowCount())]


def test_control_characters_in_the_search_box_separate_words(window, drive):
    win, noted = window

    async def scenario():
        await until(lambda: len(win.history.model.rows) == 3, 30, "three runs in the history")
        for between in ("\x00", "\x1b", "\x7f"):
            query = f"zebra{between}collapsed"
            win.history.filter.setText(query)
            assert win.history.filter.text() == query        # the box keeps the character
            await until(lambda: _shown_ids(win) == [noted], 10, f"the noted run found by {query!r}")
            assert "error" not in win.statusBar().currentMessage()
            win.history.filter.setText("")
            await until(lambda: win.history.proxy.rowCount() == 3, 10, "every run back")
    drive(scenario(), timeout=90)
