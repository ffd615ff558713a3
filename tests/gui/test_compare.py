"""Comparing runs in the console, and notes/tags/search on the history (real database: recorded
runs imported, and one live engine run for editing while live)."""
import subprocess
import sys

import numpy as np
import pytest
from PySide6 import QtCore

from rla_engine.store import open_store
from rla_engine.summary import config_differences

from gui_support import TINY, shown_window, until


def cli_run(db, name, *sets, group=None, iterations=3):
    args = [sys.executable, "-m", "rla_engine.cli", "run", "--db", str(db), "--iterations", str(iterations),
            "--name", name, *TINY, *[a for s in sets for a in ("--set", s)]]
    if group:
        args += ["--group", group]
    return args


@pytest.fixture(scope="module")
def group(recorded):
    """The recorded group (tests/data): three runs, "base", "outcome only" (policy.lam=0) and
    "five verdicts" (judge.m=5, policy.lam=0.5)."""
    return recorded("recorded_group")


@pytest.fixture(scope="module")
def three_runs(group, recorded_db):
    return recorded_db(*group)


@pytest.fixture
def window(qtbot, tmp_path, aloop, three_runs):
    with shown_window(qtbot, three_runs, tmp_path) as win:
        yield win


def test_config_differences_lists_exactly_the_differing_keys():
    a = {"policy": {"lam": 1.0, "lr": 0.001}, "judge": {"m": 3}}
    b = {"policy": {"lam": 0.0, "lr": 0.001}, "judge": {"m": 3}}
    c = {"policy": {"lam": 0.5, "lr": 0.001}, "judge": {"m": 5}}
    assert config_differences([a, b, c]) == ["judge.m", "policy.lam"]
    assert config_differences([a, a]) == []


def test_compare_three_runs_overlays_panels_and_lists_differences(window, drive, qtbot, group):
    async def scenario():
        await until(lambda: len(window.history.model.rows) == 3, what="three runs in the history")
        window.history.table.selectAll()
        compare = window.history.buttons["Compare"]
        qtbot.mouseClick(compare, QtCore.Qt.MouseButton.LeftButton)
        await until(lambda: window.comparisons, what="comparison tab")
        return window.comparisons[-1]
    win = drive(scenario(), timeout=60)
    names = sorted(r["name"] for r, _ in win.runs)
    assert names == sorted(b["run"]["name"] for b in group) and len(set(names)) == 3
    by_id = {b["run"]["id"]: b for b in group}
    assert win.differing == ["judge.m", "policy.lam"]
    assert win.config_table.rowCount() == 2
    labels = [win.config_table.verticalHeaderItem(i).text() for i in range(2)]
    assert labels == ["judge.m", "policy.lam"]
    for plot in win.plots:                      # one curve per run, named by the run
        assert len(plot.curves) == 3
        legend = sorted(label.text for _, label in plot.plotItem.legend.items)
        assert legend == names
        key = plot.key_box.currentText()
        for curve, (run, data) in zip(plot.curves, win.runs):   # every recorded point of the run
            recorded = sum(m["key"] == key for m in by_id[run["id"]]["metrics"])
            assert len(curve.line.getData()[0]) == len(data.xy(key)[0]) == recorded >= 2
    rows = [win.summary_table.verticalHeaderItem(i).text() for i in range(win.summary_table.rowCount())]
    assert "success (train) final" in rows and "env steps" in rows and "accepted variants" in rows
    win.close()


def test_one_run_of_a_group_opens_the_group(window, drive, qtbot):
    async def scenario():
        await until(lambda: len(window.history.model.rows) == 3)
        window.history.select(window.history.model.rows[0]["id"])
        window.history.buttons["Compare"].click()
        await until(lambda: window.comparisons, what="group comparison")
        return window.comparisons[-1]
    win = drive(scenario(), timeout=60)
    assert len(win.runs) == 3
    win.close()


def test_notes_and_tags_are_editable_while_live_and_searchable(window, drive, qtbot, tmp_path):
    db = window.controller.db_path
    proc = subprocess.Popen(cli_run(db, "live one", iterations=5000), stdout=subprocess.DEVNULL)
    store = open_store(db)
    try:
        async def scenario():
            await until(lambda: any(r["name"] == "live one" and r["status"] == "running"
                                    for r in window.history.model.rows), what="live run listed")
            run_id = next(r["id"] for r in window.history.model.rows if r["name"] == "live one")
            window.history.select(run_id)
            window.history.notes.setPlainText("judge collapsed after the override; zebra")
            window.history.tags.setText("ablation, keep")
            window.history.save_notes.click()
            await until(lambda: (store.get_run(run_id)["notes"] or "").endswith("zebra"), what="notes saved")
            assert store.get_run(run_id)["status"] == "running"
            assert store.get_run(run_id)["tags"] == "ablation,keep"
            window.history.filter.setText("zebra")
            await until(lambda: window.history.proxy.rowCount() == 1, what="search by a word of the notes")
            window.history.filter.setText("nothing-matches-this")
            await until(lambda: window.history.proxy.rowCount() == 0)
            window.history.filter.setText("")
            store.add_command(run_id, "stop")
        drive(scenario(), timeout=120)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("fmt, suffix", [("html", ".html"), ("csv", ".csv")])
def test_file_export_writes_the_selected_runs_without_blocking(window, drive, qtbot, tmp_path, monkeypatch, group,
                                                               fmt, suffix):
    out = tmp_path / f"report{suffix}"
    chosen = next(f for f, v in window.EXPORT_FILTERS.items() if v == fmt)
    monkeypatch.setattr("rla_gui.widgets.file_dialogs.save_file_name", lambda *a, **k: (str(out), chosen))

    async def scenario():
        await until(lambda: len(window.history.model.rows) >= 3)
        window.history.table.selectAll()
        ticks = []
        timer = QtCore.QTimer()
        timer.timeout.connect(lambda: ticks.append(1))
        timer.start(20)
        window.ask_export()                        # Ctrl+E
        await until(lambda: out.exists(), timeout=60, what="the exported file")
        timer.stop()
        return len(ticks)
    ticks = drive(scenario(), timeout=90)
    assert ticks > 0                               # the event loop kept running during the export
    text = out.read_text(encoding="utf-8")
    if fmt == "html":
        for b in group:
            assert b["run"]["name"] in text
    if fmt == "csv":     # every recorded metric row of each run of the group (a live one may be listed too)
        assert text.splitlines()[0] == "run_id,iteration,key,value,t"
        ids = [line.split(",")[0] for line in text.splitlines()[1:]]
        for b in group:
            assert ids.count(b["run"]["id"]) == len(b["metrics"]) > 0


def test_comparison_has_the_dashboards_view_controls_and_remembers_them(window, drive, qtbot):
    """The comparison opens as a tab beside the dashboard, smooths and changes x-axis as the
    dashboard does, and keeps its view choice for the next comparison."""
    async def open_comparison():
        n = len(window.comparisons)
        window.history.table.selectAll()
        window.history.buttons["Compare"].click()
        await until(lambda: len(window.comparisons) > n, what="comparison tab")
        return window.comparisons[-1]

    async def scenario():
        await until(lambda: len(window.history.model.rows) >= 3)
        return await open_comparison()
    cmp = drive(scenario(), timeout=60)
    assert window.views.currentWidget() is cmp and window.views.indexOf(window.dashboard) == 0
    plot = cmp.plots[0]
    key = plot.key_box.currentText()
    pairs = list(zip(plot.curves, (data for _, data in cmp.runs)))
    cmp.view.smoothing.setValue(0)
    for curve, data in pairs:                    # unsmoothed: the recorded values themselves
        assert not curve.raw.isVisible() and list(curve.line.getData()[1]) == list(data.xy(key)[1])
    cmp.view.smoothing.setValue(80)
    steps_raw = steps_smoothed = 0.0
    for curve, data in pairs:                    # smoothed, with the raw values faint behind
        raw, smoothed = data.xy(key)[1], curve.line.getData()[1]
        # (another test of this module leaves a short live run here, which on a busy machine may hold
        # a single point: nothing to smooth, no raw curve behind; a constant series smooths to itself)
        assert curve.raw.isVisible() == (len(raw) > 1)
        if len(raw) > 1:
            assert list(curve.raw.getData()[1]) == list(raw)
        assert len(smoothed) == len(raw)
        assert list(smoothed) != list(raw) or np.ptp(raw) == 0
        steps_raw += np.abs(np.diff(raw)).sum()
        steps_smoothed += np.abs(np.diff(smoothed)).sum()
    assert steps_smoothed < steps_raw            # smoother: less up and down in all
    cmp.view.x_axis_box.setCurrentText("env steps")
    for curve, data in pairs:
        assert list(curve.line.getData()[0]) == list(data.xy(key, "env steps")[0])
    assert plot.plotItem.getAxis("bottom").labelText == "env steps"
    window._close_view(window.views.indexOf(cmp))
    assert cmp not in window.comparisons and window.views.count() == 1
    again = drive(open_comparison(), timeout=60)
    assert again.view.x_axis() == "env steps" and again.view.smoothing.value() == 80


def test_clone_fills_the_form_and_archive_hides_the_run_until_shown(window, drive, qtbot, group):
    five = next(b["run"] for b in group if b["run"]["name"] == "five verdicts")

    def listed():
        return {r["id"] for r in window.history.model.rows}

    async def scenario():
        await until(lambda: five["id"] in listed(), what="the recorded group listed")
        window.history.select(five["id"])
        window.history.buttons["Clone config"].click()
        await until(lambda: window.run_form.form.config().judge.m == 5, what="the form filled from the run")
        assert window.run_form.form.config().policy.lam == 0.5 and window.form_dock.isVisible()
        window.history.buttons["Archive"].click()
        await until(lambda: five["id"] not in listed(), what="the archived run hidden")
        window.history.show_archived.setChecked(True)
        await until(lambda: five["id"] in listed(), what="archived runs shown on request")
        window.history.select(five["id"])
        window.history.buttons["Archive"].click()          # restore: the next tests see it
        window.history.show_archived.setChecked(False)
        await until(lambda: five["id"] in listed(), what="the restored run listed")
    drive(scenario(), timeout=60)
