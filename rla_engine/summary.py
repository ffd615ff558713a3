"""What a run amounts to, computed one way for every place that shows it (`rla runs`/`show`,
the history table, the comparison, the report): its duration and how its configuration differs
from other runs', and the final and best values of its headline metrics. Torch-free: run rows,
config dicts and numpy arrays."""
from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np

from . import metrics
from .config import current_settings
from .spread import mean_std
from .vocabulary import LIVE

# The headline values of a run: the columns of `rla runs` and of the console's history table.
SUMMARY_KEYS = (metrics.SUCCESS, metrics.EVAL_SUCCESS, metrics.MU, metrics.DIFFICULTY_MEAN)


LARGE = 1e15      # from here a number is written in e-notation: 1.5e+308, not 309 digits


def figure(v: float, decimals: int = 3, grouped: bool = True) -> str:
    """A measurement as text, the same in `rla runs`, History and the reports: `decimals`
    decimals, digits grouped from 1,000 (`grouped`), three significant digits from LARGE on —
    also for an integer no float can hold (10**400: "1e+400"); "?" for one that is not finite."""
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= LARGE:
        mantissa, _, exponent = f"{Decimal(v):.2e}".partition("e")     # Decimal: no float, no 4,300-digit limit
        return f"{mantissa.rstrip('0').rstrip('.')}e{exponent}"
    if not math.isfinite(v):
        return "?"
    if abs(v) >= LARGE:
        return f"{v:.3g}"
    return f"{v:,.0f}" if grouped and abs(v) >= 1000 else f"{v:.{decimals}f}"


def local_time(t: Any, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """A stored time as local clock text; "" for none, "?" for one no clock shows (a hand-edited 1e308, inf)."""
    if not isinstance(t, (int, float)) or isinstance(t, bool):
        return ""
    try:
        return time.strftime(fmt, time.localtime(t))
    except (OverflowError, OSError, ValueError):
        return "?"


def _time(run: Mapping[str, Any], key: str) -> float | None:
    """A time field of a run: a positive finite number, else None (never started, or a bundle
    or row edited by hand: a duration it cannot compute is not shown, never an exception)."""
    v = run.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0 else None


def run_duration(run: Mapping[str, Any], now: float | None = None) -> float | None:
    """Seconds from start to end. A live run ends, so far, at its last heartbeat (now before its
    first); a finished one at `ended_at` (its last heartbeat where an older version left that
    empty). None for a run that never started."""
    started = _time(run, "started_at")
    if started is None:
        return None
    end: float | None
    if run.get("status") in LIVE:
        end = _time(run, "heartbeat_at") or (time.time() if now is None else now)
    else:
        end = _time(run, "ended_at") or _time(run, "heartbeat_at")
    return end - started if end else None


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"policy": {"lam": 1}} → {"policy.lam": 1}; lists stay values; an empty section stays {}.
    A stored configuration that is not a table at all (a damaged one) is one value, under
    "(configuration)", so a comparison shows it as differing rather than failing."""
    if not isinstance(config, Mapping):
        return {"(configuration)": config}
    out: dict[str, Any] = {}
    for k, v in config.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """A stored configuration's settings by dotted key, under the keys this version reads them by
    (config.current_settings: a run stored by an earlier version lines up with a new one)."""
    return current_settings(flatten(config))


def config_differences(configs: list[Mapping[str, Any]]) -> list[str]:
    """Dotted keys whose values are not the same in every config (a key missing counts as
    differing), sorted: sections together, in the same order in every table."""
    flat = [settings(c) for c in configs]
    keys = sorted(set().union(*flat)) if flat else []
    return [k for k in keys
            if len({json.dumps(f[k], sort_keys=True, default=str) if k in f else None for f in flat}) > 1]


# The rows of a run's summary (the comparison's summary tab, the report's summary table): label,
# key, and whether the highest value means anything (a best μ or difficulty does not).
HEADLINE_ROWS = (("success (train)", metrics.SUCCESS, True), ("eval success", metrics.EVAL_SUCCESS, True),
                 ("outcome agreement", metrics.OUTCOME_AGREEMENT, True),
                 ("process agreement", metrics.PROCESS_AGREEMENT, True),
                 ("μ", metrics.MU, False), ("pool difficulty (mean)", metrics.DIFFICULTY_MEAN, False),
                 ("tasks in band", metrics.IN_BAND, False))


@dataclass(frozen=True)
class Reduction:
    """How a run's series of one metric becomes the one figure a table shows. Every table that
    shows such a figure (History, the comparison, the reports, `rla runs`/`show`, the ablation's
    results) computes it here and shows `definition` beside it (a header's tooltip, a caption),
    so "final" means one thing everywhere."""
    name: str           # the table's word for it: "final", "best", "mean of last 3"
    definition: str
    last: int           # how many of the last stored values are averaged; 0: the highest value

    def of(self, values: Sequence[float] | np.ndarray) -> float | None:
        if self.last == 0:
            return best_value(range(len(values)), values)[0]
        if self.last == 1:
            return final_value(values)
        return mean_std(list(values)[-self.last:]).mean    # None where no float holds the mean


FINAL = Reduction("final", "the value at the run's last committed iteration (a live run's latest)", 1)
BEST = Reduction("best", "the highest value the run reached (and the first iteration that reached it)", 0)


def mean_of_last(n: int) -> Reduction:
    """The mean of a run's last `n` stored values: one evaluation, or one judge estimate, is noisy."""
    return Reduction(f"mean of last {n}", f"the mean of the run's last {n} stored values "
                                          "(an iteration that logged no value is not counted)", n)


def definitions(reductions: Sequence[Reduction]) -> str:
    """One line that says what each figure in a table is: "final: …; best: …"."""
    seen = dict.fromkeys(reductions)
    return "; ".join(f"{r.name}: {r.definition}" for r in seen)


def final_value(values: Sequence[float] | np.ndarray) -> float | None:
    """The value at the last committed iteration (None for a key never logged, or a value that
    is no number at all)."""
    if not len(values):
        return None
    try:
        return float(values[-1])
    except (TypeError, ValueError):
        return None


def best_value(iterations: Sequence[int] | np.ndarray,
               values: Sequence[float] | np.ndarray) -> tuple[float | None, int | None]:
    """The highest value and the iteration that first reached it; (None, None) when no value is finite."""
    try:
        v = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):     # values that are no numbers (a bundle edited by hand)
        v = np.array([x if type(x) in (int, float) else np.nan for x in values], dtype=np.float64)
    if not np.isfinite(v).any():
        return None, None
    i = int(np.nanargmax(v))
    return float(v[i]), int(iterations[i])
