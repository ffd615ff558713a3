"""A report's added charts reach the renderer as data, never as command-line words: any metric key
(a leading dash, `--`, `--help`, a comma, spaces at its edges) becomes its chart, from the console
(the client the console exports through) and from `rla export --chart-json`; a `--chart` without
keys, an empty `--out` and a NUL in a key are one clear line, exit 2."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rla_engine.client import EngineError
from rla_engine.export import FORMATS

from engine_support import one_line_error, rla

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from fault_exports import HOSTILE_KEYS, added_headings, console_export, hostile_keys_bundle


@pytest.fixture(scope="module")
def db(recorded_db):
    """One run, "h", whose metrics include every hostile key."""
    return recorded_db(hostile_keys_bundle())


def test_hostile_keys_reach_the_report_from_the_console(db, tmp_path):
    out = tmp_path / "console.html"
    assert console_export(db, "h", out, [[k] for k in HOSTILE_KEYS]).startswith(f"wrote {out}")
    assert added_headings(out) == HOSTILE_KEYS


def test_hostile_keys_reach_the_report_from_the_command_line(db, tmp_path):
    out = tmp_path / "cli.html"
    charts = [a for k in HOSTILE_KEYS for a in ("--chart-json", json.dumps([k]))]
    res = rla("export", "h", "--format", "html", "--out", str(out), *charts, db=db)
    assert res.returncode == 0, res.stderr
    assert added_headings(out) == HOSTILE_KEYS


def test_an_out_that_looks_like_an_option_is_a_path(db, tmp_path):
    res = subprocess.run([sys.executable, "-m", "rla_engine.cli", "export", "h", "--db", str(db), "--format",
                          "html", "--out=-report.html", "--chart=a,b"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "-report.html").is_file()


@pytest.mark.parametrize("option", ["--chart=--", "--chart-json=--", "--chart="])
def test_a_chart_option_without_keys_is_one_line(db, tmp_path, option):
    line = one_line_error(rla("export", "h", "--format", "html", "--out", str(tmp_path / "x.html"), option, db=db))
    assert "--chart" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_empty_out_names_out(db, tmp_path, fmt):
    line = one_line_error(rla("export", "h", "--format", fmt, "--out", "", db=db))
    assert "--out" in line and "empty" in line


def test_a_nul_in_a_chart_key_is_refused_clearly(db, tmp_path):
    out = tmp_path / "nul.html"
    with pytest.raises(EngineError) as e:
        console_export(db, "h", out, [["loss\x00policy"]])
    assert "NUL" in str(e.value.log) and "Traceback" not in str(e.value.log)
    assert not out.exists()
