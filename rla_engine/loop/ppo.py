"""PPO-clip with a k3 KL penalty to the pre-update network (SPEC §3), shared by policy and judge."""
from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Callable

import torch
from torch import nn


class NonFiniteError(RuntimeError):
    """A loss or gradient went NaN/inf; raised before the optimiser step can spread it."""

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
    max_grad_norm: float = 1.0
    micro_batch_size: int = 0     # > 0: gradients accumulated over micro-batches of this many samples
    # log π_old of the first minibatch from its own forward instead of a separate no-grad pass: one
    # forward fewer per sample for a language model. The embedded networks keep the separate pass
    # (it costs them little, and their float rounding, hence the pinned quickstart metrics, stays)
    reuse_first_pass: bool = False


@dataclass
class PPOStats:
    loss: float = 0.0
    kl: float = 0.0
    samples: int = 0


# `log_prob(idx)` gives either one log-probability per sample [n] (an action, a verdict), or, for
# a language model, the log-probabilities of each sample's tokens with their mask ([n, L], [n, L],
# L the same for every call of one update).
LogProbs = torch.Tensor | tuple[torch.Tensor, torch.Tensor]


def ppo_update(net: nn.Module, optimizer: torch.optim.Optimizer, log_prob: Callable[[torch.Tensor], LogProbs],
               advantages: torch.Tensor, settings: PPOSettings, generator: torch.Generator,
               name: str, entropy: Callable[[], torch.Tensor] | None = None) -> PPOStats:
    """PPO-clip + k3 KL (SPEC §3). `log π_old` is the pre-update policy's, taken once before the first
    optimiser step (a no-grad pass; with `reuse_first_pass`, the first minibatch's own forward
    and a no-grad pass for the rest), and is also the KL reference. Token-level samples: ratio
    and KL per token, averaged over the sample's tokens, then over samples. `entropy()` (with
    settings.entropy_coef > 0) gives per-state entropies over every visited state; each
    minibatch step subtracts entropy_coef × their mean, and with no samples each epoch still
    makes one entropy-only step."""
    n = advantages.shape[0]
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
    old = _old_log_probs(log_prob, perm[settings.minibatch_size:] if reuse else torch.arange(n, device=perm.device),
                         n, settings)
    total_loss = total_kl = 0.0
    batches = 0
    for epoch in range(settings.epochs):
        if epoch:
            perm = torch.randperm(n, generator=generator, device=generator.device).to(advantages.device)
        for idx in perm.split(settings.minibatch_size):
            optimizer.zero_grad(set_to_none=True)
            micros = idx.split(settings.micro_batch_size) if settings.micro_batch_size else (idx,)
            for k, micro in enumerate(micros):
                new = log_prob(micro)
                if reuse and batches == 0:    # no step taken yet: log π_old is this very pass
                    old = _keep(old, micro, new, n)
                assert old is not None        # every row is set by the end of the first minibatch
                surrogate, kl = _terms(new, old[micro], advantages[micro], settings.clip_eps)
                loss = (-surrogate + settings.kl_beta * kl) * (len(micro) / len(idx))
                if bonus is not None and k == len(micros) - 1:
                    loss = loss - settings.entropy_coef * bonus().mean()
                _backward(loss, name)
                total_loss += float(loss.detach())
                total_kl += float(kl.detach()) * (len(micro) / len(idx))
            _step(net, optimizer, settings, name)
            batches += 1
    stats = PPOStats(total_loss / batches, total_kl / batches, n)
    for label, v in ((f"loss/{name}", stats.loss), ("loss/kl", stats.kl)):
        if not math.isfinite(v):
            raise NonFiniteError(label, v)
    return stats


def _old_log_probs(log_prob: Callable[[torch.Tensor], LogProbs], rows: torch.Tensor, n: int,
                   settings: PPOSettings) -> torch.Tensor | None:
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
        for idx in rows.split(chunk):
            old = _keep(old, idx, log_prob(idx), n)
    return old


def _keep(old: torch.Tensor | None, idx: torch.Tensor, new: LogProbs, n: int) -> torch.Tensor:
    """`old` (made on first use, one row per sample) with the rows `idx` set to `new`, detached."""
    values = (new[0] if isinstance(new, tuple) else new).detach()
    if old is None:
        old = values.new_zeros((n, *values.shape[1:]))
    old[idx] = values
    return old


def _terms(new: LogProbs, old: torch.Tensor, adv: torch.Tensor, clip_eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean clipped surrogate and mean k3 KL over the samples (per token first, for token samples)."""
    mask = None
    if isinstance(new, tuple):
        new, mask = new
        adv = adv.unsqueeze(-1)
    d = new - old
    ratio = torch.exp(d)
    surrogate = torch.min(ratio * adv, ratio.clamp(1 - clip_eps, 1 + clip_eps) * adv)
    kl = torch.exp(-d) - 1 + d
    if mask is not None:
        m = mask.to(surrogate.dtype)
        tokens = m.sum(-1).clamp(min=1)
        surrogate, kl = (surrogate * m).sum(-1) / tokens, (kl * m).sum(-1) / tokens
    return surrogate.mean(), kl.mean()


def _backward(loss: torch.Tensor, name: str) -> None:
    """Accumulate the gradient of `loss`, refusing a non-finite loss before it can spread."""
    if not torch.isfinite(loss):
        raise NonFiniteError(f"loss/{name}", float(loss.detach()))
    loss.backward()


def _step(net: nn.Module, optimizer: torch.optim.Optimizer, settings: PPOSettings, name: str) -> None:
    """One optimiser step on the accumulated gradient, clipped; a non-finite gradient stops it."""
    params = [p for p in net.parameters() if p.requires_grad]
    grad_norm = nn.utils.clip_grad_norm_(params, settings.max_grad_norm)
    if not torch.isfinite(grad_norm):
        raise NonFiniteError(f"gradient norm of the {name}", float(grad_norm))
    optimizer.step()
