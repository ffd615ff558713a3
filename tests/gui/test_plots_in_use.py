"""The console's plots in real use: what is on screen after the mouse leaves, after
the next run is opened, near the plot's edges, with many legend entries; the comparison's
summary and the view bar's smoothing value.

The plots are built as the console builds them (a DashboardPanel on a RunSession, a
ComparisonPanel on runs' RunData) and fed metric columns like the store's; no engine runs.
"""
import numpy as np
import pyqtgraph as pg
import pytest
from PySide6 import QtCore, QtWidgets

from rla_engine import metrics
from rla_gui.panels.comparison import ComparisonPanel
from rla_gui.panels.dashboard import DashboardPanel
from rla_gui.model.run_data import RunData
from rla_gui.session import RunSession
from rla_gui.widgets.view_controls import ViewControls

from gui_support import shown_dashboard

ITERATIONS = 60
TIERS = (0.1, 0.3, 0.5, 0.7, 0.9, 1.0)        # six held-out tiers: nine entries in the policy legend
RUN_KEYS = (metrics.SUCCESS, metrics.EVAL_SUCCESS, metrics.REWARD, metrics.OUTCOME_AGREEMENT,
            metrics.PROCESS_AGREEMENT, metrics.UNANIMITY, metrics.PRECISION, metrics.PRECISION_BOUND, metrics.MU,
            metrics.P_PLUS, metrics.P_MINUS, metrics.POSITIVE_FRACTION, metrics.IN_BAND, metrics.DIFFICULTY_MEAN,
            metrics.LOSS_POLICY, metrics.LOSS_JUDGE, metrics.LOSS_KL)


def columns(keys, iterations=ITERATIONS, seed=0) -> dict:
    """Metric columns as the store hands them over: key -> (iterations, values, t)."""
    rng = np.random.default_rng(seed)
    its = np.arange(1, iterations + 1, dtype=np.float64)
    return {k: (its, rng.uniform(0.1, 0.9, iterations), 1000.0 + its) for k in keys}


def a_run(iterations=ITERATIONS) -> dict:
    """A gridworld run's keys, with six held-out tiers and the pool's difficulty band."""
    out = columns(RUN_KEYS + tuple(metrics.eval_tier_key(t) for t in TIERS), iterations)
    its, lo = out[metrics.SUCCESS][0], np.linspace(0.0, 0.3, iterations)
    out[metrics.MU] = (its, 1.0 + 0.1 * np.sin(its), 1000.0 + its)        # μ keeps near its balance, 1
    out[metrics.DIFFICULTY_MIN] = (its, lo, 1000.0 + its)
    out[metrics.DIFFICULTY_MAX] = (its, lo + 0.5, 1000.0 + its)
    out[metrics.ENV_STEPS] = (its, its * 512, 1000.0 + its)
    return out


EVENTS = [{"id": 1, "iteration": 20, "kind": "pause", "payload": None},
          {"id": 2, "iteration": 22, "kind": "resume", "payload": None},
          {"id": 3, "iteration": 30, "kind": "variant_accepted", "payload": {"difficulty": 0.4}},
          {"id": 4, "iteration": 31, "kind": "variant_rejected", "payload": {"difficulty": 0.6}}]


@pytest.fixture
def dashboard(qtbot):
    session, panel = shown_dashboard(qtbot)
    panel.health.resize(1400, 220)        # the training-health dock: a low strip, the losses in front
    panel.health.show()
    session.data.add(a_run())
    panel.add_events(EVENTS)
    panel.refresh()
    settle(panel)
    return session, panel


def settle(*widgets) -> None:
    """Let layouts and auto-ranges run, as the window's painting would."""
    QtWidgets.QApplication.processEvents()
    for w in widgets:
        w.grab()


def hover(plot, fx: float, fy: float) -> None:
    """The mouse at a fraction of the view box (fx right, fy down), as the scene reports it."""
    r = plot.plotItem.vb.sceneBoundingRect()
    plot.readout._hover(QtCore.QPointF(r.left() + fx * r.width(), r.top() + fy * r.height()))


def readout_rect(plot) -> QtCore.QRectF:
    """Where the read-out is drawn: measured after a paint, which fits the text to the view."""
    plot.grab()
    return plot.readout.item.sceneBoundingRect()


# -- 1. hover read-outs ------------------------------------------------------------------------------
def test_readout_hides_when_the_mouse_leaves_the_plot(dashboard):
    _, panel = dashboard
    hover(panel.agreement, 0.5, 0.5)
    assert panel.agreement.readout.item.isVisible()
    # leaving the widget: the scene sends no more moves; Qt tells the widgets left, the
    # viewport first, then the plot widget around it
    for widget in (panel.agreement.viewport(), panel.agreement):
        QtWidgets.QApplication.sendEvent(widget, QtCore.QEvent(QtCore.QEvent.Type.Leave))
    assert not panel.agreement.readout.item.isVisible()


def test_comparison_readout_hides_when_the_mouse_leaves(comparison):
    plot = comparison.plots[2]
    hover(plot, 0.5, 0.5)
    assert plot.readout.item.isVisible()
    for widget in (plot.viewport(), plot):
        QtWidgets.QApplication.sendEvent(widget, QtCore.QEvent(QtCore.QEvent.Type.Leave))
    assert not plot.readout.item.isVisible()


def test_readout_of_a_closed_run_does_not_carry_over_to_the_next(dashboard):
    session, panel = dashboard
    hover(panel.policy, 0.98, 0.5)
    item = panel.policy.readout.item
    assert item.isVisible() and "eval @0.3 = " in item.toPlainText()
    session.open(None)                     # the run closed, the next one opens empty
    assert not item.isVisible()
    session.data.add(columns((metrics.SUCCESS,), iterations=5))
    panel.refresh()
    settle(panel)
    assert not item.isVisible()


@pytest.mark.parametrize("fx, fy", [(0.995, 0.01), (0.995, 0.99), (0.005, 0.01), (0.5, 0.5)])
def test_readout_stays_inside_the_view_box(dashboard, fx, fy):
    _, panel = dashboard
    for plot in (panel.policy, panel.balance, panel.losses):
        hover(plot, fx, fy)
        assert plot.readout.item.isVisible()
        box = plot.plotItem.vb.sceneBoundingRect()
        assert box.contains(readout_rect(plot)), (plot.plotItem.titleLabel.text, box, readout_rect(plot))


def test_readout_sits_beside_the_cursor_not_under_it(dashboard):
    _, panel = dashboard
    for fx, fy in ((0.3, 0.6), (0.99, 0.6), (0.3, 0.02)):
        hover(panel.agreement, fx, fy)
        r = panel.agreement.plotItem.vb.sceneBoundingRect()
        cursor = QtCore.QPointF(r.left() + fx * r.width(), r.top() + fy * r.height())
        assert not readout_rect(panel.agreement).contains(cursor)


@pytest.mark.parametrize("dark", [False, True])
def test_readout_has_an_opaque_bordered_background_in_either_theme(qtbot, monkeypatch, dark):
    monkeypatch.setattr("rla_gui.widgets.readout.is_dark", lambda: dark)
    session = RunSession(None)
    panel = DashboardPanel(session)
    qtbot.addWidget(panel)
    item = panel.policy.readout.item
    assert item.fill.style() != QtCore.Qt.BrushStyle.NoBrush and item.fill.color().alpha() >= 200
    assert item.border.style() != QtCore.Qt.PenStyle.NoPen
    # the text contrasts with its fill, whatever is drawn under it
    fill, text = item.fill.color().lightness(), item.color.lightness()
    assert abs(fill - text) > 150 and (fill < 100) == dark


# -- 2. legends ----------------------------------------------------------------------------------------
def legend_labels(plot) -> list[str]:
    return [label.text for _, label in plot.plotItem.legend.items]


def assert_legend_clear_of_data(plot) -> None:
    legend, vb = plot.plotItem.legend, plot.plotItem.vb
    box = vb.sceneBoundingRect()
    shown = legend.sceneBoundingRect()
    assert legend.isVisible() and not shown.isEmpty()
    assert not shown.intersects(box), (legend_labels(plot), shown, box)
    view = QtCore.QRectF(plot.viewport().rect())
    for sample, label in legend.items:       # every entry whole and in the widget: none clipped
        for part in (sample, label):
            r = part.sceneBoundingRect()
            assert view.contains(r) and not r.intersects(box), (label.text, r, box)


def test_dashboard_legends_sit_outside_the_plots_even_with_every_tier(dashboard):
    _, panel = dashboard
    labels = legend_labels(panel.policy)
    # one entry stands for every tier (their shades tell them apart; the read-out names each)
    assert [x for x in labels if x.startswith("eval @")] == ["eval @tiers"]
    assert "events" in labels and len(labels) >= 5      # the markers share one entry
    for plot in panel.plots:
        assert_legend_clear_of_data(plot)
    # it never runs past the plot's width (it wraps: see test_a_narrow_plot_wraps_its_legend)
    policy = panel.policy.plotItem
    assert policy.legend.sceneBoundingRect().width() <= policy.vb.sceneBoundingRect().width() + 1


def test_a_narrow_plot_wraps_its_legend(dashboard):
    _, panel = dashboard
    panel.policy.setFixedWidth(220)
    settle(panel)
    policy = panel.policy.plotItem
    assert policy.legend.sceneBoundingRect().width() <= policy.vb.sceneBoundingRect().width() + 1
    assert len({round(label.sceneBoundingRect().top()) for _, label in policy.legend.items}) >= 2
    assert_legend_clear_of_data(panel.policy)


def test_a_steered_run_keeps_a_short_legend_and_names_its_markers_under_the_mouse(dashboard):
    """Pause, override, resume, a resume from a checkpoint: each marker kind had its legend entry,
    and a steered run's legends grew to 8-9 rows, squeezing μ balance to ~35 px (seen at the console
    under Xvfb). All markers share one entry; the read-out names the ones under the mouse."""
    _, panel = dashboard
    panel.add_events([{"id": 9, "iteration": 40, "kind": "set_difficulty", "payload": None},
                      {"id": 10, "iteration": 50, "kind": "resumed_from_checkpoint", "payload": None}])
    panel.resize(900, 620)                  # a laptop's share of the window: plots ~430 px wide
    settle(panel)
    for plot in (panel.policy, panel.agreement, panel.balance, panel.difficulty):
        labels = [label.text for _, label in plot.plotItem.legend.items]
        assert labels.count("events") == 1 and "pause" not in labels, labels
        assert plot.plotItem.legend.rowCount <= 3, (plot.plotItem.titleLabel.text, labels)
        assert plot.plotItem.vb.height() >= 0.45 * plot.height(), plot.plotItem.titleLabel.text
    x0, x1 = panel.balance.plotItem.vb.viewRange()[0]
    hover(panel.balance, (20 - x0) / (x1 - x0), 0.5)     # over the pause at iteration 20
    assert "events: pause" in panel.balance.readout.item.toPlainText()


def test_legend_follows_the_tiers_of_the_next_run(dashboard):
    session, panel = dashboard
    session.open(None)
    session.data.add(columns((metrics.SUCCESS, metrics.EVAL_SUCCESS, metrics.eval_tier_key(0.5)), iterations=8))
    panel.refresh()
    settle(panel)
    assert legend_labels(panel.policy) == ["success (train)", "eval success", "reward R", "eval @tiers"]
    assert_legend_clear_of_data(panel.policy)


def test_the_mu_line_label_is_not_under_a_legend(dashboard):
    _, panel = dashboard
    line = next(i for i in panel.balance.plotItem.items if isinstance(i, pg.InfiniteLine))
    assert line.label.isVisible() and line.label.toPlainText() == "μ = 1"
    # the view box clips what it holds: what shows of the label is its part inside the box
    shown = line.label.sceneBoundingRect().intersected(panel.balance.plotItem.vb.sceneBoundingRect())
    assert not shown.isEmpty()
    assert not shown.intersects(panel.balance.plotItem.legend.sceneBoundingRect())


def two_runs() -> list[tuple[dict, RunData]]:
    runs = []
    for i, name in enumerate(("first", "second")):
        data = RunData()
        cols = columns(RUN_KEYS, seed=i)
        its = cols[metrics.SUCCESS][0]
        accepted = np.zeros(ITERATIONS)
        accepted[:59] = 1.0                                   # 59 variants accepted in all
        cols[metrics.ACCEPTED] = (its, accepted, 1000.0 + its)
        cols[metrics.REJECTED] = (its, np.full(ITERATIONS, 2.0), 1000.0 + its)
        cols[metrics.ENV_STEPS] = (its, its * 10 + i, 1000.0 + its)   # 600 and 601 at the end
        data.add(cols)
        runs.append(({"id": f"r{i}", "name": name, "status": "completed", "config": {"run": {"seed": i}},
                      "started_at": 1000.0, "ended_at": 1061.5}, data))
    return runs


@pytest.fixture
def comparison(qtbot):
    panel = ComparisonPanel(two_runs())
    qtbot.addWidget(panel)
    panel.resize(1400, 1000)
    panel.show()
    qtbot.waitExposed(panel)
    settle(panel)
    return panel


def test_comparison_legends_sit_outside_the_plots(comparison):
    for plot in comparison.plots:
        assert legend_labels(plot) == ["first", "second"]
        assert_legend_clear_of_data(plot)


def test_comparison_readout_stays_inside_and_goes_with_the_curves_it_described(comparison):
    plot = comparison.plots[0]
    hover(plot, 0.99, 0.02)
    assert plot.readout.item.isVisible()
    assert plot.plotItem.vb.sceneBoundingRect().contains(readout_rect(plot))
    plot.key_box.setCurrentIndex(1)      # another key: other curves, the old numbers are wrong
    assert not plot.readout.item.isVisible()


def test_a_comparison_readout_of_long_names_shows_their_start_inside_a_narrow_plot(qtbot):
    """Runs named at length, a narrow plot: the read-out was wider than the plot and placed to end
    at its right edge, so every line lost its start ("uccess (train)"; seen under Xvfb)."""
    runs = two_runs()
    for i, (row, _) in enumerate(runs):
        row["name"] = f"quickstart seed {i} with longer notes in its name"
    panel = ComparisonPanel(runs)
    qtbot.addWidget(panel)
    panel.resize(700, 900)
    panel.show()
    qtbot.waitExposed(panel)
    settle(panel)
    plot = panel.plots[0]
    hover(plot, 0.99, 0.5)
    text = plot.readout.item.toPlainText()
    assert "quickstart seed 0 with …" in text and "notes in its name" not in text, text
    box, shown = plot.plotItem.vb.sceneBoundingRect(), readout_rect(plot)
    assert shown.left() >= box.left() - 0.5, (box, shown)


# -- 3. nothing of a closed run stays drawn ------------------------------------------------------------
def drawn_leftovers(plot) -> list:
    """Whatever the plot shows of run data: curves with a path, scatter points, filled paths, text.
    The fixed references (the μ = 1 line, the 0.2–0.8 band) belong to the panel, not a run."""
    fixed = [i for i in plot.plotItem.items if isinstance(i, (pg.InfiniteLine, pg.LinearRegionItem))]
    out = []
    for item in plot.plotItem.vb.childGroup.childItems():
        for it in [item, *item.childItems()]:
            if not it.isVisible() or any(f is it or f.isAncestorOf(it) for f in fixed):
                continue
            if isinstance(it, pg.PlotCurveItem) and not it.getPath().isEmpty():
                out.append(("curve", it))
            elif isinstance(it, pg.ScatterPlotItem) and len(it.points()):
                out.append(("points", it))
            elif isinstance(it, QtWidgets.QGraphicsPathItem) and not it.path().isEmpty():
                out.append(("fill", it))
            elif isinstance(it, pg.TextItem):
                out.append(("text", it))
    return out


def test_closing_a_run_leaves_nothing_of_it_drawn(dashboard):
    session, panel = dashboard
    band = next(i for i in panel.difficulty.plotItem.items if isinstance(i, pg.FillBetweenItem))
    assert not band.path().isEmpty()
    assert {kind for kind, _ in drawn_leftovers(panel.difficulty)} == {"curve", "points", "fill"}
    hover(panel.difficulty, 0.9, 0.2)
    session.open(None)
    panel.refresh()
    settle(panel)
    assert band.path().isEmpty() and band.boundingRect().isEmpty()
    for plot in panel.plots:
        assert drawn_leftovers(plot) == [], plot.plotItem.titleLabel.text
        assert not [label.text for _, label in plot.plotItem.legend.items if label.text == "events"]


def test_a_run_without_a_band_shows_no_band(dashboard):
    """The next run logs no pool difficulty (a language-model run): its refreshes must not
    bring the old run's band back."""
    session, panel = dashboard
    session.open(None)
    session.data.add(columns((metrics.SUCCESS, metrics.LOSS_POLICY), iterations=5))
    panel.refresh()
    settle(panel)
    assert [kind for kind, _ in drawn_leftovers(panel.difficulty)] == []


# -- 4. an empty panel does not keep the old run's axes -------------------------------------------------
def test_an_empty_losses_panel_does_not_keep_the_old_x_range(dashboard):
    session, panel = dashboard
    vb = panel.losses.plotItem.vb
    assert vb.viewRange()[0][1] >= ITERATIONS
    vb.setXRange(40, 60, padding=0)          # the user zoomed in on the end of the run
    settle(panel.losses)
    session.open(None)
    session.data.add(columns((metrics.SUCCESS,), iterations=5))    # the next run has no losses
    panel.refresh()
    settle(panel, panel.losses)
    x0, x1 = vb.viewRange()[0]
    assert x1 < 40, (x0, x1)
    assert all(vb.autoRangeEnabled())
    session.data.add({metrics.LOSS_POLICY: (np.arange(1.0, 6.0), np.linspace(0.1, 0.5, 5), np.arange(5.0))})
    panel.refresh()
    settle(panel.losses)
    x0, x1 = vb.viewRange()[0]
    assert 0 < x0 <= 1.5 and 4.5 <= x1 < 6, (x0, x1)       # it auto-ranges to the new run's data


# -- 5. the comparison's summary -----------------------------------------------------------------------
def summary_cells(panel) -> dict[str, list[str]]:
    table = panel.summary_table
    return {table.verticalHeaderItem(r).text(): [table.item(r, c).text() for c in range(table.columnCount())]
            for r in range(table.rowCount())}


def test_comparison_summary_shows_counts_as_whole_numbers(comparison):
    cells = summary_cells(comparison)
    accepted = next(v for k, v in cells.items() if "variants" in k and "accepted" in k)
    rejected = next(v for k, v in cells.items() if "variants" in k and "rejected" in k)
    assert accepted == ["59", "59"] and rejected == ["120", "120"]
    assert cells["env steps"] == ["600", "601"]
    final = cells["success (train) final"]
    assert all(len(v.split(".")[1]) == 3 for v in final)    # measurements keep their decimals


# -- 6. the smoothing value --------------------------------------------------------------------------
def shown_texts(widget) -> list[str]:
    return [label.text() for label in widget.findChildren(QtWidgets.QLabel) if label.isVisibleTo(widget)]


def test_smoothing_slider_shows_its_weight(qtbot, tmp_path):
    bar = ViewControls()
    qtbot.addWidget(bar)
    assert "0.60" in shown_texts(bar)
    bar.smoothing.setValue(0)
    assert "off" in shown_texts(bar) and "0.60" not in shown_texts(bar)
    bar.smoothing.setValue(35)
    assert "0.35" in shown_texts(bar)
    settings = QtCore.QSettings(str(tmp_path / "s.ini"), QtCore.QSettings.Format.IniFormat)
    settings.setValue("plots/smoothing", 85)
    bar.restore_state(settings, "plots")
    assert "0.85" in shown_texts(bar) and "0.35" not in shown_texts(bar)
