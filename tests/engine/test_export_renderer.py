"""The HTML/PDF renderer is found through the `rla.renderers` entry point the console package
registers, so the engine never names that package, not even in a string."""
from __future__ import annotations

from pathlib import Path

from rla_engine import cli
from rla_engine.export import renderer

ROOT = Path(__file__).resolve().parents[2]


def test_the_engine_names_no_console_module():
    offenders = [str(p) for p in (ROOT / "rla_engine").rglob("*.py") if "rla_gui" in p.read_text(encoding="utf-8")]
    assert offenders == []


def test_the_installed_console_registers_the_renderer():
    cmd = renderer.renderer_command("python")
    assert cmd is not None and cmd[:2] == ["python", "-c"]


def test_without_a_renderer_a_report_export_is_one_line_and_exit_1(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(renderer, "entry_points", lambda **kw: ())
    out = tmp_path / "r.pdf"
    assert cli.main(["export", "x", "--format", "pdf", "--out", str(out), "--db", str(tmp_path / "x.db")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rla.renderers" in err[0] and "none is installed" in err[0]
    assert not out.exists()
