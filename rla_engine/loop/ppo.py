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


@dataclass
class PPOStats:
    loss: float = 0.0
    kl: float = 0.0
    samples: int = 0


def ppo_update(net: nn.Module, optimizer: torch.optim.Optimizer, log_prob: Callable[[torch.Tensor], torch.Tensor],
               advantages: torch.Tensor, settings: PPOSettings, generator: torch.Generator,
               name: str, entropy: Callable[[], torch.Tensor] | None = None) -> PPOStats:
    """`log_prob(idx)` gives the current log-probabilities of samples idx; `log π_old` is taken once,
    before the first pass, and is also the KL reference. `entropy()` (with settings.entropy_coef > 0)
    gives per-state entropies over every visited state; each minibatch step subtracts
    entropy_coef × their mean, and with no samples each epoch still makes one entropy-only step."""
    n = advantages.shape[0]
    bonus = entropy if entropy is not None and settings.entropy_coef > 0 else None
    if n == 0:
        if bonus is not None:
            for _ in range(settings.epochs):
                _descend(net, optimizer, -settings.entropy_coef * bonus().mean(), settings, name)
        return PPOStats()
    with torch.no_grad():
        old = torch.cat([log_prob(idx) for idx in torch.arange(n, device=advantages.device)
                         .split(max(settings.minibatch_size, 4096))])
    total_loss = total_kl = 0.0
    batches = 0
    for _ in range(settings.epochs):
        perm = torch.randperm(n, generator=generator, device=generator.device).to(advantages.device)
        for idx in perm.split(settings.minibatch_size):
            new = log_prob(idx)
            d = new - old[idx]
            ratio = torch.exp(d)
            adv = advantages[idx]
            surrogate = torch.min(ratio * adv, ratio.clamp(1 - settings.clip_eps, 1 + settings.clip_eps) * adv)
            kl = (torch.exp(-d) - 1 + d).mean()
            loss = -surrogate.mean() + settings.kl_beta * kl
            if bonus is not None:
                loss = loss - settings.entropy_coef * bonus().mean()
            _descend(net, optimizer, loss, settings, name)
            total_loss += float(loss.detach())
            total_kl += float(kl.detach())
            batches += 1
    stats = PPOStats(total_loss / batches, total_kl / batches, n)
    for label, v in ((f"loss/{name}", stats.loss), ("loss/kl", stats.kl)):
        if not math.isfinite(v):
            raise NonFiniteError(label, v)
    return stats


def _descend(net: nn.Module, optimizer: torch.optim.Optimizer, loss: torch.Tensor, settings: PPOSettings,
             name: str) -> None:
    """One clipped optimiser step on `loss`, refusing to spread a non-finite loss or gradient."""
    if not torch.isfinite(loss):
        raise NonFiniteError(f"loss/{name}", float(loss.detach()))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    grad_norm = nn.utils.clip_grad_norm_(net.parameters(), settings.max_grad_norm)
    if not torch.isfinite(grad_norm):
        raise NonFiniteError(f"gradient norm of the {name}", float(grad_norm))
    optimizer.step()
