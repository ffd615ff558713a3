"""The μ gate (not in the paper): step rewards enter the policy reward only as far as the
judge's verdicts carry signal. Theorem 1 says they do iff μ = p₊ + p₋ > 1, so the weight λ is
scaled by clip((μ̂ − 1)/(μ* − 1), 0, 1), μ̂ an exponential moving average of each iteration's μ.
μ̂ starts at 1: an untrained judge has to earn its weight."""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class MuGate:
    target: float = 1.5
    alpha: float = 0.1
    mu_hat: float = 1.0

    def update(self, mu: float) -> None:
        """Fold in this iteration's μ; an undefined μ (one outcome class missing) changes nothing."""
        if math.isfinite(mu):
            self.mu_hat = (1.0 - self.alpha) * self.mu_hat + self.alpha * mu

    def scale(self) -> float:
        return min(max((self.mu_hat - 1.0) / (self.target - 1.0), 0.0), 1.0)
