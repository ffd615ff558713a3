"""Training health of one iteration, per trained role, from its update's PPOStats; the
keys' definitions are the comment above them in metrics.py."""
from __future__ import annotations

import math

from .. import metrics
from .ppo import PPOStats

# PPOStats' fields in the order of metrics.POLICY_HEALTH / JUDGE_HEALTH, whose last is the trained share
_FIELDS = ("clip_fraction", "kl", "entropy", "grad_norm")
_KEYS = {"policy": metrics.POLICY_HEALTH, "judge": metrics.JUDGE_HEALTH}


def role_health(role: str, stats: PPOStats, produced: int) -> dict[str, float]:
    """The health keys of `role` ("policy" or "judge"): its update's measures when it trained on
    samples (no update, no measures: undefined, not 0), and its trained share (samples trained on
    of the `produced` ones) whenever it produced any. A non-finite value is left out (SPEC §7)."""
    *update, trained_share = _KEYS[role]
    values: dict[str, float] = {}
    if stats.samples:
        values = {key: getattr(stats, field) for key, field in zip(update, _FIELDS, strict=True)}
    if produced:
        values[trained_share] = stats.samples / produced
    return {k: float(v) for k, v in values.items() if math.isfinite(v)}
