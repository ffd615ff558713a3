"""The report draws from the console's model (issue 35, part 1): a run's metrics read into the one
series container (model.run_data.RunData), thinned by the live plots' own min/max bins
(model.lod), coloured by the comparison's colour_of; a value that is not a number gets no point
(it is neither invented nor silently dropped: the chart's note counts it). And the Compare tab's
log y says, as the dashboard's does, how many points it hides.

Real charts rendered offscreen from recorded runs given long synthetic histories; the live side
is the dashboard's own curve and the Compare tab's own widgets."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from rla_engine import metrics
from rla_gui.model.comparison import colour_of
from rla_gui.model.panel_spec import PALETTE
from rla_gui.model.run_data import X_AXES, RunData
from rla_gui.panels.comparison import ComparisonPanel, GroupComparisonPanel
from rla_gui.report import charts, groups, sections
from rla_gui.report.html import render_html
from rla_gui.widgets.metric_plot import MetricPlot

N = 100_000


def with_history(recorded, values: dict[str, np.ndarray], name: str = "long run") -> dict:
    """The recorded arithmetic run's bundle with `values` (key -> one value per iteration) as its
    metrics; None stands for a row whose value the store could not read."""
    base = recorded("recorded_arithmetic")[0]
    bundle = copy.deepcopy({k: base[k] for k in ("format", "run")})
    bundle["run"].update(name=name, id=name)
    bundle.update(iterations=[], events=[], tasks=[],
                  metrics=[{"iteration": i + 1, "key": key, "value": None if v is None else float(v), "t": 1e9 + i}
                           for key, ys in values.items() for i, v in enumerate(ys)])
    return bundle


def noisy(n: int = N, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(0.5 + np.cumsum(rng.normal(0, 0.01, n)), -1, 2) + rng.normal(0, 0.05, n)


@pytest.fixture
def drawn_lines(monkeypatch) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every line a report chart hands to pyqtgraph, in the order drawn."""
    lines: list[tuple[np.ndarray, np.ndarray]] = []
    add = charts._Canvas._add

    def spy(self, x, y, pen, **kw):
        lines.append((np.asarray(x), np.asarray(y)))
        add(self, x, y, pen, **kw)
    monkeypatch.setattr(charts._Canvas, "_add", spy)
    return lines


def live_curve(data: RunData, key: str, smoothing: float):
    """The dashboard's curve of `key`, drawn whole at the width whose budget is the report's."""
    plot = MetricPlot("live", (key,), data)
    curve = plot.curves[key]
    curve.draw(data, X_AXES[0], smoothing, None, pixels=charts.MAX_POINTS // 2)
    return plot, curve


def test_a_long_series_in_the_report_is_the_live_plots_picture(recorded, drawn_lines):
    y = noisy()
    bundle = with_history(recorded, {metrics.SUCCESS: y})
    policy = charts.run_charts(bundle)[0]
    assert policy.id == "policy" and "Long series" in policy.note
    (raw_x, raw_y), (bold_x, bold_y) = drawn_lines[:2]       # the faint raw values, the bold moving average
    live = RunData()
    its = np.arange(1, N + 1, dtype=np.float64)
    live.add({metrics.SUCCESS: (its, y, 1e9 + its - 1)})     # as the store hands the dashboard its columns
    _plot, curve = live_curve(live, metrics.SUCCESS, smoothing=1.0 - 200.0 / N)
    # the same min/max bins, vertex for vertex: one downsampling for the report and the dashboard
    assert np.array_equal(raw_x, curve.raw.xData) and np.array_equal(raw_y, curve.raw.yData)
    assert np.array_equal(bold_x, curve.line.xData) and np.allclose(bold_y, curve.line.yData, rtol=0, atol=1e-12)
    assert len(raw_x) <= charts.MAX_POINTS and raw_y.max() == y.max() and raw_y.min() == y.min()
    # and the report's numbers come from the same container the dashboard holds
    data = sections.Facts(bundle).data
    assert isinstance(data, RunData) and np.array_equal(data.xy(metrics.SUCCESS)[1], y)


def test_values_that_are_not_numbers_get_no_point_and_are_counted(recorded, drawn_lines):
    y = noisy().astype(object)
    missing = [1_000, 50_000, 99_000]
    for i in missing:
        y[i] = None
    bundle = with_history(recorded, {metrics.SUCCESS: y})
    policy = charts.run_charts(bundle)[0]
    (_, raw_y), (_, bold_y) = drawn_lines[:2]
    stored = {float(v) for v in y if v is not None}
    drawn = raw_y[np.isfinite(raw_y)]
    assert set(drawn.tolist()) <= stored          # no value stands in for a missing one (the mean did)
    assert np.isnan(raw_y).sum() == len(missing)  # a gap where each was, not a line across it
    assert np.isfinite(bold_y).sum() == len(bold_y) - len(missing)    # the average goes on past a gap
    assert "3 values not a finite number" in policy.note
    page = render_html([bundle])
    assert "3 values not a finite number: no point drawn, a gap in the line." in page


def test_a_short_series_with_a_missing_value_has_a_gap_there(recorded, drawn_lines):
    y: list = [0.1, 0.2, None, 0.4, 0.5]
    charts.run_charts(with_history(recorded, {metrics.SUCCESS: y}))
    x, drawn = drawn_lines[0]
    assert x.tolist()[:2] == [1.0, 2.0] and x.tolist()[-2:] == [4.0, 5.0]
    assert [v for v in drawn.tolist() if v == v] == [0.1, 0.2, 0.4, 0.5] and np.isnan(drawn[2])


def test_comparison_and_group_reports_colour_runs_as_the_compare_tab(recorded, drawn_lines):
    runs = [with_history(recorded, {metrics.SUCCESS: noisy(50, seed=i)}, name=f"run {i}")
            for i in range(len(PALETTE) + 2)]
    overlays = charts.comparison_charts(runs)
    success = next(c for c in overlays if c.id == "cmp-" + metrics.SUCCESS.replace("/", "-"))
    assert [e.colour for e in success.legend] == [colour_of(i) for i in range(len(runs))]
    facts = [sections.Facts(b) for b in runs]
    assert all(f'color:{colour_of(i)}"' in sections.run_label(f, i) for i, f in enumerate(facts))
    assert f'color:{colour_of(3)}"' in groups.group_label(3, "g")


def loss_run(run_id: str, negative_every: int) -> tuple[dict, RunData]:
    its = np.arange(1, 61, dtype=np.float64)
    loss = np.where(np.arange(60) % negative_every == 0, -0.1, 0.2)
    data = RunData()
    data.add({metrics.LOSS_POLICY: (its, loss, 1000.0 + its), metrics.SUCCESS: (its, np.full(60, 0.5), 1000.0 + its)})
    return {"id": run_id, "name": run_id, "status": "completed", "config": {}}, data


def losses_title(panel) -> str:
    plot = next(p for p in panel.plots if p.panel.id == "losses")
    return plot.plotItem.titleLabel.text


def test_compare_tabs_log_y_says_how_many_points_it_hides(qtbot):
    panel = ComparisonPanel([loss_run("a", 3), loss_run("b", 4)])     # 20 and 15 of 60 negative
    qtbot.addWidget(panel)
    assert "hidden" not in losses_title(panel)
    panel.view.log_y.setChecked(True)
    assert "log y: 35 of 120 points ≤ 0 hidden" in losses_title(panel)
    panel.view.log_y.setChecked(False)
    assert "hidden" not in losses_title(panel)


def test_a_group_comparisons_log_y_counts_the_drawn_means_points(qtbot):
    panel = GroupComparisonPanel("run:group", [("pair", [loss_run("a", 3), loss_run("b", 3)])])
    qtbot.addWidget(panel)
    panel.view.smoothing.setValue(0)
    panel.view.log_y.setChecked(True)
    assert "log y: 20 of 60 points ≤ 0 hidden" in losses_title(panel)
