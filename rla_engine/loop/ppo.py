"""PPO-clip with a k3 KL penalty to the pre-update network (SPEC §3), shared by policy and judge."""
from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.nn import functional

from .. import metrics
from .no_dynamo import optimiser_step


class NonFiniteError(RuntimeError):
    """A loss or gradient went NaN/inf; raised before the optimiser step can spread it.
    `quantity` is the metric key of what failed (metrics.ROLE_LOSS, ROLE_KL, ROLE_GRAD_NORM)."""

    def __init__(self, quantity: str, value: float):
        self.quantity, self.value = quantity, value
        super().__init__(f"non-finite {quantity} ({value})")


@dataclass
class PPOSettings:
    epochs: int
    minibatch_size: int
    clip_eps: float
    kl_beta: float
    entropy_coef: float = 0.0     # policy.entropy_coef; the judge's loss has none
    sample_entropy_coef: float = 0.0   # judge.verdict_entropy: weight of the samples' own Scores.bonus
    max_grad_norm: float = 1.0
    micro_batch_size: int = 0     # > 0: gradients accumulated over micro-batches of this many samples
    # log π_old of the first minibatch from its own forward instead of a separate no-grad pass: one
    # forward fewer per sample for a language model. The embedded networks keep the separate pass
    # (it costs them little, and their float rounding, hence the pinned quickstart metrics, stays)
    reuse_first_pass: bool = False


@dataclass
class PPOStats:
    """What one update did (all but `samples` meaningless when it had none); nan where a measure
    is undefined. The training-health keys (metrics.py) are these measures."""
    loss: float = 0.0
    kl: float = 0.0                  # k3 to the pre-update network, mean over minibatches: also the approx KL
    samples: int = 0
    clip_fraction: float = math.nan  # share of ratios (tokens) outside 1 ± clip_eps, over every minibatch pass
    entropy: float = math.nan        # mean entropy (per token) of the samples' distributions before the update
    grad_norm: float = math.nan      # before clipping, mean over the optimiser steps


@dataclass
class Scores:
    """`log_prob`'s answer for a batch of samples: log-probabilities [n] (a language model's per
    token, [n, L], with their mask), and optionally a function giving the entropy of each
    distribution they were drawn from (same shape, no gradient): a function, so that only the
    pre-update pass pays for it, and from the same forward as the log-probabilities."""
    logp: torch.Tensor
    mask: torch.Tensor | None = None
    entropy: Callable[[], torch.Tensor] | None = None
    bonus: torch.Tensor | None = None     # [n] with gradient: an entropy each sample adds to the loss (verdicts)


# `log_prob(idx)` gives Scores, or just the log-probabilities: [n] (an action, a verdict), or a
# language model's ([n, L], mask [n, L]); L the same for every call of one update.
LogProbs = torch.Tensor | tuple[torch.Tensor, torch.Tensor] | Scores


def _scores(x: LogProbs) -> Scores:
    if isinstance(x, Scores):
        return x
    return Scores(x[0], x[1]) if isinstance(x, tuple) else Scores(x)


def distribution_entropy(logp: torch.Tensor) -> torch.Tensor:
    """−Σ p log p over the last axis of log-probabilities, without gradient; an impossible outcome
    (log p = −inf) adds 0, not nan. One temporary the size of `logp` (a vocabulary per token)."""
    with torch.no_grad():
        return -logp.exp().mul_(logp).nan_to_num_(nan=0.0).sum(-1)


def binary_entropy(logit: torch.Tensor) -> torch.Tensor:
    """The entropy of a Bernoulli given its logit, with gradient (judge.verdict_entropy)."""
    p = torch.sigmoid(logit)
    return -(p * functional.logsigmoid(logit) + (1 - p) * functional.logsigmoid(-logit))


@dataclass
class _Health:
    """Running sums of an update's health measures."""
    clipped: float = 0.0
    ratios: float = 0.0
    entropy: float = 0.0
    entropy_n: float = 0.0
    entropy_given: bool = True
    grad_norm: float = 0.0
    steps: int = 0

    def see_entropy(self, s: Scores) -> None:
        """The pre-update distributions of the samples `s` scored (each sample is seen once)."""
        if s.entropy is None:
            self.entropy_given = False
            return
        e = s.entropy()
        if s.mask is not None:
            e = e.masked_fill(~s.mask.bool(), 0.0)
        self.entropy += float(e.sum())
        self.entropy_n += float(s.mask.sum()) if s.mask is not None else e.numel()

    def see_ratios(self, outside: float, ratios: float) -> None:
        self.clipped += outside
        self.ratios += ratios

    def measures(self) -> dict[str, float]:
        def share(a: float, b: float) -> float:
            return a / b if b else math.nan
        return {"clip_fraction": share(self.clipped, self.ratios),
                "entropy": share(self.entropy, self.entropy_n) if self.entropy_given else math.nan,
                "grad_norm": share(self.grad_norm, self.steps)}


def ppo_update(net: nn.Module, optimizer: torch.optim.Optimizer, log_prob: Callable[[torch.Tensor], LogProbs],
               advantages: torch.Tensor, settings: PPOSettings, generator: torch.Generator,
               name: str, entropy: Callable[[], torch.Tensor] | None = None,
               split: Callable[[torch.Tensor, int], Sequence[torch.Tensor]] | None = None) -> PPOStats:
    """PPO-clip + k3 KL (SPEC §3). `log π_old` is the pre-update policy's, taken once before the first
    optimiser step (a no-grad pass; with `reuse_first_pass`, the first minibatch's own forward
    and a no-grad pass for the rest), and is also the KL reference. Token-level samples: ratio
    and KL per token, averaged over the sample's tokens, then over samples. The health measures
    (PPOStats) read only what the update computes anyway. `entropy()` (with
    settings.entropy_coef > 0) gives per-state entropies over every visited state; each
    minibatch step subtracts entropy_coef × their mean, and with no samples each epoch still
    makes one entropy-only step. A sample's own `Scores.bonus` (with settings.sample_entropy_coef
    > 0: the entropy of a judge's verdict) is subtracted likewise, averaged over the minibatch's
    samples. `split(idx, size)` cuts a minibatch into micro-batches (default:
    `size` samples each); the loss is a mean over the minibatch's samples whatever the cut."""
    n = advantages.shape[0]
    cut = split or _by_count
    bonus = entropy if entropy is not None and settings.entropy_coef > 0 else None
    if n == 0:
        if bonus is not None:
            for _ in range(settings.epochs):
                optimizer.zero_grad(set_to_none=True)
                _backward(-settings.entropy_coef * bonus().mean(), name)
                _step(net, optimizer, settings, name)
        return PPOStats()
    perm = torch.randperm(n, generator=generator, device=generator.device).to(advantages.device)
    reuse = settings.reuse_first_pass
    health = _Health()
    old = _old_log_probs(log_prob, perm[settings.minibatch_size:] if reuse else torch.arange(n, device=perm.device),
                         n, settings, health, cut)
    total_loss = total_kl = 0.0
    batches = 0
    for epoch in range(settings.epochs):
        if epoch:
            perm = torch.randperm(n, generator=generator, device=generator.device).to(advantages.device)
        for idx in perm.split(settings.minibatch_size):
            optimizer.zero_grad(set_to_none=True)
            micros = cut(idx, settings.micro_batch_size) if settings.micro_batch_size else (idx,)
            for k, micro in enumerate(micros):
                new = _scores(log_prob(micro))
                if reuse and batches == 0:    # no step taken yet: log π_old is this very pass
                    old = _keep(old, micro, new, n, health)
                assert old is not None        # every row is set by the end of the first minibatch
                loss, kl = _micro_loss(new, old[micro], advantages[micro], settings, len(idx), health)
                del new      # its entropy function holds the pass's whole distribution (a vocabulary per token)
                if bonus is not None and k == len(micros) - 1:
                    loss = loss - settings.entropy_coef * bonus().mean()
                _backward(loss, name)
                total_loss += float(loss.detach())
                total_kl += float(kl.detach()) * (len(micro) / len(idx))
            health.grad_norm += _step(net, optimizer, settings, name)
            health.steps += 1
            batches += 1
    stats = PPOStats(total_loss / batches, total_kl / batches, n, **health.measures())
    for label, v in ((metrics.ROLE_LOSS[name], stats.loss), (metrics.ROLE_KL[name], stats.kl)):
        if not math.isfinite(v):
            raise NonFiniteError(label, v)
    return stats


def _micro_loss(new: Scores, old: torch.Tensor, advantages: torch.Tensor, settings: PPOSettings,
                minibatch: int, health: _Health) -> tuple[torch.Tensor, torch.Tensor]:
    """A micro-batch's share of its minibatch's loss (the minibatch's mean over samples: the
    clipped surrogate, the KL penalty, and the samples' own entropy bonus if any), and its KL."""
    surrogate, kl, clipped = _terms(new, old, advantages, settings.clip_eps)
    health.see_ratios(*clipped)
    share = len(advantages) / minibatch
    loss = (-surrogate + settings.kl_beta * kl) * share
    if new.bonus is not None and settings.sample_entropy_coef > 0:
        loss = loss - settings.sample_entropy_coef * new.bonus.sum() / minibatch
    return loss, kl


def _by_count(idx: torch.Tensor, size: int) -> Sequence[torch.Tensor]:
    return idx.split(size)


def _old_log_probs(log_prob: Callable[[torch.Tensor], LogProbs], rows: torch.Tensor, n: int,
                   settings: PPOSettings, health: _Health,
                   cut: Callable[[torch.Tensor, int], Sequence[torch.Tensor]]) -> torch.Tensor | None:
    """log π_old of the samples `rows`, by a no-grad pass before any step; None when there are none.
    With `reuse_first_pass` the rows are those outside the first minibatch, which needs no such
    pass: no step has been taken when it is scored, so its own forward gives log π_old (`_keep`),
    the ratio starts at exactly 1, and one epoch over one minibatch costs one forward + backward
    per sample instead of two forwards + backward."""
    if len(rows) == 0:
        return None
    chunk = settings.micro_batch_size or max(settings.minibatch_size, 4096)
    old = None
    with torch.no_grad():
        for idx in cut(rows, chunk):
            old = _keep(old, idx, _scores(log_prob(idx)), n, health)
    return old


def _keep(old: torch.Tensor | None, idx: torch.Tensor, new: Scores, n: int, health: _Health) -> torch.Tensor:
    """`old` (made on first use, one row per sample) with the rows `idx` set to `new`, detached;
    the pre-update entropies of those samples go to `health`."""
    health.see_entropy(new)
    values = new.logp.detach()
    if old is None:
        old = values.new_zeros((n, *values.shape[1:]))
    old[idx] = values
    return old


def _terms(new: Scores, old: torch.Tensor, adv: torch.Tensor,
           clip_eps: float) -> tuple[torch.Tensor, torch.Tensor, tuple[float, float]]:
    """Mean clipped surrogate and mean k3 KL over the samples (per token first, for token samples),
    and (ratios outside 1 ± clip_eps, ratios) counted over the tokens for token samples."""
    mask = new.mask
    if mask is not None:
        adv = adv.unsqueeze(-1)
    d = new.logp - old
    ratio = torch.exp(d)
    surrogate = torch.min(ratio * adv, ratio.clamp(1 - clip_eps, 1 + clip_eps) * adv)
    kl = torch.exp(-d) - 1 + d
    with torch.no_grad():
        outside = (ratio - 1).abs() > clip_eps
        clipped = (float((outside & mask.bool()).sum()), float(mask.sum())) if mask is not None \
            else (float(outside.sum()), float(outside.numel()))
    if mask is not None:
        m = mask.to(surrogate.dtype)
        tokens = m.sum(-1).clamp(min=1)
        surrogate, kl = (surrogate * m).sum(-1) / tokens, (kl * m).sum(-1) / tokens
    return surrogate.mean(), kl.mean(), clipped


def _backward(loss: torch.Tensor, name: str) -> None:
    """Accumulate the gradient of `loss`, refusing a non-finite loss before it can spread."""
    if not torch.isfinite(loss):
        raise NonFiniteError(metrics.ROLE_LOSS[name], float(loss.detach()))
    loss.backward()


def _step(net: nn.Module, optimizer: torch.optim.Optimizer, settings: PPOSettings, name: str) -> float:
    """One optimiser step on the accumulated gradient, clipped; a non-finite gradient stops it.
    The gradient's norm before clipping."""
    params = [p for p in net.parameters() if p.requires_grad]
    grad_norm = nn.utils.clip_grad_norm_(params, settings.max_grad_norm)
    if not torch.isfinite(grad_norm):
        raise NonFiniteError(metrics.ROLE_GRAD_NORM[name], float(grad_norm))
    optimiser_step(optimizer)
    return float(grad_norm)
