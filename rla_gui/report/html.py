"""The HTML report: one self-contained file for one run, or a comparison of several.

Self-contained means no reference leaves the file: the style sheet is inline and the charts are
PNG data URIs (see charts.py for why not SVG). `compose` builds the same document for the PDF
(pdf.py), where Qt's rich-text engine lays it out; the `qt` flag only swaps the style sheet,
image references, page breaks and a figure's blocks, so both formats say the same thing.

Every user-provided string (names, notes, tags, task parameters, critic summaries, event
payloads, errors, config values) reaches the markup through escape.esc / value_text.
"""
from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Callable, Sequence

from rla_engine import metrics
from rla_engine.summary import config_differences, settings
from rla_engine.vocabulary import TaskStatus

from ..model.panel_spec import HEALTH_PANELS
from . import charts
from . import coding
from . import sections
from . import transcript
from .escape import DASH, duration, esc, kv_table, num, table, value_text, when

CSS = """
body{font:14px/1.45 "Segoe UI",Roboto,"DejaVu Sans",Arial,sans-serif;color:#222;margin:0;background:#eef0f3}
.page{max-width:980px;margin:0 auto;padding:24px 32px 48px;background:#fff}
h1{font-size:26px;margin:2px 0 6px}
h2{font-size:19px;border-bottom:2px solid #e1e4e8;padding-bottom:4px;margin:34px 0 10px}
h3{font-size:15px;margin:18px 0 4px}
.kicker{color:#667;text-transform:uppercase;letter-spacing:.08em;font-size:12px;margin:0}
.kicker .made{text-transform:none;letter-spacing:0}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0 12px}
th,td{border:1px solid #dde1e6;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f2f4f7;font-weight:600}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.group{background:#f7f8fa;font-weight:600}
table.kv td:first-child{white-space:nowrap;color:#444}
table.layout,table.layout>tbody>tr>td{border:none;padding:0 22px 0 0;vertical-align:top}
table.layout h3{margin-top:6px}
table.layout h2{margin-top:14px}
.badge{padding:1px 9px;border-radius:10px;color:#fff;font-size:12px;font-weight:600}
.figure{margin:6px 0 16px;break-inside:avoid}
.figure img{width:100%;height:auto;border:1px solid #e6e8eb}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:4px 16px}
.legend{font-size:12.5px;margin:2px 0}
.legend span.e{margin-right:14px;white-space:nowrap}
.note,.muted{color:#667;font-size:12.5px}
.notes{white-space:pre-wrap;background:#f7f8fa;border-left:3px solid #c9ced6;padding:6px 10px;margin:8px 0}
.error{white-space:pre-wrap;background:#fdecea;border-left:3px solid #d62728;padding:6px 10px}
code{font-family:"DejaVu Sans Mono",Consolas,monospace;font-size:12.5px}
pre.program{font:12px/1.35 "DejaVu Sans Mono",Consolas,monospace;background:#f7f8fa;border:1px solid #e1e4e8;
padding:6px 10px;white-space:pre-wrap;overflow-wrap:anywhere}
@media print{body{background:#fff}.page{max-width:none;padding:0}h2{break-before:page}}
"""

# Qt's rich text reads a subset of CSS 2.1: no grid, no max-width; tables take their borders and
# paddings from these rules (and from the cellpadding attributes the table helper writes).
QT_CSS = """
body{font-family:"DejaVu Sans",Arial,sans-serif;font-size:9pt;color:#222}
h1{font-size:18pt;margin-bottom:4px} h2{font-size:13pt;margin-top:14px;margin-bottom:6px;color:#1a3d66}
h3{font-size:10.5pt;margin-top:10px;margin-bottom:2px}
.kicker{color:#667;font-size:8pt}
table{border-collapse:collapse;margin-bottom:8px}
th{background-color:#eef1f5;font-weight:bold;border:1px solid #c8ced6;font-size:8pt}
td{border:1px solid #d5dae0;font-size:8pt}
td.group{background-color:#f5f6f8;font-weight:bold}
.legend{font-size:8pt} .note,.muted{color:#667;font-size:8pt}
.notes{background-color:#f5f6f8} .error{background-color:#fdecea;color:#8a1f1f}
.badge{color:#ffffff;font-weight:bold}
code{font-family:"DejaVu Sans Mono",monospace}
pre.program{font-family:"DejaVu Sans Mono",monospace;font-size:8pt;background-color:#f5f6f8}
"""

SECTIONS = ("title", "summary", "charts", "eval-tiers", "alerts", "config", "events", "adaptation", "pool",
            "environment")
COMPARISON_SECTIONS = ("title", "summary", "config-diff", "charts", "eval-tiers", "config", "alerts", "runs",
                       "environment")
SYMBOLS = {"line": "━━", "dash": "╍╍", "band": "██", "marker": "┆", "triangle": "▲", "cross": "✕"}
QT_WIDTH = 640        # the text width of an A4 page with 2 cm margins, in Qt's 96-dpi units


def render_html(bundles: list[dict], environment: dict | None = None, added: Sequence[Sequence[str]] = ()) -> str:
    """The report as one HTML document: one bundle → a run report, several → a comparison.
    `added`: the console's added charts (each a list of keys)."""
    return compose(bundles, environment, image=data_uri, qt=False, added=added)


def data_uri(chart: charts.Chart) -> str:
    return "data:image/png;base64," + base64.b64encode(chart.png).decode("ascii")


class _Doc:
    def __init__(self, image: Callable[[charts.Chart], str], qt: bool):
        self.image, self.qt = image, qt
        self.parts: list[str] = []
        self.sections = 0

    def add(self, *markup: str) -> None:
        self.parts.extend(markup)

    def section(self, sid: str, title: str, page_break: bool = True) -> None:
        """A section heading; in the PDF the big sections start on a new page."""
        if self.sections:
            self.add("</div>")
        self.sections += 1
        brk = ' style="page-break-before: always"' if self.qt and page_break else ""
        self.add(f'<div class="section" id="{sid}">', f"<h2{brk}>{esc(title)}</h2>" if title else "")

    def figure(self, chart: charts.Chart, width: int | None = None) -> str:
        w = width or (QT_WIDTH if self.qt else chart.width)
        h = round(w * chart.height / chart.width)
        gap = "&nbsp;&nbsp; " if self.qt else " "     # Qt ignores the entries' CSS margin
        legend = "".join(f'<span class="e"><span style="color:{e.colour}">{SYMBOLS.get(e.style, "━━")}</span>'
                         f"&nbsp;{esc(e.label).replace(' ', '&nbsp;')}</span>{gap}" for e in chart.legend)
        img = f'<img src="{self.image(chart)}" width="{w}" height="{h}" alt="{esc(chart.title)}">'
        if self.qt:
            # in blocks of their own: the title, the image, and the legend with the caption, which
            # the PDF's pages keep together (pdf.keep_with_next: a heading and an image each keep
            # the block after them on their page)
            note = f'<br><span class="note">{esc(chart.note)}</span>' if chart.note else ""
            return (f'<div class="figure" id="fig-{esc(chart.id)}"><h3>{esc(chart.title)}</h3><p>{img}</p>'
                    f'<p class="legend">{legend}{note}</p></div>')
        note = f'<p class="note">{esc(chart.note)}</p>' if chart.note else ""
        return (f'<div class="figure" id="fig-{esc(chart.id)}"><h3>{esc(chart.title)}</h3>{img}'
                f'<p class="legend">{legend}</p>{note}</div>')

    def figures(self, row: list[charts.Chart]) -> None:
        """Small charts two to a row: a CSS grid in a browser, a table row in Qt."""
        if not self.qt:
            self.add('<div class="grid">', *(self.figure(c) for c in row), "</div>")
            return
        # six to a page, each page its own table: Qt would part a heading from its chart otherwise
        for page in range(0, len(row), 6):
            brk = ' style="page-break-before: always"' if page else ""
            self.add(f'<table width="100%" cellspacing="0" cellpadding="2" class="figs"{brk}>')
            for i in range(page, min(page + 6, len(row)), 2):
                cells = "".join(f'<td width="50%" style="border:none">{self.figure(c, QT_WIDTH // 2 - 8)}</td>'
                                for c in row[i:i + 2])
                self.add(f"<tr>{cells}</tr>")
            self.add("</table>")

    def html(self, title: str) -> str:
        if self.sections:
            self.add("</div>")
        css = QT_CSS if self.qt else CSS
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                f"<title>{esc(title)}</title><style>{css}</style></head>"
                f"<body><div class=\"page\">{''.join(self.parts)}</div></body></html>\n")


def compose(bundles: list[dict], environment: dict | None, *, image: Callable[[charts.Chart], str],
            qt: bool, added: Sequence[Sequence[str]] = ()) -> str:
    if not bundles:
        raise ValueError("a report needs at least one run")
    facts = [sections.Facts(b) for b in bundles]
    doc = _Doc(image, qt)
    if len(bundles) == 1:
        _single(doc, facts[0], environment, added)
        return doc.html(f"RLAnything report — {facts[0].name}")
    _comparison(doc, facts, environment, added)
    return doc.html(f"RLAnything comparison — {len(facts)} runs")


def _single(doc: _Doc, f: sections.Facts, environment: dict | None, added: Sequence[Sequence[str]]) -> None:
    by_id = {c.id: c for c in charts.run_charts(f.bundle, f.data)}
    doc.section("title", "", page_break=False)
    doc.add(sections.title_block(f))     # holds the summary section too
    # PDF pages: the charts flow on from under the summary, each with its title and caption on
    # one page (pdf.keep_with_next moves a chart that would be parted to the next page)
    doc.section("charts", "Training curves", page_break=False)
    doc.add(*(doc.figure(by_id[cid]) for cid in ("policy", "agreement", "balance", "difficulty", "losses")))
    doc.section("eval-tiers", "Eval success by tier", page_break=False)
    doc.add(doc.figure(by_id["eval-tiers"]), sections.tier_table(f))
    doc.section("alerts", "Alerts", page_break=False)
    doc.add(sections.alerts_block(f.bundle))
    if coding.is_coding(f):     # the programs' isolation, the test generator, one program's tests
        doc.section("coding", "Coding: sandbox and generated tests")
        doc.add(coding.coding_block(f))
    game = transcript.transcript_block(f.bundle)
    if game:                    # a text game's newest episode, turn by turn
        doc.section("episode", "Last episode")
        doc.add(game)
    health = charts.panel_charts(f.bundle, f.data, HEALTH_PANELS[1:])
    if health:
        doc.section("health", "Training health and system")
        doc.figures(health)
    mine = charts.panel_charts(f.bundle, f.data, charts.added_panels(added))
    if mine:
        doc.section("added", "Added charts")
        doc.figures(mine)
    doc.section("config", "Configuration")
    doc.add(sections.config_table(f.config))
    doc.section("events", "Event timeline")
    limits = dict(max_rows=sections.PDF_MAX_ROWS, chunk=sections.PDF_CHUNK) if doc.qt else {}
    doc.add(sections.events_block(f.bundle, **limits))
    doc.section("adaptation", "Environment adaptation")
    doc.add(sections.adaptation_block(f.bundle, **limits))
    doc.section("pool", "Final task pool", page_break=False)
    doc.add(sections.pool_table(f.bundle))
    doc.section("environment", "Environment", page_break=False)
    doc.add(sections.environment_block([f], environment))


def _comparison(doc: _Doc, facts: list[sections.Facts], environment: dict | None,
                added: Sequence[Sequence[str]]) -> None:
    overlays = charts.comparison_charts([f.bundle for f in facts], [f.data for f in facts],
                                        extra_keys=[k for keys in added for k in keys])
    doc.section("title", "", page_break=False)
    doc.add(sections.kicker("RLAnything comparison report"),
            f"<h1>Comparison of {len(facts)} runs</h1>", run_list(facts))
    doc.section("summary", "Summary", page_break=False)
    doc.add(sections.summary_table(facts))
    doc.section("config-diff", "Configuration differences", page_break=False)
    doc.add(config_diff_table(facts))
    doc.section("charts", "Training curves, overlaid")
    doc.add('<p class="muted">Each run keeps its colour in every chart: ', run_legend(facts), "</p>")
    doc.figures([c for c in overlays if c.id != "cmp-eval-tiers"])
    doc.section("eval-tiers", "Eval success by tier", page_break=False)
    doc.figures([c for c in overlays if c.id == "cmp-eval-tiers"])
    doc.add(tier_comparison_table(facts))
    doc.section("config", "Configuration")
    doc.add(config_table_multi(facts))
    doc.section("alerts", "Alerts", page_break=False)
    for i, f in enumerate(facts):
        doc.add(f"<h3>{sections.run_label(f, i)}</h3>", sections.alerts_block(f.bundle))
    doc.section("runs", "The runs")
    for f in facts:
        doc.add(run_brief(f))
    doc.section("environment", "Environment", page_break=False)
    doc.add(sections.environment_block(facts, environment))


# -- the comparison's own tables -------------------------------------------------------------
def run_legend(facts: list[sections.Facts]) -> str:
    return "&nbsp;&nbsp; ".join(sections.run_label(f, i) for i, f in enumerate(facts))


def run_list(facts: list[sections.Facts]) -> str:
    return table(["run", "id", "status", "started", "iterations"],
                 ([sections.run_label(f, i), f"<code>{esc(f.run.get('id'))}</code>",
                   sections.badge(f.run.get("status")), esc(when(f.run.get("started_at"))),
                   num(f.run.get("iteration"))] for i, f in enumerate(facts)),
                 "runs", numeric=(4,))


def tier_comparison_table(facts: list[sections.Facts]) -> str:
    tiers = sorted({k for f in facts for k in f.data.tier_keys()}, key=lambda k: metrics.tier_of(k) or 0.0)
    rows = [[num(metrics.tier_of(k))] + [num(f.final(k)) for f in facts] for k in tiers]
    return table(["tier (last evaluation)"] + [sections.run_label(f, i) for i, f in enumerate(facts)], rows, "tiers",
                 numeric=tuple(range(len(facts) + 1)))


def differing_keys(facts: list[sections.Facts]) -> list[str]:
    return config_differences([f.config for f in facts])


def config_diff_table(facts: list[sections.Facts]) -> str:
    flats = [settings(f.config) for f in facts]
    keys = differing_keys(facts)
    if not keys:
        return '<p class="muted">The runs share one configuration.</p>'
    head = ["key"] + [sections.run_label(f, i) for i, f in enumerate(facts)]
    return table(head, ([f"<code>{esc(k)}</code>"] + [value_text(fl[k]) if k in fl else DASH for fl in flats]
                        for k in keys), "config-diff")


def config_table_multi(facts: list[sections.Facts]) -> str:
    flats = [settings(f.config) for f in facts]
    keys = list(dict.fromkeys(k for fl in flats for k in fl))
    differing = set(config_differences([f.config for f in facts]))
    head = ["key"] + [sections.run_label(f, i) for i, f in enumerate(facts)]
    rows = []
    for k in keys:
        cells = [value_text(fl[k]) if k in fl else DASH for fl in flats]
        if k in differing:    # the keys that make the runs different stand out
            cells = [f"<b>{c}</b>" for c in cells]
        rows.append([f"<code>{esc(k)}</code>", *cells])
    return ('<p class="muted">Values that differ between the runs are in bold.</p>'
            + table(head, rows, "config"))


def run_brief(f: sections.Facts) -> str:
    r = f.run
    counts = Counter(e["kind"] for e in f.bundle.get("events") or () if e["kind"] not in sections.SKIPPED_EVENTS)
    pool = sum(1 for t in f.bundle.get("tasks") or () if t["status"] == TaskStatus.ACTIVE)
    return (f"<h3>{esc(f.name)}</h3>"
            + kv_table([("id", f"<code>{esc(r.get('id'))}</code>"), ("status", sections.badge(r.get("status"))),
                        ("started → ended", f"{esc(when(r.get('started_at')))} → {esc(when(r.get('ended_at')))}"),
                        ("duration", esc(duration(f.duration()))), ("preset", esc(r.get("preset") or DASH)),
                        ("tags", sections.tags_text(r)), ("device", esc(r.get("device"))),
                        ("events", esc(" · ".join(f"{k} {n}" for k, n in counts.most_common()) or DASH)),
                        ("active tasks", num(pool))])
            + sections.diagnostic_text(f) + sections.notes_text(r))
