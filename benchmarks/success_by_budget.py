"""Held-out success at smaller budgets, read from longer runs: how few environment steps an
ablation needs before one arm separates from another (docs/RESULTS.md, "A first ablation").

    python benchmarks/success_by_budget.py --db results.db --group i37-kr --group i37-kr-pair \
        --budgets 250000,500000,1000000,2000000

A run of budget B is the longer run cut where it reached B (the budget only stops a run), so each
cell is the table's held-out success — the mean of the last three evaluations — over the
evaluations taken by then, mean ± std over the seeds. The cut run lacks the one evaluation a run
of budget B takes at its end, so a cell is an estimate; an ablation at the chosen budget confirms
it. Prints one Markdown table: a row per group and arm, a column per budget, with the share of
the run's wall time spent by then.
"""
from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass
from pathlib import Path

from judge_errors import cell, runs_by_arm

from rla_engine import metrics
from rla_engine.ablation.results import LAST_EVALS
from rla_engine.store import Store, open_store


@dataclass(frozen=True)
class RunSeries:
    """What a cut reads of one run, read once for every budget."""
    steps: dict[int, float]             # iteration -> environment steps taken by then
    evals: list[tuple[int, float]]      # (iteration, held-out success)
    walls: list[tuple[int, float]]      # (iteration, its own seconds)

    @classmethod
    def read(cls, store: Store, run_id: str) -> RunSeries:
        return cls(dict(zip(*store.series(run_id, metrics.ENV_STEPS))),
                   list(zip(*store.series(run_id, metrics.EVAL_SUCCESS))),
                   [(r["iteration"], r["wall_s"] or 0.0) for r in store.iterations(run_id)])

    def cut(self, budget: int) -> tuple[float | None, float]:
        """The mean of the last LAST_EVALS evaluations taken by the iteration that reached
        `budget`, and the wall seconds spent by then."""
        reached = next((it for it in sorted(self.steps) if self.steps[it] >= budget), max(self.steps, default=0))
        evals = [v for it, v in self.evals if it <= reached]
        wall = sum(w for it, w in self.walls if it <= reached)
        return (statistics.fmean(evals[-LAST_EVALS:]) if evals else None), wall


def table(db: Path, groups: list[str], budgets: list[int]) -> str:
    store = open_store(db, create=False)
    head = ["group", "arm", "seeds", *(f"{b:,}" for b in budgets)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    walls: dict[int, list[float]] = {b: [] for b in budgets}
    for group in groups:
        for arm, ids in runs_by_arm(store, group).items():
            runs = [RunSeries.read(store, run_id) for run_id in ids]
            cells = []
            for b in budgets:
                cut = [run.cut(b) for run in runs]
                cells.append(cell([s for s, _ in cut if s is not None]))
                walls[b] += [w for _, w in cut]
            lines.append(f"| {group} | {arm} | {len(ids)} | " + " | ".join(cells) + " |")
    lines.append("| | wall s a run, mean | | " + " | ".join(f"{statistics.fmean(walls[b]):.0f}" for b in budgets)
                 + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--group", action="append", required=True)
    ap.add_argument("--budgets", default="250000,500000,750000,1000000,1500000,2000000")
    a = ap.parse_args()
    print(table(a.db, a.group, [int(b) for b in a.budgets.split(",")]))


if __name__ == "__main__":
    main()
