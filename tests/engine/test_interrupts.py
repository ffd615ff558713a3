"""Interrupting a command and waiting on a lock: SIGTERM or Ctrl-C during
an export leaves no temporary file and no traceback; a write lock held past the wait says what
to do; `rla show … | head` ends quietly."""
from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rla_engine import cli
from rla_engine.store import WriteError, open_store

RECORDED = Path(__file__).resolve().parents[1] / "data" / "recorded_arithmetic.json"


@pytest.fixture
def db(tmp_path):
    db = tmp_path / "h.db"
    assert cli.main(["import", str(RECORDED), "--db", str(db), "--as", "r"]) == 0
    return db


@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGINT"])
def test_a_signal_during_an_export_leaves_no_temporary_file(db, tmp_path, signal_name):
    # the renderer has written part of its file when the signal comes (another process's
    # `kill`, or Ctrl-C); it runs in its own process, as `rla export` and the report renderer do
    script = textwrap.dedent(f"""
        import os, signal, time
        from rla_engine.export.command import run_export
        from rla_engine.export.files import atomic_path

        def render(fmt, bundles, path, force):
            with atomic_path(path, force) as tmp:
                tmp.write_bytes(b"x" * 100_000)
                os.kill(os.getpid(), signal.{signal_name})
                time.sleep(10)

        code, line = run_export({str(db)!r}, ["r"], "html", {str(tmp_path / "out.html")!r}, render=render)
        print(code, line)
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert res.stdout.startswith("130 rla export: interrupted; nothing written"), (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("h.db")) == []


def test_a_write_lock_held_past_the_wait_says_what_to_do(db):
    holder = sqlite3.connect(db)
    holder.execute("BEGIN IMMEDIATE")
    try:
        store = open_store(db, lock_wait_s=0.3)
        with pytest.raises(WriteError) as e:
            store.set_notes("r", "my notes")
    finally:
        holder.rollback()
        holder.close()
    message = str(e.value)
    assert "another process holds its write lock" in message and "waited 0 s" in message
    assert "Try again once the other program is done" in message and "sqlite3 shell" in message


def test_show_piped_into_a_reader_that_stops_early_ends_quietly(db):
    proc = subprocess.Popen([sys.executable, "-m", "rla_engine.cli", "show", "r", "--db", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()            # `| head -0`: gone before `rla` has printed anything
    assert proc.wait(timeout=60) == 0
    assert proc.stderr.read() == b""
