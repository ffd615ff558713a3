"""SPEC §6–7 diagnostics of one iteration, computed batched over all judged steps.

An undefined value (no failed step for p₋, no oracle-bad step …) is left out, never NaN.
"""
from __future__ import annotations

import math

import torch

from .. import metrics
from .. import rewards
from .advantages import unanimous_steps


def _put(out: dict, key: str, value) -> None:
    v = float(value)
    if math.isfinite(v):
        out[key] = v


def judge_measures(verdicts: torch.Tensor, mask: torch.Tensor, outcome: torch.Tensor, oracle: torch.Tensor,
                   groups: int, rollouts: int) -> dict[str, float]:
    """verdicts [B, T, m] int8; mask [B, T]; outcome [B] ±1; oracle [B, T] ±1 (diagnostic only)."""
    out: dict[str, float] = {}
    m = verdicts.shape[-1]
    v = verdicts.float()
    w = mask.float()
    steps = w.sum()
    if steps == 0:
        return out
    # outcome agreement: sign of each trajectory's mean verdict vs O; a mean of exactly 0 counts ½
    traj_sum = (v.sum(-1) * w).sum(1)
    agree = torch.where(traj_sum == 0, 0.5, (torch.sign(traj_sum) == outcome).float())
    _put(out, metrics.OUTCOME_AGREEMENT, agree.mean())
    _put(out, metrics.PROCESS_AGREEMENT, balanced_agreement(verdicts, mask, oracle))
    _put(out, metrics.UNANIMITY, (unanimous_steps(verdicts).float() * w).sum() / steps)
    p_plus, p_minus = balance(verdicts, mask, outcome)
    _put(out, metrics.P_PLUS, p_plus)
    _put(out, metrics.P_MINUS, p_minus)
    mu = p_plus + p_minus
    _put(out, metrics.MU, mu)
    if math.isfinite(mu):
        _put(out, metrics.PRECISION_BOUND, rewards.precision_bound(mu, m))
    _put(out, metrics.PRECISION, empirical_precision(v.mean(-1), mask, outcome, groups, rollouts))
    return out


def judge_error_structure(verdicts: torch.Tensor, mask: torch.Tensor, outcome: torch.Tensor,
                          oracle: torch.Tensor) -> dict[str, float]:
    """How the judge errs, against the oracle's labels (steps without a label left out).
    Agreement is balanced over oracle-good and -bad steps, within each trajectory outcome. The
    outcome's share of the variance of the steps' mean verdicts is η² (between-outcome over total
    sum of squares), over all steps and pooled within each oracle label: a judge whose errors are
    noise has ~0 of the latter, one that predicts the outcome from each step has much. The error
    correlation is Pearson's r of adjacent labelled steps' residuals (below)."""
    out: dict[str, float] = {}
    s = verdicts.float().mean(-1)
    labelled = mask & (oracle != 0)
    won = (outcome > 0).unsqueeze(1).expand_as(mask)
    _put(out, metrics.AGREEMENT_ON_SUCCESS, balanced_agreement(verdicts, labelled & won, oracle))
    _put(out, metrics.AGREEMENT_ON_FAILURE, balanced_agreement(verdicts, labelled & ~won, oracle))
    _put(out, metrics.OUTCOME_SHARE, _eta_squared([(s[mask], won[mask])]))
    _put(out, metrics.OUTCOME_SHARE_GIVEN_ORACLE,
         _eta_squared([(s[labelled & (oracle == c)], won[labelled & (oracle == c)]) for c in (1, -1)]))
    # what of a verdict its step's label does not explain: its mean verdict less the mean over steps
    # of that label; independent errors leave adjacent residuals uncorrelated, errors that follow
    # the trajectory (its outcome, its states) do not
    residual = torch.zeros_like(s)
    for c in (1, -1):
        where = labelled & (oracle == c)
        if where.any():
            residual[where] = s[where] - s[where].mean()
    pair = labelled[:, :-1] & labelled[:, 1:]
    _put(out, metrics.ERROR_CORRELATION, _pearson(residual[:, :-1][pair], residual[:, 1:][pair]))
    return out


def balanced_agreement(verdicts: torch.Tensor, where: torch.Tensor, oracle: torch.Tensor) -> float:
    """Process agreement over the steps `where` [B, T]: the share of verdicts that match the oracle,
    balanced over oracle-good and oracle-bad steps; nan without both kinds."""
    good, bad = (where & (oracle > 0)).float(), (where & (oracle < 0)).float()
    if good.sum() == 0 or bad.sum() == 0:
        return float("nan")
    plus, minus = (verdicts == 1).float().mean(-1), (verdicts == -1).float().mean(-1)
    return float(0.5 * ((plus * good).sum() / good.sum() + (minus * bad).sum() / bad.sum()))


def _eta_squared(strata: list[tuple[torch.Tensor, torch.Tensor]]) -> float:
    """Σ between-group over Σ total sum of squares of values split by a bool, pooled over strata."""
    between = total = 0.0
    for x, group in strata:
        if x.numel() < 2:
            continue
        x = x.double()
        total += float(((x - x.mean()) ** 2).sum())
        for g in (group, ~group):
            if g.any():
                between += float(g.sum()) * float(x[g].mean() - x.mean()) ** 2
    return between / total if total > 0 else float("nan")


def _pearson(a: torch.Tensor, b: torch.Tensor) -> float:
    if a.numel() < 2:
        return float("nan")
    a, b = a.double() - a.double().mean(), b.double() - b.double().mean()
    denom = float((a.square().sum() * b.square().sum()).sqrt())
    return float((a * b).sum()) / denom if denom > 0 else float("nan")


def balance(verdicts: torch.Tensor, mask: torch.Tensor, outcome: torch.Tensor) -> tuple[float, float]:
    """(p₊, p₋) of §6 over the real steps, per verdict; unreadable verdicts stay in the
    denominators; nan for a class with no step."""
    w = mask.float()
    succ = (outcome > 0).float().unsqueeze(1) * w
    fail = (outcome < 0).float().unsqueeze(1) * w
    plus = (verdicts == 1).float().mean(-1)
    minus = (verdicts == -1).float().mean(-1)
    p_plus = float((plus * succ).sum() / succ.sum()) if succ.sum() > 0 else float("nan")
    p_minus = float((minus * fail).sum() / fail.sum()) if fail.sum() > 0 else float("nan")
    return p_plus, p_minus


def balance_mu(verdicts: torch.Tensor, mask: torch.Tensor, outcome: torch.Tensor) -> float:
    p_plus, p_minus = balance(verdicts, mask, outcome)
    return p_plus + p_minus


def empirical_precision(step_means: torch.Tensor, mask: torch.Tensor, outcome: torch.Tensor,
                        groups: int, rollouts: int) -> float:
    """Per task with both outcomes: share of (success step, failure step) pairs where the success
    step's mean verdict is higher, ties ½; averaged over those tasks."""
    per_task = []
    sm = step_means.view(groups, rollouts, -1)
    mk = mask.view(groups, rollouts, -1)
    oc = outcome.view(groups, rollouts)
    for g in range(groups):
        s = sm[g][(oc[g] > 0).unsqueeze(1) & mk[g]]
        f = sm[g][(oc[g] < 0).unsqueeze(1) & mk[g]]
        if s.numel() == 0 or f.numel() == 0:
            continue
        # mean verdicts take m+1 values at most, so counting by value is exact and cheap
        levels = torch.unique(torch.cat([s, f]))
        sc = (s.unsqueeze(1) == levels).sum(0).double()
        fc = (f.unsqueeze(1) == levels).sum(0).double()
        below = torch.cumsum(fc, 0) - fc
        wins = (sc * below).sum() + 0.5 * (sc * fc).sum()
        per_task.append(float(wins) / (s.numel() * f.numel()))
    return sum(per_task) / len(per_task) if per_task else float("nan")


def policy_measures(rewards_: torch.Tensor, verdicts: torch.Tensor, mask: torch.Tensor, lam: float,
                    lengths: torch.Tensor) -> dict[str, float]:
    out: dict[str, float] = {}
    w = mask.float()
    steps = w.sum()
    if steps > 0:
        m = verdicts.shape[-1]
        _put(out, metrics.REWARD, (rewards_ * w).sum() / steps)
        _put(out, metrics.STEP_REWARD, ((lam / m) * verdicts.float().sum(-1) * w).sum() / steps)
    _put(out, metrics.EPISODE_LENGTH, lengths.float().mean())
    return out
