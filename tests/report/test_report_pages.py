"""The PDF report's pages in use: a heading never ends a page, its chart on the next, and no page
holds only a chart's legend and caption (the rest of the chart on the page before).

The run report of a recorded run (tests/data/make_recorded_runs.py) with notes of 0, 1, 2, …
lines: each line moves everything after the notes down, so over the range every chart's title,
image and caption meet a page's foot. The PDFs are read back with Qt's own PDF reader.
"""
from __future__ import annotations

import copy
import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from test_report_layout import PAGE_NUMBER, pdf_pages

from rla_gui.report import charts
from rla_gui.report.html import SYMBOLS
from rla_gui.report.pdf import write_pdf

# the run report's headings that a chart or a table follows on the same page
SECTION_HEADINGS = ("Training curves", "Eval success by tier", "Alerts", "Final task pool")
NOTE_LINES = range(0, 44)       # more than a page's worth of chart: every chart meets a page's foot


@pytest.fixture(scope="module")
def run(recorded):
    return recorded("recorded_group")[0]


def with_notes(bundle: dict, lines: int) -> dict:
    out = copy.deepcopy(bundle)
    out["run"]["notes"] = "\n".join(f"note line {i}" for i in range(lines)) or None
    return out


def test_no_page_ends_with_a_heading_or_holds_only_a_caption(run, monkeypatch, tmp_path):
    drawn = charts.run_charts(run)
    monkeypatch.setattr(charts, "run_charts", lambda bundle, *a, **k: drawn)    # the layout varies, not the charts
    headings = {c.title for c in drawn} | set(SECTION_HEADINGS)
    captions = tuple(SYMBOLS.values()) + tuple(c.note[:40] for c in drawn if c.note)
    path = tmp_path / "report.pdf"
    for lines in NOTE_LINES:
        write_pdf([with_notes(run, lines)], path, environment={"python": "3"})
        for number, page in enumerate(pdf_pages(path), start=1):
            body = [line for line in page if not PAGE_NUMBER.fullmatch(line)]
            assert body, (lines, number, page)
            assert body[-1] not in headings, f"{lines} note lines: page {number} ends with a heading: {body[-4:]}"
            assert not all(line.startswith(captions) for line in body), \
                f"{lines} note lines: page {number} holds only a caption: {body}"
