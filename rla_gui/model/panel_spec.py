"""What the run panels show, once, for every place that draws them: the live dashboard, the
comparison and the report charts. Qt-free (the report renders it without a window); colours are
hex strings that pyqtgraph and the SVG writer both take.

A panel is a title and its keys; how a panel is drawn (pyqtgraph items, SVG paths) stays with
the code that draws it.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rla_engine import metrics
from rla_engine.summary import settings
from rla_engine.vocabulary import EventKind


@dataclass(frozen=True)
class Panel:
    id: str
    title: str
    keys: tuple[str, ...]
    dashed: tuple[str, ...] = ()       # reference curves (a bound), not measurements
    band: tuple[str, str] | None = None   # (low, high) drawn as a shaded band behind the curves


POLICY = Panel("policy", "Policy reward", (metrics.SUCCESS, metrics.EVAL_SUCCESS, metrics.REWARD))
AGREEMENT = Panel("agreement", "Reward-model agreement",
                  (metrics.OUTCOME_AGREEMENT, metrics.PROCESS_AGREEMENT, metrics.UNANIMITY, metrics.PRECISION,
                   metrics.PRECISION_BOUND),
                  dashed=(metrics.PRECISION_BOUND,))
BALANCE = Panel("balance", "μ balance",
                (metrics.MU, metrics.P_PLUS, metrics.P_MINUS, metrics.POSITIVE_FRACTION, metrics.IN_BAND))
DIFFICULTY = Panel("difficulty", "Task difficulty", (metrics.DIFFICULTY_MEAN,),
                   band=(metrics.DIFFICULTY_MIN, metrics.DIFFICULTY_MAX))
LOSSES = Panel("losses", "Losses", (metrics.LOSS_POLICY, metrics.LOSS_JUDGE, metrics.LOSS_KL))
PANELS = (POLICY, AGREEMENT, BALANCE, DIFFICULTY, LOSSES)
# judge.kind = tests: the reward model writes unit tests, not step verdicts, so its agreement is the
# generated tests' against the programs the ground truth calls correct (the paper's coding figures)
# short: at the dashboard's narrowest a longer title and legend were cut (seen at the console); the
# report's coding section says what each figure means
TEST_AGREEMENT = Panel("agreement", "Generated tests", metrics.UNIT_TESTS)
# runs of both kinds compared side by side: one panel offers either's keys
ANY_AGREEMENT = Panel("agreement", "Reward-model agreement (step judges and test generators)",
                      AGREEMENT.keys + metrics.UNIT_TESTS, dashed=AGREEMENT.dashed)
STEPS, TESTS = "steps", "tests"       # config.JudgeConfig.kind's values

# The training-health dock (the losses and what TRL and cleanrl log beside them) and the machine.
# Scales differ within a panel (a clip fraction, a gradient norm): the read-out gives exact values.
POLICY_UPDATE = Panel("policy-update", "Policy update", metrics.POLICY_HEALTH)
JUDGE_UPDATE = Panel("judge-update", "Judge update", metrics.JUDGE_HEALTH)
# shares (0–1) and lengths (tens to thousands of tokens) never share an axis: on one, the shares
# read as 0
LANGUAGE_SHARES = Panel("language-shares", "Language model: shares",
                        (metrics.TRUNCATED_SHARE, metrics.JUDGE_UNREADABLE_SHARE))
LANGUAGE_LENGTHS = Panel("language-lengths", "Language model: lengths (tokens)",
                         (metrics.COMPLETION_LENGTH_MEAN, metrics.COMPLETION_LENGTH_MAX))
SYSTEM_USE = Panel("system-use", "System: CPU and GPU use (%)", (metrics.SYS_CPU_PERCENT, metrics.SYS_GPU_UTIL_PERCENT))
SYSTEM_MEMORY = Panel("system-memory", "System: memory (MB)",
                      (metrics.SYS_RSS_MB, metrics.SYS_GPU_ALLOCATED_MB, metrics.SYS_GPU_RESERVED_MB,
                       metrics.SYS_GPU_PEAK_MB))
# A coding run's executions (the ground truth's and the generated tests'), by how each ended, and
# its answers that held no program (nothing ran)
EXEC_STATUSES = metrics.EXEC_STATUSES
SANDBOX_SHARES = Panel("sandbox-shares", "Sandbox: executions by status (share)",
                       (metrics.NO_PROGRAM, *(metrics.exec_status_key(s) for s in EXEC_STATUSES)))
# seconds and a count never share the shares' 0–1 axis
SANDBOX_COST = Panel("sandbox-cost", "Sandbox: seconds and sandbox errors", metrics.CODE)
# the training-health dock's tabs: (tab title, its panels side by side)
HEALTH_TABS = (("Losses", (LOSSES,)), ("Policy", (POLICY_UPDATE,)), ("Judge", (JUDGE_UPDATE,)),
               ("Language model", (LANGUAGE_SHARES, LANGUAGE_LENGTHS)), ("System", (SYSTEM_USE, SYSTEM_MEMORY)),
               ("Sandbox", (SANDBOX_SHARES, SANDBOX_COST)))
# tabs shown only for a run that stored one of their keys: every other run never runs programs
TABS_WITH_DATA_ONLY = frozenset({"Sandbox"})
HEALTH_PANELS = tuple(panel for _, panels in HEALTH_TABS for panel in panels)

# Every key a panel draws (the held-out tiers come and go with the run's config).
DRAWN_KEYS = tuple(dict.fromkeys(k for p in (*PANELS, ANY_AGREEMENT, *HEALTH_PANELS)
                                  for k in p.keys + (p.band or ())))

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
# held-out tiers, light (easy) to dark (hard): the lightest stays visible on white
TIER_COLOURS = ["#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b"]

MARKER_KINDS: tuple[str, ...] = (EventKind.PAUSE, EventKind.RESUME, EventKind.SET_DIFFICULTY, EventKind.FAILED,
                                 EventKind.RESUMED_FROM_CHECKPOINT)
MARKER_COLOURS: dict[str, str] = {
    EventKind.PAUSE: "#d62728", EventKind.RESUME: "#2ca02c", EventKind.SET_DIFFICULTY: "#9467bd",
    EventKind.FAILED: "#000000", EventKind.RESUMED_FROM_CHECKPOINT: "#17becf"}

# where an alert began (the first iteration of the window it held over) and where it ended
ALERT_BEGAN, ALERT_ENDED = "alert began", "alert ended"
ALERT_COLOURS = {ALERT_BEGAN: "#e6550d", ALERT_ENDED: "#31a354"}

LABELS = {metrics.SUCCESS: "success (train)", metrics.EVAL_SUCCESS: "eval success", metrics.REWARD: "reward R",
          metrics.POSITIVE_FRACTION: "positive fraction", metrics.IN_BAND: "tasks in band",
          metrics.DIFFICULTY_MEAN: "pool mean", metrics.PRECISION_BOUND: "precision bound (Thm 1)", metrics.MU: "μ",
          metrics.P_PLUS: "p₊", metrics.P_MINUS: "p₋", metrics.SYS_CPU_PERCENT: "engine CPU (% of a core)",
          metrics.SYS_GPU_UTIL_PERCENT: "GPU utilisation", metrics.SYS_RSS_MB: "engine resident",
          metrics.SYS_GPU_ALLOCATED_MB: "GPU allocated", metrics.SYS_GPU_RESERVED_MB: "GPU reserved",
          metrics.SYS_GPU_PEAK_MB: "GPU peak",
          metrics.SYN_UT_ACC: "syn UT acc",
          metrics.PERFECT_UT_RATE: "perfect UT rate",
          metrics.TEST_PARSE_FAILURES: "unreadable tests", metrics.EXEC_SECONDS: "seconds running programs",
          metrics.SANDBOX_ERRORS: "sandbox errors (count)", metrics.NO_PROGRAM: "answers without a program",
          **{metrics.exec_status_key(s): s.replace("_", " ") for s in EXEC_STATUSES}}


def run_config(run: Mapping[str, Any] | None) -> dict:
    """A run's configuration: a bundle's or a comparison's `config`, else the store row's
    `config_json`; {} where there is none or it cannot be read (a hand-edited row)."""
    if not run:
        return {}
    config = run.get("config")
    if config is None:
        try:
            config = json.loads(run.get("config_json") or "")
        except (TypeError, ValueError):
            return {}
    return config if isinstance(config, dict) else {}


def judge_kind(config: Mapping[str, Any] | None) -> str:
    """What the run's reward model writes, as today reads the stored configuration (a run stored
    before judge.kind existed had the step judge)."""
    kind = settings(config or {}).get("judge.kind", STEPS)
    return kind if kind in (STEPS, TESTS) else STEPS


def agreement_panel(configs: Iterable[Mapping[str, Any] | None]) -> Panel:
    """The reward model's agreement panel for runs of these configurations: the step judge's, the
    test generator's, or, for a comparison of both kinds, one that offers every key."""
    kinds = {judge_kind(c) for c in configs}
    if kinds == {TESTS}:
        return TEST_AGREEMENT
    return ANY_AGREEMENT if TESTS in kinds else AGREEMENT


def run_panels(configs: Iterable[Mapping[str, Any] | None]) -> tuple[Panel, ...]:
    """PANELS, the agreement panel chosen for these runs (the dashboard, a comparison, a report)."""
    agreement = agreement_panel(configs)
    return tuple(agreement if p is AGREEMENT else p for p in PANELS)


def short(key: str) -> str:
    """The legend's name of a key: distinct within a panel (two keys end in success_rate)."""
    if key in LABELS:
        return LABELS[key]
    tier = metrics.tier_of(key)
    if tier is not None:
        return f"eval @{tier:g}"
    name = key.split("/", 1)[-1]
    for role in ("policy_", "judge_"):     # a health panel is one role's: its title names it
        if key.startswith(metrics.HEALTH_PREFIX + role) and name != f"{role}unreadable_share":
            name = name[len(role):]
    return name.replace("_", " ")


def chart_title(keys: list[str] | tuple[str, ...]) -> str:
    """An added chart's title: its key, or its keys' short names."""
    return keys[0] if len(keys) == 1 else ", ".join(short(k) for k in keys)
