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
