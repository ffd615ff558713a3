"""Mean ± sample standard deviation (n − 1) of a group's values: History's groups, the group
comparison and its report, the ablation's results table. Computed one way, and never raising.

Any value a store or an export can hold is valid input (a hand-edited row, an imported bundle), so:

- None, NaN and what is no number are missing: skipped, as History leaves such a cell blank or "?".
- Finite values are scaled by a power of two near the largest magnitude before they are summed:
  1.5e308 and 1.6e308 have a mean (their plain sum overflows a float), ±1e200 a standard
  deviation (their squares do). The scaling is exact, so ordinary values give the same bits as
  `fsum(values) / n`.
- An infinite value, or an integer too large for a float (10**400), leaves no mean and no
  spread: the figure is shown as "?" and `problem` says why (the text of its tooltip). So does a
  standard deviation above the largest float (values near ±1.8e308): the mean is still shown.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

UNKNOWN = "?"


@dataclass(frozen=True)
class Spread:
    mean: float | None       # None: no value, or none that a float can hold (see `problem`)
    std: float | None        # None: fewer than two values, or too large for a float (see `problem`)
    n: int = 0               # the values counted (missing ones are not)
    problem: str = ""        # why a figure is "?"; "" when every figure is shown

    def text(self, figure: Callable[[float], str]) -> str:
        """"mean ± std" with each number written by `figure`; "?" for one that cannot be shown; "" for no values."""
        if not self.n:
            return ""
        mean = UNKNOWN if self.mean is None else figure(self.mean)
        if self.n < 2:
            return mean
        return f"{mean} ± {UNKNOWN if self.std is None else figure(self.std)}"


def _as_float(v: Any) -> float | int | None:
    """A value as a float; the int itself when no float can hold it; None when it is missing or no number."""
    if isinstance(v, bool):
        return float(v)        # a switch counts as 0/1, as History sorts it
    if isinstance(v, int):
        try:
            return float(v)
        except OverflowError:
            return v
    if isinstance(v, float) and not math.isnan(v):
        return v
    return None


def mean_std(values: Iterable[Any]) -> Spread:
    finite: list[float] = []
    infinite = huge = 0
    for v in values:
        x = _as_float(v)
        if x is None:
            continue
        if isinstance(x, int):
            huge += 1
        elif math.isinf(x):
            infinite += 1
        else:
            finite.append(x)
    n = len(finite) + infinite + huge
    if infinite or huge:
        what = ("infinite" if not huge else "too large for a float" if not infinite
                else "infinite or too large for a float")
        return Spread(None, None, n, f"{infinite + huge} of {n} values {'is' if infinite + huge == 1 else 'are'} "
                                     f"{what}: no mean or standard deviation")
    if not finite:
        return Spread(None, None, 0)
    exponent = math.frexp(max(map(abs, finite)))[1]      # 0 when every value is 0
    scaled = [math.ldexp(v, -exponent) for v in finite]   # each below 1 in magnitude: no sum overflows
    centre = math.fsum(scaled) / n
    mean = math.ldexp(centre, exponent)                   # |mean| ≤ the largest |value|: a float holds it
    if n < 2:
        return Spread(mean, None, n)
    deviation = math.sqrt(math.fsum((v - centre) ** 2 for v in scaled) / (n - 1))
    try:
        return Spread(mean, math.ldexp(deviation, exponent), n)
    except OverflowError:
        return Spread(mean, None, n, "the standard deviation is too large for a float (above 1.8e308)")
