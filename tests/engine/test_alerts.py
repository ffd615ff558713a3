"""Alerts from the theory: the watcher's rules on hand-made series, then real `rla run`
processes driven into each condition, seeing the alert raised and cleared."""
import itertools
import json
import os
import signal

import pytest

from rla_engine import metrics
from rla_engine.alerts import (ALERTS, CLEARED, CONDITION_ENDED, ENV_INVALID, JUDGE_UNANIMOUS, MU_AT_MOST_ONE,
                               NONE_IN_BAND, NOT_FINITE, RAISED, RUN_ENDED, SANDBOX_FAILING, AlertWatcher, describe,
                               open_alerts)
from rla_engine.store import open_store
from rla_engine.vocabulary import EventKind

from engine_support import TINY, one_line_error, rla, spawn, wait_for


def feed(watcher, series, key=metrics.MU, start=1):
    """[(iteration, payload)] of the events `series` (None: the key absent that iteration) makes."""
    out = []
    for it, v in enumerate(series, start):
        values = {} if v is None else {key: v}
        out += [(it, p) for kind, p in watcher.observe(it, values) if kind == EventKind.ALERT]
    return out


# -- the watcher -------------------------------------------------------------------------------
def test_an_alert_is_raised_once_its_window_holds_and_names_where_it_began():
    w = AlertWatcher(window=3)
    events = feed(w, [1.2, 0.9, 0.95, 0.98, 0.9])
    # iterations 1-3 average 1.017 (> 1); 2-4 average 0.943: raised at 4, the window began at 2
    assert [(it, p["alert"], p["state"], p["since"]) for it, p in events] == [(4, MU_AT_MOST_ONE, RAISED, 2)]
    p = events[0][1]
    assert p["value"] == pytest.approx((0.9 + 0.95 + 0.98) / 3) and p["threshold"] == 1.0
    assert p["key"] == metrics.MU and p["window"] == 3 and p["message"] and p["advice"]
    assert describe(p).startswith("mu_at_most_one since iteration 2: rm/mu 0.943 ≤ 1")


def test_it_clears_on_a_fresh_window_where_the_condition_no_longer_holds():
    w = AlertWatcher(window=2)
    events = feed(w, [0.9, 0.9, 1.5, 0.9, 1.2, 1.3, 0.8])
    # raised at 2; the window restarts: (1.5, 0.9) averages 1.2 > 1, cleared at 4; it restarts again,
    # and neither (1.2, 1.3) nor (1.3, 0.8) averages ≤ 1
    assert [(it, p["state"]) for it, p in events] == [(2, RAISED), (4, CLEARED)]
    cleared = events[1][1]
    assert cleared["since"] == 1 and cleared["raised_at"] == 2 and cleared["reason"] == CONDITION_ENDED
    assert cleared["value"] == pytest.approx(1.2)
    assert w.active == {}


def test_an_iteration_without_the_measure_neither_raises_nor_clears_nor_counts():
    w = AlertWatcher(window=2)
    assert feed(w, [0.9, None, None]) == []            # one measure is no window of two
    events = feed(w, [0.8, None, 2.0, None, 2.0], start=4)
    assert [(it, p["state"], p["since"]) for it, p in events] == [(4, RAISED, 1), (8, CLEARED, 1)]


def test_a_run_without_step_rewards_is_not_warned_about_its_judges_verdicts():
    """λ = 0 (an ablation's outcome arms): μ ≤ 1 says the verdicts add noise to a reward they are
    not in; a frozen judge's unanimity says it stopped learning what it never learns."""
    from rla_engine.alerts import unheeded_alerts
    collapsed = {metrics.MU: 0.9, metrics.UNANIMITY: 1.0}
    for lam, trains, raised in ((1.0, True, {MU_AT_MOST_ONE, JUDGE_UNANIMOUS}), (0.0, True, {JUDGE_UNANIMOUS}),
                                (0.0, False, set()), (0.5, False, {MU_AT_MOST_ONE, JUDGE_UNANIMOUS})):
        w = AlertWatcher(window=2, unheeded=unheeded_alerts(lam, trains))
        events = [p for it in (1, 2, 3) for _, p in w.observe(it, collapsed)]
        assert {p["alert"] for p in events} == raised, (lam, trains)


def test_no_sampled_task_in_band_and_a_unanimous_judge():
    w = AlertWatcher(window=2)
    events = feed(w, [0.0, 0.0, 0.25, 0.0], key=metrics.IN_BAND)
    assert [(it, p["alert"], p["state"]) for it, p in events] == [(2, NONE_IN_BAND, RAISED), (4, NONE_IN_BAND, CLEARED)]
    w = AlertWatcher(window=2)
    events = feed(w, [0.96, 0.94, 0.96, 0.99], key=metrics.UNANIMITY)
    # (0.96, 0.94) averages 0.95 exactly: ≥ 0.95 holds
    assert [(it, p["alert"], p["state"]) for it, p in events] == [(2, JUDGE_UNANIMOUS, RAISED)]


def test_sandbox_errors_piling_up_in_a_coding_run_raise_their_alert():
    """More than 2 % of the executions failed by the sandbox itself, over the window; 2 % exactly is not."""
    key = metrics.exec_status_key("sandbox_error")
    events = feed(AlertWatcher(window=2), [0.0, 0.02, 0.02, 0.03, 0.05, 0.0, 0.0], key=key)
    # (0.02, 0.02) is not above 2 %; (0.02, 0.03) is: raised at 4; afresh, (0.05, 0.0) still holds,
    # (0.0, 0.0) clears at 7
    assert [(it, p["alert"], p["state"]) for it, p in events] == [(4, SANDBOX_FAILING, RAISED),
                                                                  (7, SANDBOX_FAILING, CLEARED)]
    assert events[0][1]["key"] == key and "sandbox check" in events[0][1]["advice"]


def test_the_environment_models_invalid_share_counts_every_answer():
    w = AlertWatcher(window=1)
    iterations = iter(range(1, 10))

    def seen(invalid, pending):
        values = {metrics.INVALID: invalid, metrics.PENDING: pending}
        return [p["state"] for _, p in w.observe(next(iterations), values)]
    assert seen(1.0, 1.0) == []                 # half invalid is not more than half
    assert seen(2.0, 1.0) == [RAISED]
    assert seen(0.0, 0.0) == []                 # nothing asked: no share, no change
    assert seen(3.0, 3.0) == [CLEARED]
    assert ALERTS[ENV_INVALID].reads == (metrics.INVALID, metrics.PENDING)


def test_the_state_survives_a_round_trip_so_nothing_is_raised_twice_or_forgotten():
    series = [0.9, 0.95, 0.97, 1.0, 1.4, 1.5, 0.7, 0.8, 0.9, 1.3]
    whole = AlertWatcher(window=3)
    straight = feed(whole, series)
    first = AlertWatcher(window=3)
    before = feed(first, series[:4])
    assert [p["state"] for _, p in before] == [RAISED] and first.active
    resumed = AlertWatcher(window=3, state=first.state_json())
    assert resumed.active == first.active and resumed.recent == first.recent
    after = feed(resumed, series[4:], start=5)
    assert before + after == straight
    assert [p["state"] for _, p in straight] == [RAISED, CLEARED, RAISED]


def test_the_runs_end_clears_what_is_active_and_a_resume_raises_it_again():
    w = AlertWatcher(window=1)
    feed(w, [0.5])
    w.observe(2, {metrics.UNANIMITY: 1.0})       # raised in iteration 2, which (say) never committed
    ended = w.end(committed=1)
    assert [(p["alert"], p["state"], p["reason"]) for _, p in ended] == [(MU_AT_MOST_ONE, CLEARED, RUN_ENDED)]
    carried = AlertWatcher(window=1, state=w.state_json())
    again = carried.carried_over(open_in_store=[])
    assert {p["alert"]: (p["since"], p.get("resumed")) for _, p in again} == \
        {MU_AT_MOST_ONE: (1, True), JUDGE_UNANIMOUS: (2, True)}
    assert carried.carried_over(open_in_store=[MU_AT_MOST_ONE, JUDGE_UNANIMOUS]) == []


def test_a_non_finite_loss_is_raised_then_cleared_by_the_failure_and_never_saved():
    w = AlertWatcher(window=5)
    [(kind, raised)] = w.not_finite(7, "loss/policy", float("inf"))
    assert kind == EventKind.ALERT and raised["alert"] == NOT_FINITE and raised["since"] == 7
    assert raised["quantity"] == "loss/policy" and raised["value"] == "inf"
    assert "loss/policy = inf" in describe(raised)
    assert [p["alert"] for _, p in w.end(committed=6)] == [NOT_FINITE]
    assert NOT_FINITE not in json.loads(w.state_json())["active"]


def test_a_disabled_watcher_says_nothing():
    w = AlertWatcher(window=1, enabled=False)
    assert feed(w, [0.1, 0.1]) == [] and w.not_finite(1, "loss/judge", float("nan")) == []


def test_open_alerts_reads_the_event_log():
    def ev(kind, it, **p):
        return {"kind": kind, "iteration": it, "payload": p}
    log = [ev("alert", 3, alert="a", state=RAISED, since=1), ev("alert", 4, alert="b", state=RAISED, since=2),
           ev("alert", 5, alert="b", state=CLEARED, reason=CONDITION_ENDED), ev("episode", 5),
           ev("alert", 6, alert="a", state=CLEARED, reason=RUN_ENDED), ev("completed", 6)]
    assert open_alerts(log) == {}
    assert list(open_alerts(log, at_end=True)) == ["a"] and open_alerts(log, at_end=True)["a"]["iteration"] == 3
    # a resume starts afresh: what still holds is raised again (and only that is open)
    assert open_alerts([*log, ev("resumed_from_checkpoint", 6)], at_end=True) == {}
    assert open_alerts([ev("alert", 1, alert="x", state=CLEARED), {"kind": "alert", "payload": None}]) == {}


# -- real runs ---------------------------------------------------------------------------------
def alert_events(db, run_id):
    return [(e["iteration"], e["payload"]) for e in open_store(db).events(run_id, kinds=[EventKind.ALERT])]


def states(events, name):
    return [(it, p["state"], p.get("reason"), p.get("resumed", False)) for it, p in events if p["alert"] == name]


def test_a_judge_forced_unanimous_raises_the_collapse_alert_within_its_window(tmp_path):
    """m = 1: every step's one verdict agrees with itself, rm/unanimity = 1 from the first
    iteration, so the alert is raised at iteration `window`. Killed, the run leaves it open and a
    resume does not raise it twice; the run's end clears it, `rla show` lists it, and a resume
    from that end raises it again with the iteration it began."""
    db = tmp_path / "h.db"
    proc = spawn(db, "run", *TINY, "--run-id", "u", "--iterations", "400", "--set", "judge.m=1",
                 "--set", "alerts.window=2")
    store = open_store(db)
    wait_for(lambda: store.run_exists("u") and store.last_iteration("u") >= 3, what="3 iterations")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    [(raised_at, raised)] = [(it, p) for it, p in alert_events(db, "u") if p["alert"] == JUDGE_UNANIMOUS]
    assert (raised_at, raised["state"]) == (2, RAISED)
    assert raised["since"] == 1 and raised["value"] == 1.0 and raised["threshold"] == 0.95
    assert all(m[metrics.UNANIMITY] == 1.0 for m in store.metrics_by_iteration("u").values())

    res = rla("resume", "u", "--iterations", "1", db=db)
    assert res.returncode == 0, res.stderr
    ended = store.last_iteration("u")
    assert states(alert_events(db, "u"), JUDGE_UNANIMOUS) == [(2, RAISED, None, False),
                                                             (ended, CLEARED, RUN_ENDED, False)]
    shown = rla("show", "u", db=db).stdout
    assert "alert (active when the run ended): judge_unanimous since iteration 1: rm/unanimity 1 ≥ 0.95" in shown

    res = rla("resume", "u", "--iterations", "1", db=db)
    assert res.returncode == 0, res.stderr
    after = [(it, p) for it, p in alert_events(db, "u") if p["alert"] == JUDGE_UNANIMOUS][2:]
    assert states(after, JUDGE_UNANIMOUS) == [(ended, RAISED, None, True), (ended + 1, CLEARED, RUN_ENDED, False)]
    assert after[0][1]["since"] == 1          # the same alert, not a new one


def test_no_task_in_band_is_raised_and_cleared_by_the_difficulty_override(tmp_path):
    """A pool of the hardest tasks: an untrained policy fails every one (env/in_band = 0); the
    override to difficulty 0 brings tasks into the band and the alert clears."""
    db = tmp_path / "h.db"
    proc = spawn(db, "run", *TINY, "--run-id", "b", "--iterations", "300", "--set", "task.dataset_low=1.0",
                 "--set", "task.dataset_high=1.0", "--set", "alerts.window=3")
    store = open_store(db)
    try:
        wait_for(lambda: states(alert_events(db, "b"), NONE_IN_BAND), timeout=90, what="the alert")
        store.add_command("b", "set_difficulty", {"value": 0.0})
        wait_for(lambda: len(states(alert_events(db, "b"), NONE_IN_BAND)) > 1, timeout=90, what="the clear")
        store.add_command("b", "stop")
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    events = [(it, p) for it, p in alert_events(db, "b") if p["alert"] == NONE_IN_BAND]
    (raised_at, raised), (cleared_at, cleared) = events[:2]
    assert raised["state"] == RAISED and cleared["state"] == CLEARED and cleared["reason"] == CONDITION_ENDED
    in_band = {it: m[metrics.IN_BAND] for it, m in store.metrics_by_iteration("b").items()}
    assert raised["since"] == raised_at - 2 and all(in_band[i] == 0 for i in range(raised["since"], raised_at + 1))
    assert cleared["value"] > 0 and cleared["value"] == pytest.approx(
        sum(in_band[i] for i in range(cleared_at - 2, cleared_at + 1)) / 3)


def test_mu_at_or_below_one_is_raised_and_cleared_as_the_series_says(tmp_path):
    """The tiny preset's untrained judge has μ about 1 (verdicts that carry no signal): with a
    window of 2 its μ falls to ≤ 1 and climbs back over it within 16 iterations (seed 0). The
    events are exactly those a plain reading of the stored μ series gives."""
    db = tmp_path / "h.db"
    res = rla("run", *TINY, "--run-id", "m", "--iterations", "16", "--set", "alerts.window=2", db=db)
    assert res.returncode == 0, res.stderr
    mu = [(it, m[metrics.MU]) for it, m in sorted(open_store(db).metrics_by_iteration("m").items())
          if metrics.MU in m]
    expected, recent, active = [], [], False
    for it, v in mu:
        recent = [*recent, v][-2:]
        if len(recent) == 2 and (sum(recent) / 2 <= 1.0) != active:
            active = not active
            expected.append((it, RAISED if active else CLEARED))
            recent = []
    got = [(it, p["state"]) for it, p in alert_events(db, "m") if p["alert"] == MU_AT_MOST_ONE
           and p.get("reason") != RUN_ENDED]
    assert got == expected
    assert [s for _, s in got][:2] == [RAISED, CLEARED]
    # a run with no step rewards (an outcome arm) whose μ falls as low hears nothing of it
    res = rla("run", *TINY, "--run-id", "m0", "--iterations", "16", "--set", "alerts.window=2",
              "--set", "policy.lam=0", db=db)
    assert res.returncode == 0, res.stderr
    mu0 = [m[metrics.MU] for _, m in sorted(open_store(db).metrics_by_iteration("m0").items()) if metrics.MU in m]
    assert any(a + b <= 2.0 for a, b in itertools.pairwise(mu0))
    assert not [p for _, p in alert_events(db, "m0") if p["alert"] == MU_AT_MOST_ONE]


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory):
    return {"RLA_MODEL_CACHE": str(tmp_path_factory.mktemp("models"))}


def test_an_environment_model_that_writes_no_valid_variant_raises_its_alert(tmp_path, model_cache, monkeypatch):
    """llm-tiny's environment model is a random network: none of its answers is a task. One
    iteration, window 1 (the windowing is tested above): the only environment model of the tests
    is a language model, and its run costs ≈ 15 s of CPU."""
    for k, v in model_cache.items():
        monkeypatch.setenv(k, v)
    db = tmp_path / "h.db"
    res = rla("run", "--preset", "llm-tiny", "--run-id", "e", "--iterations", "1", "--set", "alerts.window=1",
              "--set", "eval.tasks_per_tier=1", db=db, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    events = alert_events(db, "e")
    assert states(events, ENV_INVALID) == [(1, RAISED, None, False), (1, CLEARED, RUN_ENDED, False)]
    raised = next(p for _, p in events if p["alert"] == ENV_INVALID)
    values = open_store(db).metrics_by_iteration("e")[1]
    assert raised["since"] == 1 and raised["value"] == 1.0
    assert values[metrics.INVALID] > 0 and values[metrics.PENDING] == 0


def test_a_non_finite_loss_raises_its_alert_and_the_run_still_fails(tmp_path):
    """A learning rate of 1 on a near-greedy policy (temperature 0.05) over many small PPO steps
    moves log π of a sampled action ≥ 89 below log π_old within one iteration: exp(−d) in the k3
    KL term overflows, the loss is infinite."""
    db = tmp_path / "h.db"
    res = rla("run", *TINY, "--run-id", "n", "--iterations", "3", "--set", "policy.lr=1.0",
              "--set", "rollout.temperature=0.05", "--set", "policy.ppo_epochs=8", "--set", "policy.minibatch_size=8",
              "--set", "policy.unanimous_groups=true", db=db)
    assert res.returncode == 1 and "non-finite" in res.stderr
    store = open_store(db)
    assert store.get_run("n")["status"] == "failed"
    kinds = [(e["kind"], e["payload"].get("state")) for e in store.events("n")
             if e["kind"] in (EventKind.ALERT, EventKind.FAILED)]
    assert kinds == [(EventKind.ALERT, RAISED), (EventKind.ALERT, CLEARED), (EventKind.FAILED, None)]
    raised = alert_events(db, "n")[0][1]
    failed = store.events("n", kinds=[EventKind.FAILED])[0]["payload"]
    assert raised["alert"] == NOT_FINITE and raised["quantity"] == failed["quantity"]
    assert raised["since"] == failed["iteration"] and raised["value"] == failed["value"]


def test_an_invalid_window_is_refused_naming_the_field(tmp_path):
    line = one_line_error(rla("run", *TINY, "--set", "alerts.window=0", db=tmp_path / "h.db"))
    assert "alerts.window" in line and "≥ 1" in line
