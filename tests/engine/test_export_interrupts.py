"""Ctrl-C at any moment of `rla export`: one line, no traceback, exit 130, and the line tells the
truth about what is on disk — "nothing written" only when nothing was, else which files."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from engine_support import wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from fault_exports import LATE_IMPORTS, interrupt_during_imports

@pytest.fixture(scope="module")
def db(recorded, recorded_db) -> Path:
    """A database of its own folder holding the recorded run as "r" (never written by a test)."""
    (bundle,) = recorded("recorded_arithmetic")
    bundle["run"]["id"] = "r"
    return recorded_db(bundle)


def export_process(db: Path, fmt: str, out: Path) -> subprocess.Popen:
    """`rla export` in a session of its own, as a terminal runs it (Ctrl-C goes to the group)."""
    return subprocess.Popen([sys.executable, "-m", "rla_engine.cli", "export", "r", "--db", str(db), "--format", fmt,
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def test_an_interrupt_after_the_files_are_placed_names_them(db, tmp_path):
    # the last moments of a forced export: both CSV files have replaced the old ones (which no
    # interrupt can bring back) when Ctrl-C comes
    for name in ("out.csv", "out.events.csv"):
        (tmp_path / name).write_text("the old export\n")
    script = textwrap.dedent(f"""
        import os, signal, time
        from rla_engine.export import command, files

        placed = files._fsync_dir
        def then_interrupt(folder):
            placed(folder)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(10)
        files._fsync_dir = then_interrupt
        print(*command.run_export({str(db)!r}, ["r"], "csv", {str(tmp_path / "out.csv")!r}, force=True))
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in res.stderr
    assert (tmp_path / "out.csv").read_text().startswith("run_id,")
    assert res.stdout.strip() == (f"130 rla export: interrupted after it wrote {tmp_path / 'out.csv'} and "
                                  f"{tmp_path / 'out.events.csv'}"), res.stdout


def test_ctrl_c_once_the_report_is_written_says_so(db, tmp_path):
    """The renderer has put the report in place and is still closing Qt down when Ctrl-C comes."""
    out = tmp_path / "r.html"
    proc = export_process(db, "html", out)
    wait_for(out.exists, timeout=120, what="the report")
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert "Traceback" not in stdout + stderr
    assert out.exists()
    if proc.returncode == 0:         # it had finished: nothing to tell apart
        assert stdout.startswith(f"wrote {out}")
        return
    assert proc.returncode == 130 and stderr.strip() == f"rla export: interrupted after it wrote {out}", stderr


@pytest.fixture(scope="module")
def startup_s() -> float:
    """How long Python takes here to reach the project's first line (longer on a busy machine)."""
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", "import rla_engine"], check=True)
    return time.monotonic() - t0


def through_the_project(stderr: str) -> bool:
    """A traceback with a frame of the project's code. One in Python's own startup (site, the
    import system, before rla_engine's first line) is not the project's to catch."""
    return "Traceback" in stderr and "rla_engine" in stderr


@pytest.mark.parametrize("module", LATE_IMPORTS)
def test_ctrl_c_while_the_command_imports_is_one_line(db, tmp_path, module):
    out = tmp_path / "r.json"
    code, said = interrupt_during_imports(db, out, module)
    assert code == 130 and said in (["rla: interrupted"], ["rla export: interrupted; nothing written"]), (code, said)
    assert not out.exists()


def test_ctrl_c_while_the_renderer_starts_is_one_line_and_nothing_written(db, tmp_path, startup_s):
    out = tmp_path / "r.html"
    proc = export_process(db, "html", out)
    wait_for(lambda: psutil.Process(proc.pid).children(), timeout=60, what="the renderer process")
    time.sleep(startup_s + 0.05)                # the renderer is importing Qt
    os.killpg(proc.pid, signal.SIGINT)          # the terminal's Ctrl-C: the whole group
    stdout, stderr = proc.communicate(timeout=60)
    assert "Traceback" not in stdout + stderr, stderr
    # one line, from `rla export` alone (the renderer, in a session of its own, is stopped by it)
    if out.exists():                 # a fast machine: the renderer had already put the report in place
        assert proc.returncode == 130 and stderr.strip() == f"rla export: interrupted after it wrote {out}", stderr
    else:
        assert proc.returncode == 130 and stderr.strip() == "rla export: interrupted; nothing written", stderr
        assert list(tmp_path.iterdir()) == []
