"""The History panel over a database with hand-edited rows: every
run is listed, the damaged one shows as such, and stored text is shown, never obeyed."""
import sqlite3

from PySide6 import QtCore

from rla_engine import metrics
from rla_engine.store import open_store
from rla_engine.summary import SUMMARY_KEYS

ROLES = (QtCore.Qt.ItemDataRole.DisplayRole, QtCore.Qt.ItemDataRole.ToolTipRole,
         QtCore.Qt.ItemDataRole.ForegroundRole, QtCore.Qt.ItemDataRole.UserRole)


def test_history_lists_a_damaged_row_as_damaged_and_the_rest_as_usual(qtbot, recorded, recorded_db):
    from rla_gui.panels.history import COLUMNS, HistoryPanel
    db = recorded_db(*recorded("recorded_group"))
    conn = sqlite3.connect(db)
    ids = [r[0] for r in conn.execute("SELECT id FROM runs ORDER BY created_at DESC")]
    conn.execute("UPDATE runs SET status = NULL, iteration = 'many', started_at = 'yesterday', archived = NULL, "
                 "heartbeat_at = X'00' WHERE id = ?", [ids[0]])
    conn.execute("UPDATE runs SET name = ?, notes = ? WHERE id = ?",
                 ["<b>bold</b>\x1b[2J\u202e", "<img src=x> note", ids[1]])
    conn.execute("UPDATE metrics SET value = 'lots' WHERE run_id = ?", [ids[2]])
    conn.commit()
    conn.close()
    store = open_store(db, create=False)
    store.refresh_liveness()
    rows = store.run_summaries(SUMMARY_KEYS)
    store.close()

    panel = HistoryPanel()
    qtbot.addWidget(panel)
    panel.set_runs(rows)
    model = panel.model
    assert sorted(r["id"] for r in model.rows) == sorted(ids)
    cells = {}
    for r in range(model.rowCount()):
        for c in range(model.columnCount()):
            index = model.index(r, c)
            values = [model.data(index, role) for role in ROLES]      # none raises
            cells[(model.rows[r]["id"], COLUMNS[c][1])] = values
    assert cells[(ids[0], "status")][0] == "damaged" and cells[(ids[0], "iteration")][0] == "?"
    assert cells[(ids[0], "started_at")][0] == "?"
    assert "iteration" in cells[(ids[0], "name")][1] and "damaged row" in cells[(ids[0], "name")][1]
    name, tip = cells[(ids[1], "name")][:2]
    assert name == "<b>bold</b>\\x1b[2J\\u202e"
    assert "<img" not in tip and "&lt;img src=x&gt; note" in tip
    assert cells[(ids[2], metrics.SUCCESS)][0] == "?"
    panel.table.sortByColumn(5, QtCore.Qt.SortOrder.AscendingOrder)      # sorting mixed values is no crash
    panel.select(ids[0])
    assert panel.selected_ids() == [ids[0]]
