"""Any metric, any chart: a person adds a chart for any stored key from a
searchable list, arranges and removes charts, and finds them again per database after a restart."""
import sqlite3
import subprocess
import sys

import pytest
from PySide6 import QtCore

from rla_engine import metrics
from rla_gui.main_window import MainWindow

from gui_support import TINY, laid_out, until


def start_run(db, name: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rla_engine.cli", "run", "--db", str(db), *TINY,
                             "--iterations", "4", "--name", name], stdout=subprocess.DEVNULL)


def last_value(db, key: str, run_id: str) -> float:
    with sqlite3.connect(db) as con:
        return con.execute("SELECT value FROM metrics WHERE key = ? AND run_id = ? ORDER BY iteration DESC LIMIT 1",
                           [key, run_id]).fetchone()[0]


@pytest.fixture(scope="module")
def databases(tmp_path_factory):
    folder = tmp_path_factory.mktemp("charts")
    first, second = folder / "first.db", folder / "second.db"
    engines = [start_run(first, "one"), start_run(first, "one again"), start_run(second, "two")]  # at once
    assert [e.wait(120) for e in engines] == [0, 0, 0]
    return first, second


def open_window(qtbot, db, settings_file):
    settings = QtCore.QSettings(str(settings_file), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(db, settings=settings)
    win.ask_close_choice = lambda run_id: "stop"
    qtbot.addWidget(win)
    win.show()
    return win


def close_window(qtbot, win):
    win.close()
    if win.finished is not None:
        qtbot.waitUntil(win.finished.done, timeout=30_000)


def pick(win, search: str, keys: list[str]):
    """Add chart…, type in the search box, check the keys, press Add chart."""
    dash = win.dashboard
    dash.add_button.click()
    picker = dash.picker
    picker.search.setText(search)
    shown = [i.data(QtCore.Qt.ItemDataRole.UserRole) for i in picker.items()
             if not picker.keys.isRowHidden(picker.keys.row(i))]
    for key in keys:
        assert key in shown, (search, shown)
        picker.check(key)
    assert picker.add.isEnabled()
    picker.add.click()


def test_add_arrange_remove_and_remember_charts_per_database(qtbot, tmp_path, databases, drive):
    first, second = databases
    ini = tmp_path / "settings.ini"
    tier = metrics.eval_tier_key(0.5)
    win = open_window(qtbot, first, ini)

    async def add_and_arrange():
        await until(lambda: len(win.history.model.rows) == 2, what="the runs listed")
        win.open_run(win.history.model.rows[0]["id"])
        await until(lambda: win.controller.session.data.last_iteration() == 4, what="the run loaded")
        first_run = win.history.model.rows[0]["id"]
        dash = win.dashboard
        win.resize(1500, 950)
        await until(lambda: win.size() == QtCore.QSize(1500, 950), what="the window resized")
        await laid_out(win)
        # 0. the four panels fill the view exactly: no scroll bar before a chart is added
        assert dash.chart_area.viewport().height() > 400
        assert not dash.chart_area.verticalScrollBar().isVisible()
        # 1. the list is searchable: "kl" finds the KL loss, not μ
        pick(win, "kl", [metrics.LOSS_KL])
        assert [p.plotItem.titleLabel.text for p in dash.added] == [metrics.LOSS_KL]
        # 2. several keys, one chart; a held-out tier is reachable too
        pick(win, "mu", [metrics.MU])
        dash.add_button.click()
        dash.picker.check(tier)
        dash.picker.check(metrics.SUCCESS)
        dash.picker.add.click()
        assert dash.chart_keys() == [[metrics.LOSS_KL], [metrics.MU], [tier, metrics.SUCCESS]]
        # 3. each chart shows the run's values: unsmoothed, its last point is the database's last value
        dash.view.smoothing.setValue(0)
        dash.refresh()
        for plot in dash.added:
            for key, curve in plot.curves.items():
                _, y = curve.line.getData()
                assert y is not None and len(y) and y[-1] == pytest.approx(last_value(first, key, first_run)), key
        # 4. below the four panels, two to a row, each tall enough to read, reached by scrolling
        await until(dash.chart_area.verticalScrollBar().isVisible, timeout=10, what="the scroll bar")
        grid = dash.grid
        assert grid.getItemPosition(grid.indexOf(dash.added[0]))[:2] == (2, 0)
        assert all(p.minimumHeight() >= 200 for p in dash.added)
        # 5. arranged from the chart's own menu: the μ chart moves first, the KL chart goes
        mu = dash.added[1]
        next(a for a in mu.plotItem.vb.menu.actions() if a.text() == "Move chart earlier").trigger()
        assert dash.chart_keys()[0] == [metrics.MU]
        kl = dash.added[1]
        next(a for a in kl.plotItem.vb.menu.actions() if a.text() == "Remove chart").trigger()
        assert dash.chart_keys() == [[metrics.MU], [tier, metrics.SUCCESS]]
        assert kl not in dash.plots

    drive(add_and_arrange(), timeout=60)
    close_window(qtbot, win)

    # 6. a restart finds them; another database has its own (none), and switching back restores them
    again = open_window(qtbot, first, ini)
    assert again.dashboard.chart_keys() == [[metrics.MU], [tier, metrics.SUCCESS]]

    async def switch():
        again.open_database(second)
        await until(lambda: again.controller.db_path == second, what="the second database")
        assert again.dashboard.chart_keys() == []
        pick(again, "rss", [metrics.SYS_RSS_MB])     # a key this run has not stored: offered, greyed
        again.open_database(first)
        await until(lambda: again.controller.db_path == first, what="back to the first")
        assert again.dashboard.chart_keys() == [[metrics.MU], [tier, metrics.SUCCESS]]
        again.open_database(second)
        await until(lambda: again.controller.db_path == second, what="the second again")
        assert again.dashboard.chart_keys() == [[metrics.SYS_RSS_MB]]

    drive(switch(), timeout=60)
    close_window(qtbot, again)


def test_a_comparison_adds_a_chart_of_any_key_with_a_curve_per_run(qtbot, tmp_path, databases, drive):
    first, _ = databases
    win = open_window(qtbot, first, tmp_path / "settings.ini")

    async def compare():
        await until(lambda: len(win.history.model.rows) == 2, what="the runs listed")
        ids = [r["id"] for r in win.history.model.rows]
        win.controller.compare(ids)
        await until(lambda: win.comparisons, what="the comparison tab")
        cmp = win.comparisons[-1]
        cmp.view.smoothing.setValue(0)
        cmp.add_button.click()
        cmp.picker.search.setText("kl")
        cmp.picker.check(metrics.LOSS_KL)
        cmp.picker.add.click()
        plot = cmp.added[-1]
        assert plot.plotItem.titleLabel.text == metrics.LOSS_KL
        lasts = sorted(c.line.getData()[1][-1] for c in plot.curves)
        assert lasts == pytest.approx(sorted(last_value(first, metrics.LOSS_KL, i) for i in ids))
        next(a for a in plot.plotItem.vb.menu.actions() if a.text() == "Remove chart").trigger()
        assert plot not in cmp.plots and not cmp.added

    drive(compare(), timeout=60)
    close_window(qtbot, win)
