"""SPEC §6–7 diagnostics of one iteration, computed batched over all judged steps.

An undefined value (no failed step for p₋, no oracle-bad step …) is left out, never NaN.
"""
from __future__ import annotations

import math

import torch

from .. import metrics
from .. import rewards


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
    # process agreement, balanced over oracle-good and oracle-bad steps
    plus = (v == 1).float().mean(-1)
    minus = (v == -1).float().mean(-1)
    good, bad = (oracle > 0).float() * w, (oracle < 0).float() * w
    if good.sum() > 0 and bad.sum() > 0:
        _put(out, metrics.PROCESS_AGREEMENT, 0.5 * ((plus * good).sum() / good.sum() + (minus * bad).sum() / bad.sum()))
    unanimous = (verdicts == verdicts[..., :1]).all(-1).float()
    _put(out, metrics.UNANIMITY, (unanimous * w).sum() / steps)
    p_plus, p_minus = balance(verdicts, mask, outcome)
    _put(out, metrics.P_PLUS, p_plus)
    _put(out, metrics.P_MINUS, p_minus)
    mu = p_plus + p_minus
    _put(out, metrics.MU, mu)
    if math.isfinite(mu):
        _put(out, metrics.PRECISION_BOUND, rewards.precision_bound(mu, m))
    _put(out, metrics.PRECISION, empirical_precision(v.mean(-1), mask, outcome, groups, rollouts))
    return out


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
