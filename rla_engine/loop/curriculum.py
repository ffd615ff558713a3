"""Task samplers the ablation compares RLAnything's adaptive pool against (`env.strategy`).

- plr: Prioritized Level Replay (Jiang et al., 2021) over the pool. A slot's score is its
  learnability p̂(1 − p̂) at its last measured accuracy p̂; slots are drawn with
  P = (1 − ρ)·P_score + ρ·P_stale, P_score ∝ (1/rank)^(1/β), P_stale ∝ iterations since drawn.
  A slot never measured scores the most (0.25), so every slot is tried.
- dapo: dynamic sampling (Yu et al., 2025): draw more groups until enough are mixed; see
  `enough_mixed`. The trainer rolls out, this module only decides.
- uniform: every drawn slot gets a fresh task of difficulty U[0, 1] (`uniform_difficulties`).
"""
from __future__ import annotations

import numpy as np

UNSEEN_SCORE = 0.25      # the largest p(1 − p): a slot never measured is worth measuring


def learnability(acc: float | None) -> float:
    return UNSEEN_SCORE if acc is None else acc * (1.0 - acc)


def plr_weights(scores: list[float], last_drawn: list[int | None], iteration: int,
                temperature: float, staleness: float, rng: np.random.Generator) -> np.ndarray:
    """Replay probabilities of the slots (sum 1). Ties in score are ranked in random order, so
    equal slots are equally likely over many draws."""
    n = len(scores)
    order = np.lexsort((rng.permutation(n), -np.asarray(scores, dtype=float)))
    rank = np.empty(n)
    rank[order] = np.arange(1, n + 1)
    by_score = (1.0 / rank) ** (1.0 / temperature)
    by_score /= by_score.sum()
    since = np.array([iteration - (d if d is not None else 0) for d in last_drawn], dtype=float)
    since = np.maximum(since, 0.0)
    by_age = since / since.sum() if since.sum() > 0 else np.full(n, 1.0 / n)
    p = (1.0 - staleness) * by_score + staleness * by_age
    return p / p.sum()


def plr_sample(slots: list[int], scores: list[float], last_drawn: list[int | None], k: int, iteration: int,
               temperature: float, staleness: float, rng: np.random.Generator) -> list[int]:
    """k distinct slots, each a PLR draw over the slots not drawn yet this iteration (ranks and
    staleness recomputed among them) — PLR's workers each replaying a level, without two on one.
    Drawing all k from the first distribution instead would leave every draw after the first to
    the staleness term, since rank weights at β = 0.1 fall by 2¹⁰ from rank 1 to rank 2."""
    left = list(range(len(slots)))
    out: list[int] = []
    for _ in range(min(k, len(slots))):
        p = plr_weights([scores[i] for i in left], [last_drawn[i] for i in left], iteration,
                        temperature, staleness, rng)
        out.append(slots[left.pop(int(rng.choice(len(left), p=p)))])
    return sorted(out)


def mixed(acc: list[float]) -> list[bool]:
    """A group teaches the policy only when its outcomes differ: 0 < acc < 1."""
    return [0.0 < a < 1.0 for a in acc]


def enough_mixed(acc: list[float], wanted: int) -> bool:
    return sum(mixed(acc)) >= wanted


def first_mixed(acc: list[float], wanted: int) -> list[bool]:
    """DAPO keeps a full batch of mixed groups, no more: the first `wanted` in rollout order."""
    out, taken = [], 0
    for m in mixed(acc):
        out.append(m and taken < wanted)
        taken += m
    return out


def uniform_difficulties(k: int, rng: np.random.Generator) -> list[float]:
    return [float(d) for d in rng.uniform(0.0, 1.0, size=k)]
