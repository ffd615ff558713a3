"""A group of runs as one curve: the mean over its runs with ± one sample standard deviation,
computed once for every view that draws it (the group comparison, the ablation figures, the
group report). Qt-free: numpy arrays in, numpy arrays out."""
from __future__ import annotations

import numpy as np

GRID_POINTS = 400      # where the runs' curves are resampled to be averaged


def mean_curve(runs: list[tuple[np.ndarray, np.ndarray]], grid: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, mean, sample std) of the runs' curves, interpolated on `grid`, where every run has
    a value (a mean over the runs still going would jump as they drop out)."""
    ys = [np.interp(grid, x, y, left=np.nan, right=np.nan) for x, y in runs if len(x) > 1]
    if not ys:
        return np.array([]), np.array([]), np.array([])
    stack = np.vstack(ys)
    reached = np.all(np.isfinite(stack), axis=0)
    stack = stack[:, reached]
    # scaled by a power of two (exact) so that values near the largest float (an imported 1.5e308)
    # have a mean; a spread beyond what a float holds is cut where the band would leave the floats
    exponent = int(np.frexp(np.max(np.abs(stack)))[1]) if stack.size else 0
    scaled = np.ldexp(stack, -exponent)
    with np.errstate(over="ignore"):
        mean = np.ldexp(scaled.mean(0), exponent)
        std = np.ldexp(scaled.std(0, ddof=1), exponent) if len(ys) > 1 else np.zeros(stack.shape[1])
    return grid[reached], mean, np.minimum(std, np.finfo(np.float64).max - np.abs(mean))


def grid_of(runs: list[tuple[np.ndarray, np.ndarray]], points: int = GRID_POINTS) -> np.ndarray:
    """Where to average the runs: every x any of them has (runs logged at the same iterations are
    averaged at their own points, not between them), or `points` evenly spaced x over the same
    span where that would be more."""
    xs = [x[np.isfinite(x)] for x, _ in runs if len(x) > 1]
    if not xs:
        return np.array([])
    grid = np.unique(np.concatenate(xs))
    return grid if len(grid) <= points else np.linspace(grid[0], grid[-1], points)
