"""The ablation's figures: mean curves per arm on a shared step grid, and the Theorem-1 check."""
import numpy as np
import pytest

from rla_gui.report.ablation import _share_above, arm_of, curves_chart, mean_curve, theory_chart


def test_curves_average_the_seeds_where_every_seed_has_evaluated():
    arms = {"full": [(np.array([0.0, 100.0]), np.array([0.2, 0.6])), (np.array([0.0, 80.0]), np.array([0.4, 0.8]))],
            "outcome": [(np.array([0.0, 100.0]), np.array([0.1, 0.1]))]}
    chart = curves_chart(arms)
    assert chart.png[:4] == b"\x89PNG" and chart.width == 820
    assert [e.label for e in chart.legend] == ["full (2 seeds)", "outcome (1 seed)"]
    x, mean, std = mean_curve(arms["full"], np.linspace(0.0, 100.0, 51))
    assert x.max() == 80.0                       # beyond 80 steps only one seed has evaluated
    assert mean[0] == pytest.approx(0.3) and std[0] == pytest.approx(np.std([0.2, 0.4], ddof=1))
    assert mean[-1] == pytest.approx((0.52 + 0.8) / 2)   # seed 1 at 80 steps: 0.2 + 0.4·0.8


def test_theory_check_counts_iterations_at_or_above_the_bound():
    # m = 3: the bound at μ = 1.5 is 1 − exp(−3·0.25/4) ≈ 0.171; at μ ≤ 1 it is 0
    points = np.array([[1.5, 0.9], [1.5, 0.1], [0.9, 0.5], [2.0, 0.5]])   # bound at μ = 2: ≈ 0.528
    assert _share_above(points, 3) == pytest.approx(0.5)
    chart = theory_chart(points, 3)
    assert chart.png[:4] == b"\x89PNG" and "4 iterations" in chart.note and "50%" in chart.note
    assert any("m = 3" in e.label for e in chart.legend)


def test_the_arm_is_read_from_the_run_name_rla_ablate_gives():
    assert arm_of({"id": "g.full_gate.s0", "name": "full+gate · seed 0"}) == "full+gate"
