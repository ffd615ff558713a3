"""A run's judge by iteration, as RESULTS.md's language-model judge tables show it.

    .venv/bin/python benchmarks/judge_by_iteration.py --db runs.db [--run RUN_ID] [--first 16]

Prints a Markdown table from iteration `--first` on (training success, p₊, p₋, unanimity, the
share of unreadable verdicts), the 10-iteration means of training success, every held-out
success that was measured, unanimity and p₊ after iteration 15 (ranges, means, and at how many
iterations unanimity is below 0.9 and p₊ above 0.1), and the median seconds an iteration took. The run is the database's
latest unless `--run` names one.
"""
from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path

from rla_engine.metrics import ITERATION_S
from rla_engine.store import Store, open_store

# the judge counts as informative when, after this iteration, it is neither unanimous nor silent on
# successes (RESULTS.md, "The language-model judge's collapse")
INFORMATIVE_AFTER = 15
ROWS = {"training success": "policy/success_rate", "p₊": "rm/p_plus", "p₋": "rm/p_minus",
        "unanimity": "rm/unanimity", "unreadable": "health/judge_unreadable_share"}


def by_iteration(store: Store, run: str, key: str) -> dict[int, float]:
    return dict(zip(*store.series(run, key)))


def cell(value: float | None) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--run")
    ap.add_argument("--first", type=int, default=1)
    a = ap.parse_args()
    store = open_store(a.db, create=False)
    run = a.run or store.list_runs(include_archived=True)[0]["id"]      # newest first
    series = {name: by_iteration(store, run, key) for name, key in ROWS.items()}
    last = max(series["training success"], default=0)
    its = list(range(a.first, last + 1))
    print(f"run {run}, iterations {a.first}–{last}\n")
    print("| iteration | " + " | ".join(str(i) for i in its) + " |")
    print("|---|" + "---|" * len(its))
    for name, values in series.items():
        print(f"| {name} | " + " | ".join(cell(values.get(i)) for i in its) + " |")
    success = series["training success"]
    blocks = [[success[i] for i in range(s, s + 10) if i in success] for s in range(1, last + 1, 10)]
    print("\ntraining success by 10 iterations: " + " / ".join(f"{statistics.mean(b):.3f}" for b in blocks if b))
    held_out = by_iteration(store, run, "eval/success_rate")
    print("held-out success: " + ", ".join(f"{v:.2f} at {i}" for i, v in sorted(held_out.items())))
    after = {name: [v for i, v in series[name].items() if i > INFORMATIVE_AFTER and not math.isnan(v)]
             for name in ("p₊", "unanimity")}
    if all(after.values()):
        p_plus, unanimity = after["p₊"], after["unanimity"]
        print(f"after iteration {INFORMATIVE_AFTER}: unanimity {min(unanimity):.2f}–{max(unanimity):.2f} "
              f"(mean {statistics.mean(unanimity):.2f}), below 0.9 at {sum(u < 0.9 for u in unanimity)} of "
              f"{len(unanimity)}; p₊ {min(p_plus):.2f}–{max(p_plus):.2f} (mean {statistics.mean(p_plus):.2f}), "
              f"above 0.1 at {sum(v > 0.1 for v in p_plus)} of {len(p_plus)}")
    times = list(by_iteration(store, run, ITERATION_S).values())
    if times:
        print(f"iteration seconds: median {statistics.median(times):.1f}, {len(times)} iterations")


if __name__ == "__main__":
    main()
