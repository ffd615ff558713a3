"""One rule for a run's duration, config differences and final/best values, whoever shows them."""
import pytest
from rla_engine.summary import best_value, config_differences, final_value, run_duration

from rla_engine import metrics


def test_duration_of_live_finished_and_never_started_runs():
    live = {"status": "running", "started_at": 100.0, "heartbeat_at": 160.0, "ended_at": None}
    assert run_duration(live, now=999.0) == 60.0                       # to its last heartbeat
    assert run_duration({**live, "heartbeat_at": None}, now=130.0) == 30.0   # none yet: to now
    done = {"status": "completed", "started_at": 100.0, "heartbeat_at": 170.0, "ended_at": 175.0}
    assert run_duration(done, now=999.0) == 75.0
    old = {**done, "status": "crashed", "ended_at": None}              # an older version left it empty
    assert run_duration(old, now=999.0) == 70.0
    assert run_duration({"status": "running", "started_at": None}) is None


def test_config_differences_count_a_missing_key_and_nested_values():
    a = {"task": {"family": "gridworld"}, "eval": {"tiers": [0.1, 0.5]}}
    b = {"task": {"family": "gridworld"}, "eval": {"tiers": [0.1, 0.9]}, "extra": {"x": None}}
    assert config_differences([a, b]) == ["eval.tiers", "extra.x"]
    assert config_differences([a, a]) == []


def test_final_and_best_values_skip_nan_and_name_the_first_iteration_at_the_best():
    its, vals = [1, 2, 3, 4, 5], [0.2, float("nan"), 0.7, 0.7, 0.5]
    assert final_value(vals) == 0.5 and final_value([]) is None
    assert best_value(its, vals) == (0.7, 3)
    assert best_value([1, 2], [float("nan"), float("nan")]) == (None, None)


def test_one_definition_of_final_best_and_mean_of_last_n_serves_every_table():
    from rla_engine.ablation import results
    from rla_engine.summary import BEST, FINAL, definitions, mean_of_last

    values = [0.1, 0.9, float("nan"), 0.4, 0.5]
    assert FINAL.of(values) == 0.5
    assert BEST.of(values) == 0.9
    assert mean_of_last(3).of([0.0, 0.1, 0.2, 0.4, 0.6]) == pytest.approx(0.4)
    assert FINAL.of([]) is None and BEST.of([]) is None and mean_of_last(3).of([]) is None
    # the ablation's held-out success is a mean of the last three evaluations, and its table says so
    assert results.REDUCTIONS[metrics.EVAL_SUCCESS].of([0.0, 0.3, 0.6, 0.9]) == pytest.approx(0.6)
    caption = results.column_definitions()
    assert "held-out success, @0.9 — the mean of the run's last 3 stored values" in caption
    assert "difficulty, env steps — " + FINAL.definition in caption
    assert definitions([FINAL, BEST, FINAL]) == f"final: {FINAL.definition}; best: {BEST.definition}"
