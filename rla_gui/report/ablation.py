"""An ablation group's figures: held-out success against environment steps, one mean
curve per arm with its seeds' standard deviation as a band, and the Theorem-1 check — the
empirical precision 𝒜 of every iteration of the `full` runs against the bound
1 − exp(−m(μ − 1)²/4) at that iteration's μ.

    python -m rla_gui.report.ablation --db PATH --group GROUP --out PREFIX

writes PREFIX.curves.png and PREFIX.theory.png; registered as the `ablation` entry point of
`rla.renderers`, which `rla ablate` runs after its table (so the engine never imports Qt).
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from ..headless import ensure_offscreen

ensure_offscreen()      # before Qt loads

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore

from rla_engine import metrics
from rla_engine.ablation.arms import ARMS, DIAGNOSTIC_ARMS, arm_of
from rla_engine.export.files import OutputError, check_outputs, write_atomic_many
from rla_engine.store import StoreError, open_store

from ..model.panel_spec import PALETTE
from ..model.mean_curve import mean_curve
from ..widgets.mean_band import add_band
from ..widgets.readout import LegendRow
from .charts import INK, SCALE, Chart, LegendEntry, _Canvas

GRID_POINTS = 60
ARM_COLOURS = [*PALETTE, "#7f7f7f"]
THEORY_ARM = "full"


def curves_chart(arms: dict[str, list[tuple[np.ndarray, np.ndarray]]], width: int = 820,
                 height: int = 420) -> Chart:
    """arms: arm → one (env steps, held-out success) pair per seed, at the evaluations."""
    end = max((float(x[-1]) for runs in arms.values() for x, _ in runs if len(x)), default=1.0)
    scale, unit = (1e6, " (millions)") if end >= 1e6 else (1e3, " (thousands)") if end >= 1e4 else (1.0, "")
    c = _Canvas(width, height, x_label="environment steps" + unit)
    grid = np.linspace(0.0, end, GRID_POINTS)
    for i, (arm, runs) in enumerate(arms.items()):
        colour = ARM_COLOURS[i % len(ARM_COLOURS)]
        x, mean, std = mean_curve(runs, grid)
        if not len(x):
            continue
        x = x / scale
        seeds = sum(len(r[0]) > 1 for r in runs)
        if seeds > 1 and len(x) > 1:
            add_band(c.plot, x, mean - std, mean + std, colour)
        label = f"{arm}, diagnostic" if arm in DIAGNOSTIC_ARMS else arm
        c.line(x, mean, colour, f"{label} ({seeds} seed{'s' if seeds > 1 else ''})", smooth=False)
    c.plot.setYRange(0, 1, padding=0.03)
    return _with_legend(c).chart("ablation-curves", "Held-out success against environment steps",
                   note="Mean over seeds; the band is ± one sample standard deviation (n − 1).")


def theory_chart(points: np.ndarray, m: int, width: int = 820, height: int = 420) -> Chart:
    """points [n, 2]: (μ, empirical 𝒜) per iteration of the `full` runs."""
    c = _Canvas(width, height, x_label="μ = p₊ + p₋")
    if len(points):
        c.plot.addItem(pg.ScatterPlotItem(points[:, 0], points[:, 1], size=4, pen=None,
                                          brush=pg.mkBrush(31, 119, 180, 60)))
        c.legend.append(LegendEntry("𝒜 of one iteration", "#1f77b4", "marker"))
    lo = min(0.5, float(points[:, 0].min())) if len(points) else 0.5
    hi = max(2.0, float(points[:, 0].max())) if len(points) else 2.0
    mu = np.linspace(lo, hi, 300)
    bound = np.where(mu > 1, 1 - np.exp(-m * (mu - 1) ** 2 / 4), 0.0)
    c.line(mu, bound, "#d62728", f"bound 1 − exp(−m(μ−1)²/4), m = {m}", smooth=False, width=2.0)
    c.plot.addItem(pg.InfiniteLine(pos=1.0, angle=90, pen=pg.mkPen("#7f7f7f", width=SCALE,
                                                                  style=QtCore.Qt.PenStyle.DotLine)))
    c.plot.setYRange(0, 1, padding=0.03)
    above = _share_above(points, m)
    note = (f"{len(points)} iterations; 𝒜 ≥ bound in {above:.0%} of them." if len(points)
            else "No iteration of a full run had both outcomes.")
    return _with_legend(c).chart("ablation-theory", "Theorem 1: empirical precision against the bound", note=note)


def _with_legend(c: _Canvas) -> _Canvas:
    """These figures stand alone (docs/RESULTS.md), so their legend is drawn into the image: in
    rows above the plot, where it hides no curve (a corner of the plot hid the bound's curve), the
    image made taller by the legend's height so the plot keeps its size."""
    legend = LegendRow(c.plot, text_size="9pt", text_colour=INK)
    for e in c.legend:
        sample = (pg.ScatterPlotItem(size=6, brush=pg.mkBrush(e.colour), pen=None) if e.style == "marker"
                  else pg.PlotDataItem(pen=pg.mkPen(e.colour, width=2 * SCALE)))
        legend.addItem(sample, e.label)
    # one layout pass gives the view box its width, from which the legend takes its columns;
    # their height is then known, not yet laid out
    c.plot.layout.activate()
    c.grow(math.ceil(legend.effectiveSizeHint(QtCore.Qt.SizeHint.PreferredSize).height()))
    return c


def _share_above(points: np.ndarray, m: int) -> float:
    if not len(points):
        return float("nan")
    mu, a = points[:, 0], points[:, 1]
    bound = np.where(mu > 1, 1 - np.exp(-m * (mu - 1) ** 2 / 4), 0.0)
    return float(np.mean(a >= bound))


def group_figures(db: Path, group: str) -> tuple[Chart, Chart]:
    store = open_store(db, create=False)
    runs = [r for r in store.list_runs(include_archived=True) if r.get("group_id") == group]
    if not runs:
        raise StoreError(f"no run of group {group!r} in {db}")
    arms: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    points, m = [], 3
    for run in sorted(runs, key=lambda r: r["id"]):
        cols = store.metrics_by_iteration(run["id"])
        evals = [(v[metrics.ENV_STEPS], v[metrics.EVAL_SUCCESS]) for _, v in sorted(cols.items())
                 if metrics.EVAL_SUCCESS in v and metrics.ENV_STEPS in v]
        arr = np.array(evals, dtype=float).reshape(-1, 2)
        arms.setdefault(arm_of(run), []).append((arr[:, 0], arr[:, 1]))
        if arm_of(run) == THEORY_ARM:
            m = int(store.run_config(run["id"])["judge"]["m"])
            points += [(v[metrics.MU], v[metrics.PRECISION]) for v in cols.values()
                       if metrics.MU in v and metrics.PRECISION in v]
    order = {arm: i for i, arm in enumerate(ARMS)}        # the table's order, unknown names last
    arms = dict(sorted(arms.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))
    return curves_chart(arms), theory_chart(np.array(points, dtype=float).reshape(-1, 2), m)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="rla-ablation-figures", description=__doc__.splitlines()[0])
    p.add_argument("--db", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--out", required=True, help="prefix: PREFIX.curves.png and PREFIX.theory.png")
    p.add_argument("--force", action="store_true", help="replace existing files")
    a = p.parse_args(argv)
    paths = [Path(f"{a.out}.{suffix}.png") for suffix in ("curves", "theory")]
    try:     # a refused target costs no drawing: checked again when written (a name may appear meanwhile)
        check_outputs(paths, a.force)
        charts = group_figures(Path(a.db), a.group)
    except (StoreError, OutputError) as e:
        print(f"rla-ablation-figures: {e}", file=sys.stderr)
        return 2
    try:     # export's rules: regular files only, never through a link, 0600, replaced only if forced
        write_atomic_many({path: chart.png for path, chart in zip(paths, charts)}, a.force)
    except OutputError as e:
        print(f"rla-ablation-figures: {e}", file=sys.stderr)
        return 2
    for path, chart in zip(paths, charts):
        print(f"wrote {path} ({chart.note})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
