"""A target that is refused (a file already there, no --force) is refused before any work, in every
format and through every door — `rla export`, the renderer run directly (`python -m rla_gui.report`),
and the ablation's figures: the database is never opened, no renderer starts, nothing is written
or created, and the existing file is the same file with the same bytes.

Each command runs in a real process watched by an audit hook that reports every database
connection, every subprocess and every file opened for writing inside the test's folder."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rla_engine.export import FORMATS, output_paths
from rla_engine.store import open_store

RUN = "refused-first"
WATCH = """
import os, runpy, sys
folder = os.environ["WATCHED_FOLDER"]
WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
def hook(event, args):
    if event == "sqlite3.connect":
        print("CONNECTED", args[0], file=sys.stderr)
    elif event == "subprocess.Popen":
        print("STARTED", args[1], file=sys.stderr)
    elif event == "open" and str(args[0]).startswith(folder) and (
            (isinstance(args[2], int) and args[2] & WRITE) or any(c in str(args[1] or "") for c in "wax+")):
        print("WROTE", args[0], file=sys.stderr)
    elif event in ("os.rename", "os.link", "os.remove", "os.mkdir") and str(args[0]).startswith(folder):
        print("CHANGED", event, args[0], file=sys.stderr)
sys.addaudithook(hook)
module = sys.argv.pop(1)
sys.argv[0] = module
runpy.run_module(module, run_name="__main__")
"""


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("db") / "runs.db"
    s = open_store(path)
    try:
        s.create_run(RUN, name="refused first", preset=None, config={"run": {}}, device="cpu")
        for it in range(1, 4):
            s.commit_iteration(RUN, it, env_steps=10 * it, wall_s=0.1, metrics={"policy/success_rate": 0.1 * it},
                               events=[], tasks=[])
        s.set_status(RUN, "completed")
    finally:
        s.close()
    return path


def watched(folder: Path, module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WATCH, module, *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "WATCHED_FOLDER": str(folder),
                                            "QT_QPA_PLATFORM": "offscreen"})


def state(folder: Path) -> dict[str, tuple[int, bytes]]:
    """Every file of the folder: its inode and its bytes."""
    return {p.name: (p.stat().st_ino, p.read_bytes()) for p in sorted(folder.iterdir())}


def assert_refused_before_any_work(res: subprocess.CompletedProcess, path: Path) -> None:
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert str(path) in lines[0] and "already exists" in lines[0] and "--force" in lines[0], lines[0]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("door", ["rla export", "renderer"])
def test_an_existing_file_is_refused_before_any_work(db, tmp_path, fmt, door):
    out = tmp_path / f"report.{fmt}"
    paths = output_paths(fmt, out)
    for p in paths:                         # every file the format writes is there already
        p.write_text(f"the user's own {p.name}\n")
    before = state(tmp_path)
    if door == "rla export":
        res = watched(tmp_path, "rla_engine.cli", "export", RUN, "--db", str(db), "--format", fmt, "--out", str(out))
    else:
        res = watched(tmp_path, "rla_gui.report", "--db", str(db), "--format", fmt, "--out", str(out), "--", RUN)
    assert_refused_before_any_work(res, paths[0])
    assert state(tmp_path) == before


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_only_the_companion_file_being_there_is_refused_first(db, tmp_path, fmt):
    """CSV and Parquet write two files: the second one being there refuses the export too."""
    out = tmp_path / f"report.{fmt}"
    companion = output_paths(fmt, out)[1]
    companion.write_text("the user's own companion\n")
    before = state(tmp_path)
    res = watched(tmp_path, "rla_engine.cli", "export", RUN, "--db", str(db), "--format", fmt, "--out", str(out))
    assert_refused_before_any_work(res, companion)
    assert state(tmp_path) == before


def test_the_ablation_figures_are_refused_before_they_are_drawn(db, tmp_path):
    curves = tmp_path / "table.curves.png"
    curves.write_text("the user's own picture\n")
    before = state(tmp_path)
    res = watched(tmp_path, "rla_gui.report.ablation", "--db", str(db), "--group", "g", "--out",
                  str(tmp_path / "table"))
    assert res.returncode == 2 and "CONNECTED" not in res.stderr and "WROTE" not in res.stderr, res.stderr
    assert str(curves) in res.stderr and "already exists" in res.stderr
    assert state(tmp_path) == before


def test_the_watch_sees_the_work_of_an_export_that_goes_ahead(db, tmp_path):
    """The guard of the tests above: with --force the same command reads the database and writes."""
    out = tmp_path / "report.json"
    out.write_text("the user's own file\n")
    res = watched(tmp_path, "rla_engine.cli", "export", RUN, "--db", str(db), "--format", "json", "--out", str(out),
                  "--force")
    assert res.returncode == 0, res.stderr
    assert "CONNECTED" in res.stderr and f"WROTE {tmp_path}" in res.stderr and "CHANGED" in res.stderr
    assert RUN in out.read_text()
