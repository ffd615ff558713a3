"""`rla sandbox check` and `rla sandbox run`: exit codes, output, and no torch on the way."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rla_engine.cli import main


def test_check_lists_every_guarantee(capsys):
    assert main(["sandbox", "check"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("sandbox level: bubblewrap") and "[yes] no network" in out
    assert main(["sandbox", "check", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["level"] == "bubblewrap" and data["levels"]["bubblewrap"]["works"]
    assert {g["name"] for g in data["guarantees"]} >= {"no network", "private filesystem", "no survivors"}
    assert all(g["holds"] for g in data["guarantees"])


def test_run_one_program(tmp_path, capsys):
    prog, given = tmp_path / "p.py", tmp_path / "in.txt"
    prog.write_text("import sys\nprint(sys.stdin.read().upper())\n")
    given.write_bytes(b"hello\n")
    assert main(["sandbox", "run", str(prog), "--input", str(given)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("status ok") and "HELLO" in out
    assert main(["sandbox", "run", str(prog), "--json", "--time-limit", "1", "--require", "any"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "ok" and data["stdout"] == "\n"
    prog.write_text("while True:\n    pass\n")
    assert main(["sandbox", "run", str(prog), "--json", "--time-limit", "0.5"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "timeout"


@pytest.mark.parametrize(("args", "message"), [
    (["missing.py"], "program missing.py: no such file"),
    (["{prog}", "--input", "missing.txt"], "--input missing.txt: no such file"),
    (["{prog}", "--time-limit", "0"], "--time-limit 0.0: must be more than 0"),
    (["{prog}", "--time-limit", "nan"], "--time-limit nan"),
    (["{prog}", "--time-limit", "x"], "invalid float value"),
    (["{prog}", "--require", "maybe"], "invalid choice"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, args, message):
    prog = tmp_path / "p.py"
    prog.write_text("print(1)\n")
    assert main(["sandbox", "run", *[a.format(prog=prog) for a in args]]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_the_sandbox_command_never_imports_torch():
    code = ("import sys, contextlib, io\nfrom rla_engine.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    assert main(['sandbox', 'check']) == 0\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
