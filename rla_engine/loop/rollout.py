"""Batched rollouts: every task × rollout of an iteration stepped together, one tensor op per step."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..models.networks import PolicyNet
from ..tasks.base import Family, Task


@dataclass
class Rollout:
    """Padded trajectories of G groups × R rollouts (B = G·R episodes, T steps at most)."""
    groups: int
    rollouts: int
    obs: torch.Tensor        # [B, T+1, D] observation before step t is obs[:, t], after it obs[:, t+1]
    actions: torch.Tensor    # [B, T] long
    mask: torch.Tensor       # [B, T] bool: step t really happened
    oracle: torch.Tensor     # [B, T] int8 — diagnostics only, never shown to a learner
    info: torch.Tensor       # [B, T, I] int32 — for the environment model's critic
    success: torch.Tensor    # [B] bool

    @property
    def lengths(self) -> torch.Tensor:
        return self.mask.sum(1)

    @property
    def outcome(self) -> torch.Tensor:
        """O ∈ {+1, −1} per episode (float)."""
        return self.success.float() * 2 - 1

    @property
    def env_steps(self) -> int:
        return int(self.mask.sum())

    def group_acc(self) -> torch.Tensor:
        return self.success.view(self.groups, self.rollouts).float().mean(1)

    def then(self, more: Rollout) -> Rollout:
        """This batch followed by `more` (same rollouts per group), padded to the longer one."""
        t = max(self.actions.shape[1], more.actions.shape[1])

        def pad(x: torch.Tensor, steps: int) -> torch.Tensor:
            extra = steps - x.shape[1]
            if extra == 0:
                return x
            return torch.cat([x, x.new_zeros((x.shape[0], extra, *x.shape[2:]))], 1)

        both = lambda a, b, steps=t: torch.cat([pad(a, steps), pad(b, steps)])   # noqa: E731
        return Rollout(self.groups + more.groups, self.rollouts, both(self.obs, more.obs, t + 1),
                       both(self.actions, more.actions), both(self.mask, more.mask),
                       both(self.oracle, more.oracle), both(self.info, more.info),
                       torch.cat([self.success, more.success]))


def sample_actions(logits: torch.Tensor, temperature: float, generator: torch.Generator | None) -> torch.Tensor:
    """Gumbel-max sampling from softmax(logits / T) with the run's own generator (reproducible)."""
    u = torch.rand(logits.shape, generator=generator, device=logits.device).clamp_(1e-12, 1.0)
    return torch.argmax(logits / temperature - torch.log(-torch.log(u)), dim=-1)


@torch.inference_mode()
def collect(policy: PolicyNet, family: Family, tasks: list[Task], rollouts: int, *, temperature: float,
            generator: torch.Generator | None, device: torch.device, greedy: bool = False) -> Rollout:
    env = family.make_env(tasks, rollouts, device)
    obs = env.reset()
    obs_seq, actions, masks, oracles, infos = [obs], [], [], [], []
    for _ in range(env.max_steps):
        active = env.active.clone()
        if not bool(active.any()):
            break
        logits = policy(obs)
        act = logits.argmax(-1) if greedy else sample_actions(logits, temperature, generator)
        obs, oracle, info = env.step(act)
        obs_seq.append(obs)
        actions.append(act)
        masks.append(active)
        oracles.append(oracle)
        infos.append(info)
    if not actions:
        raise RuntimeError(f"{family.name}: every episode was over before its first step")
    return Rollout(len(tasks), rollouts, torch.stack(obs_seq, 1), torch.stack(actions, 1),
                   torch.stack(masks, 1), torch.stack(oracles, 1), torch.stack(infos, 1),
                   env.success.clone())
