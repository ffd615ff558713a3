"""Report layout in use: no PDF page holds only a footer, counts read as counts, and
no legend drawn into a figure covers its data.

The reports are made from the recorded runs (tests/data/make_recorded_runs.py); the PDFs are
read back with Qt's own PDF reader.
"""
from __future__ import annotations

import html
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from rla_gui.report import ablation, charts
from rla_gui.report.html import render_html
from rla_gui.report.pdf import write_pdf

PAGE_NUMBER = re.compile(r"\d+")


def pdf_pages(path: Path) -> list[list[str]]:
    """Each page's non-empty text lines."""
    from PySide6.QtPdf import QPdfDocument
    doc = QPdfDocument(None)
    doc.load(str(path))
    assert doc.status() == QPdfDocument.Status.Ready, doc.status()
    return [[line.strip() for line in doc.getAllText(i).text().splitlines() if line.strip()]
            for i in range(doc.pageCount())]


@pytest.fixture(scope="module")
def group(recorded):
    return recorded("recorded_group")


@pytest.fixture
def quick_charts(monkeypatch, group):
    """The charts drawn once: the page layout, which these tests vary, does not depend on them."""
    runs = {b["run"]["id"]: charts.run_charts(b) for b in group}
    overlay = charts.comparison_charts(group[:2])
    monkeypatch.setattr(charts, "run_charts", lambda bundle, *a, **k: runs[bundle["run"]["id"]])
    monkeypatch.setattr(charts, "comparison_charts", lambda *a, **k: overlay)


def environment(rows: int) -> dict:
    """The report's last section, as long as asked: it moves the end of the document down."""
    return {f"package {i}": f"{i}.0" for i in range(rows)}


@pytest.mark.parametrize("runs", [1, 2], ids=["run", "comparison"])
def test_no_pdf_page_holds_only_a_footer(group, quick_charts, tmp_path, runs):
    """Where the last section just fills a page, whatever closes the document must not be pushed
    alone onto a page of its own. The place is found by its page count: the fewest rows of the
    last section that take one page more."""
    bundles = group[:runs]
    path = tmp_path / "report.pdf"

    def pages(rows: int) -> list[list[str]]:
        write_pdf(bundles, path, environment=environment(rows))
        return pdf_pages(path)

    base = len(pages(0))
    lo, hi = 0, 80          # a page holds fewer than 80 rows of the environment table
    assert len(pages(hi)) > base
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if len(pages(mid)) == base else (lo, mid)
    for rows in (hi, hi + 1, hi + 2):
        shown = pages(rows)
        for number, lines in enumerate(shown, start=1):
            body = [line for line in lines if not PAGE_NUMBER.fullmatch(line)]
            assert body and not all(line.lower().startswith("made by") for line in body), (rows, number, lines)
        assert any("made by RLAnything" in line for line in shown[0])    # still said, on the first page


class Tables(HTMLParser):
    """The text of every table cell, by table class."""

    def __init__(self, markup: str):
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[str]]] = {}
        self._rows: list[list[str]] | None = None
        self._cell: list[str] | None = None
        self.feed(markup)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._rows = self.tables.setdefault(dict(attrs).get("class") or "", [])
        elif tag == "tr" and self._rows is not None:
            self._rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._rows:
            self._rows[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


@pytest.mark.parametrize("runs", [1, 2], ids=["run", "comparison"])
def test_report_summary_shows_counts_as_whole_numbers(group, quick_charts, runs):
    rows = {r[0]: r[1:] for r in Tables(render_html(group[:runs])).tables["summary"] if r}
    for cell in rows["variants accepted / rejected"][:runs]:
        assert re.fullmatch(r"[\d,]+ / [\d,]+", cell), cell
    for cell in rows["environment steps"][:runs]:
        assert re.fullmatch(r"[\d,]+", cell), cell


def test_ablation_legends_sit_above_the_plot(monkeypatch):
    """The ablation figures draw their legend into the image (they stand alone in docs/): it
    must be outside the plot's data area, all of it inside the image."""
    laid_out = []
    render = charts._Canvas.png

    def spy(canvas):
        canvas.plot.layout.activate()       # as png() does first: the layout it draws
        legend, vb = canvas.plot.legend, canvas.plot.vb
        laid_out.append((legend.sceneBoundingRect(), vb.sceneBoundingRect(), canvas.width, canvas.height))
        return render(canvas)
    monkeypatch.setattr(charts._Canvas, "png", spy)
    rng = np.random.default_rng(0)
    x = np.linspace(0, 2e6, 40)
    arms = {f"arm number {i}": [(x, np.clip(0.3 + 0.05 * i + rng.normal(0, 0.02, 40), 0, 1)) for _ in range(2)]
            for i in range(10)}
    ablation.curves_chart(arms)
    mu = rng.uniform(0.9, 1.8, 300)
    ablation.theory_chart(np.c_[mu, np.clip(mu - 0.6, 0, 1)], 3)
    assert len(laid_out) == 2
    for legend, box, width, height in laid_out:
        assert not legend.isEmpty() and not legend.intersects(box), (legend, box)
        assert legend.left() >= 0 and legend.top() >= 0 and legend.right() <= width and legend.bottom() <= height


def as_ablation_arm(bundle: dict, budget: int) -> dict:
    """`bundle` as `rla ablate` configures an arm: the budget of environment steps ends it."""
    from rla_engine.ablation.arms import NO_ITERATION_LIMIT
    out = {**bundle, "run": {**bundle["run"], "config": {**bundle["run"]["config"]}}}
    out["run"]["config"]["run"] = {**out["run"]["config"]["run"], "iterations": NO_ITERATION_LIMIT,
                                   "env_step_budget": budget}
    return out


def test_an_ablation_arm_reports_its_steps_against_its_budget_not_iterations_against_a_ceiling(group, quick_charts):
    from rla_gui.report import groups
    arms = [as_ablation_arm(b, budget=b["iterations"][-1]["env_steps"]) for b in group[:2]]
    wanted = [f"{b['run']['iteration']:,} iterations, {b['iterations'][-1]['env_steps']:,} of "
              f"{b['iterations'][-1]['env_steps']:,} env steps" for b in arms]
    single = Tables(render_html(arms[:1])).tables["kv"]
    assert ["progress", wanted[0]] in single
    rows = {r[0]: r[1:] for r in Tables(render_html(arms)).tables["summary"] if r}
    assert rows["progress"] == wanted
    runs = Tables(groups.render_html(arms, "config:policy.lam")).tables["runs"]
    assert [r[4] for r in runs[1:]] == wanted
    for markup in (render_html(arms[:1]), render_html(arms), groups.render_html(arms, "config:policy.lam")):
        assert "10,000,000" not in markup


def test_summary_tables_say_what_final_and_best_mean(group, quick_charts):
    from rla_engine.summary import BEST, FINAL, definitions
    from rla_gui.report import groups
    meaning = html.escape(definitions([FINAL, BEST]), quote=True)
    for markup in (render_html(group[:1]), render_html(group[:2])):
        assert meaning in markup
    grouped = groups.render_html(group, "config:policy.lam")
    assert meaning in grouped and "the sample standard deviation (n − 1)" in grouped
