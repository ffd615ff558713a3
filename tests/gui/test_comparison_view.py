"""One comparison view for runs and for groups of runs (issue 35, part 1): a group comparison's
charts read, save, smooth and add charts as a run comparison's do; the summary says what "final",
"best" and "±" mean and shows counts as counts; a long configuration value leaves every run's
column on screen (part 2, item 7); runs and groups take their colours from one place.

Real widgets, offscreen: the recorded group's three real runs read back from a database, and runs
fed metric columns as the store hands them over."""
from __future__ import annotations


import numpy as np
import pytest
from PySide6 import QtWidgets

from rla_engine import metrics
from rla_engine.summary import BEST, FINAL, config_differences
from rla_gui.model.run_data import RunData
from rla_gui.panels.comparison import ComparisonPanel
from rla_gui.panels.group_comparison import GroupComparisonPanel
from rla_gui.widgets.chart_export import ChartExport

from test_chart_export import read_csv, save_from_menu
from test_plots_in_use import RUN_KEYS, columns, hover, settle, two_runs

from gui_support import runs_with_data

SAVES = ["Save chart as PNG…", "Save chart as SVG…", "Save visible data as CSV…"]


@pytest.fixture(scope="module")
def recorded_runs(recorded, recorded_db) -> list[tuple[dict, RunData]]:
    """The recorded group's three real runs, read back as the console's comparison reads them."""
    return runs_with_data(recorded_db(*recorded("recorded_group")), with_config=True)


def shown(qtbot, panel, size=(1200, 900)):
    qtbot.addWidget(panel)
    panel.resize(*size)
    panel.show()
    qtbot.waitExposed(panel)
    settle(panel)
    return panel


def pen_colour(curve) -> str:
    item = curve.line if hasattr(curve, "line") else curve.mean_item
    return item.opts["pen"].color().name()


def a_run(run_id: str, steps: int, accepted: int) -> tuple[dict, RunData]:
    """A run of 60 iterations whose last env steps are `steps` and which accepted `accepted` variants."""
    data = RunData()
    cols = columns(RUN_KEYS, seed=len(run_id) + steps)
    its = cols[metrics.SUCCESS][0]
    taken = np.zeros(len(its))
    taken[:accepted] = 1.0
    cols[metrics.ACCEPTED] = (its, taken, 1000.0 + its)
    cols[metrics.ENV_STEPS] = (its, np.linspace(10, steps, len(its)).round(), 1000.0 + its)
    data.add(cols)
    return ({"id": run_id, "name": run_id, "status": "completed", "config": {"run": {"seed": len(run_id)}},
             "started_at": 1000.0, "ended_at": 1060.0}, data)


def test_a_group_chart_reads_saves_smooths_and_adds_charts_as_a_run_comparisons(qtbot, tmp_path, monkeypatch,
                                                                                 recorded_runs):
    two, one = recorded_runs[:2], recorded_runs[2:]
    panel = shown(qtbot, GroupComparisonPanel("run:group", [("pair", two), ("single", one)]))
    plot = panel.plots[0]
    plot.key_box.setCurrentText(metrics.SUCCESS)
    # the view bar of a run comparison: smoothing, log y and Add chart
    panel.view.smoothing.setValue(0)
    panel.x_axis_box.setCurrentText("iteration")
    mean = plot.curves[0]
    lasts = [data.xy(metrics.SUCCESS)[1][-1] for _, data in two]
    assert mean.mean[-1] == pytest.approx(np.mean(lasts)) and len(mean.band_items) == 3
    panel.view.smoothing.setValue(90)
    raw_mean = np.mean([data.xy(metrics.SUCCESS)[1] for _, data in two], axis=0)
    assert mean.mean[-1] != pytest.approx(raw_mean[-1]) and mean.raw.isVisible()      # the raw mean faint behind
    assert np.abs(np.diff(mean.mean)).sum() < np.abs(np.diff(raw_mean)).sum()          # smoother
    panel.view.log_y.setChecked(True)
    losses = next(p for p in panel.plots if p.panel.id == "losses")
    assert losses.plotItem.getAxis("left").logMode
    # the hover read-out: each group's value under the mouse, the pair's with its spread
    hover(plot, 0.9, 0.5)
    text = plot.readout.item.toPlainText()
    assert plot.readout.item.isVisible() and "pair: " in text and " ± " in text and "single: " in text, text
    # the right-click saves; the CSV holds each run of the pair under the group's name
    texts = [a.text() for a in plot.plotItem.vb.menu.actions()]
    assert texts[texts.index(SAVES[0]):][:3] == SAVES
    monkeypatch.setattr(ChartExport, "last_folder", tmp_path)
    panel.view.smoothing.setValue(0)
    out = tmp_path / "pair.csv"
    save_from_menu(plot, "csv", out)
    series = {row[0] for row in read_csv(out)[1:]}
    assert series == {f"pair: {two[0][0]['name']}", f"pair: {two[1][0]['name']}", f"single: {one[0][0]['name']}"}
    # Add chart: one curve per group, the pair as its mean and band
    assert panel.add_button.isVisibleTo(panel)
    added = panel.add_chart([metrics.LOSS_KL])
    assert len(added.curves) == 2 and len(added.curves[0].band_items) == 3
    assert [label.text for _, label in added.plotItem.legend.items] == ["pair (2 runs)", "single (1 run)"]
    assert any(a.text() == SAVES[2] for a in added.plotItem.vb.menu.actions())


def test_a_group_summary_counts_in_whole_numbers_and_says_its_spread_is_the_sample_std(qtbot):
    groups = [("pair", [a_run("a", 400, 10), a_run("b", 402, 12)]), ("single", [a_run("c", 500, 7)])]
    panel = shown(qtbot, GroupComparisonPanel("run:group", groups))
    table = panel.summary_table
    cells = {table.verticalHeaderItem(r).text(): [table.item(r, c).text() for c in range(table.columnCount())]
             for r in range(table.rowCount())}
    assert cells["env steps"] == ["401 ± 1.4", "500"]
    assert cells["accepted variants"] == ["11 ± 1.4", "7"]
    assert cells["runs"] == ["2", "1"]
    assert all(len(v.split(" ± ")[0].split(".")[1]) == 3 for v in cells["success (train) final"])
    panel.tabs.setCurrentIndex(1)
    said = [label.text() for label in panel.tabs.currentWidget().findChildren(QtWidgets.QLabel)
            if label.isVisibleTo(panel)]
    said += [table.horizontalHeaderItem(c).toolTip() for c in range(table.columnCount())]
    assert any("sample standard deviation (n − 1)" in s for s in said), said


@pytest.mark.parametrize("kind", ["runs", "groups"])
def test_a_summary_row_header_says_what_final_and_best_mean(qtbot, kind):
    runs = two_runs()
    panel = shown(qtbot, ComparisonPanel(runs) if kind == "runs"
                  else GroupComparisonPanel("run:group", [("both", runs)]))
    table = panel.summary_table
    tips = {table.verticalHeaderItem(r).text(): table.verticalHeaderItem(r).toolTip() for r in range(table.rowCount())}
    assert tips["success (train) final"] == FINAL.definition
    assert tips["eval success best"] == BEST.definition


def test_a_long_configuration_value_leaves_every_runs_column_on_screen(qtbot):
    runs = two_runs()
    long = "/data/experiments/" + "very-long-folder-name-" * 80 + "end"
    runs[0][0]["config"] = {"run": {"seed": 0, "out_dir": long}}
    runs[1][0]["config"] = {"run": {"seed": 1, "out_dir": "/tmp/short"}}
    panel = shown(qtbot, ComparisonPanel(runs), size=(1200, 800))
    panel.tabs.setCurrentIndex(2)
    settle(panel)
    table = panel.config_table
    keys = [table.verticalHeaderItem(r).text() for r in range(table.rowCount())]
    row = keys.index("run.out_dir")
    header, room = table.horizontalHeader(), table.viewport().width()
    for column in range(table.columnCount()):
        left = header.sectionViewportPosition(column)
        assert 0 <= left and left + header.sectionSize(column) <= room, (column, left, header.sectionSize(column), room)
    assert table.item(row, 0).toolTip() == f'"{long}"'       # the whole value, where the column cuts it
    assert table.item(row, 1).text() == '"/tmp/short"'


def test_runs_and_groups_take_their_colours_from_one_place(qtbot, recorded_runs):
    from rla_gui.model.comparison import Comparison, colour_of
    runs = shown(qtbot, ComparisonPanel(recorded_runs))
    groups = shown(qtbot, GroupComparisonPanel("run:group", [("pair", recorded_runs[:2]),
                                                             ("single", recorded_runs[2:])]))
    expected = [colour_of(i) for i in range(3)]
    assert len(set(expected)) == 3
    assert [pen_colour(c) for c in runs.plots[0].curves] == expected
    assert [pen_colour(c) for c in groups.plots[0].curves] == expected[:2]
    for panel, n in ((runs, 3), (groups, 2)):
        header = panel.summary_table.horizontalHeaderItem
        assert [header(i).foreground().color().name() for i in range(n)] == expected[:n]
    # a comparison of runs is one of groups of one: the same differences as the engine's
    model = Comparison.of_runs(recorded_runs)
    assert model.differing() == config_differences([r["config"] for r, _ in recorded_runs])
    assert [label for label, _ in model.groups] == [r["name"] for r, _ in recorded_runs]


def test_a_narrow_comparison_puts_its_charts_one_to_a_row(qtbot, recorded_runs):
    """Six runs at 800 × 600 (an ablation opened at the end, the docks beside it): two charts to a
    row left each a sliver under its six-entry legend. Narrow, every chart takes the whole width,
    one to a row, tall enough for its curves; wide again, the 2 × 2 and the losses strip return."""
    panel = shown(qtbot, ComparisonPanel(recorded_runs), size=(420, 600))
    panel.add_chart([metrics.LOSS_KL])
    settle(panel)
    boxes = [plot.parentWidget() for plot in panel.plots]
    width = panel.charts.viewport().width()
    assert len({box.x() for box in boxes}) == 1 and all(box.width() >= 0.9 * width for box in boxes)
    assert all(plot.plotItem.vb.height() >= 60 for plot in panel.plots), [p.plotItem.vb.height() for p in panel.plots]
    panel.resize(1200, 900)
    settle(panel)
    policy, agreement, losses = (panel.plots[0].parentWidget(), panel.plots[1].parentWidget(),
                                 panel.plots[4].parentWidget())
    assert policy.y() == agreement.y() and policy.x() < agreement.x()          # side by side
    assert losses.width() > 1.5 * policy.width()                               # the strip across
