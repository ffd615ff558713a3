"""Embedded policy and judge networks (DESIGN §3): small MLPs, batched over every step."""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional


def _mlp(inp: int, hidden: int, out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inp, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                         nn.Linear(hidden, out))


class SlotScorer(nn.Module):
    """Logits of a family whose observation is one slot of `features` numbers per action (e.g.
    textworld_commands: a game's admissible commands): every slot scored by the same small network,
    so what is learnt of a command's features holds in whichever slot it comes. A slot whose first
    feature is 0 holds nothing and is never chosen."""
    EMPTY = -1e4

    def __init__(self, features: int, hidden: int):
        super().__init__()
        self.features = features
        self.net = _mlp(features, hidden, 1)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        slots = obs.unflatten(-1, (-1, self.features))
        logits = self.net(slots).squeeze(-1)
        return torch.where(slots[..., 0] > 0, logits, torch.full_like(logits, self.EMPTY))


class PolicyNet(nn.Module):
    """Observation -> action logits. Sampling and log-probs use logits / temperature."""

    def __init__(self, obs_dim: int, n_actions: int, hidden: int = 128, slot_features: int = 0):
        super().__init__()
        if slot_features:
            assert obs_dim == n_actions * slot_features, (obs_dim, n_actions, slot_features)
        self.net = SlotScorer(slot_features, hidden) if slot_features else _mlp(obs_dim, hidden, n_actions)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs)

    def log_prob(self, obs: torch.Tensor, actions: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
        return self.scores(obs, actions, temperature)[0]

    def scores(self, obs: torch.Tensor, actions: torch.Tensor,
               temperature: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
        """(log π(action), log π of every action) per row: the update's log-probability and the
        distribution its entropy is measured on, from one forward."""
        logp = functional.log_softmax(self.net(obs) / temperature, dim=-1)
        return logp.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1), logp

    def entropy(self, obs: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
        """Entropy of the sampling distribution softmax(logits / temperature), per row."""
        logp = functional.log_softmax(self.net(obs) / temperature, dim=-1)
        return -(logp.exp() * logp).sum(-1)


def judge_input(obs: torch.Tensor, next_obs: torch.Tensor, actions: torch.Tensor, n_actions: int) -> torch.Tensor:
    """Exactly what the policy saw before and after the step, and the action — nothing privileged."""
    return torch.cat([obs, next_obs, functional.one_hot(actions.long(), n_actions).to(obs.dtype)], dim=-1)


class JudgeNet(nn.Module):
    """A generative step judge: a Bernoulli over the verdict {+1, −1}, sampled m times per step."""

    def __init__(self, obs_dim: int, n_actions: int, hidden: int = 128):
        super().__init__()
        self.n_actions = n_actions
        self.in_dim = 2 * obs_dim + n_actions
        self.net = _mlp(self.in_dim, hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logit of verdict +1 for judge inputs x [..., in_dim]."""
        return self.net(x).squeeze(-1)

    def sample(self, x: torch.Tensor, m: int, temperature: float, generator: torch.Generator) -> torch.Tensor:
        """m verdicts per row in {+1, −1} (int8), shape [rows, m]."""
        p = torch.sigmoid(self.forward(x) / temperature)
        u = torch.rand((x.shape[0], m), generator=generator, device=x.device)
        return torch.where(u < p.unsqueeze(-1), 1, -1).to(torch.int8)

    def log_prob(self, x: torch.Tensor, verdicts: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
        """log P(verdict) under the sampling temperature; x [rows, in_dim], verdicts [rows] in {+1, −1}."""
        return self.scores(x, verdicts, temperature)[0]

    def scores(self, x: torch.Tensor, verdicts: torch.Tensor,
               temperature: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
        """(log P(verdict), the logit of +1) per row, from one forward: the logit gives the entropy."""
        logit = self.forward(x)
        return functional.logsigmoid(verdicts.to(x.dtype) * logit / temperature), logit
