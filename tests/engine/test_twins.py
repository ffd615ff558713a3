"""The vectorised reward and measure code equals the SPEC §8 reference functions."""
import math

import pytest
import torch

from rla_engine import rewards
from rla_engine.loop.advantages import judge_rewards, normalize_per_step, step_rewards
from rla_engine.loop.measures import judge_measures
from rla_engine import metrics


def random_batch(seed, groups=5, rollouts=4, t_max=7, m=3, unreadable=True):
    g = torch.Generator().manual_seed(seed)
    b = groups * rollouts
    lengths = torch.randint(1, t_max + 1, (b,), generator=g)
    mask = torch.arange(t_max).unsqueeze(0) < lengths.unsqueeze(1)
    low = -1 if unreadable else 0
    v = torch.randint(low, 2, (b, t_max, m), generator=g)
    if not unreadable:
        v = v * 2 - 1
    verdicts = (v * mask.unsqueeze(-1)).to(torch.int8)
    success = torch.rand(b, generator=g) < 0.5
    oracle = torch.where(torch.rand(b, t_max, generator=g) < 0.6, 1, -1).to(torch.int8)
    return mask, verdicts, success, oracle, lengths


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("lam", [0.0, 1.0, 0.5])
def test_step_rewards_and_advantages_match_reference(seed, lam):
    groups, rollouts = 5, 4
    mask, verdicts, success, _, lengths = random_batch(seed, groups, rollouts)
    outcome = success.float() * 2 - 1
    R = step_rewards(outcome, verdicts, mask, lam)
    adv = normalize_per_step(R, mask, rollouts)
    for grp in range(groups):
        ref_rewards = []
        for r in range(rollouts):
            b = grp * rollouts + r
            n = int(lengths[b])
            ref = rewards.policy_step_rewards(int(outcome[b]), verdicts[b, :n].tolist(), lam)
            assert R[b, :n].tolist() == pytest.approx(ref, abs=1e-6)
            ref_rewards.append(ref)
        ref_adv = rewards.normalize_per_step(ref_rewards)
        for r in range(rollouts):
            b = grp * rollouts + r
            n = int(lengths[b])
            assert adv[b, :n].tolist() == pytest.approx(ref_adv[r], abs=1e-5)
            assert adv[b, n:].abs().sum() == 0


@pytest.mark.parametrize("seed", range(20))
def test_judge_rewards_match_reference(seed):
    mask, verdicts, success, _, lengths = random_batch(seed)
    outcome = success.float() * 2 - 1
    R = step_rewards(outcome, verdicts, mask, 1.0)
    z = judge_rewards(R, verdicts)
    for b in range(mask.shape[0]):
        for t in range(int(lengths[b])):
            ref = rewards.judge_rewards(float(R[b, t]), verdicts[b, t].tolist())
            assert z[b, t].tolist() == pytest.approx(ref, abs=1e-5)


def test_judge_rewards_equal_verdicts_are_exactly_zero():
    # R = 4/3 repeated three times: float rounding must not turn a zero variance into huge z-scores
    z = judge_rewards(torch.tensor([4 / 3, -4 / 3]), torch.tensor([[1, 1, 1], [-1, -1, -1]], dtype=torch.int8))
    assert z.abs().sum() == 0


@pytest.mark.parametrize("seed", range(10))
def test_balance_and_precision_match_reference(seed):
    groups, rollouts = 5, 4
    mask, verdicts, success, oracle, lengths = random_batch(seed, groups, rollouts)
    outcome = success.float() * 2 - 1
    out = judge_measures(verdicts, mask, outcome, oracle, groups, rollouts)
    steps_o, steps_v = [], []
    for b in range(mask.shape[0]):
        for t in range(int(lengths[b])):
            steps_o.append(int(outcome[b]))
            steps_v.append(verdicts[b, t].tolist())
    p_plus, p_minus, mu = rewards.balance(steps_o, steps_v)
    for key, ref in ((metrics.P_PLUS, p_plus), (metrics.P_MINUS, p_minus), (metrics.MU, mu)):
        if math.isnan(ref):
            assert key not in out
        else:
            assert out[key] == pytest.approx(ref, abs=1e-6)
    groups_ref = []
    for grp in range(groups):
        s, f = [], []
        for r in range(rollouts):
            b = grp * rollouts + r
            means = [sum(v) / len(v) for v in verdicts[b, : int(lengths[b])].tolist()]
            (s if outcome[b] > 0 else f).extend(means)
        groups_ref.append((s, f))
    ref_prec = rewards.empirical_precision(groups_ref)
    if math.isnan(ref_prec):
        assert metrics.PRECISION not in out
    else:
        assert out[metrics.PRECISION] == pytest.approx(ref_prec, abs=1e-6)
    if metrics.MU in out:
        assert out[metrics.PRECISION_BOUND] == pytest.approx(rewards.precision_bound(out[metrics.MU], 3), abs=1e-6)


def test_undefined_measures_are_left_out_not_nan():
    # every trajectory succeeded: p_minus, mu, precision are undefined
    mask, verdicts, _, oracle, _ = random_batch(0, unreadable=False)
    outcome = torch.ones(mask.shape[0])
    out = judge_measures(verdicts, mask, outcome, oracle, 5, 4)
    assert metrics.P_MINUS not in out and metrics.MU not in out and metrics.PRECISION not in out
    assert metrics.P_PLUS in out
    assert all(math.isfinite(v) for v in out.values())


def test_process_agreement_is_balanced_accuracy():
    # one trajectory, 4 steps: oracle good, good, good, bad; a judge that always says +1
    mask = torch.ones(1, 4, dtype=torch.bool)
    verdicts = torch.ones(1, 4, 3, dtype=torch.int8)
    oracle = torch.tensor([[1, 1, 1, -1]], dtype=torch.int8)
    out = judge_measures(verdicts, mask, torch.tensor([1.0]), oracle, 1, 1)
    # plain accuracy would be 0.75; balanced is (1 + 0) / 2
    assert out[metrics.PROCESS_AGREEMENT] == pytest.approx(0.5)
    assert out[metrics.UNANIMITY] == 1.0
    assert out[metrics.OUTCOME_AGREEMENT] == 1.0
