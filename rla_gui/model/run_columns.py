"""History's columns: the fixed ones, and those a person chooses — a configuration field, a
metric's final or best value, or what a run row says about its ablation (group, arm) — with their
text, their sort order, runs grouped by one of them (count, mean ± std), and the cache through
which the controller reads their values. Qt-free: the report groups runs with the same rules.

A chosen column is named by an id that says where its value comes from: `config:policy.lam`,
`final:eval/success_rate`, `best:eval/success_rate`, `run:arm`. That id is what settings keep
and what a group comparison's report is told to group by.
"""
from __future__ import annotations

import functools
import json
import math
import operator
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rla_engine import metrics
from rla_engine.spread import Spread, mean_std
from rla_engine.summary import LARGE, SUMMARY_KEYS, figure, settings
from rla_engine.text import printable
from rla_engine.vocabulary import LIVE

COUNT_KEYS = frozenset({metrics.ENV_STEPS})     # metrics that count, not measure
FIELD, CONFIG, FINAL, BEST, RUN = "field", "config", "final", "best", "run"
ARM_SEPARATOR = " · "      # `rla ablate` names a run "<arm> · seed <s>" (ablation.arms.PlannedRun.name)
# what ends a run: runs that differ here are not repeats of one experiment, whatever else they share
BUDGET_KEYS = ("run.env_step_budget", "run.iterations")
MAX_INT = int(sys.float_info.max)     # an int beyond it has no float: float() raises OverflowError


@dataclass(frozen=True)
class Column:
    """One column of the history. FIELD: a field of the run's summary row (the fixed columns);
    CONFIG, FINAL, BEST: read into the row's "columns" by `ColumnValues`; RUN: derived from the row."""
    id: str
    kind: str
    key: str
    title: str

    @property
    def is_metric(self) -> bool:
        """A measurement (a group shows its mean ± std), not a setting or a name."""
        return self.kind in (FINAL, BEST) or (self.kind == FIELD and self.key in SUMMARY_KEYS)

    @property
    def is_count(self) -> bool:
        """A metric that counts (environment steps): its group figures are whole numbers where they are."""
        return self.is_metric and self.key in COUNT_KEYS

    def value(self, row: Mapping[str, Any]) -> Any:
        if self.kind == FIELD:
            return row.get(self.key)
        if self.kind == RUN:
            return arm_of(row) if self.key in (ARM, POOLED_ARM) else row.get(_RUN_FIELDS[self.key])
        return (row.get("columns") or {}).get(self.id)


ARM, POOLED_ARM = "arm", "arm_pooled"
# an arm groups within its ablation; the pooled arm across ablations (a group that then mixes
# presets or budgets says so): what a run row says, by the key of its `run:` column
_RUN_FIELDS = {ARM: "name", POOLED_ARM: "name", "group": "group_id", "status": "status", "preset": "preset"}
_RUN_TITLES = {POOLED_ARM: "arm (every ablation)"}

FIXED = [Column(f"field:{key}", FIELD, key, title) for title, key in (
    ("name", "name"), ("status", "status"), ("preset", "preset"), ("started", "started_at"),
    ("duration", "duration"), ("iter", "iteration"), ("success", metrics.SUCCESS), ("eval", metrics.EVAL_SUCCESS),
    ("μ", metrics.MU), ("difficulty", metrics.DIFFICULTY_MEAN), ("id", "id"))]
RUN_COLUMNS = [Column(f"run:{key}", RUN, key, _RUN_TITLES.get(key, key)) for key in _RUN_FIELDS]
ARM_COLUMN = RUN_COLUMNS[0]


def config_column(key: str) -> Column:
    return Column(f"{CONFIG}:{key}", CONFIG, key, key)


def metric_column(kind: str, key: str) -> Column:
    return Column(f"{kind}:{key}", kind, key, f"{kind}:{key}")


def parse(column_id: str) -> Column | None:
    """The column an id names; None for one that names nothing (a hand-edited setting)."""
    kind, _, key = str(column_id).partition(":")
    if not key:
        return None
    if kind == CONFIG:
        return config_column(key)
    if kind in (FINAL, BEST):
        return metric_column(kind, key)
    return next((c for c in RUN_COLUMNS + FIXED if c.id == column_id), None)


def arm_of(row: Mapping[str, Any]) -> str | None:
    """The arm of a run of an ablation group (from its name); None outside a group."""
    if not row.get("group_id"):
        return None
    return str(row.get("name") or row.get("id") or "").split(ARM_SEPARATOR)[0]


# -- values: text, order, equality ------------------------------------------------------------
def number(v: Any) -> float | None:
    """A finite number (a bool counts: a switch sorts as 0/1), else None."""
    kind = type(v)      # not isinstance: this runs for every cell a grouping or a sort reads
    if kind is float:
        return v if math.isfinite(v) else None
    if kind is int or kind is bool:
        return float(v) if kind is bool or -MAX_INT < v < MAX_INT else None     # 10**400 has no float
    return number(float(v)) if isinstance(v, float) else number(int(v)) if isinstance(v, int) else None


def missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def metric_text(v: float) -> str:
    """A measurement: three decimals, digits grouped from 1,000, e-notation where it is huge (summary.figure)."""
    return figure(v)


def value_text(column: Column, v: Any) -> str:
    """A chosen column's cell: a metric as a measurement, a setting as its configuration spells
    it (JSON: true, null, [0.1, 0.3]), text verbatim but printable; "?" for a value that cannot be read."""
    if v is None:
        return ""
    if isinstance(v, float) and not math.isfinite(v):
        return "?"
    if column.is_metric and isinstance(v, (int, float)) and not isinstance(v, bool):
        return metric_text(v)      # figure writes an int no float holds (10**400) too
    if isinstance(v, str):
        return printable(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return figure(v) if abs(v) >= LARGE else repr(v)     # 10**400 (a hand edit): not 401 digits
    return printable(json.dumps(v, sort_keys=True, default=str))


def sort_key(v: Any) -> tuple:
    """Numbers by value before text by its case-folded letters; a missing value has no key (None)
    and `ordered` puts it last whichever the direction."""
    n = number(v)
    if n is not None:
        return (0, n, "")
    return (1, 0.0, (v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)).casefold())


def ordered(items: list, value: Callable[[Any], Any], descending: bool) -> list:
    """`items` sorted by `value` (stable), missing values last in either direction."""
    keyed = [(item, value(item)) for item in items]
    present = [(item, v) for item, v in keyed if not missing(v)]
    present.sort(key=lambda p: sort_key(p[1]), reverse=descending)
    return [item for item, _ in present] + [item for item, v in keyed if missing(v)]


def group_key(v: Any) -> str:
    """Equal values, one group: the value's JSON (a missing or unreadable one is "null")."""
    return "null" if missing(v) else json.dumps(v, sort_keys=True, default=str)


def count_text(v: float) -> str:
    """A count, or a mean or spread of counts: whole as a whole number ("401", not "401.000"),
    else to one decimal ("400.5")."""
    if math.isfinite(v) and v.is_integer() and abs(v) < LARGE:
        return f"{int(v):,}"
    return figure(v, decimals=1)


def mean_std_text(spread: Spread, count: bool = False) -> str:
    """A group's "mean ± std" as History and the reports show it ("?" for a figure a float cannot
    hold: `spread.problem` says why); `count`: of a count (see count_text)."""
    return spread.text(count_text if count else metric_text)


@dataclass
class Group:
    """Runs whose value in the grouping column is the same."""
    key: str
    label: str
    value: Any
    members: list[dict] = field(default_factory=list)

    def stats(self, column: Column) -> Spread:
        return mean_std(column.value(r) for r in self.members)

    def mixes(self) -> list[str]:
        """What its runs do not share though a mean over them assumes they do (see `mixed_scope`)."""
        return mixed_scope(self.members)


def group_label(column: Column, value: Any, ablation: str | None = None) -> str:
    # an empty text is no value either: a run started with no preset records ""
    label = f"{column.title} = {'(none)' if missing(value) or value == '' else value_text(column, value)}"
    return f"{label}{ARM_SEPARATOR}ablation {printable(ablation)}" if ablation else label


def _scoped(column: Column, row: Mapping[str, Any]) -> str | None:
    """The ablation an arm is grouped within: the same arm of two ablations (a 100k-step tiny one
    and a 500k quickstart one) is two groups, never one mean."""
    if column.kind != RUN or column.key != ARM or not row.get("group_id"):
        return None
    return str(row["group_id"])


def group_rows(rows: Iterable[dict], column: Column, by_value: bool = True) -> list[Group]:
    """Runs grouped by their value in `column` (an arm: by ablation and arm), in the order of that
    value (missing last), or of their first run; each group keeps its runs in the order given."""
    groups: dict[str, Group] = {}
    for row in rows:
        v, ablation = column.value(row), _scoped(column, row)
        key = group_key(v) if ablation is None else group_key([ablation, v])
        if key not in groups:
            groups[key] = Group(key, group_label(column, v, ablation), v)
        groups[key].members.append(row)
    return ordered(list(groups.values()), lambda g: g.value, descending=False) if by_value else list(groups.values())


def arm_groups(runs: Sequence[tuple[Any, Any]], arms: list[str]) -> list[tuple[str, list[tuple[Any, Any]]]]:
    """The runs of one ablation, (run row, its data) each, grouped by arm in the order of `arms`,
    as a group comparison takes them: [(the arm, its runs), …] (one ablation: the arm names it)."""
    by_id = {row["id"]: (row, data) for row, data in runs}
    groups = group_rows([row for row, _ in runs], ARM_COLUMN, by_value=False)
    groups.sort(key=lambda g: arms.index(g.value) if g.value in arms else len(arms))
    return [(printable(str(g.value)), [by_id[r["id"]] for r in g.members]) for g in groups]


@functools.lru_cache(maxsize=4096)
def _budget(config_json: str) -> tuple:
    """A stored configuration's BUDGET_KEYS values (as JSON text); each run's is read once."""
    try:
        flat = settings(json.loads(config_json))
    except (ValueError, TypeError, RecursionError):
        return tuple("?" for _ in BUDGET_KEYS)
    return tuple(json.dumps(flat.get(k), sort_keys=True, default=str) for k in BUDGET_KEYS)


def mixed_scope(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """What `rows` do not all share of their preset and budget (BUDGET_KEYS), each with the values
    seen, e.g. ["preset: quickstart, tiny", "run.env_step_budget: 100000, 500000"]; [] when they
    are repeats of one setup and a mean over them means something."""
    rows = list(rows)
    presets = sorted({printable(str(r.get("preset") or "(none)")) for r in rows})
    budgets = [_budget(str(r.get("config_json") or "{}")) for r in rows]
    mixed = [f"preset: {', '.join(presets)}"] if len(presets) > 1 else []
    for i, key in enumerate(BUDGET_KEYS):
        seen = sorted({b[i] for b in budgets}, key=lambda t: sort_key(_loaded(t)))
        if len(seen) > 1:
            mixed.append(f"{key}: {', '.join(printable(t) for t in seen)}")
    return mixed


def _loaded(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


# -- reading the values -----------------------------------------------------------------------
class ColumnValues:
    """The chosen columns' values of the history's rows, read through the client's one-query
    reads. A configuration never changes, so each run's is read once; a run's final and best
    values only when it has committed iterations since they were read (a live run every time)."""

    def __init__(self) -> None:
        self.configs: dict[str, dict] = {}
        self.metrics: dict[str, tuple[tuple, dict[str, float], dict[str, float]]] = {}

    async def fill(self, client, rows: list[dict], column_ids: list[str]) -> None:
        """Set each row's "columns" to {column id: value} for the columns `column_ids` names."""
        columns = [c for c in map(parse, column_ids) if c is not None and c.kind in (CONFIG, FINAL, BEST)]
        finals = sorted({c.key for c in columns if c.kind == FINAL})
        bests = sorted({c.key for c in columns if c.kind == BEST})
        if any(c.kind == CONFIG for c in columns):
            new = [r["id"] for r in rows if r["id"] not in self.configs]
            if new:
                read = await client.flat_configs(new)
                self.configs.update({run_id: read.get(run_id, {}) for run_id in new})
        if finals or bests:
            stale = [r["id"] for r in rows if self._stale(r, finals, bests)]
            if stale:
                final = await client.final_values(finals, stale) if finals else {}
                best = await client.best_values(bests, stale) if bests else {}
                stamps = {r["id"]: _stamp(r) for r in rows}
                for run_id in stale:
                    self.metrics[run_id] = (stamps[run_id] + (tuple(finals), tuple(bests)),
                                            final.get(run_id, {}), best.get(run_id, {}))
        for r in rows:
            config = self.configs.get(r["id"], {})
            _, final_of, best_of = self.metrics.get(r["id"], ((), {}, {}))
            r["columns"] = {c.id: config.get(c.key) if c.kind == CONFIG else
                            (final_of if c.kind == FINAL else best_of).get(c.key) for c in columns}

    def _stale(self, row: dict, finals: list[str], bests: list[str]) -> bool:
        cached = self.metrics.get(row["id"])
        if cached is None or row.get("status") in LIVE:
            return True
        stamp = cached[0]
        return stamp[:-2] != _stamp(row) or not (set(finals) <= set(stamp[-2]) and set(bests) <= set(stamp[-1]))


def _stamp(row: Mapping[str, Any]) -> tuple:
    """What changes when a run's metrics may have: a new iteration, a status (a resume's rewind)."""
    return (row.get("iteration"), row.get("status"), row.get("ended_at"))


# -- filtering by a column ----------------------------------------------------------------------
_CONDITION = re.compile(r"(.+?)(<=|>=|!=|=|<|>)(.*)\Z", re.S)
# a word of the filter box: quotes keep spaces inside one word (`name="short run"`); a quote that is
# never closed is a plain character (`it's`)
_WORD = re.compile(r"""(?:[^\s"']+|"[^"]*"|'[^']*'|["'])+""")
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, ">": operator.gt, "<=": operator.le, ">=": operator.ge}


@dataclass(frozen=True)
class Condition:
    """`title<op>value` typed in the history's filter box, e.g. `policy.lam=0.5`, `final:eval/success_rate>0.3`.

    A run that lacks the column's value (None, NaN) matches only `!=`: "not 0.5" includes a run
    that never set it. A finite number against a value that reads as a number compares as numbers
    (`iter>9` holds for 10), and only a number is above or below one (`lam>0.5` leaves out "auto" and
    a switch); anything else compares the cell's text as History shows it, ignoring case."""
    column: Column
    op: str
    wanted: str

    def holds(self, row: Mapping[str, Any]) -> bool:
        v = self.column.value(row)
        if missing(v):
            return self.op == "!="
        a, b = number(v), _float(self.wanted)
        if isinstance(v, bool):
            a = None
        if a is not None and b is not None:
            return _COMPARE[self.op](a, b)
        if b is not None and self.op not in ("=", "!="):
            return False        # `lam>0.5` is about numbers: "auto" is not above it
        return _COMPARE[self.op](value_text(self.column, v).casefold(), self.wanted.casefold())


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _unquoted(text: str) -> str:
    """Each quoted stretch of a word without its quotes: `"short run"` → `short run`."""
    return re.sub(r""""([^"]*)"|'([^']*)'""", lambda m: m.group(1) if m.group(1) is not None else m.group(2), text)


def parse_filter(text: str, columns: Iterable[Column]) -> tuple[str, list[Condition]]:
    """The filter box's text: words that name a column with a comparison become conditions (all
    must hold); the rest, unquoted, is the text searched for. A column is named by its title
    (`arm=full`) or by its id as Columns… lists it (`run:arm=full`, `config:policy.lam=0.5`)."""
    columns = list(columns)
    titles = {c.id.casefold(): c for c in columns} | {c.title.casefold(): c for c in columns}
    words, conditions = [], []
    for word in _WORD.findall(text):
        m = _CONDITION.match(word)
        column = titles.get(_unquoted(m.group(1)).casefold()) if m else None
        if m and column is not None:
            conditions.append(Condition(column, m.group(2), _unquoted(m.group(3))))
        else:
            words.append(_unquoted(word))
    return " ".join(words), conditions


SEARCHED_FIELDS = ("name", "status", "preset", "id", "notes", "tags")


def accepts(row: Mapping[str, Any], search: str, conditions: Iterable[Condition], columns: Iterable[Column]) -> bool:
    """Whether History shows `row` for a filter parsed by `parse_filter`: every condition holds, and
    the searched text (ignoring case) is part of the run's name, status, preset, id, notes, tags or
    a chosen column's cell."""
    if not all(c.holds(row) for c in conditions):
        return False
    search = search.strip().casefold()
    if not search:
        return True
    chosen = (value_text(c, c.value(row)) for c in columns if c.kind != FIELD)
    hay = " ".join([*(str(row.get(k) or "") for k in SEARCHED_FIELDS), *chosen]).casefold()
    return search in hay
