"""The arms of an ablation and the plan of its runs.

Each arm names only the components it changes — λ, judge training, how tasks are chosen, the μ
gate, the critic — and sets them explicitly, so an arm means the same whatever the base
configuration says about them. Every other value, and the environment-step budget, is shared.
"""
from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..config import PROFILE_KEY, Config, set_value, validate
from ..errors import InputError

# run.iterations for an arm: the budget, not an iteration count, ends its run
NO_ITERATION_LIMIT = 10_000_000

_FROZEN_OUTCOME_ONLY = (("policy.lam", 0.0), ("judge.train", False))
ARMS: dict[str, tuple[tuple[str, object], ...]] = {
    "outcome": (*_FROZEN_OUTCOME_ONLY, ("env.strategy", "fixed")),
    "step": (("judge.train", False), ("env.strategy", "fixed")),
    "step+judge": (("judge.train", True), ("env.strategy", "fixed")),
    "full": (("judge.train", True), ("env.strategy", "rlanything")),
    "full (paper form)": (("judge.train", True), ("env.strategy", "rlanything"), (PROFILE_KEY, "paper")),
    "outcome+env": (*_FROZEN_OUTCOME_ONLY, ("env.strategy", "rlanything")),
    "full+gate": (("judge.train", True), ("env.strategy", "rlanything"), ("policy.mu_gate", True)),
    "full+random-critic": (("judge.train", True), ("env.strategy", "rlanything"), ("env.critic", "random")),
    "plr": (*_FROZEN_OUTCOME_ONLY, ("env.strategy", "plr")),
    "dapo": (*_FROZEN_OUTCOME_ONLY, ("env.strategy", "dapo")),
    "uniform": (*_FROZEN_OUTCOME_ONLY, ("env.strategy", "uniform")),
    # diagnostics, not learners: the family's oracle labels replace the judge (judge.oracle_noise of the base)
    "full+oracle-judge": (("judge.source", "oracle"), ("env.strategy", "rlanything")),
    "step+oracle-judge": (("judge.source", "oracle"), ("env.strategy", "fixed")),
}
DIAGNOSTIC_ARMS = ("full+oracle-judge", "step+oracle-judge")
# what each arm asks, in words, for the console and help texts; the switches above are what it does
ARM_DESCRIPTIONS: dict[str, str] = {
    "outcome": "Outcome reward only (λ = 0), judge frozen, fixed task pool: the baseline.",
    "step": "Step rewards from a frozen judge (its initial weights, the base config's λ), fixed task pool.",
    "step+judge": "Step rewards from a judge trained by consistency feedback, fixed task pool.",
    "full": "RLAnything: step rewards, a trained judge and the adaptive task pool (the environment model "
            "rewrites tasks that are too easy or too hard), with the base's judge — the embedded presets' is "
            "the repaired one (judge.profile = repaired).",
    "full (paper form)": "full with the paper's exact judge (judge.profile = paper), whatever the base's: the "
                         "form the presets ran before they took the repaired one (docs/RESULTS.md).",
    "outcome+env": "Outcome reward only (λ = 0), judge frozen, adaptive task pool: what adapting the "
                   "environment gives on its own.",
    "full+gate": "full with the μ gate: λ scaled down while the judge's μ says its verdicts carry no signal.",
    "full+random-critic": "full, but the environment model's critic summarises randomly chosen steps instead "
                          "of the steps the judge flagged.",
    "plr": "Prioritized Level Replay over the pool (outcome reward only, judge frozen).",
    "dapo": "DAPO's dynamic sampling: draw groups until a batch of mixed ones is found (outcome reward only, "
            "judge frozen).",
    "uniform": "Fresh tasks of difficulty U[0, 1] every iteration (outcome reward only, judge frozen).",
    "full+oracle-judge": "DIAGNOSTIC, not a learner: full with the family's oracle step labels in place of the "
                         "judge's verdicts (flipped at random with the base's judge.oracle_noise) — the ceiling "
                         "a perfect judge would give.",
    "step+oracle-judge": "DIAGNOSTIC, not a learner: step rewards from the family's oracle labels in place of "
                         "the judge, fixed task pool.",
}
# every arm starts from the paper's form of the switches an arm may leave unnamed, so an arm means
# the same whatever the base says about them (the arithmetic preset turns the μ gate on for its
# own runs; its "full" arm must still be the paper's loop)
_PAPER_FORM = (("policy.mu_gate", False), ("env.critic", "judge"), ("judge.source", "learned"))
# arms that use the judge's verdicts in the policy reward need a λ > 0 in the base config
STEP_ARMS = ("step", "step+judge", "full", "full (paper form)", "full+gate", "full+random-critic", *DIAGNOSTIC_ARMS)
GROUP_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,59}\Z")


@dataclass(frozen=True)
class AblationSpec:
    """What a user chooses for an ablation besides the shared configuration."""
    seeds: list[int]
    budget: int
    arms: list[str]
    jobs: int = 1


@dataclass(frozen=True)
class PlannedRun:
    run_id: str
    arm: str
    seed: int
    config: Config

    @property
    def name(self) -> str:
        return f"{self.arm} · seed {self.seed}"


def arm_of(run: Mapping[str, Any]) -> str:
    """The arm of a stored run: `rla ablate` names a run as PlannedRun.name does, "<arm> · seed <s>"."""
    return str(run.get("name") or run["id"]).split(" · ")[0]


def parse_arms(text: str | None) -> list[str]:
    if text is None:       # every learning arm; a diagnostic one only when named
        return [a for a in ARMS if a not in DIAGNOSTIC_ARMS]
    arms = [a.strip() for a in text.split(",") if a.strip()]
    unknown = [a for a in arms if a not in ARMS]
    if unknown or not arms:
        raise InputError(f"--arms {text!r}: unknown arm {', '.join(unknown) or '(none given)'}; "
                         f"arms are {', '.join(ARMS)}")
    if len(set(arms)) != len(arms):
        raise InputError(f"--arms {text!r}: an arm is named twice")
    return arms


def parse_seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise InputError(f"--seeds {text!r}: must be integers separated by commas, e.g. 0,1,2") from None
    if not seeds or len(set(seeds)) != len(seeds) or any(not 0 <= s <= 2**31 - 1 for s in seeds):
        raise InputError(f"--seeds {text!r}: must be distinct integers ≥ 0 and ≤ {2**31 - 1}, e.g. 0,1,2")
    return seeds


def check_group(group: str) -> str:
    if not GROUP_RE.match(group):
        shown = repr(group) if len(group) <= 80 else f"{group[:80]!r}… ({len(group)} characters)"
        raise InputError(f"--group {shown}: letters, digits, '_' or '-', at most 60, starting with a "
                         "letter or digit")
    return group


def arm_config(base: Config, arm: str, seed: int, budget: int) -> Config:
    cfg = copy.deepcopy(base)
    for key, value in (*_PAPER_FORM, *ARMS[arm]):
        set_value(cfg, key, value)
    if cfg.judge.source == "learned":     # the noise of an oracle a learned arm does not use: not stored
        set_value(cfg, "judge.oracle_noise", 0.0)
    set_value(cfg, "run.seed", seed)
    set_value(cfg, "run.env_step_budget", budget)
    set_value(cfg, "run.iterations", NO_ITERATION_LIMIT)
    return validate(cfg)


def plan(base: Config, group: str, arms: list[str], seeds: list[int], budget: int) -> list[PlannedRun]:
    """Every (arm, seed) run of the group, seed-major so that a partial group compares arms."""
    if budget < 1:
        raise InputError(f"--budget {budget}: must be ≥ 1 environment step")
    if base.policy.lam == 0 and any(a in STEP_ARMS for a in arms):
        raise InputError("policy.lam = 0 in the base config: the arms "
                         f"{', '.join(a for a in arms if a in STEP_ARMS)} need λ > 0 (outcome-only is its own arm)")
    return [PlannedRun(run_id_of(group, arm, seed), arm, seed, arm_config(base, arm, seed, budget))
            for seed in seeds for arm in arms]


def run_id_of(group: str, arm: str, seed: int) -> str:
    """`<group>.<arm>.s<seed>`, the arm's '+', spaces and brackets as '_' (full+gate: full_gate)."""
    return f"{group}.{re.sub(r'[^A-Za-z0-9-]+', '_', arm).strip('_')}.s{seed}"
