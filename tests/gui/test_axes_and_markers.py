"""Numbers that read right on the console's charts (issue 35, part 2, items 4, 6, 7 and 8): a
language model's shares never share an axis with its lengths; log y says how many points it
hides; a flapping alert is a few shaded bands, not hundreds of lines, and the legend hides the
markers; a run paused on the wall-time axis breaks its line; a key's name reads once in the
key picker.

Plots are built as the console builds them (a DashboardPanel on a RunSession, the report's
panel charts) and fed columns like the store's; no engine runs.
"""
import numpy as np
import pytest
from PySide6 import QtCore, QtGui
from PySide6.QtTest import QTest

from rla_engine import metrics
from rla_engine.alerts import CLEARED, RAISED
from rla_engine.vocabulary import EventKind
from rla_gui.model.panel_spec import ALERT_BEGAN, ALERT_ENDED, HEALTH_PANELS, short
from rla_gui.model.run_data import X_AXES, RunData
from rla_gui.report import charts
from rla_gui.widgets.key_picker import KeyPicker
from rla_gui.widgets.metric_plot import MetricPlot

from test_plots_in_use import a_run, columns, hover, readout_rect, settle

from gui_support import shown_dashboard

SHARES = {metrics.TRUNCATED_SHARE, metrics.JUDGE_UNREADABLE_SHARE}
LENGTHS = {metrics.COMPLETION_LENGTH_MEAN, metrics.COMPLETION_LENGTH_MAX}


@pytest.fixture
def dashboard(qtbot):
    return shown_dashboard(qtbot)


def language_run(iterations: int = 40) -> dict:
    """A language model's text health: shares near 1 and 0.63–1, lengths of ~24 tokens."""
    out = columns(tuple(SHARES | LENGTHS), iterations)
    its = out[metrics.TRUNCATED_SHARE][0]
    out[metrics.JUDGE_UNREADABLE_SHARE] = (its, np.ones(iterations), 1000.0 + its)
    out[metrics.TRUNCATED_SHARE] = (its, np.linspace(0.63, 1.0, iterations), 1000.0 + its)
    out[metrics.COMPLETION_LENGTH_MEAN] = (its, np.full(iterations, 24.0), 1000.0 + its)
    out[metrics.COMPLETION_LENGTH_MAX] = (its, np.full(iterations, 32.0), 1000.0 + its)
    return out


# -- item 4: shares and lengths ---------------------------------------------------------------------
def test_the_report_draws_a_language_models_shares_apart_from_its_lengths():
    """One chart held both: an unreadable share of 1.0 beside lengths of ~24 read as 0."""
    data = RunData()
    data.add(language_run())
    drawn = {c.id: {e.label for e in c.legend} for c in charts.panel_charts({"events": []}, data, HEALTH_PANELS[1:])}
    language = {i: labels for i, labels in drawn.items() if i.startswith("language")}
    assert len(language) == 2, drawn
    assert {frozenset(labels) for labels in language.values()} == {frozenset(map(short, SHARES)),
                                                                    frozenset(map(short, LENGTHS))}


def test_the_health_dock_shows_shares_on_an_axis_of_their_own(dashboard):
    """Needs the dashboard to take its tabs from panel_spec.HEALTH_TABS."""
    session, panel = dashboard
    session.data.add(language_run())
    tab = next(i for i in range(panel.health.count()) if panel.health.tabText(i) == "Language model")
    panel.health.setCurrentIndex(tab)
    panel.health.show()
    shown = panel.health.widget(tab).findChildren(MetricPlot)
    for plot in shown:
        plot.refresh()
    settle(panel.health)
    assert len(shown) == 2 and {frozenset(p.curves) for p in shown} == {frozenset(SHARES), frozenset(LENGTHS)}
    shares = next(p for p in shown if set(p.curves) == SHARES)
    low, high = shares.plotItem.vb.viewRange()[1]
    assert -0.1 < low and high < 1.1          # the shares fill their axis: 0.63 and 1.0 read as such


# -- item 4: log y ----------------------------------------------------------------------------------
def test_log_y_says_on_the_chart_how_many_points_it_hides(dashboard):
    session, panel = dashboard
    run = a_run()
    its = run[metrics.LOSS_POLICY][0]
    policy_loss = np.where(np.arange(len(its)) % 3 == 0, 0.2, -0.1)     # 40 of 60 points negative
    run[metrics.LOSS_POLICY] = (its, policy_loss, 1000.0 + its)
    session.data.add(run)
    panel.refresh()
    title = panel.losses.plotItem.titleLabel
    assert "hidden" not in title.text
    panel.view.log_y.setChecked(True)
    panel.losses.refresh()
    assert "log y: 40 of 180 points ≤ 0 hidden" in title.text      # three loss curves of 60 points
    panel.view.log_y.setChecked(False)
    panel.losses.refresh()
    assert "hidden" not in title.text


# -- item 6: a flapping alert -----------------------------------------------------------------------
def flapping_alert(times: int) -> list[dict]:
    """An alert raised and cleared `times` times, two iterations each, every fifth iteration."""
    events = []
    for i in range(times):
        begin = 5 * i + 1
        events.append({"id": 2 * i, "iteration": begin + 1, "kind": EventKind.ALERT,
                       "payload": {"state": RAISED, "since": begin}})
        events.append({"id": 2 * i + 1, "iteration": begin + 2, "kind": EventKind.ALERT,
                       "payload": {"state": CLEARED}})
    return events


def test_a_flapping_alert_is_a_few_shaded_bands_not_hundreds_of_lines(dashboard):
    session, panel = dashboard
    session.data.add(a_run(iterations=1500))
    panel.add_events(flapping_alert(300))
    panel.refresh()
    settle(panel)
    markers = panel.policy.markers
    assert not {ALERT_BEGAN, ALERT_ENDED} & set(markers.items)      # no vertical line for an alert
    bands = markers.bands.opts
    # 300 spans 3 iterations apart merge on a ~650 px plot of 1500 iterations (~2 px apart)
    assert 1 <= len(bands["x0"]) < 30
    assert bands["x0"][0] == pytest.approx(1) and bands["x1"][-1] == pytest.approx(5 * 299 + 3)
    # zoomed in, each span is a band of its own again
    panel.policy.plotItem.vb.setXRange(0, 50, padding=0)
    settle(panel)
    assert len(markers.bands.opts["x0"]) == 10
    # the read-out names what held under the mouse
    assert "alert held" in markers.near(2.0, 0.1)


def test_alerts_that_overlap_hold_as_one_span_and_an_open_one_holds_to_the_end():
    """Two alerts holding at once are one span; an end whose beginning was dropped with the oldest
    markers shades nothing; an alert still raised holds to the chart's right edge."""
    from rla_gui.model.alert_spans import alert_spans, merged_bands      # new: the other tests fail on their own
    marks = [(3, ALERT_ENDED), (10, ALERT_BEGAN), (14, ALERT_BEGAN), (20, ALERT_ENDED), (25, ALERT_ENDED),
             (40, ALERT_BEGAN), (30, "pause")]
    assert alert_spans(marks) == [(10.0, 25.0), (40.0, float("inf"))]
    starts, ends = np.arange(0.0, 1000.0, 10.0), np.arange(0.0, 1000.0, 10.0) + 5     # 100 spans 5 apart
    assert len(merged_bands(starts, ends, min_gap=4)[0]) == 100
    first, last = merged_bands(starts, ends, min_gap=6)
    assert (first.tolist(), last.tolist()) == ([0.0], [995.0])
    assert len(merged_bands(starts, ends, min_gap=4, max_bands=7)[0]) == 7


def test_clicking_the_events_entry_hides_and_shows_every_marker(dashboard, qtbot):
    session, panel = dashboard
    session.data.add(a_run())
    panel.add_events([{"id": 1, "iteration": 20, "kind": "pause", "payload": None},
                      *flapping_alert(3)])
    panel.refresh()
    settle(panel)
    plot = panel.policy
    markers = plot.markers
    shown = [markers.items["pause"], markers.bands]

    def click_events_entry() -> None:
        sample = next(s for s, label in plot.plotItem.legend.items if label.text == "events")
        at = plot.mapFromScene(sample.sceneBoundingRect().center())
        QTest.mouseClick(plot.viewport(), QtCore.Qt.MouseButton.LeftButton, QtCore.Qt.KeyboardModifier.NoModifier, at)
        settle(panel)

    assert all(item.isVisible() for item in shown)
    click_events_entry()
    assert not any(item.isVisible() for item in shown)
    panel.add_events([{"id": 9, "iteration": 40, "kind": "set_difficulty", "payload": None}])
    panel.refresh()
    assert not markers.items["set_difficulty"].isVisible()       # a new marker stays hidden with them
    click_events_entry()
    assert all(item.isVisible() for item in (*shown, markers.items["set_difficulty"]))


# -- item 7: a pause on the wall-time axis ----------------------------------------------------------
def paused_run(before: int, after: int, pause_s: float = 3600.0) -> RunData:
    """One key committed every second, `before` points, a pause of an hour, `after` more."""
    its = np.arange(1, before + after + 1, dtype=np.float64)
    t = 1000.0 + its + np.where(its > before, pause_s, 0.0)
    y = np.sin(its / 7.0)
    data = RunData()
    data.add({metrics.SUCCESS: (its, y, t), metrics.ENV_STEPS: (its, its * 10, t)})
    return data


def lines_across(item, x_from: float, x_to: float) -> int:
    """How many straight segments of a drawn curve start at or before x_from and end at or after x_to."""
    path = item.curve.getPath()
    count = 0
    previous = None
    for i in range(path.elementCount()):
        e = path.elementAt(i)
        if e.type == QtGui.QPainterPath.ElementType.LineToElement and previous is not None:
            if previous.x <= x_from and e.x >= x_to:
                count += 1
        previous = e
    return count


@pytest.mark.parametrize("before, smoothing", [(40, 0.0), (40, 0.6), (100_000, 0.6)])     # the last: binned
def test_a_paused_run_breaks_its_line_on_the_wall_time_axis(qtbot, before, smoothing):
    data = paused_run(before, before)
    plot = MetricPlot("Policy reward", (metrics.SUCCESS,), data)
    qtbot.addWidget(plot)
    plot.resize(700, 300)
    plot.show()
    qtbot.waitExposed(plot)
    plot.set_view(X_AXES[2], smoothing, log_y=False)
    plot.refresh()
    settle(plot)
    curve = plot.curves[metrics.SUCCESS]
    gap_from, gap_to = float(before), float(before) + 3600.0       # seconds since the first commit
    drawn = [curve.line] + ([curve.raw] if smoothing else [])
    for item in drawn:
        assert lines_across(item, gap_from + 1, gap_to - 1) == 0
    # on the iteration axis nothing was paused: the line runs on
    plot.set_view(X_AXES[0], smoothing, log_y=False)
    plot.refresh()
    assert lines_across(curve.line, before, before + 1) >= 1


# -- item 8: a key's name in the key picker ---------------------------------------------------------
def test_the_key_picker_names_the_cpu_key_with_one_closing_parenthesis(qtbot):
    """Needs the key picker to set a key's name apart without parentheses of its own."""
    picker = KeyPicker([metrics.SYS_CPU_PERCENT, metrics.SUCCESS])
    qtbot.addWidget(picker)
    texts = [picker.keys.item(i).text() for i in range(picker.keys.count())]
    cpu = next(t for t in texts if t.startswith(metrics.SYS_CPU_PERCENT))
    assert cpu.count("(") == cpu.count(")") == 1, cpu
    assert not [t for t in texts if "))" in t]


def test_a_read_out_taller_than_its_chart_keeps_its_first_lines_and_says_how_many_more(qtbot):
    """A short chart with many curves (the policy panel with six held-out tiers, its dock made
    small): the read-out is never cut at the plot's edge; it keeps the first lines and counts the rest."""
    data = RunData()
    data.add(a_run())
    keys = (metrics.SUCCESS, metrics.EVAL_SUCCESS, metrics.REWARD, *data.tier_keys())
    plot = MetricPlot("Policy reward", keys, data)
    qtbot.addWidget(plot)
    plot.resize(500, 240)
    plot.show()
    qtbot.waitExposed(plot)
    plot.refresh()
    settle(plot)
    hover(plot, 0.5, 0.5)
    text = plot.readout.item.toPlainText()
    assert text.splitlines()[1].startswith("success (train) = ") and "more (a taller chart shows them)" in text
    assert plot.plotItem.vb.sceneBoundingRect().contains(readout_rect(plot))
    plot.resize(500, 700)                          # room for every line: nothing left out
    settle(plot)
    hover(plot, 0.5, 0.5)
    assert "more" not in plot.readout.item.toPlainText() and len(plot.readout.item.toPlainText().splitlines()) == 10


def test_an_empty_chart_on_log_y_shows_decades_not_a_heap_of_minor_labels(qtbot):
    """No run open and log y on: the losses chart frames 0.001 to 1 (its ticks are decades), not
    the linear frame 0 to 1 read as 1 to 10 in log units (labels 2 … 9 piled at the left)."""
    plot = MetricPlot("Losses", (metrics.LOSS_POLICY,), RunData())
    qtbot.addWidget(plot)
    plot.resize(700, 300)
    plot.show()
    qtbot.waitExposed(plot)
    plot.set_view(X_AXES[0], 0.0, log_y=True)
    settle(plot)
    assert plot.plotItem.vb.viewRange()[1] == [-3, 0]
    plot.reset()                                        # another run opened, none yet drawn
    assert plot.plotItem.vb.viewRange()[1] == [-3, 0]
    plot.set_view(X_AXES[0], 0.0, log_y=False)
    assert plot.plotItem.vb.viewRange()[1] == [0, 1]
