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
    max_grad_norm: float = 1.0


@dataclass
class PPOStats:
    loss: float = 0.0
    kl: float = 0.0
    samples: int = 0


def ppo_update(net: nn.Module, optimizer: torch.optim.Optimizer, log_prob: Callable[[torch.Tensor], torch.Tensor],
               advantages: torch.Tensor, settings: PPOSettings, generator: torch.Generator,
               name: str) -> PPOStats:
    """`log_prob(idx)` gives the current log-probabilities of samples idx; `log π_old` is taken once,
    before the first pass, and is also the KL reference."""
    n = advantages.shape[0]
    if n == 0:
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
            if not torch.isfinite(loss):
                raise NonFiniteError(f"loss/{name}", float(loss.detach()))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = nn.utils.clip_grad_norm_(net.parameters(), settings.max_grad_norm)
            if not torch.isfinite(grad_norm):
                raise NonFiniteError(f"gradient norm of the {name}", float(grad_norm))
            optimizer.step()
            total_loss += float(loss.detach())
            total_kl += float(kl.detach())
            batches += 1
    stats = PPOStats(total_loss / batches, total_kl / batches, n)
    for label, v in ((f"loss/{name}", stats.loss), ("loss/kl", stats.kl)):
        if not math.isfinite(v):
            raise NonFiniteError(label, v)
    return stats
