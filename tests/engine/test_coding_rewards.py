"""The coding setting's rewards (docs/coding.md): the reference on hand-made cases, and the
vectorised twins equal to it on random batches."""
import math

import pytest
import torch

from rla_engine import rewards
from rla_engine.loop import advantages

T, F, X = True, False, None  # X: an invalid test, failed by every program


def z(xs):
    m = sum(xs) / len(xs)
    s = math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))
    return [(x - m) / s for x in xs]


# ------------------------------------------------------------------ reference, by hand


def test_policy_rewards_are_pass_ratios_z_scored():
    assert rewards.coding_policy_rewards([1.0, 0.0]) == [1.0, -1.0]
    assert rewards.coding_policy_rewards([0.5, 0.25, 1.0]) == pytest.approx(z([0.5, 0.25, 1.0]))
    assert rewards.coding_policy_rewards([0.3] * 7) == [0.0] * 7      # no spread: nothing to learn
    assert rewards.coding_policy_rewards([]) == []


@pytest.mark.parametrize("bad", [[1.5], [-0.1], [math.nan], [True], ["1"]])
def test_policy_rewards_reject_bad_ratios(bad):
    with pytest.raises(ValueError):
        rewards.coding_policy_rewards(bad)


@pytest.mark.parametrize(("passed", "trained"), [(0, False), (1, True), (2, True), (4, True), (5, False)])
def test_policy_band_is_inclusive(passed, trained):
    # R = 5: shares 0.2 and 0.8 sit exactly on the bounds and train, as `> 0.8 or < 0.2` skips
    assert rewards.coding_policy_trained([True] * passed + [False] * (5 - passed)) is trained


def test_policy_band_edges():
    assert rewards.coding_policy_trained([]) is False
    assert rewards.coding_policy_trained([True, False], low=0.6, high=0.9) is False
    with pytest.raises(ValueError):
        rewards.coding_policy_trained([1, 0])
    with pytest.raises(ValueError):
        rewards.coding_policy_trained([True], low=0.8, high=0.2)


def test_unit_test_rewards_by_hand():
    correct = [T, T, F, F]
    passes = [
        [T, T, F, F],  # correct, fails both wrong programs: +2
        [T, T, T, F],  # correct, fails one: +1
        [T, F, T, T],  # a correct program fails it: incorrect, two wrong programs pass: -2
        [X, X, X, X],  # invalid: incorrect, no wrong program passes: 0
        [T, T, T, T],  # correct but distinguishes nothing: 0
    ]
    assert rewards.unit_test_rewards(passes, correct) == pytest.approx(z([2, 1, -2, 0, 0]))


def test_unit_test_rewards_without_wrong_programs_are_plus_minus_one():
    passes = [[T, T], [T, F], [X, X], [T, T]]
    assert rewards.unit_test_rewards(passes, [T, T]) == pytest.approx(z([1, -1, -1, 1]))
    # all correct -> all +1 -> no spread
    assert rewards.unit_test_rewards([[T, T], [T, T]], [T, T]) == [0.0, 0.0]


def test_unit_test_rewards_skip_tasks_without_a_correct_program_or_test():
    assert rewards.unit_test_rewards([[T, F]], [F, F]) is None
    assert rewards.unit_test_rewards([[]], []) is None
    assert rewards.unit_test_rewards([], [T, F]) is None


@pytest.mark.parametrize(("passes", "correct"), [
    ([[T, F, T]], [T, F]),          # row length != programs
    ([[1, 0]], [T, F]),             # ints are not outcomes
    ([[T, F]], [1, 0]),
    (["TF"], [T, F]),
    ("TF", [T, F]),
])
def test_unit_test_rewards_reject_bad_shapes(passes, correct):
    with pytest.raises(ValueError):
        rewards.unit_test_rewards(passes, correct)


def test_unit_test_quality_by_hand():
    correct = [T, T, F, F]
    passes = [[T, T, F, F], [T, T, T, F], [T, F, T, T], [X, X, X, X]]
    # correct tests: 0, 1; perfect (also failed by every wrong program): 0
    assert rewards.unit_test_quality(passes, correct) == (0.5, 0.25)
    acc, perfect = rewards.unit_test_quality([[T, T], [X, X]], [T, T])
    assert acc == 0.5 and math.isnan(perfect)          # no wrong program: perfect undefined
    assert all(math.isnan(v) for v in rewards.unit_test_quality([[T, F]], [F, F]))
    assert all(math.isnan(v) for v in rewards.unit_test_quality([], [T]))


# ------------------------------------------------------------------ twins equal the reference


def random_tests(seed, g=6, k=5, r=4):
    gen = torch.Generator().manual_seed(seed)
    passes = torch.randint(-1, 2, (g, k, r), generator=gen).to(torch.int8)
    invalid = torch.rand(g, k, generator=gen) < 0.2
    passes[invalid] = 0                                 # an invalid test is invalid for every program
    correct = torch.rand(g, r, generator=gen) < torch.rand(g, 1, generator=gen)
    return passes, correct


def as_reference(passes, correct, grp):
    rows = [[None if v == 0 else v > 0 for v in row] for row in passes[grp].tolist()]
    return rows, correct[grp].tolist()


@pytest.mark.parametrize("seed", range(30))
def test_policy_twins_match_reference(seed):
    gen = torch.Generator().manual_seed(seed)
    groups, rollouts = 5, 6
    # ratios on a coarse grid, so that equal ratios (no spread) occur
    ratio = torch.randint(0, 4, (groups * rollouts,), generator=gen).double() / 3
    ratio[:rollouts] = 0.5                               # one constant group
    adv = advantages.coding_policy_advantages(ratio, rollouts)
    pass_all = ratio == 1
    band = advantages.coding_policy_band(pass_all, rollouts)
    for grp in range(groups):
        part = slice(grp * rollouts, (grp + 1) * rollouts)
        ref = rewards.coding_policy_rewards(ratio[part].tolist())
        assert adv[part].tolist() == pytest.approx(ref, abs=1e-6)
        assert bool(band[grp]) is rewards.coding_policy_trained(pass_all[part].tolist())


def test_policy_band_twin_on_the_bounds():
    pass_all = torch.tensor([[i < n for i in range(5)] for n in range(6)]).view(-1)
    assert advantages.coding_policy_band(pass_all, 5).tolist() == [False, True, True, True, True, False]


@pytest.mark.parametrize("seed", range(40))
def test_unit_test_twins_match_reference(seed):
    passes, correct = random_tests(seed)
    band = torch.rand(passes.shape[0], generator=torch.Generator().manual_seed(seed)) < 0.5
    z_, trained = advantages.unit_test_advantages(passes, correct)
    _, trained_band = advantages.unit_test_advantages(passes, correct, in_band=band)
    accs, perfects = [], []
    for grp in range(passes.shape[0]):
        rows, corr = as_reference(passes, correct, grp)
        ref = rewards.unit_test_rewards(rows, corr)
        assert bool(trained[grp]) is (ref is not None)
        assert bool(trained_band[grp]) is (ref is not None and bool(band[grp]))
        assert z_[grp].tolist() == pytest.approx(ref if ref is not None else [0.0] * len(rows), abs=1e-5)
        acc, perfect = rewards.unit_test_quality(rows, corr)
        accs += [] if math.isnan(acc) else [acc]
        perfects += [] if math.isnan(perfect) else [perfect]
    acc, perfect = advantages.unit_test_quality(passes, correct)
    for got, ref in ((acc, accs), (perfect, perfects)):
        if ref:
            assert got == pytest.approx(sum(ref) / len(ref), abs=1e-9)
        else:
            assert math.isnan(got)


def test_unit_test_twin_by_hand_and_edges():
    passes = torch.tensor([[[1, 1, -1, -1], [1, 1, 1, -1], [1, -1, 1, 1], [0, 0, 0, 0], [1, 1, 1, 1]]],
                          dtype=torch.int8)
    correct = torch.tensor([[True, True, False, False]])
    got, trained = advantages.unit_test_advantages(passes, correct)
    assert got[0].tolist() == pytest.approx(z([2, 1, -2, 0, 0]), abs=1e-6) and trained.tolist() == [True]
    # no test at all, or no program: nothing trains and nothing breaks
    got, trained = advantages.unit_test_advantages(torch.zeros(2, 0, 3, dtype=torch.int8), torch.ones(2, 3, dtype=bool))
    assert got.shape == (2, 0) and trained.tolist() == [False, False]
    no_program = torch.zeros(1, 0, dtype=bool)
    got, trained = advantages.unit_test_advantages(torch.zeros(1, 2, 0, dtype=torch.int8), no_program)
    assert got.tolist() == [[0.0, 0.0]] and trained.tolist() == [False]
    assert all(math.isnan(v) for v in advantages.unit_test_quality(torch.ones(1, 2, 2, dtype=torch.int8),
                                                                    torch.zeros(1, 2, dtype=bool)))
    assert advantages.coding_policy_advantages(torch.zeros(0), 4).shape == (0,)
