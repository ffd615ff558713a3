"""Reports carry the console's training-health and system charts, the charts a person added, and
the alerts the theory raised — from a real `rla run`, through the real renderer command
(`python -m rla_gui.report --chart …`, what File ▸ Export… runs)."""
from __future__ import annotations

import os
import subprocess
import sys
from html.parser import HTMLParser

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from rla_engine import metrics
from rla_engine.alerts import ALERTS, JUDGE_UNANIMOUS

from written_pdf import pdf_text


class Page(HTMLParser):
    def __init__(self, text: str):
        super().__init__()
        self.ids: set[str] = set()
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k == "id" and v:
                self.ids.add(v)

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny run whose judge gives one verdict per step (unanimous by definition): the collapse
    alert is raised after a window of 2, and cleared when the run ends."""
    db = tmp_path_factory.mktemp("health") / "h.db"
    subprocess.run([sys.executable, "-m", "rla_engine.cli", "run", "--db", str(db), "--preset", "tiny",
                    "--iterations", "5", "--run-id", "r", "--set", "judge.m=1", "--set", "alerts.window=2",
                    "--set", "run.system_every_s=0.01"], check=True, stdout=subprocess.DEVNULL)
    return db


def render(db, fmt: str, out, *charts: str) -> None:
    """`rla export --chart KEYS …`, which hands the charts to the renderer the console runs."""
    args = [a for keys in charts for a in ("--chart", keys)]
    subprocess.run([sys.executable, "-m", "rla_engine.cli", "export", "--db", str(db), "--format", fmt,
                    "--out", str(out), *args, "r"], check=True, stdout=subprocess.DEVNULL)


def test_the_html_report_has_health_system_added_charts_and_alerts(run, tmp_path):
    out = tmp_path / "r.html"
    render(run, "html", out, f"{metrics.LOSS_KL},{metrics.MU}", metrics.SYS_RSS_MB)
    page = Page(out.read_text())
    text = " ".join(page.text)
    # the health and system panels, each with data here
    assert {"health", "fig-policy-update", "fig-judge-update", "fig-system-use", "fig-system-memory"} <= page.ids
    # the person's two added charts, titled by their keys
    assert {"added", "fig-added-0", "fig-added-1"} <= page.ids
    assert "kl, μ" in text
    # the alert: named, when it began and ended, what it means and what to do
    assert "alerts" in page.ids
    rule = ALERTS[JUDGE_UNANIMOUS]
    assert rule.title in text and "end of the run" in text and "What to do:" in text


def test_the_pdf_report_has_them_too(run, tmp_path):
    out = tmp_path / "r.pdf"
    render(run, "pdf", out, metrics.LOSS_KL)
    _, text = pdf_text(out)       # read back from the file written
    lines = text.splitlines()
    for heading in ("Training health and system", "Added charts", "Alerts"):
        assert heading in lines, heading
    rule = ALERTS[JUDGE_UNANIMOUS]
    assert rule.title in text and "end of the run" in text and "What to do:" in text
    assert "━━ kl" in lines       # the added chart's legend
