"""A comparison, as the console's Compare tab shows it: groups of runs side by side, where comparing
runs is comparing groups of one run each. What every view of it reads, computed once and without Qt:
each group's colour (`colour_of`, the same in every chart, table and report of a comparison), its
legend entry and column header, the summary of each group (a run's final and best values by the
engine's one definition of them, a group's mean ± sample standard deviation of those), the
configuration fields that differ, and whether a run of it is still live.

The view holds one `Comparison` and asks it again when the runs grow (the controller adds the live
runs' new rows to their data and updates their rows in place).
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rla_engine import metrics
from rla_engine.spread import Spread, mean_std
from rla_engine.summary import BEST, FINAL, HEADLINE_ROWS, LARGE, figure, run_duration, settings
from rla_engine.text import counted, printable
from rla_engine.vocabulary import LIVE

from .panel_spec import PALETTE, short
from .run_columns import count_text
from .run_data import RunData

Runs = list[tuple[dict, RunData]]
Groups = list[tuple[str, Runs]]
MAX_TITLE_NAMES = 2
MISSING = "—"           # a configuration field a run does not have
SPREAD_NOTE = ("each figure: the mean over the group's runs ± their sample standard deviation "
               "(n − 1); one run: its own value")


def colour_of(index: int) -> str:
    """The colour of the comparison's `index`th run or group: its curves, its column, its report."""
    return PALETTE[index % len(PALETTE)]


# -- the summary --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Figure:
    """A row of the summary: its label, what it is (the row header's tooltip), and whether it
    counts whole things (shown as whole numbers)."""
    label: str
    definition: str
    count: bool = False


RUNS_ROW = Figure("runs", "the runs in the group", count=True)
WALL_TIME = Figure("wall time (s)", "seconds from the run's start to its end (a live run: to its latest heartbeat)")
ENV_STEPS = Figure("env steps", "environment steps taken by the run's last committed iteration", count=True)


def _variants(key: str) -> Figure:
    return Figure(f"{short(key)} variants", f"task variants {short(key)} by the curriculum over the whole run "
                                            "(the sum of every iteration's count)", count=True)


def summarise(data: RunData, run: dict) -> dict[Figure, float | int | None]:
    """Final and best values of the headline metrics (summary.FINAL and BEST), totals of variants,
    steps and wall time; counts are ints."""
    out: dict[Figure, float | int | None] = {}
    for label, key, has_best in HEADLINE_ROWS:
        _, vals = data.xy(key)
        out[Figure(f"{label} {FINAL.name}", FINAL.definition)] = FINAL.of(vals)
        if has_best:
            out[Figure(f"{label} {BEST.name}", BEST.definition)] = BEST.of(vals)
    for key in data.tier_keys():
        out[Figure(f"{short(key)} {FINAL.name}", FINAL.definition)] = FINAL.of(data.xy(key)[1])
    for key in (metrics.ACCEPTED, metrics.REJECTED):
        col = data.columns.get(key)
        # nansum: one unreadable row of an old database must not void the whole count
        out[_variants(key)] = _count(float(np.nansum(col.val[: col.n]))) if col is not None else None
    out[ENV_STEPS] = _count(FINAL.of(data.xy(metrics.ENV_STEPS)[1]))
    duration = run_duration(run)
    out[WALL_TIME] = round(duration, 1) if duration is not None else None
    return out


def _count(x: float | None) -> int | None:
    return int(x) if x is not None and math.isfinite(x) else None


def summary_text(v: float | int | None) -> str:
    """A run's summary cell: a count as a whole number, a measurement to three decimals (digits
    grouped where it is large, as decimals would be noise there)."""
    if v is None:
        return ""
    if isinstance(v, int) and abs(v) < LARGE:
        return f"{v:,}"
    return figure(v)       # 1.5e+308, not 309 digits


@dataclass(frozen=True)
class Cell:
    text: str
    problem: str = ""       # why a figure is "?" (plain words): the cell's tooltip


def spread_cell(values: Iterable[Any], count: bool) -> Cell:
    """A group's figure: "mean ± std" of its runs' values (one run: the value itself)."""
    spread: Spread = mean_std(values)
    return Cell(spread.text(count_text if count else figure), spread.problem)


# -- the configuration --------------------------------------------------------------------------
def _canonical(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def setting_text(values: Sequence[Any]) -> str:
    """A group's value of one setting as its configuration spells it (JSON); where its runs
    differ, each value once: "varies: 0.5, 1.0"."""
    distinct = list(dict.fromkeys(json.dumps(v, default=str) for v in values))
    return distinct[0] if len(distinct) == 1 else "varies: " + ", ".join(distinct)


# -- the comparison -----------------------------------------------------------------------------
class Comparison:
    """Groups of runs side by side: (label, [(run row, its RunData), …]) each, in the order given,
    which is their colours' order. `by_group` is False for a comparison of runs (each group one
    run, labelled by its name)."""

    def __init__(self, groups: Sequence[tuple[str, Runs]], by_group: bool = True):
        self.groups: Groups = [(label, list(runs)) for label, runs in groups]
        self.by_group = by_group

    @classmethod
    def of_runs(cls, runs: Runs) -> Comparison:
        return cls([(_name(run), [(run, data)]) for run, data in runs], by_group=False)

    # -- what it holds ----------------------------------------------------------------------------
    @property
    def runs(self) -> Runs:
        """Every group's runs: what the view follows while one of them is live."""
        return [run for _, runs in self.groups for run in runs]

    def run_ids(self) -> list[str]:
        return [run["id"] for run, _ in self.runs]

    def is_live(self) -> bool:
        return any(r.get("status") in LIVE for r, _ in self.runs)

    def stored_keys(self) -> set[str]:
        """Every metric key a run of it stored: what a chart can be added of."""
        return {k for _, data in self.runs for k in data.columns}

    # -- names --------------------------------------------------------------------------------
    def title(self) -> str:
        """The tab's title: the first names, and how many more."""
        names = [printable(label) for label, _ in self.groups]
        more = f" +{len(names) - MAX_TITLE_NAMES}" if len(names) > MAX_TITLE_NAMES else ""
        return self._prefix() + ", ".join(names[:MAX_TITLE_NAMES]) + more

    def full_title(self) -> str:
        return self._prefix() + ", ".join(printable(label) for label, _ in self.groups)

    def _prefix(self) -> str:
        return "Groups: " if self.by_group else "Compare: "

    def legend(self, index: int) -> str:
        """A group's legend entry: a run's name; a group's label and its number of runs."""
        label, runs = self.groups[index]
        return printable(f"{label} ({counted(len(runs), 'run')})" if self.by_group else label)

    def series(self, index: int, run: dict) -> str:
        """A run's name in a chart's CSV: the legend's, and its group's where it is one of several."""
        return printable(f"{self.groups[index][0]}: {run.get('name')}" if self.by_group else run.get("name"))

    def headers(self) -> list[str]:
        """The tables' column headers. A live run's values are where it is now, not final: its
        column says so."""
        out = []
        for label, runs in self.groups:
            live = [r for r, _ in runs if r.get("status") in LIVE]
            if not live:
                out.append(printable(label))
            elif self.by_group:
                out.append(printable(f"{label} ({len(live)} live)"))
            else:
                out.append(printable(f"{label} ({live[0]['status']}, it {live[0].get('iteration')})"))
        return out

    # -- the summary ----------------------------------------------------------------------------
    def summary(self) -> tuple[list[Figure], list[list[Cell]]]:
        """The summary's rows and, per row, a cell per group (a group of runs first says how many)."""
        sums = [[summarise(data, run) for run, data in runs] for _, runs in self.groups]
        rows = list(dict.fromkeys(f for group in sums for s in group for f in s))
        if not self.by_group:       # a run's own values: no spread, nothing to say about one
            return rows, [[Cell(summary_text(s.get(f))) for group in sums for s in group] for f in rows]
        cells = [[spread_cell((s.get(f) for s in group), f.count) for group in sums] for f in rows]
        return [RUNS_ROW, *rows], [[Cell(str(len(runs))) for _, runs in self.groups], *cells]

    def spread_note(self) -> str:
        """What "±" means in the summary ("" where every group is one run: no ± is shown)."""
        return SPREAD_NOTE if self.by_group else ""

    # -- the configuration ------------------------------------------------------------------------
    def settings(self) -> list[list[dict[str, Any]]]:
        """Each group's runs' settings by dotted key (summary.settings: current names)."""
        return [[settings(r["config"]) for r, _ in runs] for _, runs in self.groups]

    def differing(self) -> list[str]:
        """Dotted keys whose value is not the same in every group (a key a group lacks counts as
        differing; a group whose runs differ among themselves has that mixture as its value),
        sorted: sections together. For runs: summary.config_differences."""
        cells = self._setting_cells(self.settings(), canonical=True)
        return [k for k, row in cells.items() if len(set(row)) > 1]

    def config_rows(self, only_differing: bool) -> tuple[list[str], list[list[str]]]:
        """The configuration table: its keys, and per key a cell per group."""
        flat = self.settings()
        cells = self._setting_cells(flat, canonical=False)
        keys = self.differing() if only_differing else list(cells)
        return keys, [cells[k] for k in keys]

    @staticmethod
    def _setting_cells(flat: list[list[dict[str, Any]]], canonical: bool) -> dict[str, list[str]]:
        text: Callable[[Sequence[Any]], str] = (
            (lambda vs: "\n".join(sorted({_canonical(v) for v in vs}))) if canonical else setting_text)
        keys = sorted(set().union(*(f for group in flat for f in group))) if flat else []
        return {k: [text([f[k] for f in group]) if all(k in f for f in group) else MISSING for group in flat]
                for k in keys}


def _name(run: dict) -> str:
    name = run.get("name")
    return "" if name is None else str(name)
