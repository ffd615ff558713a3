"""How the judge errs, and how that evolves: for every arm of an ablation group, the
error-structure keys (rm/agreement_on_success … rm/error_correlation) and process agreement,
averaged over each quarter of a run's iterations, then mean ± std over the seeds.

    python benchmarks/judge_errors.py --db results.db --group ablate-keyrooms-2000000 [--group …]

Prints one Markdown table per group (the form docs/RESULTS.md quotes).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from rla_engine import metrics
from rla_engine.ablation.arms import arm_of
from rla_engine.spread import mean_std
from rla_engine.store import Store, open_store

KEYS = (("process agreement", metrics.PROCESS_AGREEMENT), ("on success", metrics.AGREEMENT_ON_SUCCESS),
        ("on failure", metrics.AGREEMENT_ON_FAILURE), ("outcome share", metrics.OUTCOME_SHARE),
        ("outcome share given label", metrics.OUTCOME_SHARE_GIVEN_ORACLE),
        ("error correlation", metrics.ERROR_CORRELATION), ("μ", metrics.MU))
QUARTERS = 4


def quarters(store, run_id: str, key: str) -> list[float | None]:
    its, vals = store.series(run_id, key)
    if not its:
        return [None] * QUARTERS
    last = max(its)
    out = []
    for q in range(QUARTERS):
        lo, hi = last * q / QUARTERS, last * (q + 1) / QUARTERS
        part = [v for i, v in zip(its, vals) if lo < i <= hi]
        out.append(statistics.fmean(part) if part else None)
    return out


def cell(values: list[float]) -> str:
    """mean ± std over the seeds, three decimals; "–" for none."""
    return mean_std(values).text(lambda v: f"{v:.3f}") or "–"


def runs_by_arm(store: Store, group: str) -> dict[str, list[str]]:
    """The group's run ids by arm, in id order (seed order); SystemExit when it has none."""
    runs = [r for r in store.list_runs(include_archived=True) if r.get("group_id") == group]
    if not runs:
        raise SystemExit(f"no run of group {group!r} in {store.path}")
    by_arm: dict[str, list[str]] = {}
    for r in sorted(runs, key=lambda r: r["id"]):
        by_arm.setdefault(arm_of(r), []).append(r["id"])
    return by_arm


def table(db: Path, group: str) -> str:
    store = open_store(db, create=False)
    by_arm = runs_by_arm(store, group)
    head = ["arm", "quarter of the run", *(name for name, _ in KEYS)]
    lines = [f"#### {group}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for arm, ids in by_arm.items():
        per_key = {key: [quarters(store, run_id, key) for run_id in ids] for _, key in KEYS}
        for q in range(QUARTERS):
            cells = [cell([v for qs in per_key[key] if (v := qs[q]) is not None]) for _, key in KEYS]
            lines.append(f"| {arm if q == 0 else ''} | {q + 1} | " + " | ".join(cells) + " |")
    store.close()
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True, type=Path)
    ap.add_argument("--group", action="append", required=True)
    a = ap.parse_args()
    for group in a.group:
        print(table(a.db, group))
    return 0


if __name__ == "__main__":
    sys.exit(main())
