"""The plot buffers: growth, truncation on rewind, alternative x-axes, debiased EMA."""
import numpy as np
import pytest

from rla_engine import metrics
from rla_gui.model.run_data import X_AXES, RunData, ema, ema_state


def reference_ema(y, w):
    out, s = [], 0.0
    for i, v in enumerate(y, start=1):
        s = w * s + (1 - w) * v
        out.append(s / (1 - w ** i))
    return np.array(out)


@pytest.mark.parametrize("w", [0.0, 0.3, 0.6, 0.9, 0.99])
def test_ema_matches_the_step_by_step_definition(w):
    y = np.random.default_rng(0).normal(size=10_000)
    got = ema(y, w)
    assert np.allclose(got, reference_ema(y, w) if w else y, atol=1e-9)
    assert ema(np.array([3.0, 3.0]), 0.9)[0] == pytest.approx(3.0)   # debiased: no pull towards 0


def test_buffers_grow_truncate_and_map_axes():
    data = RunData()
    its = list(range(1, 1001))
    data.add({metrics.SUCCESS: (its, [i / 1000 for i in its], [100.0 + i for i in its]),
              metrics.ENV_STEPS: (its, [10.0 * i for i in its], [100.0 + i for i in its])})
    data.add({metrics.SUCCESS: ([1001], [1.0], [1101.0])})
    x, y = data.xy(metrics.SUCCESS)
    assert len(x) == 1001 and x[-1] == 1001 and y[-1] == 1.0
    x, _ = data.xy(metrics.SUCCESS, X_AXES[1])
    assert x[9] == 100.0                          # iteration 10 ran 100 env steps
    x, _ = data.xy(metrics.SUCCESS, X_AXES[2])
    assert x[0] == 0.0 and x[9] == 9.0            # wall time since the first stored iteration
    v = data.version
    data.truncate_after(500)
    assert data.version > v and data.last_iteration() == 500 and data.last(metrics.SUCCESS) == 0.5


def test_peak_pyramid_incremental_equals_rebuilt_and_keeps_extremes():
    from rla_gui.model.lod import FACTOR, PeakPyramid
    rng = np.random.default_rng(1)
    y = rng.normal(size=100_003)
    x = np.arange(len(y), dtype=float)
    grown = PeakPyramid()
    done = 0
    for n in (5, 9, 64, 1000, 4097, 50_000, 100_003):      # appends of ragged sizes
        grown.update(y[:n], done)
        done = n
    whole = PeakPyramid()
    whole.update(y, 0)
    assert len(grown.lo) == len(whole.lo)
    for a, b in zip(grown.lo + grown.hi, whole.lo + whole.hi):
        assert np.array_equal(a, b)
    xs, ys = whole.view(x, y, 0, len(y), 2000)
    assert len(xs) <= 2000 and ys.min() == y.min() and ys.max() == y.max()   # no peak is lost
    xs, ys = whole.view(x, y, 500, 700, 2000)                                 # few points: raw
    assert np.array_equal(ys, y[500:700])
    xs, ys = whole.view(x, y, 10_000, 60_000, 1000)
    assert xs[0] <= 10_000 and xs[-1] >= 60_000 - FACTOR ** 3 and ys.max() == y[10_000:60_000].max()


def test_appending_to_a_long_curve_copies_none_of_its_history():
    """A live run appends a few points per redraw to a million-point curve; copying the pyramid's
    levels each time made the console's memory grow for as long as the run was shown (soak)."""
    import tracemalloc
    from rla_gui.model.lod import PeakPyramid
    y = np.random.default_rng(2).normal(size=1_100_000)
    pyramid = PeakPyramid()
    pyramid.update(y[:1_000_000], 0)
    pyramid.update(y[:1_000_001], 1_000_000)     # the levels' buffers double once, here
    done = 1_000_001
    tracemalloc.start()
    try:
        for n in range(done + 3, done + 3000, 3):
            pyramid.update(y[:n], done)
            done = n
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100_000, f"an append allocated {peak:,} bytes at its peak"
    whole = PeakPyramid()
    whole.update(y[:done], 0)
    for a, b in zip(pyramid.lo + pyramid.hi, whole.lo + whole.hi):
        assert np.array_equal(a, b)


def test_history_selection_follows_the_run_when_rows_come_and_go(qtbot):
    from rla_gui.panels.history import HistoryPanel
    panel = HistoryPanel()
    qtbot.addWidget(panel)
    row = lambda rid, t: {"id": rid, "name": rid, "status": "completed", "preset": "", "started_at": t,  # noqa: E731
                          "iteration": 1, "notes": f"notes of {rid}", "tags": ""}
    panel.set_runs([row("A", 2.0), row("B", 1.0)])
    panel.select("A")
    panel.notes.setPlainText("typed, not saved")
    panel.set_runs([row("C", 3.0), row("A", 2.0), row("B", 1.0)])     # a new run appears above
    assert panel.selected_ids() == ["A"]
    assert panel.notes.toPlainText() == "typed, not saved"             # the user's typing survives
    panel.set_runs([row("C", 3.0), row("B", 1.0)])                    # A deleted elsewhere
    assert panel.selected_ids() == []


def test_ema_of_values_near_the_largest_float_is_finite_and_continues_as_one_call():
    """An imported run of 1.5e308s: its smoothed curve (a run's, not only a group's) is drawn, not
    lost to overflowing weights; continuing from the state gives what one call over all gives."""
    y = np.array([1.5e308, 1.6e308, 1.4e308, 1.7e308, 1.5e308])
    whole = ema(y, 0.6)
    assert np.all(np.isfinite(whole)) and 1.4e308 <= whole.min() and whole.max() <= 1.7e308
    first = ema(y[:3], 0.6)
    rest = ema(y[3:], 0.6, ema_state(first[-1], 0.6, 3), 3)
    assert np.allclose(np.concatenate([first, rest]), whole, rtol=1e-12)
