"""The ablation's components on hand-made pools and real tiny trainers: PLR's replay weights,
DAPO's resampling, uniform tasks, the μ gate, the random critic, the step budget, and the
iteration where every rollout belongs to a rejected candidate."""
import math

import numpy as np
import pytest
import torch

from rla_engine import metrics
from rla_engine.config import build
from rla_engine.loop import curriculum
from rla_engine.loop import embedded as embedded_mod
from rla_engine.loop import trainer as trainer_mod
from rla_engine.loop.advantages import outcome_balanced_weights
from rla_engine.loop.gate import MuGate
from rla_engine.loop.trainer import Trainer


def tiny(*sets, family="gridworld"):
    return build(preset="tiny", sets=[f"task.family={family}", *sets])


def forced_outcomes(monkeypatch, pattern):
    """Rollouts whose successes are `pattern(n_episodes)`, whatever the policy did."""
    real = embedded_mod.collect
    calls = []

    def collect(*a, **kw):
        roll = real(*a, **kw)
        roll.success = pattern(roll.success.numel())
        calls.append([t.seed for t in a[2]])
        return roll
    monkeypatch.setattr(embedded_mod, "collect", collect)
    return calls


# -- PLR ----------------------------------------------------------------------------------------
def test_plr_weights_rank_by_learnability_and_mix_in_staleness():
    rng = np.random.default_rng(0)
    scores = [0.25, 0.16, 0.0, 0.09]          # p(1-p) at p = 0.5, 0.8 (or 0.2), 0/1, 0.9
    drawn = [9, 9, 9, 9]                      # all drawn one iteration ago: staleness is flat
    p = curriculum.plr_weights(scores, drawn, 10, temperature=0.1, staleness=0.0, rng=rng)
    h = np.array([1, 1 / 2, 1 / 4, 1 / 3]) ** 10           # ranks 1, 2, 4, 3
    assert p == pytest.approx(h / h.sum())
    assert p[0] / p[1] == pytest.approx(2 ** 10)
    # staleness only: proportional to the iterations since each slot was drawn
    p = curriculum.plr_weights(scores, [9, 8, 6, None], 10, temperature=0.1, staleness=1.0, rng=rng)
    assert p == pytest.approx(np.array([1, 2, 4, 10]) / 17)
    # the mixture, and a slot never drawn or measured scores the most
    assert curriculum.learnability(None) == 0.25 > curriculum.learnability(0.3)
    p = curriculum.plr_weights(scores, drawn, 10, temperature=1.0, staleness=0.5, rng=rng)
    h = 1 / np.array([1, 2, 4, 3])
    assert p == pytest.approx(0.5 * h / h.sum() + 0.5 * 0.25)


def test_plr_draws_the_learnable_slots_and_no_slot_twice():
    rng = np.random.default_rng(1)
    scores = [0.0] * 12 + [0.25, 0.24, 0.21, 0.16]
    counts = np.zeros(16)
    for _ in range(200):
        got = curriculum.plr_sample(list(range(16)), scores, [0] * 16, 4, 1, 0.1, 0.1, rng)
        assert len(set(got)) == 4
        counts[got] += 1
    # each draw replays the best slot left with probability ≈ 1 − ρ: mostly the four learnable ones
    assert counts[12:].min() > 100 and counts[:12].sum() < 120, counts


def test_a_plr_run_replays_the_most_learnable_slots():
    tr = Trainer(tiny("env.strategy=plr", "env.plr_staleness=0", "task.pool_size=8", "rollout.tasks_per_iter=2"),
                 torch.device("cpu"))
    for it in range(1, 7):
        before = [curriculum.learnability(r.last_acc) for r in tr.pool.active]
        tr.step()
        drawn = [s for s, r in enumerate(tr.pool.active) if r.last_drawn == it]
        assert len(drawn) == 2
        assert min(before[s] for s in drawn) >= max(b for s, b in enumerate(before) if s not in drawn)
    assert [r.version for r in tr.pool.active] == [0] * 8   # PLR never changes the pool


# -- DAPO -----------------------------------------------------------------------------------------
def test_dapo_resamples_until_the_groups_are_mixed(monkeypatch):
    calls = forced_outcomes(monkeypatch, lambda n: torch.zeros(n, dtype=torch.bool))   # all fail
    tr = Trainer(tiny("env.strategy=dapo"), torch.device("cpu"))
    r = tr.step()
    assert len(calls) == 2                  # 8 slots, 4 a round: the pool is used up, then it stops
    assert sorted(s for c in calls for s in c) == sorted(rec.task.seed for rec in tr.pool.active)
    assert r.env_steps == tr.env_steps > 0 and metrics.LOSS_POLICY not in r.metrics


def test_dapo_stops_resampling_once_enough_groups_are_mixed(monkeypatch):
    calls = forced_outcomes(monkeypatch, lambda n: torch.arange(n) % 2 == 0)   # every group mixed
    tr = Trainer(tiny("env.strategy=dapo"), torch.device("cpu"))
    tr.step()
    assert len(calls) == 1


def test_dapo_trains_on_one_batch_of_mixed_groups_at_most():
    assert curriculum.first_mixed([0.5, 1.0, 0.25, 0.0, 0.75, 0.5], 2) == [True, False, True, False, False, False]
    assert curriculum.enough_mixed([0.5, 1.0, 0.25], 2) and not curriculum.enough_mixed([0.5, 1.0, 0.0], 2)


# -- uniform ---------------------------------------------------------------------------------------
def test_uniform_gives_every_drawn_slot_a_fresh_task_across_the_difficulty_range():
    tr = Trainer(tiny("env.strategy=uniform"), torch.device("cpu"))
    difficulties = []
    for it in range(1, 101):
        slots = tr._draw(4, it)
        for s in slots:
            rec = tr.pool.active[s]
            assert rec.created_iteration == it and rec.version > 0
            difficulties.append(rec.difficulty)
    counts = np.histogram(difficulties, bins=5, range=(0, 1))[0]
    assert counts.min() >= 40, counts      # 400 tasks, ~80 a fifth of [0, 1]


# -- the μ gate ---------------------------------------------------------------------------------------
def test_mu_gate_opens_as_mu_rises_above_one():
    gate = MuGate(target=1.5, alpha=0.1)
    assert gate.scale() == 0.0              # an untrained judge earns its weight first
    gate.update(1.5)
    assert gate.mu_hat == pytest.approx(1.05) and gate.scale() == pytest.approx(0.1)
    gate.update(math.nan)                   # undefined μ leaves μ̂ alone
    assert gate.mu_hat == pytest.approx(1.05)
    for _ in range(200):
        gate.update(1.9)
    assert gate.scale() == 1.0              # clipped at the full λ
    for _ in range(200):
        gate.update(0.6)
    assert gate.scale() == 0.0


def test_a_gated_run_rewards_with_the_gated_lambda(monkeypatch):
    seen = []
    real = trainer_mod.step_rewards
    monkeypatch.setattr(trainer_mod, "step_rewards", lambda o, v, m, lam: seen.append(lam) or real(o, v, m, lam))
    tr = Trainer(tiny("policy.mu_gate=true", "policy.lam=2"), torch.device("cpu"))
    r = tr.step()
    assert seen[-1] == pytest.approx(2 * tr.gate.scale()) == r.metrics[metrics.EFFECTIVE_LAMBDA]
    assert seen[-1] < 2 * 0.2               # one iteration of an untrained judge moves μ̂ little
    tr.gate.mu_hat = 1.75
    state = tr.state_dict()
    again = Trainer(tiny("policy.mu_gate=true", "policy.lam=2"), torch.device("cpu"))
    again.load_state_dict(state)
    assert again.gate.mu_hat == 1.75        # a resumed run keeps its μ̂


# -- the random critic -----------------------------------------------------------------------------------
def test_the_random_critic_gets_as_many_steps_drawn_without_the_judge(monkeypatch):
    forced_outcomes(monkeypatch, lambda n: torch.zeros(n, dtype=torch.bool))   # acc 0: ask for easier
    got = {}
    real_critic = Trainer(tiny("task.family=arithmetic"), torch.device("cpu")).family.critic
    for critic in ("judge", "random"):
        tr = Trainer(tiny(f"env.critic={critic}", "task.family=arithmetic"), torch.device("cpu"))

        real_judge = tr.backend.judge

        def first_steps_wrong(ep, m, real_judge=real_judge):      # the judge flags step 0 of every trajectory only
            judgement = real_judge(ep, m)
            v = torch.ones((*ep.mask.shape, m), dtype=torch.int8)
            v[:, 0] = -1
            judgement.verdicts = v
            return judgement
        tr.backend.judge = first_steps_wrong
        seen = []
        monkeypatch.setattr(tr.family, "critic",
                            lambda task, steps, seen=seen: seen.append(steps) or real_critic(task, steps))
        tr.step()
        got[critic] = seen
    assert got["judge"] and len(got["judge"]) == len(got["random"])
    assert all(i == 0 for steps in got["judge"] for i, _ in steps)
    assert [len(s) for s in got["judge"]] == [len(s) for s in got["random"]]
    assert any(i != 0 for steps in got["random"] for i, _ in steps)


# -- judge sample weighting ------------------------------------------------------------------------------
def test_balanced_weights_give_successes_and_failures_half_each():
    w = outcome_balanced_weights(torch.tensor([True, False, False, False]))
    assert w.tolist() == pytest.approx([2.0, 2 / 3, 2 / 3, 2 / 3])
    assert w.mean() == pytest.approx(1.0) and w[:1].sum() == pytest.approx(w[1:].sum())
    assert outcome_balanced_weights(torch.tensor([True, True])).tolist() == [1.0, 1.0]


# -- the step budget ---------------------------------------------------------------------------------------
def test_a_run_stops_at_its_step_budget_with_a_final_evaluation():
    tr = Trainer(tiny("run.env_step_budget=1500", "eval.every=1000"), torch.device("cpu"))
    results = []
    while not tr.budget_spent():
        results.append(tr.step())
    assert tr.env_steps >= 1500 > tr.env_steps - results[-1].metrics[metrics.ENV_STEPS] + results[-2].env_steps
    assert metrics.EVAL_SUCCESS in results[-1].metrics
    assert all(metrics.EVAL_SUCCESS not in r.metrics for r in results[:-1])


# -- every rollout a rejected candidate's -----------------------------------------------------------------
def test_an_iteration_of_only_rejected_candidates_stores_no_undefined_share(monkeypatch):
    forced_outcomes(monkeypatch, lambda n: torch.ones(n, dtype=torch.bool))    # acc 1: harder, never accepted
    tr = Trainer(tiny("task.pool_size=4", "rollout.tasks_per_iter=4"), torch.device("cpu"))
    tr.step()                               # every slot triggers: all four ask for a harder variant
    assert len(tr.pool.pending) == 4 and tr.pool.free_slots() == []
    r = tr.step()                           # nothing sampled; each candidate's acc' = 1 is rejected
    assert r.metrics[metrics.REJECTED] == 4 and r.metrics[metrics.ACCEPTED] == 0
    assert all(math.isfinite(v) for v in r.metrics.values())
    assert metrics.POSITIVE_FRACTION not in r.metrics and metrics.SUCCESS not in r.metrics
    tr.step()                               # and the run goes on


# -- unanimous groups (a named option beside SPEC's mixed-group rule) -------------------------------------
@pytest.mark.parametrize("unanimous, lam, trained", [(False, 1, False), (True, 1, True), (True, 0, False)])
def test_unanimous_groups_train_only_on_what_the_step_rewards_tell_apart(monkeypatch, unanimous, lam, trained):
    forced_outcomes(monkeypatch, lambda n: torch.ones(n, dtype=torch.bool))    # every group all-success
    # the paper's step rewards: with policy.step_verdicts = failures an all-success group has none
    tr = Trainer(tiny("judge.profile=paper", f"policy.unanimous_groups={str(unanimous).lower()}", f"policy.lam={lam}"),
                 torch.device("cpu"))
    r = tr.step()
    assert (metrics.LOSS_POLICY in r.metrics) == trained
