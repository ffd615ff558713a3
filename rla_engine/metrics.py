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
# how the judge errs, against the oracle's step labels it never sees
AGREEMENT_ON_SUCCESS = "rm/agreement_on_success"     # process agreement on steps of successful trajectories
AGREEMENT_ON_FAILURE = "rm/agreement_on_failure"     # … and of failed ones
OUTCOME_SHARE = "rm/outcome_share"                   # share of the verdicts' variance the outcome explains
OUTCOME_SHARE_GIVEN_ORACLE = "rm/outcome_share_given_oracle"   # … among steps of one oracle label
ERROR_CORRELATION = "rm/error_correlation"           # of adjacent steps' verdicts, less their label's mean

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
# seconds of each phase of the trainer's iteration (rollout, judge, rewards, updates, adaptation,
# eval, measures): where an iteration's time goes, for any stored run
PHASE_PREFIX = "perf/seconds@"

# Training health, per trained role (a frozen judge has none): an update's measures only on
# iterations where that role trained, its trained share whenever it produced samples.
# clip fraction: share of ratios (tokens, for a language model) outside 1 ± clip_eps, over every
# minibatch pass of the update; approx KL: the k3 estimate against the pre-update network, the mean
# over the update's minibatches (the policy's is loss/kl); entropy: the mean entropy of the trained
# samples' distributions (actions, verdicts; per token) under the pre-update network; grad norm:
# before clipping, the mean over the update's optimiser steps; trained share: samples trained on /
# samples the role produced this iteration (steps for the policy, step-verdicts for the judge).
POLICY_CLIP_FRACTION = "health/policy_clip_fraction"
POLICY_APPROX_KL = "health/policy_approx_kl"
POLICY_ENTROPY = "health/policy_entropy"
POLICY_GRAD_NORM = "health/policy_grad_norm"
POLICY_TRAINED_SHARE = "health/policy_trained_share"
JUDGE_CLIP_FRACTION = "health/judge_clip_fraction"
JUDGE_APPROX_KL = "health/judge_approx_kl"
JUDGE_ENTROPY = "health/judge_entropy"
JUDGE_GRAD_NORM = "health/judge_grad_norm"
JUDGE_TRAINED_SHARE = "health/judge_trained_share"
# a trained role's loss, update KL and gradient norm by role: the key a not_finite alert names
ROLE_LOSS = {"policy": LOSS_POLICY, "judge": LOSS_JUDGE}
ROLE_KL = {"policy": LOSS_KL, "judge": JUDGE_APPROX_KL}
ROLE_GRAD_NORM = {"policy": POLICY_GRAD_NORM, "judge": JUDGE_GRAD_NORM}
# language-model runs only: the policy's completions (one per turn, in tokens) of the iteration's
# roll-outs, and the share of the judge's samples (over every judged step) with no readable verdict
COMPLETION_LENGTH_MEAN = "health/completion_length_mean"
COMPLETION_LENGTH_MAX = "health/completion_length_max"
TRUNCATED_SHARE = "health/truncated_share"          # completions cut at max_new_tokens
JUDGE_UNREADABLE_SHARE = "health/judge_unreadable_share"

# The engine process and its device, sampled every few seconds (at the iteration that follows);
# a key whose source is missing (no CUDA, no NVIDIA management library) is simply absent.
# the coding setting (judge.kind = tests): the test generator's quality and the sandbox's executions
SYN_UT_ACC = "rm/syn_ut_acc"                  # generated tests every correct program passes (the official name)
PERFECT_UT_RATE = "rm/perfect_ut_rate"        # … that also every wrong program fails
TEST_PARSE_FAILURES = "rm/test_parse_failure_share"   # generated tests that could not be read
EXEC_SECONDS = "perf/exec_s"                  # seconds the sandbox ran programs this iteration
SANDBOX_ERRORS = "code/sandbox_errors"        # executions the sandbox itself failed (never scored as the policy's)
NO_PROGRAM = "code/no_program_share"          # the policy's answers without a ```python block (nothing ran)
EXEC_STATUS_PREFIX = "code/share@"            # share of this iteration's executions ending in each status
# every way an execution ends (rla_engine.sandbox.Status's values; a test keeps them equal)
EXEC_STATUSES = ("ok", "wrong_answer", "timeout", "runtime_error", "output_limit", "memory_limit", "sandbox_error")


def exec_status_key(status: str) -> str:
    return f"{EXEC_STATUS_PREFIX}{status}"


SYS_CPU_PERCENT = "sys/cpu_percent"          # of one core: 200 = two cores busy
SYS_RSS_MB = "sys/rss_mb"
SYS_GPU_ALLOCATED_MB = "sys/gpu_allocated_mb"
SYS_GPU_RESERVED_MB = "sys/gpu_reserved_mb"
SYS_GPU_PEAK_MB = "sys/gpu_peak_mb"
SYS_GPU_UTIL_PERCENT = "sys/gpu_util_percent"

TIMING_PREFIX = "perf/"
SYSTEM_PREFIX = "sys/"
HEALTH_PREFIX = "health/"
# measurements of the machine, not of the learning: never part of a determinism comparison
MACHINE_PREFIXES = (TIMING_PREFIX, SYSTEM_PREFIX)


def is_machine_key(key: str) -> bool:
    return key.startswith(MACHINE_PREFIXES)


def phase_key(phase: str) -> str:
    """`perf/seconds@judge`: the seconds an iteration spent in one phase."""
    return f"{PHASE_PREFIX}{phase}"


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


JUDGE_ERRORS = (AGREEMENT_ON_SUCCESS, AGREEMENT_ON_FAILURE, OUTCOME_SHARE, OUTCOME_SHARE_GIVEN_ORACLE,
                ERROR_CORRELATION)
POLICY_HEALTH = (POLICY_CLIP_FRACTION, POLICY_APPROX_KL, POLICY_ENTROPY, POLICY_GRAD_NORM, POLICY_TRAINED_SHARE)
JUDGE_HEALTH = (JUDGE_CLIP_FRACTION, JUDGE_APPROX_KL, JUDGE_ENTROPY, JUDGE_GRAD_NORM, JUDGE_TRAINED_SHARE)
TEXT_HEALTH = (COMPLETION_LENGTH_MEAN, COMPLETION_LENGTH_MAX, TRUNCATED_SHARE, JUDGE_UNREADABLE_SHARE)
UNIT_TESTS = (SYN_UT_ACC, PERFECT_UT_RATE, TEST_PARSE_FAILURES)
CODE = (EXEC_SECONDS, SANDBOX_ERRORS)
SYSTEM = (SYS_CPU_PERCENT, SYS_RSS_MB, SYS_GPU_ALLOCATED_MB, SYS_GPU_RESERVED_MB, SYS_GPU_PEAK_MB,
          SYS_GPU_UTIL_PERCENT)
