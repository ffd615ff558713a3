"""The report of a group comparison (History grouped by a column, groups compared; File ▸ Export…
with that tab in view): the runs grouped by the column again, by History's own rules
(panels.run_columns), then per group its runs, the mean ± std of the headline values, the
configuration fields that differ between groups, and one chart per key with each group's mean
curve and its ± one standard deviation band (the ablation figures' look, in the comparison's colours).

    python -m rla_gui.report --group-by COLUMN --format html|pdf --out PATH RUN_ID…
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from rla_engine import metrics
from rla_engine.export.files import atomic_path, write_atomic
from rla_engine.summary import HEADLINE_ROWS, config_differences, settings

from ..model.comparison import colour_of
from ..model.run_columns import BEST, CONFIG, FINAL, Column, group_rows, mean_std, mean_std_text, parse
from ..model.run_data import X_AXES
from ..model.mean_curve import grid_of, mean_curve
from ..widgets.mean_band import add_band
from . import charts, sections
from .escape import DASH, esc, num, table, value_text
from .html import _Doc, data_uri
from .pdf import document, print_pdf

Groups = list[tuple[str, list[sections.Facts]]]
SPREAD = ("each cell is the mean over the group's runs ± the sample standard deviation (n − 1) of their values; "
          "a group of one run shows its value alone")


def column_of(group_by: str) -> Column:
    column = parse(group_by)
    if column is None:
        raise ValueError(f"--group-by {group_by!r}: not a history column (e.g. config:policy.lam, run:arm, "
                         "final:eval/success_rate)")
    return column


def grouped(bundles: list[dict], column: Column) -> Groups:
    """The runs of `bundles` in groups of equal value in `column` (History's groups of these runs),
    in the order the runs came: the console passes them group by group, so each group keeps its
    colour from the tab."""
    facts = {str(b["run"]["id"]): sections.Facts(b) for b in bundles}
    rows = []
    for run_id, f in facts.items():
        value = (settings(f.config).get(column.key) if column.kind == CONFIG else f.final(column.key)
                 if column.kind == FINAL else f.best(column.key)[0] if column.kind == BEST else None)
        rows.append({**f.run, "id": run_id, "columns": {column.id: value}})
    return [(g.label, [facts[r["id"]] for r in g.members]) for g in group_rows(rows, column, by_value=False)]


def group_charts(groups: Groups, width: int = 430, height: int = 240) -> list[charts.Chart]:
    """One chart per compared key: each group's mean and band, against environment steps when
    every run counted them (the ablation figures' axis), else iterations."""
    # each run's RunData (sections.Facts reads it): the console's container places the x-axis its way
    datas = [[f.data for f in facts] for _, facts in groups]
    x_axis = X_AXES[1] if all(metrics.ENV_STEPS in f.data for _, facts in groups for f in facts) else X_AXES[0]
    out = []
    for key in charts.COMPARE_KEYS:
        if not any(key in d.columns for ds in datas for d in ds):
            continue
        c = charts._Canvas(width, height, x_label="environment steps" if x_axis == X_AXES[1] else "iteration")
        for i, ((label, facts), ds) in enumerate(zip(groups, datas)):
            colour = colour_of(i)
            runs = [d.xy(key, x_axis) for d in ds]
            x, mean, std = mean_curve(runs, grid_of(runs))
            if not len(x):
                continue
            if sum(len(r[0]) > 1 for r in runs) > 1 and len(x) > 1:
                add_band(c.plot, x, mean - std, mean + std, colour)
            c.line(x, mean, colour, f"{label} ({len(facts)})", smooth=False)
        out.append(c.chart(f"grp-{key.replace('/', '-')}", charts.COMPARE_TITLES.get(key, key),
                           note="Mean over the group's runs; the band is ± one sample standard deviation (n − 1)."))
    return out


def group_label(i: int, label: str) -> str:
    return f'<span style="color:{colour_of(i)}">■</span>&nbsp;{esc(label)}'


def stat_cell(values: Iterable) -> str:
    """A group's "mean ± std"; a "?" says why on hover (the values overflow a float, one is infinite)."""
    spread = mean_std(values)
    text = esc(mean_std_text(spread))
    return f'<span title="{esc(spread.problem)}">{text}</span>' if spread.problem else text


def summary_table(groups: Groups) -> str:
    head = [""] + [group_label(i, label) for i, (label, _) in enumerate(groups)]
    rows = [[esc("runs")] + [num(len(facts)) for _, facts in groups]]
    for label, key, has_best in HEADLINE_ROWS:
        rows.append([esc(f"{label} — final")] + [stat_cell(f.final(key) for f in facts) for _, facts in groups])
        if has_best:
            rows.append([esc(f"{label} — best")] + [stat_cell(f.best(key)[0] for f in facts) for _, facts in groups])
    rows.append([esc("environment steps")] + [stat_cell(f.env_steps() for f in facts) for _, facts in groups])
    return table(head, rows, "summary", numeric=tuple(range(1, len(head)))) + sections.meanings(SPREAD)


def config_table(groups: Groups) -> str:
    """The fields that differ between any two runs: each group's value, or its values where its runs differ."""
    facts = [f for _, fs in groups for f in fs]
    keys = config_differences([f.config for f in facts])
    if not keys:
        return '<p class="muted">The runs share one configuration.</p>'
    rows = []
    for key in keys:
        cells = []
        for _, fs in groups:
            values = list(dict.fromkeys(value_text(settings(f.config).get(key, DASH)) for f in fs))
            cells.append(values[0] if len(values) == 1 else f"<i>{len(values)} values:</i> " + ", ".join(values))
        rows.append([f"<code>{esc(key)}</code>", *cells])
    return table(["key"] + [group_label(i, label) for i, (label, _) in enumerate(groups)], rows, "config-diff")


def runs_table(groups: Groups) -> str:
    rows = [[group_label(i, label), esc(f.name), f"<code>{esc(f.run.get('id'))}</code>",
             sections.badge(f.run.get("status")), esc(f.progress())]
            for i, (label, facts) in enumerate(groups) for f in facts]
    return table(["group", "run", "id", "status", "progress"], rows, "runs")


def compose(bundles: list[dict], group_by: str, environment: dict | None, *,
            image: Callable[[charts.Chart], str], qt: bool) -> str:
    if not bundles:
        raise ValueError("a report needs at least one run")
    column = column_of(group_by)
    groups = grouped(bundles, column)
    doc = _Doc(image, qt)
    doc.section("title", "", page_break=False)
    doc.add(sections.kicker("RLAnything group comparison report"),
            f"<h1>{len(groups)} groups by {esc(column.title)}</h1>",
            f'<p class="muted">{len(bundles)} runs, grouped by <code>{esc(column.id)}</code>.</p>')
    doc.section("summary", "Summary: mean ± standard deviation per group", page_break=False)
    doc.add(summary_table(groups))
    doc.section("config-diff", "Configuration differences", page_break=False)
    doc.add(config_table(groups))
    doc.section("charts", "Training curves: group means with ± one standard deviation")
    doc.figures(group_charts(groups))
    doc.section("runs", "The runs of each group")
    doc.add(runs_table(groups))
    doc.section("environment", "Environment", page_break=False)
    doc.add(sections.environment_block([f for _, fs in groups for f in fs], environment))
    return doc.html(title(bundles, group_by))


def title(bundles: list[dict], group_by: str) -> str:
    return f"RLAnything group comparison — {len(bundles)} runs by {column_of(group_by).title}"


def render_html(bundles: list[dict], group_by: str, environment: dict | None = None) -> str:
    return compose(bundles, group_by, environment, image=data_uri, qt=False)


def write_pdf(bundles: list[dict], group_by: str, path: Path, environment: dict | None = None) -> None:
    doc = document(lambda image: compose(bundles, group_by, environment, image=image, qt=True),
                   title(bundles, group_by))
    print_pdf(doc, path, title(bundles, group_by))


def render(group_by: str) -> Callable[[str, list[dict], Path, bool], None]:
    """The renderer of a group comparison's report (rla_engine.export.Render), atomic as the run report's."""
    def write(fmt: str, bundles: list[dict], path: Path, force: bool) -> None:
        if fmt == "html":
            write_atomic(path, render_html(bundles, group_by), force)
            return
        with atomic_path(path, force) as tmp:
            write_pdf(bundles, group_by, tmp)
            if tmp.stat().st_size == 0:
                raise RuntimeError("the PDF writer produced an empty file")
    return write
