"""Vectorised twins of the SPEC §8 reference functions (tests check them equal on random inputs).

Shapes: B = groups × rollouts episodes, T steps, m verdicts per step; `mask` [B, T] marks real steps.
"""
from __future__ import annotations

import torch
from torch.nn import functional

STD_EPS = 1e-8


def step_rewards(outcome: torch.Tensor, verdicts: torch.Tensor, mask: torch.Tensor, lam: float) -> torch.Tensor:
    """R_i = O + (λ/m)·Σ_j S_ij per step [B, T]; 0 where mask is False. Unreadable verdicts (0) add 0."""
    m = verdicts.shape[-1]
    r = outcome.unsqueeze(1) + (lam / m) * verdicts.float().sum(-1)
    return r * mask


def transformed_step_rewards(outcome: torch.Tensor, verdicts: torch.Tensor, mask: torch.Tensor, lam: float,
                             form: str) -> torch.Tensor:
    """R_i = O + λ·u_i per step [B, T], 0 where mask is False, for policy.step_verdicts = `form`
    (not in the paper) with v_i = (1/m)·Σ_j S_ij: centred, u_i = v_i − the mean of v over the
    trajectory's real steps; difference, u_i = v_i − v_(i−1), v_(−1) = 0; failures, u_i = v_i on a
    failed trajectory and 0 on a successful one."""
    w = mask.float()
    v = verdicts.float().mean(-1) * w
    if form == "centred":
        u = v - v.sum(1, keepdim=True) / w.sum(1, keepdim=True).clamp(min=1)
    elif form == "difference":
        u = v - functional.pad(v[:, :-1], (1, 0))
    elif form == "failures":
        u = v * (outcome < 0).float().unsqueeze(1)
    else:
        raise ValueError(f"unknown step_verdicts form {form!r}")
    return (outcome.unsqueeze(1) + lam * u) * w


def oracle_verdicts(oracle: torch.Tensor, mask: torch.Tensor, m: int, noise: float,
                    gen: torch.Generator) -> torch.Tensor:
    """judge.source = "oracle" (a diagnostic, never a learner): m copies of each real step's oracle
    label [B, T, m] int8, each flipped independently with probability `noise`; 0 on padding."""
    v = oracle.to(torch.int8).unsqueeze(-1).expand(*oracle.shape, m).clone()
    if noise > 0:
        flip = torch.rand(v.shape, generator=gen, device=v.device) < noise
        v = torch.where(flip, -v, v)
    return v * mask.unsqueeze(-1).to(torch.int8)


def normalize_per_step(rewards: torch.Tensor, mask: torch.Tensor, rollouts: int) -> torch.Tensor:
    """Group-relative advantages per step index: z-score R_i across a task's rollouts that reached i
    (population std); 0 where fewer than 2 reached i or the std ≤ 1e-8."""
    b, t = rewards.shape
    r = rewards.view(-1, rollouts, t).double()
    w = mask.view(-1, rollouts, t).double()
    n = w.sum(1, keepdim=True)
    mean = (r * w).sum(1, keepdim=True) / n.clamp(min=1)
    var = (((r - mean) * w) ** 2).sum(1, keepdim=True) / n.clamp(min=1)
    std = var.sqrt()
    ok = (n >= 2) & (std > STD_EPS)
    adv = torch.where(ok, (r - mean) / torch.where(ok, std, torch.ones_like(std)), torch.zeros_like(r))
    return (adv * w).view(b, t).float()


def consistency_raw(step_reward: torch.Tensor, verdicts: torch.Tensor) -> torch.Tensor:
    """The judge's raw consistency reward per verdict [..., m] (double): R·S, −2 if unreadable."""
    s = verdicts.double()
    return torch.where(verdicts == 0, torch.full_like(s, -2.0), step_reward.double().unsqueeze(-1) * s)


def unanimous_steps(verdicts: torch.Tensor) -> torch.Tensor:
    """[...] bool: the step's m verdicts all agree."""
    return (verdicts == verdicts[..., :1]).all(-1)


def judge_rewards(step_reward: torch.Tensor, verdicts: torch.Tensor) -> torch.Tensor:
    """Consistency feedback per verdict [..., m]: raw = R·S (−2 if unreadable), z-scored over the m
    verdicts of a step (population std); all 0 where their variance is 0."""
    raw = consistency_raw(step_reward, verdicts)
    mean = raw.mean(-1, keepdim=True)
    std = raw.var(-1, unbiased=False, keepdim=True).sqrt()
    ok = std > STD_EPS
    z = torch.where(ok, (raw - mean) / torch.where(ok, std, torch.ones_like(std)), torch.zeros_like(raw))
    return z.float()


def unanimous_steps_pooled(step_reward: torch.Tensor, verdicts: torch.Tensor, mask: torch.Tensor,
                                      z: torch.Tensor) -> torch.Tensor:
    """judge.unanimous = "batch" | "trained" (not in the paper): the verdicts of a step whose m
    verdicts agree (z-scored to 0 over themselves: no gradient, an absorbing state once the judge
    always agrees) are z-scored instead over every such step that `mask` [B, T] marks (batch: all
    real steps; trained: those of the groups the judge trains on), raw = R·S (−2 if unreadable) as
    before; `z` is the paper's reward [B, T, m], returned with those steps replaced."""
    raw = consistency_raw(step_reward, verdicts)
    agree = unanimous_steps(verdicts) & mask
    pooled = raw[agree]
    if pooled.numel() < 2:
        return z
    std = pooled.std(unbiased=False)
    if std <= STD_EPS:
        return z
    batch = ((raw - pooled.mean()) / std).float()
    return torch.where(agree.unsqueeze(-1), batch, z)


def outcome_balanced_weights(success: torch.Tensor) -> torch.Tensor:
    """Per-sample weights [N] under which samples from successful and from failed trajectories
    weigh half each (mean weight 1), Theorem 2's balance at the level of judged steps; all ones
    when one class is missing (`judge.weighting = "balanced"`, not in the paper)."""
    n = success.numel()
    n_s = int(success.sum())
    if n_s == 0 or n_s == n:
        return torch.ones(n, device=success.device)
    return torch.where(success, n / (2.0 * n_s), n / (2.0 * (n - n_s))).float()


# ---- the coding setting (docs/coding.md): twins of rewards.coding_policy_* and rewards.unit_test_*
# G tasks × R programs (B = G·R, task-major) × K generated tests.


def _zscore_rows(x: torch.Tensor) -> torch.Tensor:
    """z-score along the last dim (population std), 0 where the std ≤ STD_EPS; double."""
    x = x.double()
    if x.numel() == 0:   # no test or no task: nothing to score, and var() of nothing warns
        return x
    mean = x.mean(-1, keepdim=True)
    std = x.var(-1, unbiased=False, keepdim=True).sqrt()
    ok = std > STD_EPS
    return torch.where(ok, (x - mean) / torch.where(ok, std, torch.ones_like(std)), torch.zeros_like(x))


def coding_policy_advantages(pass_ratio: torch.Tensor, rollouts: int) -> torch.Tensor:
    """Program rewards [B]: each ground-truth pass ratio z-scored over its task's R programs."""
    return _zscore_rows(pass_ratio.view(-1, rollouts)).view(-1).float()


def coding_policy_band(pass_all: torch.Tensor, rollouts: int, low: float = 0.2, high: float = 0.8) -> torch.Tensor:
    """[G] bool: the task trains, low ≤ (share of its programs passing every ground-truth test) ≤ high.
    The share is k/R in double, which rounds exactly as the reference's Python k/R."""
    share = pass_all.view(-1, rollouts).double().mean(-1)
    return (share >= low) & (share <= high)


def _test_counts(passes: torch.Tensor, correct: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """(correct_test [G,K], wrong_fail [G,K], wrong_pass [G,K], n_wrong [G,1]). An invalid test (0)
    passes nothing, as the official execution writes False for it."""
    ok = passes > 0
    good = correct.unsqueeze(1)
    correct_test = (ok | ~good).all(-1)
    wrong_fail = (~ok & ~good).sum(-1)
    wrong_pass = (ok & ~good).sum(-1)
    n_wrong = (~correct).sum(-1, keepdim=True)
    return correct_test, wrong_fail, wrong_pass, n_wrong


def unit_test_advantages(passes: torch.Tensor, correct: torch.Tensor,
                         in_band: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Generated-test rewards [G, K] and which tasks train the test generator [G] bool.

    passes [G, K, R] int8: +1 program r passes test k, −1 fails, 0 test k invalid; correct [G, R]:
    program r passes all ground-truth tests. Raw: with no wrong program ±1 by whether every correct
    program passes the test; else #wrong programs failed for such a test, −#wrong programs passed
    otherwise; z-scored over the K tests. Rewards are 0 for a task without a correct program, which
    never trains; pass `in_band` (coding_policy_band) to also drop the tasks the policy skips, as the
    official does."""
    correct_test, wrong_fail, wrong_pass, n_wrong = _test_counts(passes, correct)
    raw = torch.where(n_wrong == 0, correct_test.double() * 2 - 1,
                      torch.where(correct_test, wrong_fail.double(), -wrong_pass.double()))
    trained = correct.any(-1) & (passes.shape[1] > 0)
    z = _zscore_rows(raw) * trained.unsqueeze(-1)
    if in_band is not None:
        trained = trained & in_band
    return z.float(), trained


def unit_test_quality(passes: torch.Tensor, correct: torch.Tensor) -> tuple[float, float]:
    """(syn_ut_acc, perfect_ut_rate) over the batch, the official micro means: the share of generated
    tests every correct program passes, over tasks with a correct program; the share that also every
    wrong program fails, over tasks with both kinds. nan where no task counts."""
    correct_test, _, wrong_pass, n_wrong = _test_counts(passes, correct)
    k = passes.shape[1]
    has_good = correct.any(-1)
    both = has_good & (n_wrong.squeeze(-1) > 0)
    acc_den = int(has_good.sum()) * k
    perfect_den = int(both.sum()) * k
    acc = float((correct_test & has_good.unsqueeze(-1)).sum()) / acc_den if acc_den else float("nan")
    perfect = correct_test & (wrong_pass == 0) & both.unsqueeze(-1)
    return acc, float(perfect.sum()) / perfect_den if perfect_den else float("nan")
