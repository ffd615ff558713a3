"""Valid but extreme numbers in the real console (issue 34, finding 1): a group of two imported
runs whose pool difficulty is 1.5e308 and 1.6e308 (or 1e200 and -1e200), grouped by their group
in History, compared as groups, and reported; a configuration integer of 400 digits as a
History column. What a person sees: the statistics (or "?" saying why), never a crash, a
stream of tracebacks, or a refresh that never ends."""
import logging
import subprocess
import sys

import pytest
from PySide6 import QtCore

from rla_engine import metrics
from rla_gui import guard
from rla_gui.panels.group_comparison import GroupComparisonPanel
from rla_gui.panels.run_groups import STATS_TIP

from extreme_data import EXTREMES, HUGE_INT, extreme_export, imported, set_config_value
from gui_support import until
from test_history_columns import close, open_window, settings_at

DIFFICULTY = f"field:{metrics.DIFFICULTY_MEAN}"
SHOWN = {"near-max": "1.55e+308 ± 7.07e+306", "opposite": "0.000 ± 1.41e+200"}


@pytest.fixture
def guard_log(caplog, monkeypatch):
    """What the guard caught: each a failure Qt would otherwise have been handed."""
    monkeypatch.setattr(guard, "_seen", set())      # every failure logged again in this test
    caplog.set_level(logging.ERROR, logger="rla_gui.guard")
    return caplog


def column_of(history, column_id: str) -> int:
    return next(c for c, column in enumerate(history.model.columns) if column.id == column_id)


@pytest.mark.parametrize("case", list(EXTREMES))
def test_a_group_of_extreme_values_shows_its_statistics_compares_and_reports(qtbot, tmp_path, aloop, drive,
                                                                            recorded, guard_log, case):
    db = tmp_path / "runs.db"
    ids = imported(db, extreme_export(recorded("recorded_group"), EXTREMES[case], tmp_path / "extreme.json"))
    window = open_window(qtbot, db, settings_at(tmp_path))
    history = window.history

    async def scenario():
        await until(lambda: len(history.model.rows) == 2, what="the two imported runs")
        history.set_group_by("run:group")
        groups = history.groups
        await until(lambda: len(groups.groups) == 1, what="one group")
        col = column_of(history, DIFFICULTY)
        index = groups.index(0, col)
        assert index.data() == SHOWN[case]
        assert index.data(QtCore.Qt.ItemDataRole.ToolTipRole) == STATS_TIP
        history.tree.selectionModel().select(groups.index(0, 0), QtCore.QItemSelectionModel.SelectionFlag.Select
                                             | QtCore.QItemSelectionModel.SelectionFlag.Rows)
        history.buttons["Compare"].click()
        panel = await until(lambda: next((v for v in window.comparisons if isinstance(v, GroupComparisonPanel)), None),
                            what="the group comparison tab")
        table = panel.summary_table
        rows = [table.verticalHeaderItem(r).text() for r in range(table.rowCount())]
        assert table.item(rows.index("pool difficulty (mean) final"), 0).text() == SHOWN[case]
        for plot in panel.plots:      # each chart of the tab painted, with a finite range
            plot.grab()
            assert all(map(abs, (*plot.plotItem.vb.viewRange()[0], *plot.plotItem.vb.viewRange()[1])))
    try:
        drive(scenario())
    finally:
        close(qtbot, window)
    assert not guard_log.records, [r.getMessage() for r in guard_log.records]
    report = tmp_path / "groups.html"
    res = subprocess.run([sys.executable, "-m", "rla_gui.report", *ids, "--db", str(db), "--group-by", "run:group",
                          "--format", "html", "--out", str(report)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    assert SHOWN[case] in report.read_text("utf-8")


def test_a_configuration_integer_of_400_digits_is_a_column_that_refreshes(qtbot, tmp_path, aloop, drive,
                                                                         recorded, guard_log):
    db = tmp_path / "runs.db"
    ids = imported(db, extreme_export(recorded("recorded_group"), (0.5, 0.6), tmp_path / "plain.json"))
    set_config_value(db, ids[0], "policy", "lam", str(HUGE_INT))
    window = open_window(qtbot, db, settings_at(tmp_path))
    history = window.history

    async def scenario():
        await until(lambda: len(history.model.rows) == 2, what="the two imported runs")
        history.set_columns(["config:policy.lam"])
        col = column_of(history, "config:policy.lam")
        shown = {}

        def cells():
            for r in range(history.proxy.rowCount()):
                index = history.proxy.index(r, col)
                shown[history.model.rows[history.proxy.mapToSource(index).row()]["id"]] = index.data()
            return shown.get(ids[0])
        await until(cells, what="the configuration column filled")
        history.table.sortByColumn(col, QtCore.Qt.SortOrder.AscendingOrder)     # sorts with the huge one
        history.set_group_by("config:policy.lam")
        await until(lambda: len(history.groups.groups) == 2, what="two groups by policy.lam")
        await window.refresh_history()          # a refresh completes
        return shown, [g.label for g in history.groups.groups]
    try:
        shown, labels = drive(scenario())
    finally:
        close(qtbot, window)
    assert shown[ids[0]] == "1e+400" and shown[ids[1]] == "0.0"       # "outcome only": policy.lam=0
    assert labels == ["policy.lam = 0.0", "policy.lam = 1e+400"]
    assert not guard_log.records, [r.getMessage() for r in guard_log.records]
