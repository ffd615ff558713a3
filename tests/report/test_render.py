"""Report rendering: the HTML and PDF reports from real stored runs, the comparison of
several runs, escaping of every user-provided string, and the speed on 100,000 metric rows.

Three real runs, recorded (tests/data/make_recorded_runs.py), are imported once per module into a
fresh database; one gets a hostile name, notes, tags, an event payload and a task whose parameters
and critic text are markup. The HTML is checked with html.parser, the PDF with Qt's own PDF reader.
"""
from __future__ import annotations

import base64
import copy
import html
import json
import os
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from rla_engine import metrics
from rla_engine.store import open_store
from rla_gui.model.lod import thinned
from rla_gui.report import charts, sections
from rla_gui.report import html as report_html
from rla_gui.report.html import COMPARISON_SECTIONS, SECTIONS, render_html
from rla_gui.report.pdf import build_document, write_pdf

from written_pdf import pdf_text

HOSTILE = '<script>alert(1)</script> "><img src=x onerror=alert(1)>'
# the recorded group's runs by label: the comparison must find exactly these two keys differing
LABELS = ("hostile", "plain", "third")
DIFFERING = {"policy.lam", "judge.m"}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def bundle_of(store, run_id: str) -> dict:
    if hasattr(store, "export_run"):
        return store.export_run(run_id)
    run = dict(store.get_run(run_id))
    run["config"] = json.loads(run.pop("config_json"))
    return {"format": "rlanything-run/1", "run": run, "iterations": store.iterations(run_id),
            "metrics": store.metrics(run_id), "events": store.events(run_id), "tasks": store.tasks(run_id)}


@pytest.fixture(scope="module")
def bundles(recorded, recorded_db) -> dict[str, dict]:
    """The recorded group (tests/data: "base", "outcome only" with policy.lam=0, "five verdicts"
    with judge.m=5 and policy.lam=0.5) as stored by a real database; the first, renamed to the
    hostile string, gets one in every other user-controlled field the report shows too."""
    group = recorded("recorded_group")
    group[0]["run"]["name"] = HOSTILE
    db = recorded_db(*group)
    store = open_store(db, create=False)
    run_id, last = group[0]["run"]["id"], group[0]["run"]["iteration"]
    store.set_notes(run_id, f"first line\n{HOSTILE}")
    store.set_tags(run_id, ["ok", HOSTILE.replace(",", " ")])
    store.add_event(run_id, last, "command_rejected", {"kind": "pause", "result": f"rejected: {HOSTILE}"})
    store.write_tasks(run_id, [{"uid": 999, "slot": 0, "version": 1, "family": "gridworld",
                                "params_json": json.dumps({"params": {"size": HOSTILE}, "seed": 1}),
                                "difficulty": 0.1, "status": "pending", "direction": "harder",
                                "prev_acc": 0.9, "critic_json": json.dumps({"focus": HOSTILE, "n": 3}),
                                "created_iteration": last}])
    out = {label: bundle_of(store, b["run"]["id"]) for label, b in zip(LABELS, group)}
    store.close()
    out["hostile"]["run"]["error"] = f"boom {HOSTILE}"
    return out


def name(bundle: dict) -> str:
    return bundle["run"]["name"]


class Page(HTMLParser):
    """What a browser would build: tags with their attributes, ids, text, and tables by class."""

    def __init__(self, markup: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.tables: dict[str, list[list[str]]] = {}
        self._table, self._row, self._cell = None, None, None
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "table":
            self._table = self.tables.setdefault(a.get("class") or "", [])
        elif tag == "tr" and self._table is not None:
            self._row = []
            self._table.append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = self._row = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)

    @property
    def ids(self) -> set[str]:
        return {a["id"] for _, a in self.tags if a.get("id")}

    def images(self) -> list[bytes]:
        srcs = [a.get("src") or "" for t, a in self.tags if t == "img"]
        assert all(s.startswith("data:image/png;base64,") for s in srcs), [s[:40] for s in srcs]
        return [base64.b64decode(s.split(",", 1)[1]) for s in srcs]


def assert_inert(markup: str, page: Page) -> None:
    """No external reference and no live markup from a user string."""
    low = markup.lower()
    for ref in ("http://", "https://", "file:", "javascript:"):
        assert ref not in low, ref
    assert not [t for t, _ in page.tags if t in ("script", "iframe", "object", "embed", "link")]
    assert not [(t, a) for t, a in page.tags for name in a if name.lower().startswith("on")]
    assert not [t for t, a in page.tags if t == "img" and (a.get("src") or "") == "x"]


def test_run_report_html(bundles):
    markup = render_html([bundles["hostile"]])
    page = Page(markup)
    assert markup.startswith("<!DOCTYPE html>")
    assert set(SECTIONS) <= page.ids, set(SECTIONS) - page.ids
    pngs = page.images()
    assert len(pngs) >= 6 and all(p.startswith(PNG_MAGIC) and len(p) > 2000 for p in pngs)
    assert_inert(markup, page)
    text = "".join(page.text)
    # the hostile strings are shown as text: name, notes, tags, event payload, task text, critic, error
    assert text.count(HOSTILE) >= 6, text.count(HOSTILE)
    assert html.escape(HOSTILE, quote=True) in markup
    assert "Environment adaptation" in text and "Final task pool" in text and "torch" in text
    pool = page.tables["pool"]
    assert {r[2] for r in pool[1:]} <= {"active", "pending"} and len(pool) > 8


def test_comparison_report_html(bundles):
    runs = [bundles[k] for k in ("hostile", "plain", "third")]
    markup = render_html(runs)
    page = Page(markup)
    assert set(COMPARISON_SECTIONS) <= page.ids, set(COMPARISON_SECTIONS) - page.ids
    assert len(page.images()) >= 6
    assert_inert(markup, page)
    diff = page.tables["config-diff"]
    assert {row[0] for row in diff[1:]} == DIFFERING
    # a column per run, in the order given (after each run's colour swatch)
    assert [h.lstrip("■\xa0") for h in diff[0][1:]] == [name(b) for b in runs]
    for key in DIFFERING:     # each run's own value, as its configuration holds it
        section, field = key.split(".")
        row = next(r for r in diff if r[0] == key)
        assert row[1:] == [str(b["run"]["config"][section][field]) for b in runs] and len(set(row[1:])) > 1
    assert set(report_html.differing_keys([sections.Facts(b) for b in runs])) == DIFFERING
    assert report_html.differing_keys([sections.Facts(runs[0])] * 2) == []


def test_run_report_pdf(bundles, tmp_path):
    path = tmp_path / "run.pdf"
    write_pdf([bundles["plain"]], path)
    pages, text = pdf_text(path)
    assert pages >= 2
    assert name(bundles["plain"]) in text and "Environment adaptation" in text and "Configuration" in text


def test_comparison_report_pdf(bundles, tmp_path):
    path = tmp_path / "cmp.pdf"
    write_pdf([bundles[k] for k in ("plain", "third")], path)
    pages, text = pdf_text(path)
    assert pages >= 2 and name(bundles["plain"]) in text and name(bundles["third"]) in text
    runs = [bundles[k] for k in ("plain", "third")]
    for key in DIFFERING:     # the table of differing settings: one line per setting, each run's value
        section, field = key.split(".")
        assert " ".join([key, *(str(b["run"]["config"][section][field]) for b in runs)]) in text.splitlines(), key


def test_pdf_shows_hostile_strings_as_text(bundles, tmp_path):
    write_pdf([bundles["hostile"]], tmp_path / "hostile.pdf")
    _, text = pdf_text(tmp_path / "hostile.pdf")
    # read back from the file: the name, notes, tags, event payload, task text, critic and error,
    # each as the characters typed (a table cell may wrap a long one between words)
    assert " ".join(text.split()).count(HOSTILE) >= 6, text
    doc = build_document([bundles["hostile"]])
    names = set()
    block = doc.begin()
    while block.isValid():    # the only images are the charts: `<img src=x>` stayed text
        it = block.begin()
        while not it.atEnd():
            fmt = it.fragment().charFormat()
            if fmt.isImageFormat():
                names.add(fmt.toImageFormat().name())
            it += 1
        block = block.next()
    assert names and all(n.startswith("chart-") for n in names), names


def test_empty_run_renders(bundles, tmp_path):
    """A run that has just started (no iteration yet) still makes both reports."""
    b = copy.deepcopy(bundles["plain"])
    b.update(iterations=[], metrics=[], events=[], tasks=[])
    b["run"].update(status="running", ended_at=None)
    page = Page(render_html([b]))
    assert set(SECTIONS) <= page.ids
    write_pdf([b], tmp_path / "empty.pdf")
    assert pdf_text(tmp_path / "empty.pdf")[0] >= 1


def synthetic(base: dict, rows: int = 100_000) -> dict:
    """`base` with a long history: every SPEC key each iteration, evals every 10th, plus markers,
    thousands of variant events, episodes and task versions."""
    rng = np.random.default_rng(0)
    fixed = [k for k in metrics.ALL_FIXED if not k.startswith("eval/")]
    evals = [metrics.EVAL_SUCCESS] + [metrics.eval_tier_key(d) for d in (0.1, 0.3, 0.5, 0.7, 0.9)]
    metric_rows, its, it = [], [], 0
    walk = {k: 0.5 for k in fixed + evals}
    while len(metric_rows) < rows:
        it += 1
        keys = fixed + (evals if it % 10 == 0 else [])
        for k in sorted(keys):
            walk[k] = float(np.clip(walk[k] + rng.normal(0, 0.02), 0, 1.5))
            metric_rows.append({"iteration": it, "key": k, "value": walk[k], "t": 1e9 + it})
        its.append({"iteration": it, "t": 1e9 + it, "env_steps": it * 500, "wall_s": 0.05})
    del metric_rows[rows:]
    events = [{"id": i, "iteration": i * 7919 % it + 1, "t": 1e9 + i, "kind": kind, "payload": payload}
              for i, (kind, payload) in enumerate(
                  [("pause", {}), ("resume", {})] * 10 + [("set_difficulty", {"payload": {"value": 0.4}})] * 3
                  + [("variant_accepted", {"slot": 1, "difficulty": 0.4}),
                     ("variant_rejected", {"slot": 2, "difficulty": 0.6})] * 2000
                  + [("episode", {"info": [[0] * 6] * 50})] * 200)]
    tasks = [{"uid": s * 1000 + v, "slot": s, "version": v, "family": "gridworld",
              "params_json": json.dumps({"params": {"size": 7}, "seed": v}), "difficulty": 0.5,
              "status": "active" if v == 149 else ("retired" if v % 3 else "rejected"), "last_acc": 0.5,
              "direction": "harder" if v else None, "prev_acc": 0.9, "new_acc": 0.7,
              "critic_json": json.dumps({"focus": "walls", "n": 5}), "created_iteration": v, "decided_iteration": v + 1}
             for s in range(16) for v in range(150)]
    return {**copy.deepcopy({k: base[k] for k in ("format", "run")}), "iterations": its, "metrics": metric_rows,
            "events": events, "tasks": tasks}


def test_speed_on_100k_metric_rows(bundles, tmp_path):
    big = synthetic(bundles["plain"])
    assert len(big["metrics"]) == 100_000
    charts.ensure_app()
    # CPU seconds of this process (all its threads), not wall time: the suite ran 1 time in 10
    # past the limit while other jobs shared the 2 cores (PDF 6.8 s wall), and what this guards
    # is the work the report does. benchmarks/export.py measures wall time on a quiet machine.
    t, c = time.perf_counter(), time.process_time()
    markup = render_html([big])
    t_html, c_html = time.perf_counter() - t, time.process_time() - c
    path = tmp_path / "big.pdf"
    t, c = time.perf_counter(), time.process_time()
    write_pdf([big], path)
    t_pdf, c_pdf = time.perf_counter() - t, time.process_time() - c
    print(f"\n100,000 metric rows: HTML {t_html:.2f} s ({c_html:.2f} s CPU), {len(markup.encode()) / 1e6:.2f} MB; "
          f"PDF {t_pdf:.2f} s ({c_pdf:.2f} s CPU), {path.stat().st_size / 1e6:.2f} MB")
    page = Page(markup)
    assert set(SECTIONS) <= page.ids and len(page.images()) >= 6
    assert "rows in the middle are not listed" in markup
    assert c_html < 6.0 and c_pdf < 6.0          # target < 3 s each; the margin absorbs a slow CI
    assert pdf_text(path)[0] >= 2


def test_decimation_keeps_extremes():
    x = np.arange(100_000, dtype=float)
    y = np.sin(x / 500.0)
    y[12_345], y[77_777] = 5.0, -5.0
    xs, ys = thinned(x, y, charts.MAX_POINTS)      # the report's and the live plots' one downsampling
    assert len(xs) <= charts.MAX_POINTS and ys.max() == 5.0 and ys.min() == -5.0
    assert np.all(np.diff(xs) >= 0)
    assert len(thinned(x[:100], y[:100], charts.MAX_POINTS)[0]) == 100


def test_report_modules_never_import_torch(tmp_path):
    src = Path(__file__).resolve().parents[2] / "rla_gui"
    offenders = [str(p) for p in src.rglob("*.py")
                 if any(line.strip().startswith(("import torch", "from torch")) for line in p.read_text().splitlines())]
    assert offenders == []
    code = (
        "import importlib, pkgutil, sys\n"
        "import rla_gui.report as r\n"
        "names = [m.name for m in pkgutil.iter_modules(r.__path__) if m.name != '__main__']\n"
        "for n in names: importlib.import_module('rla_gui.report.' + n)\n"
        "from rla_gui.report.html import render_html\n"
        "run = {'id': 'x', 'name': 'n', 'status': 'completed', 'config': {'run': {'iterations': 1}}}\n"
        "b = {'format': 'rlanything-run/1', 'run': run, 'iterations': [], 'events': [], 'tasks': [],\n"
        "     'metrics': [{'iteration': 1, 'key': 'policy/success_rate', 'value': 0.5, 't': 0.0}]}\n"
        "assert 'section' in render_html([b])\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "print(len(names))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.split()[-1]) >= 4


def test_band_envelope_keeps_the_extremes_of_every_bin():
    import numpy as np
    from rla_gui.model.lod import bounds
    rng = np.random.default_rng(3)
    x = np.arange(100_000, dtype=float)
    lo, hi = rng.random(100_000), rng.random(100_000) + 1
    xl, yl, _ = bounds(x, lo, charts.BAND_BINS)      # the live plots' bins (model.lod), not a second binning
    xh, _, yh = bounds(x, hi, charts.BAND_BINS)
    assert len(xl) == len(xh) <= charts.BAND_BINS and yl.min() == lo.min() and yh.max() == hi.max()
    size = int(xl[1] - xl[0])
    assert np.array_equal(yl, [lo[i:i + size].min() for i in range(0, len(lo), size)])
    assert np.array_equal(yh, [hi[i:i + size].max() for i in range(0, len(hi), size)])
