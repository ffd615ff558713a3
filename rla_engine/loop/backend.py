"""The seam between the SPEC's loop (trainer.py, written once) and what learns: the embedded
networks (loop/embedded.py) or language models (rla_engine/llm/backend.py).

The loop works on padded step tensors only: which steps happened, their outcomes, verdicts and
oracle labels ([B, T] and [B, T, m]), and decides from them every reward, advantage, selection
and measure. A backend produces those tensors (roll-outs and verdicts) and consumes the loop's
selections (which steps train the policy, which verdicts train the judge, with what advantage);
what a step *is* (an action index, a span of sampled tokens) never leaves the backend.
"""
from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ..config import Config
from ..tasks.base import Task
from .ppo import PPOStats


# the metadata of a field holding one entry per episode (a tensor or a list of B entries, in
# episode order): what Episodes.part slices; subclasses mark theirs with it too
PER_EPISODE = {"per_episode": True}


@dataclass
class Episodes:
    """Padded trajectories of G groups × R rollouts (B = G·R episodes, T steps at most)."""
    groups: int
    rollouts: int
    mask: torch.Tensor = field(metadata=PER_EPISODE)       # [B, T] bool: step t really happened
    oracle: torch.Tensor = field(metadata=PER_EPISODE)     # [B, T] int8: +1 / −1, 0 where no label (diagnostics)
    success: torch.Tensor = field(metadata=PER_EPISODE)    # [B] bool

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

    def graded(self) -> torch.Tensor:
        """[B] float in [0, 1]: how much of each episode's task was done (1 or 0 by its success; a
        family that grades, such as coding's share of ground-truth tests passed, says more)."""
        return self.success.float()

    def group_acc(self) -> torch.Tensor:
        return self.success.view(self.groups, self.rollouts).float().mean(1)

    def part(self, g0: int, g1: int) -> Episodes:
        """Groups g0 ≤ g < g1 (every per_episode field sliced, the step axis kept), so that
        workers can share a batch."""
        lo, hi = g0 * self.rollouts, g1 * self.rollouts
        cut = {f.name: getattr(self, f.name)[lo:hi] for f in dataclasses.fields(self) if f.metadata.get("per_episode")}
        return dataclasses.replace(self, groups=g1 - g0, **cut)


@dataclass
class Judgement:
    """The judge's m verdicts per real step [B, T, m] int8 (0 on padding and when unreadable);
    a backend keeps beside them what it needs to train on them (inputs, sampled texts)."""
    verdicts: torch.Tensor


@dataclass
class VariantRequest:
    slot: int
    root: Task               # the slot's root task: a rewrite must stay the same task
    task: Task               # the slot's current task
    direction: str           # harder | easier
    acc: float
    critic: dict


@dataclass
class Proposal:
    """The environment model's answer to one request: the first valid variant (or None), and the
    answers it gave before it, each with why it was invalid."""
    task: Task | None
    invalid: list[tuple[str, str]]     # (raw answer, reason)


class Backend(abc.ABC):
    """Policy, judge and environment model of one run. The run's torch generator is given at
    construction; every sampling and shuffling draws from it in the loop's order, so a run is
    reproducible and a resumed one continues exactly."""

    @abc.abstractmethod
    def collect(self, tasks: list[Task], rollouts: int, *, greedy: bool = False) -> Episodes:
        """Roll out every task `rollouts` times (greedy: the policy's most likely actions)."""

    @abc.abstractmethod
    def then(self, first: Episodes, more: Episodes) -> Episodes:
        """`first` followed by `more` (same rollouts per group) — DAPO's extra draws."""

    @abc.abstractmethod
    def judge(self, ep: Episodes, m: int) -> Judgement:
        """m verdicts for every real step."""

    def oracle_judgement(self, ep: Episodes, verdicts: torch.Tensor) -> Judgement:
        """A judgement whose verdicts [B, T, m] are given, not judged (judge.source = oracle, a
        diagnostic): carries what the critic and the console read beside them."""
        return Judgement(verdicts)

    @abc.abstractmethod
    def update_policy(self, ep: Episodes, steps: torch.Tensor, advantages: torch.Tensor,
                      visited: torch.Tensor | None) -> PPOStats:
        """PPO on the selected steps: `steps` [B, T] bool, `advantages` [N] for its True cells in
        row-major order. `visited` [B, T] marks the steps of the entropy bonus (None: no bonus)."""

    @abc.abstractmethod
    def update_judge(self, ep: Episodes, judgement: Judgement, index: tuple[torch.Tensor, ...],
                     advantages: torch.Tensor) -> PPOStats:
        """PPO on the selected verdicts: `index` = (b, t, j) of each, `advantages` [N]."""

    @abc.abstractmethod
    def critic_steps(self, ep: Episodes, judgement: Judgement, b: torch.Tensor,
                     t: torch.Tensor) -> list[tuple[int, Any]]:
        """(step index, what the family's critic reads about it) for the steps (b, t)."""

    def critic_notes(self, ep: Episodes, judgement: Judgement, b: torch.Tensor, t: torch.Tensor) -> list[dict]:
        """The high-risk steps (b, t) in words, with the judge's reasoning, for a critic that
        carries text (a language-model environment model reads it); none by default."""
        return []

    def text_measures(self, ep: Episodes, judgement: Judgement) -> dict[str, float]:
        """Measures of this iteration's sampled texts (metrics.TEXT_HEALTH: the policy's answers,
        the judge's unreadable verdicts), for a backend whose roles write text; none by default."""
        return {}

    @abc.abstractmethod
    def propose(self, requests: list[VariantRequest], tries: int, rng: np.random.Generator) -> list[Proposal]:
        """The environment model's variants, one proposal per request, in order."""

    @abc.abstractmethod
    def episode_events(self, ep: Episodes, judgement: Judgement, tasks: list[Task], slots: list[int],
                       proposals: list[tuple[VariantRequest, Proposal]],
                       decisions: list) -> list[tuple[str, dict]]:
        """What the console shows of this iteration (the episode viewer, samples); `decisions` are
        this iteration's pool.Decision of the candidates."""

    @abc.abstractmethod
    def join_judgements(self, parts: list[Judgement], offsets: list[int]) -> Judgement:
        """One judgement of a batch from those of its parts (Episodes.part, in order), the part k
        starting at episode offsets[k]: how an executor puts its judge workers' answers together."""

    def travelling(self, judgement: Judgement) -> Judgement:
        """What of a worker's judgement crosses to the driver (what the driver can rebuild stays)."""
        return judgement

    @abc.abstractmethod
    def weights(self) -> dict:
        """What a worker's replica needs to act as this backend: the learners' weights, no optimiser."""

    @abc.abstractmethod
    def load_weights(self, weights: dict) -> None: ...

    @abc.abstractmethod
    def state_dict(self) -> dict:
        """Learners and optimisers, for a checkpoint."""

    @abc.abstractmethod
    def load_state_dict(self, state: dict) -> None: ...


def procedural_proposals(family, requests: list[VariantRequest], tries: int,
                         rng: np.random.Generator) -> list[Proposal]:
    """The family's own environment model: up to `tries` mutations each, the first valid one kept.
    A family whose variants are costly to make (textworld's games) makes every first try at once
    (`mutate_many`)."""
    out = []
    many = getattr(family, "mutate_many", None)
    firsts = many([(r.task, r.direction, r.critic) for r in requests], rng) if many and tries else None
    for i, r in enumerate(requests):
        invalid: list[tuple[str, str]] = []
        for k in range(tries):
            variant = firsts[i] if firsts is not None and k == 0 else family.mutate(r.task, r.direction, r.critic, rng)
            reason = family.validate(variant)
            if reason is None:
                out.append(Proposal(variant, invalid))
                break
            invalid.append(("", reason))
        else:
            out.append(Proposal(None, invalid))
    return out


def connect_games(cfg: Config, family) -> None:
    """A family that plays generated games (textworld, textworld_commands) keeps them as the run's
    settings say; the folder is the database's (the engine names it before the run starts,
    paths.games_root)."""
    if hasattr(family, "use_games"):
        t = cfg.textworld
        family.use_games(None, t.cache_mb * 2**20, t.workers, t.challenge)
