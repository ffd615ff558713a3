"""What the run panels show, once, for every place that draws them: the live dashboard, the
comparison and the report charts. Qt-free (the report renders it without a window); colours are
hex strings that pyqtgraph and the SVG writer both take.

A panel is a title and its keys; how a panel is drawn (pyqtgraph items, SVG paths) stays with
the code that draws it.
"""
from __future__ import annotations

from dataclasses import dataclass

from rla_engine import metrics
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

# Every key a panel draws (the held-out tiers come and go with the run's config).
DRAWN_KEYS = tuple(dict.fromkeys(k for p in PANELS for k in p.keys + (p.band or ())))

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
# held-out tiers, light (easy) to dark (hard): the lightest stays visible on white
TIER_COLOURS = ["#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b"]

MARKER_KINDS: tuple[str, ...] = (EventKind.PAUSE, EventKind.RESUME, EventKind.SET_DIFFICULTY, EventKind.FAILED,
                                 EventKind.RESUMED_FROM_CHECKPOINT)
MARKER_COLOURS: dict[str, str] = {
    EventKind.PAUSE: "#d62728", EventKind.RESUME: "#2ca02c", EventKind.SET_DIFFICULTY: "#9467bd",
    EventKind.FAILED: "#000000", EventKind.RESUMED_FROM_CHECKPOINT: "#17becf"}

LABELS = {metrics.SUCCESS: "success (train)", metrics.EVAL_SUCCESS: "eval success", metrics.REWARD: "reward R",
          metrics.POSITIVE_FRACTION: "positive fraction", metrics.IN_BAND: "tasks in band",
          metrics.DIFFICULTY_MEAN: "pool mean", metrics.PRECISION_BOUND: "precision bound (Thm 1)", metrics.MU: "μ",
          metrics.P_PLUS: "p₊", metrics.P_MINUS: "p₋"}


def short(key: str) -> str:
    """The legend's name of a key: distinct within a panel (two keys end in success_rate)."""
    if key in LABELS:
        return LABELS[key]
    tier = metrics.tier_of(key)
    if tier is not None:
        return f"eval @{tier:g}"
    return key.split("/", 1)[-1].replace("_", " ")
