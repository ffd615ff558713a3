"""The results table of an ablation: per arm, mean ± standard deviation over its seeds.

How a run's series becomes its cell is summary's Reduction, the one the console and the reports
use, and the table prints each column's definition under it: held-out success is the mean of a
run's last three evaluations (one evaluation is noisy); the judge's figures are the mean of their
last ten stored values (undefined iterations are not stored, SPEC §7); difficulty and environment
steps are final values; wall time is the sum of the iterations' own times, so a run spent in parts
is not charged for the gaps. The standard deviation is the sample one (n − 1): three seeds
estimate a spread, they are not the population.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from .. import metrics
from ..spread import Spread, mean_std
from ..store import Store
from ..summary import FINAL, Reduction, figure, mean_of_last
from ..vocabulary import Status
from .arms import DIAGNOSTIC_ARMS, PlannedRun

LAST_EVALS = 3
LAST_VALUES = 10
COLUMNS: tuple[tuple[str, str], ...] = (
    ("held-out success", metrics.EVAL_SUCCESS),
    ("@0.9", metrics.eval_tier_key(0.9)),
    ("process agreement", metrics.PROCESS_AGREEMENT),
    ("outcome agreement", metrics.OUTCOME_AGREEMENT),
    ("agreement on success", metrics.AGREEMENT_ON_SUCCESS),
    ("agreement on failure", metrics.AGREEMENT_ON_FAILURE),
    ("outcome share given oracle", metrics.OUTCOME_SHARE_GIVEN_ORACLE),
    ("error correlation", metrics.ERROR_CORRELATION),
    ("μ", metrics.MU),
    ("difficulty", metrics.DIFFICULTY_MEAN),
    ("env steps", metrics.ENV_STEPS),
    ("wall s", "wall_s"),
)
_EVALS, _VALUES = mean_of_last(LAST_EVALS), mean_of_last(LAST_VALUES)
REDUCTIONS: dict[str, Reduction] = {
    metrics.EVAL_SUCCESS: _EVALS, metrics.eval_tier_key(0.9): _EVALS,
    metrics.PROCESS_AGREEMENT: _VALUES, metrics.OUTCOME_AGREEMENT: _VALUES, metrics.MU: _VALUES,
    **{key: _VALUES for key in metrics.JUDGE_ERRORS},
    metrics.DIFFICULTY_MEAN: FINAL, metrics.ENV_STEPS: FINAL}
WALL_DEFINITION = "the sum of the iterations' own times (a run spent in parts is not charged for the gaps)"


@dataclass
class ArmResult:
    arm: str
    runs: dict[int, dict[str, float | None]] = field(default_factory=dict)   # seed -> column -> value
    unfinished: list[str] = field(default_factory=list)

    def values(self, key: str) -> list[float]:
        return [v for r in self.runs.values() if (v := r.get(key)) is not None]

    def mean_std(self, key: str) -> Spread:
        return mean_std(self.values(key))


def run_values(store: Store, run_id: str) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for key, reduction in REDUCTIONS.items():
        out[key] = reduction.of(store.series(run_id, key)[1])   # None where no float holds it
    out["wall_s"] = _total([r["wall_s"] or 0.0 for r in store.iterations(run_id)])
    return out


def _total(values: list) -> float | None:
    """Their sum, never an exception (a hand-edited row's 1e308s sum to inf, shown as "?")."""
    mean = mean_std(values).mean
    return None if mean is None else mean * len(values)


def _pair(spread: Spread) -> list[float | None]:
    """A spread as the results' JSON keeps it: [mean, std]."""
    return [spread.mean, spread.std]


def collect(store: Store, runs: list[PlannedRun]) -> list[ArmResult]:
    by_arm: dict[str, ArmResult] = {}
    for r in runs:
        res = by_arm.setdefault(r.arm, ArmResult(r.arm))
        row = store.get_run(r.run_id)
        if row is None:
            res.unfinished.append(f"{r.run_id} (not started)")
            continue
        if row["status"] != Status.COMPLETED:
            res.unfinished.append(f"{r.run_id} ({row['status']})")
        res.runs[r.seed] = run_values(store, r.run_id)
    return list(by_arm.values())


def _cell(spread: Spread, key: str) -> str:
    if not spread.n:
        return "–"
    if key in (metrics.ENV_STEPS, "wall_s"):
        digits = 0 if key == metrics.ENV_STEPS or (spread.mean or 0.0) >= 100 else 1
        return spread.text(lambda v: figure(v, digits))
    return spread.text(lambda v: figure(v, 3, grouped=False))


def markdown(results: list[ArmResult], title: str) -> str:
    head = ["arm", "seeds", *(name for name, _ in COLUMNS)]
    lines = [f"### {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for res in results:
        cells = [_cell(res.mean_std(key), key) for _, key in COLUMNS]
        name = f"{res.arm} (diagnostic)" if res.arm in DIAGNOSTIC_ARMS else res.arm
        lines.append(f"| {name} | {len(res.runs)} | " + " | ".join(cells) + " |")
    lines += ["", "Each cell is the mean ± sample standard deviation (n − 1) over the arm's seeds of one value "
                  "per run: " + column_definitions() + "."]
    notes = [u for res in results for u in res.unfinished]
    if notes:
        lines += ["", "Not finished: " + ", ".join(notes)]
    return "\n".join(lines) + "\n"


def definition(key: str) -> str:
    """What a column's per-run value is."""
    return REDUCTIONS[key].definition if key in REDUCTIONS else WALL_DEFINITION


def column_definitions() -> str:
    """What each column's per-run value is (columns with one definition named together): the table's caption."""
    named: dict[str, list[str]] = {}
    for name, key in COLUMNS:
        named.setdefault(definition(key), []).append(name)
    return "; ".join(f"{', '.join(names)} — {text}" for text, names in named.items())


def as_json(results: list[ArmResult], meta: dict) -> str:
    arms = {r.arm: {"runs": {str(s): v for s, v in r.runs.items()},
                    "mean_std": {k: _pair(r.mean_std(k)) for _, k in COLUMNS},
                    "unfinished": r.unfinished} for r in results}
    return json.dumps({**meta, "definitions": {key: definition(key) for _, key in COLUMNS}, "arms": arms}, indent=2)
