"""Every metric key of SPEC §7, defined once. Events, the database, the CLI and the console's
plots all use these strings; nothing else spells a key."""
from __future__ import annotations

SUCCESS = "policy/success_rate"
REWARD = "policy/reward"
STEP_REWARD = "policy/step_reward"
EPISODE_LENGTH = "policy/episode_length"
EFFECTIVE_LAMBDA = "policy/effective_lambda"   # λ after the μ gate (stored only when the gate is on)

EVAL_SUCCESS = "eval/success_rate"
EVAL_TIER_PREFIX = "eval/success@"

OUTCOME_AGREEMENT = "rm/outcome_agreement"
PROCESS_AGREEMENT = "rm/process_agreement"
UNANIMITY = "rm/unanimity"
P_PLUS = "rm/p_plus"
P_MINUS = "rm/p_minus"
MU = "rm/mu"
PRECISION = "rm/precision"
PRECISION_BOUND = "rm/precision_bound"

POSITIVE_FRACTION = "env/positive_fraction"
DIFFICULTY_MEAN = "env/difficulty_mean"
DIFFICULTY_MIN = "env/difficulty_min"
DIFFICULTY_MAX = "env/difficulty_max"
ACCEPTED = "env/accepted"
REJECTED = "env/rejected"
PENDING = "env/pending"
IN_BAND = "env/in_band"
INVALID = "env/invalid"       # language-model environment models only: answers that failed validation

LOSS_POLICY = "loss/policy"
LOSS_JUDGE = "loss/judge"
LOSS_KL = "loss/kl"

ENV_STEPS = "perf/env_steps"
ITERATION_S = "perf/iteration_s"
ENV_STEPS_PER_S = "perf/env_steps_per_s"

TIMING_PREFIX = "perf/"   # never part of a determinism comparison


def eval_tier_key(d: float) -> str:
    """`eval/success@0.5` — tiers are printed with the shortest exact decimal."""
    return f"{EVAL_TIER_PREFIX}{float(d):g}"


def eval_set_key(name: str) -> str:
    """`eval/success@0.5` for a tier's set, `eval/success@<name>` for a named one."""
    return f"{EVAL_TIER_PREFIX}{name}"


def tier_of(key: str) -> float | None:
    """The tier of an eval key; None for other keys and for a named set's."""
    if not key.startswith(EVAL_TIER_PREFIX):
        return None
    try:
        return float(key[len(EVAL_TIER_PREFIX):])
    except ValueError:
        return None


ALL_FIXED = (SUCCESS, REWARD, STEP_REWARD, EPISODE_LENGTH, EVAL_SUCCESS, OUTCOME_AGREEMENT,
             PROCESS_AGREEMENT, UNANIMITY, P_PLUS, P_MINUS, MU, PRECISION, PRECISION_BOUND,
             POSITIVE_FRACTION, DIFFICULTY_MEAN, DIFFICULTY_MIN, DIFFICULTY_MAX, ACCEPTED, REJECTED,
             PENDING, IN_BAND, LOSS_POLICY, LOSS_JUDGE, LOSS_KL, ENV_STEPS, ITERATION_S, ENV_STEPS_PER_S)

