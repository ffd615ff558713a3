"""Training health (issue 21) of one iteration, per trained role, from its update's PPOStats; the
keys' definitions are the comment above them in metrics.py."""
from __future__ import annotations

import math

from .. import metrics
from .ppo import PPOStats

_UPDATE_KEYS = {
    "policy": {"clip_fraction": metrics.POLICY_CLIP_FRACTION, "kl": metrics.POLICY_APPROX_KL,
               "entropy": metrics.POLICY_ENTROPY, "grad_norm": metrics.POLICY_GRAD_NORM},
    "judge": {"clip_fraction": metrics.JUDGE_CLIP_FRACTION, "kl": metrics.JUDGE_APPROX_KL,
              "entropy": metrics.JUDGE_ENTROPY, "grad_norm": metrics.JUDGE_GRAD_NORM},
}
_TRAINED_SHARE = {"policy": metrics.POLICY_TRAINED_SHARE, "judge": metrics.JUDGE_TRAINED_SHARE}


def role_health(role: str, stats: PPOStats, produced: int) -> dict[str, float]:
    """The health keys of `role` ("policy" or "judge"): its update's measures when it trained on
    samples (no update, no measures: undefined, not 0), and its trained share (samples trained on
    of the `produced` ones) whenever it produced any. A non-finite value is left out (SPEC §7)."""
    values: dict[str, float] = {}
    if stats.samples:
        values = {key: getattr(stats, field) for field, key in _UPDATE_KEYS[role].items()}
    if produced:
        values[_TRAINED_SHARE[role]] = stats.samples / produced
    return {k: float(v) for k, v in values.items() if math.isfinite(v)}
