"""Batched rollouts: every task × rollout of an iteration stepped together, one tensor op per step."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..models.networks import PolicyNet
from ..tasks.base import Family, Task
from .backend import PER_EPISODE, Episodes


@dataclass
class Rollout(Episodes):
    """The embedded backend's episodes: observation vectors and action indices beside the steps."""
    obs: torch.Tensor = field(metadata=PER_EPISODE)        # [B, T+1, D] before step t: obs[:, t]; after it: obs[:, t+1]
    actions: torch.Tensor = field(metadata=PER_EPISODE)    # [B, T] long
    info: torch.Tensor = field(metadata=PER_EPISODE)       # [B, T, I] int32 — for the environment model's critic

    def then(self, more: Rollout) -> Rollout:
        """This batch followed by `more` (same rollouts per group), padded to the longer one."""
        t = max(self.actions.shape[1], more.actions.shape[1])

        def pad(x: torch.Tensor, steps: int) -> torch.Tensor:
            extra = steps - x.shape[1]
            if extra == 0:
                return x
            return torch.cat([x, x.new_zeros((x.shape[0], extra, *x.shape[2:]))], 1)

        both = lambda a, b, steps=t: torch.cat([pad(a, steps), pad(b, steps)])   # noqa: E731
        return Rollout(self.groups + more.groups, self.rollouts, mask=both(self.mask, more.mask),
                       oracle=both(self.oracle, more.oracle), success=torch.cat([self.success, more.success]),
                       obs=both(self.obs, more.obs, t + 1), actions=both(self.actions, more.actions),
                       info=both(self.info, more.info))


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
    return Rollout(len(tasks), rollouts, mask=torch.stack(masks, 1), oracle=torch.stack(oracles, 1),
                   success=env.success.clone(), obs=torch.stack(obs_seq, 1), actions=torch.stack(actions, 1),
                   info=torch.stack(infos, 1))
