"""History as a table of settings and results, through the real window over
runs the real `rla run` made: chosen columns show the database's final and best values, sort
(numbers as numbers, missing last) and filter, are remembered per database, refresh while a run
streams; runs grouped by a column show their count and mean ± std; selected groups compare as
mean curves with a band, in the console and in the HTML report File ▸ Export… writes."""
import math
import statistics
import subprocess
import sys

import pytest
from PySide6 import QtCore, QtPdf, QtWidgets

from rla_engine import metrics
from rla_engine.export.bundles import load_bundles
from rla_engine.store import open_store
from rla_engine.summary import best_value, final_value, flatten
from rla_gui.main_window import MainWindow
from rla_gui.model.panel_spec import PALETTE
from rla_gui.panels.group_comparison import GroupComparisonPanel
from rla_gui.panels.history import COLUMNS
from rla_gui.report.groups import render as group_report
from rla_gui.model.run_columns import mean_std, mean_std_text, parse, value_text

from gui_support import TINY, until

LAM = "config:policy.lam"
SEED = "config:run.seed"
EVAL_FINAL = f"final:{metrics.EVAL_SUCCESS}"
SUCCESS_BEST = f"best:{metrics.SUCCESS}"
STEPS_FINAL = f"final:{metrics.ENV_STEPS}"
CHOSEN = [LAM, SEED, EVAL_FINAL, SUCCESS_BEST, "run:arm"]
ROLE = QtCore.Qt.ItemDataRole


def rla_run(db, name, seed, *sets, iterations=3):
    return [sys.executable, "-m", "rla_engine.cli", "run", "--db", str(db), *TINY, "--iterations", str(iterations),
            "--seed", str(seed), "--name", name, "--group", "mini", *[a for s in sets for a in ("--set", s)]]


@pytest.fixture(scope="module")
def runs_db(tmp_path_factory):
    """Four runs of the real engine, started together: two seeds × λ ∈ {0.5, 1}, named as
    `rla ablate` names an arm's runs ("<arm> · seed <s>") in one group."""
    db = tmp_path_factory.mktemp("columns") / "runs.db"
    open_store(db).close()
    procs = [subprocess.Popen(rla_run(db, f"{arm} · seed {seed}", seed, *sets), stdout=subprocess.DEVNULL)
             for seed in (0, 1) for arm, sets in (("half", ["policy.lam=0.5"]), ("full", []))]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0, 0]
    return db


def settings_at(path):
    return QtCore.QSettings(str(path / "settings.ini"), QtCore.QSettings.Format.IniFormat)


def open_window(qtbot, db, settings):
    win = MainWindow(db, settings=settings)
    win.ask_close_choice = lambda run_id: "detach"
    qtbot.addWidget(win)
    win.show()
    return win


def close(qtbot, win):
    win.close()
    qtbot.waitUntil(win.finished.done, timeout=30_000)


def shown_column(history, column_id) -> int:
    return next(c for c in range(history.model.columnCount()) if history.model.columns[c].id == column_id)


def shown_values(history, column_id) -> dict[str, str]:
    """run id → the text the flat table shows in that column, for the rows it shows."""
    col, proxy = shown_column(history, column_id), history.proxy
    return {history.model.rows[proxy.mapToSource(proxy.index(r, 0)).row()]["id"]: proxy.index(r, col).data()
            for r in range(proxy.rowCount())}


def test_the_stores_one_query_reads_agree_with_the_summary(runs_db):
    """final/best of every run and key read at once equal `summary.final_value`/`best_value` of the
    series; the key and field lists are every run's."""
    store = open_store(runs_db, create=False)
    ids = [r["id"] for r in store.list_runs()]
    names = store.metric_names()
    assert names == sorted({k for i in ids for k in store.metric_keys(i)}) and metrics.EVAL_SUCCESS in names
    finals, bests = store.final_values(names), store.best_values(names, ids[:3])
    for run_id in ids:
        for key in names:
            its, vals = store.series(run_id, key)
            assert finals[run_id].get(key) == final_value(vals) or math.isnan(final_value(vals))
            if run_id in ids[:3]:
                assert bests[run_id].get(key) == best_value(its, vals)[0]
    assert set(bests) <= set(ids[:3])
    configs = store.flat_configs()
    assert configs == {i: flatten(store.run_config(i)) for i in ids}
    assert store.config_fields() == sorted(set().union(*configs.values()))
    store.close()


def test_chosen_columns_show_sort_filter_and_are_remembered_per_database(qtbot, tmp_path, aloop, drive, runs_db):
    settings = settings_at(tmp_path)
    window = open_window(qtbot, runs_db, settings)
    history = window.history

    async def choose():
        await until(lambda: len(history.model.rows) == 4, what="four runs listed")
        history.columns_button.click()
        chooser = await until(lambda: history.chooser, what="the Columns… dialog")
        listed = {i.data(ROLE.UserRole) for i in chooser.items()}
        assert {LAM, SEED, EVAL_FINAL, SUCCESS_BEST, f"best:{metrics.EVAL_SUCCESS}", "run:arm"} <= listed
        chooser.search.setText("lam")
        assert not chooser.list.isRowHidden(chooser.items().index(
            next(i for i in chooser.items() if i.data(ROLE.UserRole) == LAM)))
        for column_id in CHOSEN:
            chooser.check(column_id)
        chooser.accept()
        await until(lambda: all(r.get("columns", {}).get(EVAL_FINAL) is not None for r in history.model.rows),
                    what="the chosen columns' values read")
    drive(choose(), timeout=60)
    heads = [history.model.headerData(c, QtCore.Qt.Orientation.Horizontal) for c in range(history.model.columnCount())]
    assert heads == [title for title, _ in COLUMNS] + ["policy.lam", "run.seed", EVAL_FINAL, SUCCESS_BEST, "arm"]

    store = open_store(runs_db, create=False)
    ids = [r["id"] for r in store.list_runs()]
    finals, bests = store.final_values([metrics.EVAL_SUCCESS]), store.best_values([metrics.SUCCESS])
    configs = store.flat_configs()
    store.close()
    for column_id, truth in ((EVAL_FINAL, {i: finals[i][metrics.EVAL_SUCCESS] for i in ids}),
                             (SUCCESS_BEST, {i: bests[i][metrics.SUCCESS] for i in ids}),
                             (LAM, {i: configs[i]["policy.lam"] for i in ids}),
                             (SEED, {i: configs[i]["run.seed"] for i in ids})):
        assert shown_values(history, column_id) == {i: value_text(parse(column_id), v) for i, v in truth.items()}
    assert sorted(shown_values(history, LAM).values()) == ["0.5", "0.5", "1.0", "1.0"]
    assert sorted(shown_values(history, "run:arm").values()) == ["full", "full", "half", "half"]

    # sorting: numbers as numbers, both ways; the selection follows its run
    col = shown_column(history, EVAL_FINAL)
    history.select(ids[0])
    for order in (QtCore.Qt.SortOrder.AscendingOrder, QtCore.Qt.SortOrder.DescendingOrder):
        history.table.sortByColumn(col, order)
        shown = [history.proxy.index(r, col).data(ROLE.UserRole) for r in range(4)]
        assert shown == sorted(shown, reverse=order == QtCore.Qt.SortOrder.DescendingOrder)
        assert history.selected_ids() == [ids[0]]
    # filtering by a chosen column's value, and by a condition on a column
    history.filter.setText("policy.lam=0.5")
    assert history.proxy.rowCount() == 2 and set(shown_values(history, LAM).values()) == {"0.5"}
    history.filter.setText("run.seed>0 policy.lam!=0.5")
    assert set(shown_values(history, SEED).values()) == {"1"} and history.proxy.rowCount() == 1
    history.filter.setText("half")
    assert set(shown_values(history, "run:arm").values()) == {"half"}
    history.filter.setText("")
    history.group_box.setCurrentIndex(history.group_box.findData(LAM))
    close(qtbot, window)

    again = open_window(qtbot, runs_db, settings_at(tmp_path))
    try:
        assert [c.id for c in again.history.chosen] == CHOSEN
        assert again.history.group_by is not None and again.history.group_by.id == LAM
        header = again.history.table.horizontalHeader()
        descending = QtCore.Qt.SortOrder.DescendingOrder
        assert (header.sortIndicatorSection(), header.sortIndicatorOrder()) == (col, descending)
        other = open_window(qtbot, tmp_path / "other.db", settings_at(tmp_path))      # another database: its own
        assert other.history.chosen == [] and other.history.group_by is None
        close(qtbot, other)
    finally:
        close(qtbot, again)


def test_groups_show_count_and_mean_std_and_compare_as_mean_curves_with_a_band(qtbot, tmp_path, aloop, drive,
                                                                              runs_db):
    window = open_window(qtbot, runs_db, settings_at(tmp_path))
    history = window.history
    history.set_columns(CHOSEN)
    history.set_group_by(LAM)
    html_filter = next(f for f, v in window.EXPORT_FILTERS.items() if v == "html")

    async def scenario():
        await until(lambda: len(history.groups.groups) == 2 and all(
            r.get("columns", {}).get(EVAL_FINAL) is not None for r in history.model.rows), what="two groups")
        groups = history.groups
        col = shown_column(history, EVAL_FINAL)
        for i, group in enumerate(groups.groups):
            assert len(group.members) == 2 and groups.rowCount(groups.index(i, 0)) == 2
            assert groups.index(i, 0).data().endswith("(2 runs)")
            spread = mean_std(r["columns"][EVAL_FINAL] for r in group.members)
            assert groups.index(i, col).data() == mean_std_text(spread) and spread.std is not None
        history.tree.header().setSortIndicator(shown_column(history, LAM), QtCore.Qt.SortOrder.DescendingOrder)
        assert [g.label for g in groups.groups] == ["policy.lam = 1.0", "policy.lam = 0.5"]
        history.tree.header().setSortIndicator(col, QtCore.Qt.SortOrder.AscendingOrder)    # by the groups' means
        means = [mean_std(r["columns"][EVAL_FINAL] for r in g.members).mean for g in groups.groups]
        assert means == sorted(means) and all(history.tree.isExpanded(groups.index(i, 0)) for i in range(2))
        history.tree.header().setSortIndicator(shown_column(history, LAM), QtCore.Qt.SortOrder.AscendingOrder)
        assert [g.label for g in groups.groups] == ["policy.lam = 0.5", "policy.lam = 1.0"]
        history.tree.selectAll()                         # both groups (and their runs)
        history.buttons["Compare"].click()
        panel = await until(lambda: next((v for v in window.comparisons if isinstance(v, GroupComparisonPanel)), None),
                            what="the group comparison tab")
        assert window.views.currentWidget() is panel and panel.title().startswith("Groups: policy.lam = 0.5")
        panel.x_axis_box.setCurrentText("iteration")
        panel.view.smoothing.setValue(0)          # the means of the runs' own values
        plot = panel.plots[0]
        plot.key_box.setCurrentText(metrics.SUCCESS)
        for curve, (_, runs) in zip(plot.curves, panel.groups):
            lasts = [data.xy(metrics.SUCCESS)[1][-1] for _, data in runs]
            x, y = curve.mean_item.getData()
            assert y[-1] == pytest.approx(statistics.fmean(lasts)) and x[-1] == 3
            assert len(curve.band_items) == 3              # two runs: a band, ± their sample std
            assert curve.std[-1] == pytest.approx(statistics.stdev(lasts))
        # File ▸ Export… with the group comparison in view: the HTML report of the groups
        accept_file_dialog(html_filter)
        QtCore.QTimer.singleShot(0, window.ask_export)
        out = runs_db.parent / f"comparison-{panel.run_ids()[0]}-and-3-more.html"
        await until(lambda: out.exists(), timeout=60, what="the group report")
        return out.read_text("utf-8")
    report = drive(scenario(), timeout=120)
    assert "2 groups by policy.lam" in report and "± one standard deviation" in report
    for i, label in enumerate(["policy.lam = 0.5", "policy.lam = 1.0"]):      # the tab's colours
        assert f'<span style="color:{PALETTE[i]}">■</span>&nbsp;{label}' in report
    assert 'id="fig-grp-policy-success_rate"' in report
    close(qtbot, window)

    # the PDF of the same groups: what the renderer writes for --format pdf --group-by
    pdf = tmp_path / "groups.pdf"
    store = open_store(runs_db, create=False)
    ids = [r["id"] for r in store.list_runs()]
    store.close()
    group_report(LAM)("pdf", load_bundles(runs_db, ids), pdf, False)
    document = QtPdf.QPdfDocument()
    document.load(str(pdf))
    text = " ".join(document.getAllText(page).text() for page in range(document.pageCount()))
    assert "2 groups by policy.lam" in text and "policy.lam = 0.5" in text and "Training curves" in text


def test_values_and_group_curves_follow_a_run_while_it_streams(qtbot, tmp_path, aloop, drive, runs_db):
    window = open_window(qtbot, runs_db, settings_at(tmp_path))
    history = window.history
    history.set_columns([STEPS_FINAL])
    proc = subprocess.Popen(rla_run(runs_db, "live · seed 7", 7, iterations=400), stdout=subprocess.DEVNULL)

    seen: set[float] = set()

    def two_values_seen() -> bool:
        row = next((r for r in history.model.rows if r["name"] == "live · seed 7"), None)
        value = row and row.get("columns", {}).get(STEPS_FINAL)
        if value:
            seen.add(value)
            assert shown_values(history, STEPS_FINAL)[row["id"]] == value_text(parse(STEPS_FINAL), value)
        return len(seen) >= 2

    async def scenario():
        await until(two_values_seen, timeout=60, what="two refreshes of the live run's value")
        # its group compared while it runs: the tab follows it, as a comparison does
        history.set_group_by("run:arm")
        live = next(i for i, g in enumerate(history.groups.groups) if g.value == "live")
        history.tree.selectionModel().select(history.groups.index(live, 0),
                                             QtCore.QItemSelectionModel.SelectionFlag.ClearAndSelect
                                             | QtCore.QItemSelectionModel.SelectionFlag.Rows)
        history.buttons["Compare"].click()
        panel = await until(lambda: next((v for v in window.comparisons if isinstance(v, GroupComparisonPanel)), None),
                            what="the live group's tab")
        panel.x_axis_box.setCurrentText("iteration")
        curve = panel.plots[0].curves[0].line       # a group of one run: its own curve
        first = curve.getData()[0][-1]
        await until(lambda: curve.getData()[0][-1] > first, timeout=30, what="the live group's curve to grow")
        return next(r["id"] for r in history.model.rows if r["name"] == "live · seed 7")
    try:
        run_id = drive(scenario(), timeout=90)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    store = open_store(runs_db, create=False)
    _, steps = store.series(run_id, metrics.ENV_STEPS)
    store.close()
    assert seen <= set(steps)              # each value shown was the run's final value at some iteration
    close(qtbot, window)


def accept_file_dialog(name_filter: str) -> None:
    """Press Save on the modal file dialog once it shows, in `name_filter`'s format."""
    def poll():
        dialog = QtWidgets.QApplication.activeModalWidget()
        if not isinstance(dialog, QtWidgets.QFileDialog):
            QtCore.QTimer.singleShot(50, poll)
            return
        dialog.selectNameFilter(name_filter)
        dialog.accept()
    QtCore.QTimer.singleShot(50, poll)


def test_a_group_of_counts_reads_in_whole_numbers_and_a_group_of_measures_in_three_decimals(qtbot):
    """History grouped by preset, with env steps and success chosen: a mean of counts read
    "400.500 ± 28.991"; a count is whole where it is whole, a measurement keeps its decimals."""
    from rla_gui.model.run_columns import parse as parse_column
    from rla_gui.panels.run_groups import GroupTreeModel

    steps, success, by = (parse_column(f"final:{metrics.ENV_STEPS}"), parse_column(f"final:{metrics.SUCCESS}"),
                          parse_column("run:preset"))
    rows = [{"id": f"r{i}", "name": f"r{i}", "preset": "tiny", "status": "completed",
             "columns": {steps.id: float(s), success.id: v}} for i, (s, v) in enumerate([(380, 0.5), (421, 0.25)])]
    model = GroupTreeModel()
    model.rebuild(rows, [by, steps, success], by, 0, False)
    top = model.index(0, 1)
    assert model.data(top) == "400.5 ± 29.0"                    # mean 400.5, sample std 28.99…: one decimal
    assert model.data(model.index(0, 2)) == "0.375 ± 0.177"     # a measurement: three decimals
    whole = [{**r, "columns": {**r["columns"], steps.id: 400.0}} for r in rows]
    model.rebuild(whole, [by, steps, success], by, 0, False)
    assert model.data(model.index(0, 1)) == "400 ± 0"
    # runs started with no preset (recorded as "") are one group, labelled as having none
    model.rebuild([{**r, "preset": ""} for r in rows], [by, steps, success], by, 0, False)
    assert model.rowCount() == 1 and model.data(model.index(0, 0)) == "preset = (none)   (2 runs)"
