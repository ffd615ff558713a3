"""A coding run's report (HTML and PDF): the test generator's figures, how the executions ended,
the sandbox level (weaker than bubblewrap: a warning) and one program with its generated tests —
every model-written text escaped. The run is written through the store into a real SQLite file and
exported as `rla export` exports it (export.bundles.load_bundles)."""
from __future__ import annotations

import os
from html.parser import HTMLParser

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from rla_engine import metrics
from rla_engine.config import build
from rla_engine.export.bundles import load_bundles
from rla_engine.store import open_store
from rla_gui.model.panel_spec import EXEC_STATUSES, TEST_AGREEMENT
from rla_gui.report.html import render_html
from rla_gui.report.pdf import write_pdf

HOSTILE = '<script>alert(1)</script> "><img src=x onerror=alert(1)>'
PROGRAM = f"```python\nprint(sum(map(int, input().split())))  # {HOSTILE}\n```"


class Page(HTMLParser):
    """The document's text, its ids, and each table's rows (as a browser reads them), by class."""

    def __init__(self, markup: str):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.text: list[str] = []
        self.tags: list[str] = []
        self.tables: dict[str, list[list[str]]] = {}
        self._table: list[list[str]] | None = None
        self.feed(markup)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "table":
            self._table = self.tables.setdefault(a.get("class") or "", [])
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag in ("td", "th") and self._table:
            self._table[-1].append("")

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None

    def handle_data(self, data):
        self.text.append(data)
        if self._table and self._table[-1]:
            self._table[-1][-1] += data


def config(kind: str) -> dict:
    c = build(preset="tiny").to_dict()
    c["task"]["family"], c["judge"]["kind"] = ("coding", kind) if kind == "tests" else (c["task"]["family"], kind)
    return c


def trajectory() -> dict:
    tests = [{"input": "1 2", "output": "3", "said": "ok", "readable": True, "correct": True, "result": "ok"},
             {"input": HOSTILE, "output": "x", "said": "?", "readable": True, "correct": False,
              "result": "runtime_error"},
             {"input": "", "output": "", "said": f"garbled {HOSTILE}", "readable": False, "correct": False,
              "result": ""}]
    return {"slot": 1, "task": f"sum the numbers {HOSTILE}", "success": False,
            "turns": [{"steps": [{"text": PROGRAM, "verdicts": [1, -1, 0], "reasoning": ["a", "b", "c"]}],
                       "observation": ""}],
            "ground_truth": {"passed": 1, "total": 2, "statuses": ["ok", "wrong_answer"]}, "unit_tests": tests}


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    db = tmp_path_factory.mktemp("coding-report") / "r.db"
    store = open_store(db)
    store.create_run("code", name="code", preset="tiny", config=config("tests"), device="cpu")
    sandbox = {"level": "namespaces", "require": "any",
               "guarantees": [{"name": "file system", "holds": False, "how": f"no bubblewrap {HOSTILE}"},
                              {"name": "no network", "holds": True, "how": "network namespace"}]}
    for it in (1, 2):
        shares = {metrics.exec_status_key(s): 0.0 for s in EXEC_STATUSES}
        shares |= {metrics.exec_status_key("ok"): 0.25 * it, metrics.exec_status_key("timeout"): 1 - 0.25 * it}
        store.commit_iteration("code", it, env_steps=8 * it, wall_s=1.0, tasks=[],
                               metrics={metrics.SUCCESS: 0.125 * it, metrics.SYN_UT_ACC: 0.375 * it,
                                        metrics.PERFECT_UT_RATE: 0.25, metrics.TEST_PARSE_FAILURES: 0.0625,
                                        metrics.EXEC_SECONDS: 2.5, metrics.SANDBOX_ERRORS: 1.0, **shares},
                               events=[("sandbox", sandbox)] if it == 1 else
                               [("samples", {"family": "coding", "trajectories": [trajectory()], "variants": []})])
    store.end_run("code", 2, "completed", {"iterations": 2})
    store.create_run("steps", name="steps", preset="tiny", config=config("steps"), device="cpu")
    store.commit_iteration("steps", 1, env_steps=8, wall_s=1.0, tasks=[], events=[],
                           metrics={metrics.SUCCESS: 0.5, metrics.OUTCOME_AGREEMENT: 0.5})
    store.end_run("steps", 1, "completed", {"iterations": 1})
    store.close()
    return dict(zip(("code", "steps"), load_bundles(db, ["code", "steps"])))


def test_the_html_report_of_a_coding_run_has_its_generator_executions_sandbox_and_a_sample(bundles):
    markup = render_html([bundles["code"]])
    page = Page(markup)
    text = " ".join(page.text)
    assert {"coding", "fig-agreement", "fig-sandbox-shares", "fig-sandbox-cost"} <= page.ids
    assert TEST_AGREEMENT.title in text
    figures = {row[0]: row[1:] for row in page.tables["unit-tests"][1:]}
    assert figures["pass-all accuracy (policy success)"] == ["0.250", "0.250", "2"]
    assert figures["syn UT acc"] == ["0.750", "0.750", "2"]
    assert figures["perfect UT rate"][0] == "0.250"
    assert figures["unreadable tests"][0] == "0.062"
    shares = {row[0]: row[1:] for row in page.tables["executions"][1:]}
    assert shares["ok"] == ["0.500", "0.375"] and shares["timeout"] == ["0.500", "0.625"]
    assert shares["sandbox error"] == ["0.000", "0.000"]
    assert "sandbox errors (sum)" in text and "seconds running programs (sum)" in text
    # the isolation, as a warning: namespaces is weaker than bubblewrap
    assert ("⚠ isolation namespaces (require any): does not hold: file system, weaker than bubblewrap") in text
    assert ["file system", "does not hold", f"no bubblewrap {HOSTILE}"] in page.tables["sandbox"]
    # one program, its ground truth and its tests; the model's text is text, never markup
    assert PROGRAM in text and f"sum the numbers {HOSTILE}" in text
    assert "ground truth: 1 of 2 tests passed (ok, wrong_answer)" in text
    assert page.tables["tests"][1:] == [["1 2", "3", "yes", "yes", "ok"],
                                        [HOSTILE, "x", "yes", "no", "runtime_error"],
                                        ["(unreadable)", "—", "no", "—", "—"]]
    assert "script" not in page.tags and markup.count("<img") == markup.count('<img src="data:image/png')


def test_a_step_judge_run_has_no_coding_section(bundles):
    page = Page(render_html([bundles["steps"]]))
    assert "coding" not in page.ids and "fig-sandbox-shares" not in page.ids
    assert "Reward-model agreement" in page.text and TEST_AGREEMENT.title not in page.text


def test_the_pdf_says_it_too(bundles, tmp_path):
    from PySide6.QtPdf import QPdfDocument
    path = tmp_path / "code.pdf"
    write_pdf([bundles["code"]], path)
    doc = QPdfDocument(None)
    doc.load(str(path))
    text = " ".join(" ".join(doc.getAllText(i).text().split()) for i in range(doc.pageCount()))
    for said in ("Coding: sandbox and generated tests", "isolation namespaces (require any)", "syn UT acc",
                 "pass-all accuracy", "wrong_answer", "runtime_error", "(unreadable)", "<script>alert(1)</script>",
                 "print(sum(map(int, input().split())))"):
        assert said in text, said
