"""The oracle in place of the judge (a diagnostic, never a learner), the measures of how
the judge errs, and the verdict centring option — each on hand-made cases, then in real runs."""
from __future__ import annotations

import pytest
import torch

from rla_engine import metrics, rewards
from rla_engine.ablation.arms import DIAGNOSTIC_ARMS, parse_arms, plan
from rla_engine.ablation.results import ArmResult, markdown
from rla_engine.config import ConfigError, build
from rla_engine.loop.advantages import oracle_verdicts, transformed_step_rewards
from rla_engine.loop.measures import judge_error_structure
from rla_engine.loop.trainer import Trainer
from rla_engine import tasks


# ---------------------------------------------------------------- the oracle's verdicts

def test_oracle_verdicts_copy_each_label_m_times_and_flip_at_the_asked_rate():
    oracle = torch.tensor([[1, -1, 1], [-1, 1, 0]], dtype=torch.int8)
    mask = torch.tensor([[True, True, True], [True, True, False]])
    gen = torch.Generator().manual_seed(0)
    exact = oracle_verdicts(oracle, mask, 3, 0.0, gen)
    assert exact.tolist() == [[[1] * 3, [-1] * 3, [1] * 3], [[-1] * 3, [1] * 3, [0] * 3]]
    assert oracle_verdicts(oracle, mask, 3, 1.0, gen).tolist() == (-exact).tolist()
    big = torch.ones((200, 100), dtype=torch.int8)
    flipped = oracle_verdicts(big, torch.ones_like(big, dtype=torch.bool), 5, 0.3, gen)
    share = float((flipped == -1).float().mean())
    assert abs(share - 0.3) < 0.01                      # 100,000 independent flips
    # independent: a step's verdicts agree no more often than chance says (1 - 3·0.3·0.7² - …)
    unanimous = float((flipped == flipped[..., :1]).all(-1).float().mean())
    assert abs(unanimous - (0.7 ** 5 + 0.3 ** 5)) < 0.01


def test_an_oracle_run_trains_no_judge_and_its_verdicts_are_the_labels():
    tr = Trainer(build(preset="tiny", sets=["judge.source=oracle"]), torch.device("cpu"))
    before = [p.clone() for p in tr.backend.judge_net.parameters()]
    results = [tr.step().metrics for _ in range(4)]
    assert all(metrics.LOSS_JUDGE not in r and metrics.JUDGE_GRAD_NORM not in r for r in results)
    assert all(torch.equal(a, b) for a, b in zip(before, tr.backend.judge_net.parameters()))
    agreement = [r[metrics.PROCESS_AGREEMENT] for r in results if metrics.PROCESS_AGREEMENT in r]
    assert agreement and all(a == 1.0 for a in agreement)
    assert any(metrics.LOSS_POLICY in r for r in results)     # the policy learns from the oracle's steps


def test_a_noisy_oracle_agrees_as_often_as_its_noise_says():
    tr = Trainer(build(preset="tiny", sets=["judge.source=oracle", "judge.oracle_noise=0.25"]), torch.device("cpu"))
    agreement = [r[metrics.PROCESS_AGREEMENT] for r in (tr.step().metrics for _ in range(6))
                 if metrics.PROCESS_AGREEMENT in r]
    assert abs(sum(agreement) / len(agreement) - 0.75) < 0.06


def test_the_oracle_is_refused_for_a_family_without_one(monkeypatch):
    spec = tasks.FamilySpec("unlabelled", "a plug-in without oracle labels", "rla_engine.tasks.gridworld",
                            has_oracle=False)
    monkeypatch.setitem(tasks._REGISTRY, spec.name, spec)
    build(sets=["task.family=unlabelled"])               # a learned judge is fine
    with pytest.raises(ConfigError) as e:
        build(sets=["task.family=unlabelled", "judge.source=oracle"])
    assert e.value.key == "judge.source" and "no oracle" in str(e.value)
    with pytest.raises(ConfigError) as e:
        build(sets=["judge.source=perfect"])
    assert e.value.key == "judge.source"


# ---------------------------------------------------------------- the arms

def test_the_oracle_arms_are_diagnostics_named_only_and_labelled():
    assert not set(DIAGNOSTIC_ARMS) & set(parse_arms(None))      # never in a default ablation
    base = build(preset="tiny", sets=["judge.oracle_noise=0.3"])
    runs = {r.arm: r.config for r in plan(base, "g", ["full", "full+oracle-judge", "step+oracle-judge"], [0], 1000)}
    assert runs["full"].judge.source == "learned" and runs["full"].judge.oracle_noise == 0.0
    assert runs["full+oracle-judge"].judge.source == "oracle" and runs["full+oracle-judge"].judge.oracle_noise == 0.3
    assert runs["full+oracle-judge"].env.strategy == "rlanything"
    assert runs["step+oracle-judge"].env.strategy == "fixed"
    table = markdown([ArmResult("full"), ArmResult("full+oracle-judge")], "t")
    assert "| full+oracle-judge (diagnostic) |" in table and "| full (diagnostic)" not in table
    # a base that asks for the oracle does not turn the learning arms into diagnostics
    oracle_base = build(preset="tiny", sets=["judge.source=oracle"])
    assert plan(oracle_base, "g", ["full"], [0], 1000)[0].config.judge.source == "learned"


# ---------------------------------------------------------------- verdict centring

def test_centred_step_rewards_rank_steps_within_a_trajectory_and_count_the_outcome_once():
    # a failed trajectory: a step judged good, one judged bad, one split 2:1
    verdicts = [[1, 1, 1], [-1, -1, -1], [1, -1, 1]]
    means = [1.0, -1.0, 1 / 3]
    centre = sum(means) / 3
    expected = [-1 + 0.5 * (v - centre) for v in means]
    assert rewards.transformed_policy_step_rewards(-1, verdicts, lam=0.5, form="centred") == pytest.approx(expected)
    # a judge that only predicts the outcome (every step -1 on a failure) adds nothing: R = O,
    # where the paper's form gives O - λ, the outcome counted twice
    assert rewards.transformed_policy_step_rewards(-1, [[-1, -1]] * 4, lam=1.0, form="centred") == [-1.0] * 4
    assert rewards.policy_step_rewards(-1, [[-1, -1]] * 4, lam=1.0) == [-2.0] * 4


def test_difference_step_rewards_credit_the_change_of_the_verdict():
    # the judge's verdict as a potential: bad, bad, then better and good — only the steps that
    # changed it are credited, and the credits add up to the last verdict
    verdicts = [[-1, -1], [-1, -1], [1, -1], [1, 1]]
    got = rewards.transformed_policy_step_rewards(1, verdicts, lam=1.0, form="difference")
    assert got == [1 - 1.0, 1 + 0.0, 1 + 1.0, 1 + 1.0]
    assert sum(r - 1 for r in got) == 1.0


def test_failures_step_rewards_leave_successes_to_the_outcome():
    verdicts = [[1, 1], [-1, 1], [-1, -1]]
    assert rewards.transformed_policy_step_rewards(1, verdicts, lam=1.0, form="failures") == [1.0, 1.0, 1.0]
    assert rewards.transformed_policy_step_rewards(-1, verdicts, lam=1.0, form="failures") == [0.0, -1.0, -2.0]


@pytest.mark.parametrize("form", ["centred", "difference", "failures"])
def test_the_vectorised_forms_equal_the_reference(form):
    gen = torch.Generator().manual_seed(1)
    v = torch.randint(-1, 2, (6, 5, 3), generator=gen).to(torch.int8)
    mask = torch.arange(5).unsqueeze(0) < torch.tensor([5, 3, 1, 4, 2, 5]).unsqueeze(1)
    outcome = torch.tensor([1.0, -1, 1, -1, -1, 1])
    got = transformed_step_rewards(outcome, v, mask, 0.7, form)
    for b in range(6):
        n = int(mask[b].sum())
        ref = rewards.transformed_policy_step_rewards(int(outcome[b]), v[b, :n].tolist(), lam=0.7, form=form)
        assert got[b, :n].tolist() == pytest.approx(ref, abs=1e-6)
        assert got[b, n:].abs().sum() == 0


@pytest.mark.parametrize("form", ["centred", "difference", "failures"])
def test_a_step_verdicts_form_changes_the_policys_reward_only(form):
    easy = ["task.dataset_high=0.1", "judge.profile=paper"]    # successes and failures in the first iteration
    paper = Trainer(build(preset="tiny", sets=easy), torch.device("cpu"))
    changed = Trainer(build(preset="tiny", sets=[*easy, f"policy.step_verdicts={form}"]), torch.device("cpu"))
    a, b = paper.step().metrics, changed.step().metrics
    assert 0 < a[metrics.SUCCESS] < 1
    # the same roll-out and verdicts (one seed), so the judge's measures agree; the reward differs
    for key in (metrics.UNANIMITY, metrics.OUTCOME_AGREEMENT, metrics.PROCESS_AGREEMENT, metrics.SUCCESS):
        assert a[key] == b[key]
    assert a[metrics.REWARD] != b[metrics.REWARD] and a[metrics.STEP_REWARD] != b[metrics.STEP_REWARD]


# ---------------------------------------------------------------- how the judge errs

def _batch(verdict_of):
    """Two trajectories that succeed and two that fail, each of four steps labelled good, bad,
    good, bad; `verdict_of(outcome, label, b, t)` gives the step's m = 4 verdicts."""
    oracle = torch.tensor([[1, -1, 1, -1]] * 4, dtype=torch.int8)
    outcome = torch.tensor([1.0, 1.0, -1.0, -1.0])
    mask = torch.ones((4, 4), dtype=torch.bool)
    v = torch.tensor([[verdict_of(int(outcome[b]), int(oracle[b, t]), b, t) for t in range(4)] for b in range(4)],
                     dtype=torch.int8)
    return v, mask, outcome, oracle


def test_a_judge_that_predicts_the_outcome_is_told_apart_from_one_that_is_noisy():
    predicts = judge_error_structure(*_batch(lambda o, label, b, t: [o] * 4))
    assert predicts[metrics.AGREEMENT_ON_SUCCESS] == 0.5 and predicts[metrics.AGREEMENT_ON_FAILURE] == 0.5
    assert predicts[metrics.OUTCOME_SHARE] == 1.0 and predicts[metrics.OUTCOME_SHARE_GIVEN_ORACLE] == 1.0
    assert predicts[metrics.ERROR_CORRELATION] == pytest.approx(1.0)
    # wrong on one verdict of four on every other step, whatever the outcome: agreement 0.875 on
    # both sides, and the outcome explains none of the verdicts
    noisy = judge_error_structure(*_batch(lambda o, label, b, t: [label] * 3 + [-label if (b + t) % 2 else label]))
    assert noisy[metrics.AGREEMENT_ON_SUCCESS] == noisy[metrics.AGREEMENT_ON_FAILURE] == 0.875
    assert noisy[metrics.OUTCOME_SHARE_GIVEN_ORACLE] == 0.0
    always = judge_error_structure(*_batch(lambda o, label, b, t: [label, label, label, -label]))
    assert metrics.ERROR_CORRELATION not in always         # the labels explain everything: undefined, left out
    # a perfect judge: the outcome explains only what the labels do (here nothing)
    perfect = judge_error_structure(*_batch(lambda o, label, b, t: [label] * 4))
    assert perfect[metrics.AGREEMENT_ON_FAILURE] == 1.0 and perfect[metrics.OUTCOME_SHARE] == 0.0


def test_a_run_stores_the_error_structure():
    tr = Trainer(build(preset="tiny"), torch.device("cpu"))
    keys = set().union(*(tr.step().metrics for _ in range(4)))
    assert set(metrics.JUDGE_ERRORS) <= keys


# ---------------------------------------------------------------- the judge's unanimous steps

def test_unanimous_steps_get_a_reward_against_the_batch_and_the_rest_keep_the_papers():
    from rla_engine.loop.advantages import judge_rewards, unanimous_steps_pooled
    # three unanimous steps (−1 on a success, −1 on a failure, +1 on a success) and a split one
    verdicts = torch.tensor([[[-1, -1], [-1, -1], [1, 1], [1, -1]]], dtype=torch.int8)
    R = torch.tensor([[0.0, -2.0, 2.0, 1.0]])          # R_i = O + λ·v_i at λ = 1
    mask = torch.ones((1, 4), dtype=torch.bool)
    paper = judge_rewards(R, verdicts)
    assert paper[0, :3].abs().sum() == 0                # the paper's form: no gradient at all
    got = unanimous_steps_pooled(R, verdicts, mask, paper)
    # raw R·S of the unanimous steps: 0, 2, 2 → the collapsed "−1 on a success" is pushed away
    assert got[0, 0].tolist() == pytest.approx([-2 ** 0.5] * 2)
    assert got[0, 1].tolist() == got[0, 2].tolist() == pytest.approx([2 ** -0.5] * 2)
    assert torch.equal(got[0, 3], paper[0, 3])           # a split step keeps the paper's reward
    padded = unanimous_steps_pooled(R, verdicts, torch.tensor([[True, False, False, True]]), paper)
    assert torch.equal(padded, paper)                    # one unanimous real step: nothing to compare with


def test_a_run_with_batch_rewards_for_unanimous_steps_trains_its_judge_on_them():
    tr = Trainer(build(preset="tiny", sets=["judge.profile=paper", "judge.unanimous=batch", "judge.m=1"]),
                 torch.device("cpu"))
    trained = [r.get(metrics.JUDGE_TRAINED_SHARE, 0.0) for r in (tr.step().metrics for _ in range(4))]
    assert max(trained) > 0          # m = 1: every step is unanimous, so the paper's form trains on none
    paper = Trainer(build(preset="tiny", sets=["judge.m=1", "judge.profile=paper"]), torch.device("cpu"))
    assert all(r.get(metrics.JUDGE_TRAINED_SHARE, 0.0) == 0 for r in (paper.step().metrics for _ in range(4)))


def test_trained_rewards_unanimous_steps_against_the_steps_the_judge_learns_from():
    """judge.unanimous = trained: pooled over the judge's band only, the rewards it trains on sum to
    zero (no drift towards always +1 because its band holds more successes than the batch, which
    `batch` allows); m = 1 makes every step unanimous, so every judged sample is one of them."""
    def judged_sums(unanimous: str) -> list[float]:
        tr = Trainer(build(preset="tiny", sets=[f"judge.unanimous={unanimous}", "judge.m=1"]), torch.device("cpu"))
        sums: list[float] = []
        update = tr.backend.update_judge

        def capture(roll, judgement, index, advantages):
            sums.append(float(advantages.sum()))
            return update(roll, judgement, index, advantages)
        tr.backend.update_judge = capture      # type: ignore[method-assign]
        for _ in range(6):
            tr.step()
        return sums

    trained, batch = judged_sums("trained"), judged_sums("batch")
    assert trained and all(abs(s) < 1e-3 for s in trained)
    assert batch and max(abs(s) for s in batch) > 0.1
