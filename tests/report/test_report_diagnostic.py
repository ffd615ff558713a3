"""A run whose judge was replaced by the oracle is labelled a diagnostic in its report
and in a comparison, where a learned run beside it is not."""
from __future__ import annotations

import subprocess
import sys

import pytest

LABEL = "Diagnostic run, not a learner"


def rla(db, *args) -> None:
    subprocess.run([sys.executable, "-m", "rla_engine.cli", *args, "--db", str(db)], check=True,
                   stdout=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    db = tmp_path_factory.mktemp("diagnostic") / "d.db"
    rla(db, "run", "--preset", "tiny", "--iterations", "2", "--run-id", "oracle", "--name", "oracle",
        "--set", "judge.source=oracle", "--set", "judge.oracle_noise=0.2")
    rla(db, "run", "--preset", "tiny", "--iterations", "2", "--run-id", "learned", "--name", "learned")
    return db


def test_the_oracle_runs_report_says_it_is_a_diagnostic(db, tmp_path):
    rla(db, "export", "--format", "html", "--out", str(tmp_path / "o.html"), "oracle")
    text = (tmp_path / "o.html").read_text()
    assert LABEL in text and "p = 0.2" in text
    rla(db, "export", "--format", "html", "--out", str(tmp_path / "l.html"), "learned")
    assert LABEL not in (tmp_path / "l.html").read_text()


def test_a_comparison_labels_only_the_oracle_run(db, tmp_path):
    rla(db, "export", "--format", "html", "--out", str(tmp_path / "c.html"), "learned", "oracle")
    text = (tmp_path / "c.html").read_text()
    assert text.count(LABEL) == 1
    assert text.index("<h3>learned</h3>") < text.index("<h3>oracle</h3>") < text.index(LABEL)
