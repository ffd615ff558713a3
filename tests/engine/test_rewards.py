"""Hand-computed checks of the reference math in rla_engine.rewards (SPEC sections 3-6, 8).

Every expected value is written out with its arithmetic so a reviewer can redo it on paper.
"""
import math
import random

import pytest

from rla_engine.rewards import (
    accept_candidate,
    adaptation_direction,
    balance,
    empirical_precision,
    judge_rewards,
    normalize_per_step,
    policy_step_rewards,
    precision_bound,
)

approx = pytest.approx
SQRT2 = math.sqrt(2.0)


# ------------------------------------------------------------------ policy_step_rewards


def test_policy_step_rewards_lambda_1_success():
    # O = +1, m = 3:
    #   (+1,+1,-1): 1 + 1/3 * (1)  = 4/3
    #   (+1,+1,+1): 1 + 1/3 * (3)  = 2
    #   (-1,-1,-1): 1 + 1/3 * (-3) = 0
    got = policy_step_rewards(1, [[1, 1, -1], [1, 1, 1], [-1, -1, -1]])
    assert got == approx([4 / 3, 2.0, 0.0])


def test_policy_step_rewards_lambda_1_failure():
    # O = -1: -1 + 1/3 = -2/3 ; -1 + 1 = 0 ; -1 - 1 = -2
    got = policy_step_rewards(-1, [[1, 1, -1], [1, 1, 1], [-1, -1, -1]], lam=1.0)
    assert got == approx([-2 / 3, 0.0, -2.0])


def test_policy_step_rewards_lambda_0_is_outcome_only():
    # lam = 0: R_i = O whatever the verdicts
    assert policy_step_rewards(1, [[1, 1, -1], [-1, -1, -1]], lam=0.0) == approx([1.0, 1.0])
    assert policy_step_rewards(-1, [[1, 1, 1], [0, 0, 0]], lam=0) == approx([-1.0, -1.0])


def test_policy_step_rewards_other_lambda():
    # O = -1, lam = 0.5, (+1,+1,+1): -1 + 0.5/3 * 3 = -0.5
    assert policy_step_rewards(-1, [[1, 1, 1]], lam=0.5) == approx([-0.5])


def test_policy_step_rewards_unreadable_adds_zero_but_counts_in_m():
    # O = +1:
    #   (+1, 0, 0): 1 + 1/3 * 1 = 4/3   (m is still 3, not 1)
    #   ( 0, 0, 0): 1 + 0       = 1
    #   (+1, 0,-1): 1 + 1/3 * 0 = 1
    got = policy_step_rewards(1, [[1, 0, 0], [0, 0, 0], [1, 0, -1]])
    assert got == approx([4 / 3, 1.0, 1.0])
    # O = -1, m = 2: (0,-1): -1 + 1/2 * (-1) = -1.5
    assert policy_step_rewards(-1, [[0, -1]]) == approx([-1.5])


def test_policy_step_rewards_ragged_m_across_steps():
    # O = +1: (+1) -> 1 + 1/1 = 2 ; (+1,-1,0,0) -> 1 + 0/4 = 1
    assert policy_step_rewards(1, [[1], [1, -1, 0, 0]]) == approx([2.0, 1.0])


def test_policy_step_rewards_no_steps():
    assert policy_step_rewards(1, []) == []


@pytest.mark.parametrize("outcome", [0, 2, -2, True, False, "1", None, 0.5])
def test_policy_step_rewards_bad_outcome(outcome):
    with pytest.raises(ValueError, match="outcome"):
        policy_step_rewards(outcome, [[1]])


@pytest.mark.parametrize("verdict", [2, -2, 0.5, "1", None, True])
def test_policy_step_rewards_bad_verdict(verdict):
    with pytest.raises(ValueError, match="verdict"):
        policy_step_rewards(1, [[1, verdict]])


def test_policy_step_rewards_empty_step_is_an_error():
    with pytest.raises(ValueError, match=r"step 1.*empty"):
        policy_step_rewards(1, [[1], []])


# ------------------------------------------------------------------ normalize_per_step


def test_normalize_two_rollouts():
    # index 0: values 1, 3 -> mean 2, pop std 1 -> -1, +1
    assert normalize_per_step([[1.0], [3.0]]) == [approx([-1.0]), approx([1.0])]


def test_normalize_ragged_lengths_3_1_2():
    # A = [1, 2, 5], B = [3], C = [5, 4]
    # index 0: A,B,C = 1,3,5 -> mean 3, var (4+0+4)/3 = 8/3, std sqrt(8/3)
    #          -> -2/sqrt(8/3) = -sqrt(3/2), 0, +sqrt(3/2)
    # index 1: A,C = 2,4 -> mean 3, std 1 -> -1, +1
    # index 2: only A reached it -> 0 (not its raw value 5)
    got = normalize_per_step([[1, 2, 5], [3], [5, 4]])
    r = math.sqrt(1.5)
    assert [len(x) for x in got] == [3, 1, 2]
    assert got[0] == approx([-r, -1.0, 0.0])
    assert got[1] == approx([0.0])
    assert got[2] == approx([r, 1.0])


def test_normalize_index_reached_by_one_rollout_is_zero():
    # index 0: 0, 2 -> mean 1, std 1 -> -1, +1 ; indices 1, 2 reached only by rollout 1 -> 0
    got = normalize_per_step([[0.0], [2.0, 7.0, -3.0]])
    assert got == [approx([-1.0]), approx([1.0, 0.0, 0.0])]


def test_normalize_single_rollout_is_all_zero():
    assert normalize_per_step([[1.0, 2.0, 3.0]]) == [[0.0, 0.0, 0.0]]


def test_normalize_zero_variance_gives_zeros():
    # index 0: 1, 1, 1 -> std 0 -> 0 ; index 1: 2, 3 -> mean 2.5, std 0.5 -> -1, +1
    got = normalize_per_step([[1.0, 2.0], [1.0, 3.0], [1.0]])
    assert got == [approx([0.0, -1.0]), approx([0.0, 1.0]), approx([0.0])]


def test_normalize_std_below_threshold_is_zero():
    # 0 and 1e-8: std = 5e-9 <= 1e-8 -> 0 (a constant group up to float noise)
    assert normalize_per_step([[0.0], [1e-8]]) == [[0.0], [0.0]]
    # 0 and 4e-8: std = 2e-8 > 1e-8 -> normalised -1, +1
    assert normalize_per_step([[0.0], [4e-8]]) == [approx([-1.0]), approx([1.0])]


def test_normalize_empty_inputs():
    assert normalize_per_step([]) == []
    # an empty rollout keeps its (empty) place; index 0: 1, 3 -> -1, +1
    assert normalize_per_step([[], [1.0], [3.0]]) == [[], approx([-1.0]), approx([1.0])]


def test_normalize_rejects_non_finite():
    with pytest.raises(ValueError, match="finite"):
        normalize_per_step([[1.0], [math.nan]])


def test_normalize_with_policy_rewards_end_to_end():
    # Two rollouts, m = 3, lam = 1:
    #   success, steps (+1,+1,-1),(+1,+1,+1) -> R = 4/3, 2
    #   failure, step  (+1,+1,-1)            -> R = -2/3
    # index 0: 4/3, -2/3 -> mean 1/3, std 1 -> +1, -1 ; index 1: one rollout -> 0
    a = policy_step_rewards(1, [[1, 1, -1], [1, 1, 1]])
    b = policy_step_rewards(-1, [[1, 1, -1]])
    assert normalize_per_step([a, b]) == [approx([1.0, 0.0]), approx([-1.0])]


# ------------------------------------------------------------------ judge_rewards


def test_judge_rewards_mixed_by_hand():
    # R = 4/3, verdicts (+1,+1,-1): raw = 4/3, 4/3, -4/3
    # mean = 4/9 ; deviations 8/9, 8/9, -16/9
    # var = (64 + 64 + 256) / 81 / 3 = 128/81 ; std = 8*sqrt(2)/9
    # z = (8/9)/(8 sqrt2/9) = 1/sqrt2, 1/sqrt2, -16/(8 sqrt2) = -sqrt2
    assert judge_rewards(4 / 3, [1, 1, -1]) == approx([1 / SQRT2, 1 / SQRT2, -SQRT2])


def test_judge_rewards_failed_step_rewards_the_minus_verdict():
    # R = -2/3 (O = -1, verdicts (+1,+1,-1)): raw = -2/3, -2/3, +2/3
    # mean -2/9 ; deviations -4/9, -4/9, 8/9 ; std = 4 sqrt2/9 -> -1/sqrt2, -1/sqrt2, sqrt2
    assert judge_rewards(-2 / 3, [1, 1, -1]) == approx([-1 / SQRT2, -1 / SQRT2, SQRT2])


def test_judge_rewards_all_equal_verdicts_give_zeros():
    # R = 2, (+1,+1,+1): raw 2, 2, 2 -> variance 0 -> all 0
    assert judge_rewards(2.0, [1, 1, 1]) == [0.0, 0.0, 0.0]
    # R = 4/3: raw 4/3 three times; must be exactly 0 despite float rounding of the mean
    assert judge_rewards(4 / 3, [1, 1, 1]) == [0.0, 0.0, 0.0]
    # R = -1: (-1,-1,-1) -> raw 1, 1, 1 -> 0
    assert judge_rewards(-1.0, [-1, -1, -1]) == [0.0, 0.0, 0.0]


def test_judge_rewards_single_verdict_is_zero():
    # m = 1: one value, variance 0
    assert judge_rewards(1.5, [1]) == [0.0]


def test_judge_rewards_zero_step_reward():
    # R = 0, (+1,-1): raw 0, -0 -> equal -> 0, 0
    assert judge_rewards(0.0, [1, -1]) == [0.0, 0.0]


def test_judge_rewards_unreadable_gets_minus_2():
    # R = 1, (+1, 0): raw 1, -2 -> mean -0.5, deviations 1.5, -1.5, std 1.5 -> +1, -1
    assert judge_rewards(1.0, [1, 0]) == approx([1.0, -1.0])
    # R = 0, (+1,-1,0): raw 0, 0, -2 -> mean -2/3 ; deviations 2/3, 2/3, -4/3
    # var = (4+4+16)/9/3 = 8/9, std = 2 sqrt2/3 -> 1/sqrt2, 1/sqrt2, -sqrt2
    assert judge_rewards(0.0, [1, -1, 0]) == approx([1 / SQRT2, 1 / SQRT2, -SQRT2])


def test_judge_rewards_unreadable_equal_to_worst_readable():
    # R = -2 (O = -1, all three said -1 at lam=1), (+1, 0): raw -2 and -2 -> zeros
    assert judge_rewards(-2.0, [1, 0]) == [0.0, 0.0]
    # all unreadable: raw -2, -2, -2 -> zeros
    assert judge_rewards(1.0, [0, 0, 0]) == [0.0, 0.0, 0.0]


def test_judge_rewards_validation():
    with pytest.raises(ValueError, match="empty"):
        judge_rewards(1.0, [])
    with pytest.raises(ValueError, match="verdict"):
        judge_rewards(1.0, [1, 3])
    with pytest.raises(ValueError, match="step_reward"):
        judge_rewards(math.inf, [1, -1])


# ------------------------------------------------------------------ adaptation_direction


@pytest.mark.parametrize(
    "acc, expected",
    [
        (0.8, "harder"),  # edge, inclusive
        (4 / 5, "harder"),  # 4 of 5 rollouts, same float as 0.8
        (0.875, "harder"),
        (1.0, "harder"),
        (0.79, None),  # just inside
        (0.5, None),
        (0.21, None),  # just inside
        (0.2, "easier"),  # edge, inclusive
        (1 / 5, "easier"),
        (0.125, "easier"),
        (0.0, "easier"),
    ],
)
def test_adaptation_direction_default_band(acc, expected):
    assert adaptation_direction(acc) == expected


def test_adaptation_direction_custom_band():
    # band [0.25, 0.75] with 8 rollouts: 6/8 = 0.75 -> harder, 2/8 -> easier, 3/8 -> None
    assert adaptation_direction(6 / 8, low=0.25, high=0.75) == "harder"
    assert adaptation_direction(2 / 8, low=0.25, high=0.75) == "easier"
    assert adaptation_direction(3 / 8, low=0.25, high=0.75) is None


@pytest.mark.parametrize(
    "kwargs",
    [dict(acc=1.5), dict(acc=-0.1), dict(acc=math.nan), dict(acc=0.5, low=0.8, high=0.2),
     dict(acc=0.5, low=0.5, high=0.5)],
)
def test_adaptation_direction_validation(kwargs):
    with pytest.raises(ValueError):
        adaptation_direction(**kwargs)


# ------------------------------------------------------------------ accept_candidate


@pytest.mark.parametrize(
    "prev, new, expected",
    [
        (0.875, 0.5, True),  # 0 < 0.5 < 0.875 and 0.5 >= 0.2
        (0.875, 0.2, True),  # exactly at low: inclusive
        (0.875, 0.125, False),  # fell below the band
        (0.875, 0.875, False),  # equal to prev: not harder
        (0.875, 1.0, False),  # easier than before
        (0.875, 0.0, False),  # nobody solves it
    ],
)
def test_accept_harder(prev, new, expected):
    assert accept_candidate("harder", prev, new) is expected


def test_accept_harder_zero_never_accepted_even_with_low_0():
    # low = 0 would let 0 >= low pass; 0 < acc' still rejects it
    assert accept_candidate("harder", 0.9, 0.0, low=0.0) is False
    assert accept_candidate("harder", 0.9, 0.1, low=0.0) is True


@pytest.mark.parametrize(
    "prev, new, expected",
    [
        (0.125, 0.5, True),  # 0.5 > 0.125 and 0.5 <= 0.8
        (0.125, 0.8, True),  # exactly at high: inclusive
        (0.125, 0.875, False),  # overshot the band
        (0.125, 0.125, False),  # equal to prev: not easier
        (0.125, 0.0, False),  # got harder
        (0.0, 0.0, False),  # acc' = 0: never accepted
        (0.0, 0.125, True),  # from 0 to 1/8 is progress
    ],
)
def test_accept_easier(prev, new, expected):
    assert accept_candidate("easier", prev, new) is expected


def test_accept_custom_band_edges():
    # band [0.25, 0.75]: harder to exactly 0.25 ok, to 0.125 not; easier to 0.75 ok, 0.875 not
    assert accept_candidate("harder", 0.875, 0.25, low=0.25, high=0.75) is True
    assert accept_candidate("harder", 0.875, 0.125, low=0.25, high=0.75) is False
    assert accept_candidate("easier", 0.125, 0.75, low=0.25, high=0.75) is True
    assert accept_candidate("easier", 0.125, 0.875, low=0.25, high=0.75) is False


@pytest.mark.parametrize("direction", [None, "up", "Harder", ""])
def test_accept_unknown_direction(direction):
    with pytest.raises(ValueError, match="direction"):
        accept_candidate(direction, 0.5, 0.4)


def test_accept_bad_accuracy():
    with pytest.raises(ValueError, match="new_acc"):
        accept_candidate("harder", 0.9, 1.2)
    with pytest.raises(ValueError, match="prev_acc"):
        accept_candidate("easier", math.nan, 0.5)


# ------------------------------------------------------------------ balance


def test_balance_by_hand_with_unreadable_in_denominators():
    # O = +1 steps: (+1,+1,0), (+1,-1,-1) -> 6 verdicts, 3 of them +1 -> p+ = 3/6 = 0.5
    #   (counting only readable ones would give 3/5 = 0.6: the 0 must count)
    # O = -1 steps: (-1,0,+1), (-1,-1)    -> 5 verdicts, 3 of them -1 -> p- = 3/5 = 0.6
    # mu = 0.5 + 0.6 = 1.1
    p_plus, p_minus, mu = balance(
        [1, 1, -1, -1], [[1, 1, 0], [1, -1, -1], [-1, 0, 1], [-1, -1]]
    )
    assert (p_plus, p_minus, mu) == approx((0.5, 0.6, 1.1))


def test_balance_all_unreadable_counts_as_wrong():
    # O = +1: (0,0) -> 0/2 ; O = -1: (-1,-1) -> 2/2 ; mu = 1
    assert balance([1, -1], [[0, 0], [-1, -1]]) == approx((0.0, 1.0, 1.0))


def test_balance_class_without_steps_is_nan():
    # only successes: p+ = 2/2 = 1, p- undefined -> nan, mu nan
    p_plus, p_minus, mu = balance([1], [[1, 1]])
    assert p_plus == approx(1.0)
    assert math.isnan(p_minus) and math.isnan(mu)
    # only failures: p- = 1/3
    p_plus, p_minus, mu = balance([-1, -1], [[-1, 1, 0], [1]])
    # 4 verdicts on failed steps, one of them -1 -> 1/4
    assert math.isnan(p_plus) and p_minus == approx(0.25) and math.isnan(mu)
    # nothing at all
    assert all(math.isnan(x) for x in balance([], []))


def test_balance_validation():
    with pytest.raises(ValueError, match="length"):
        balance([1, -1], [[1]])
    with pytest.raises(ValueError, match="outcome"):
        balance([0], [[1]])
    with pytest.raises(ValueError, match="empty"):
        balance([1], [[]])
    with pytest.raises(ValueError, match="verdict"):
        balance([1], [[5]])


# ------------------------------------------------------------------ precision_bound


@pytest.mark.parametrize("mu", [1.0, 0.5, 0.0])
def test_precision_bound_zero_when_mu_not_above_1(mu):
    assert precision_bound(mu, 3) == 0.0


def test_precision_bound_hand_values():
    # mu = 1.5, m = 3: 1 - exp(-3 * 0.25 / 4) = 1 - exp(-0.1875) = 1 - 0.8290291181 = 0.1709708819
    assert precision_bound(1.5, 3) == approx(0.1709708819, abs=1e-10)
    # mu = 2, m = 4: 1 - exp(-4 * 1 / 4) = 1 - 1/e = 0.6321205588
    assert precision_bound(2.0, 4) == approx(0.6321205588, abs=1e-10)
    # grows with m: mu = 1.5, m = 64: 1 - exp(-4) = 0.9816843611
    assert precision_bound(1.5, 64) == approx(0.9816843611, abs=1e-10)


def test_precision_bound_nan_mu_stays_nan():
    assert math.isnan(precision_bound(math.nan, 3))


@pytest.mark.parametrize("m", [0, -1, 2.5, True])
def test_precision_bound_bad_m(m):
    with pytest.raises(ValueError, match="m must be"):
        precision_bound(1.5, m)


# ------------------------------------------------------------------ empirical_precision


def test_empirical_precision_one_task_with_a_tie():
    # success means [1, 1/3], failure means [1/3, -1]; pairs:
    #   (1, 1/3) > : 1   (1, -1) > : 1   (1/3, 1/3) tie : 1/2   (1/3, -1) > : 1
    #   -> 3.5 / 4 = 0.875
    assert empirical_precision([([1.0, 1 / 3], [1 / 3, -1.0])]) == approx(0.875)


def test_empirical_precision_mean_over_tasks():
    # task 1: 0.875 (above) ; task 2: ([0], [0]) all ties -> 0.5 ; task 3: ([-1], [1]) -> 0
    # mean = (0.875 + 0.5 + 0) / 3 = 1.375 / 3 = 0.458333...
    groups = [([1.0, 1 / 3], [1 / 3, -1.0]), ([0.0], [0.0]), ([-1.0], [1.0])]
    assert empirical_precision(groups) == approx(1.375 / 3)


def test_empirical_precision_tasks_weigh_equally_not_pairs():
    # task 1 has 4 pairs all won -> 1 ; task 2 has 1 pair lost -> 0 ; mean over tasks 0.5
    # (pooling pairs would give 4/5 = 0.8)
    groups = [([1.0, 1.0], [0.0, -1.0]), ([-1.0], [1.0])]
    assert empirical_precision(groups) == approx(0.5)


def test_empirical_precision_no_task_is_nan_and_one_sided_tasks_skipped():
    assert math.isnan(empirical_precision([]))
    assert math.isnan(empirical_precision([([1.0], []), ([], [0.0])]))
    # the one-sided task is skipped; the other: (1 > 0) -> 1
    assert empirical_precision([([1.0], []), ([1.0], [0.0])]) == approx(1.0)


def test_empirical_precision_matches_all_pairs():
    # Brute force over all pairs on coarse values (many ties) must agree.
    rng = random.Random(0)
    groups = []
    for _ in range(5):
        succ = [rng.choice([-1, -1 / 3, 1 / 3, 1]) for _ in range(rng.randint(1, 9))]
        fail = [rng.choice([-1, -1 / 3, 1 / 3, 1]) for _ in range(rng.randint(1, 9))]
        groups.append((succ, fail))
    per_task = []
    for succ, fail in groups:
        score = sum(1.0 if s > f else 0.5 if s == f else 0.0 for s in succ for f in fail)
        per_task.append(score / (len(succ) * len(fail)))
    assert empirical_precision(groups) == approx(sum(per_task) / len(per_task))


def test_empirical_precision_validation():
    with pytest.raises(ValueError, match="pair"):
        empirical_precision([([1.0],)])
    with pytest.raises(ValueError, match="finite"):
        empirical_precision([([math.nan], [0.0])])
