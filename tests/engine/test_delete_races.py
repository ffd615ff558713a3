"""Deleting a run never races its engine (issue 34, finding 5): a delete is made under the run's
engine lock, so a `rla resume` that has taken the lock but not yet marked the run live makes the
delete a refusal ("run X is live (engine pid N)"); an engine whose run row is deleted behind its
back (an older version's delete, a hand edit) stops with one clear line, exit 1, writing nothing
more; `rla doctor` counts what such an engine left and `--fix` removes it, never another
database's checkpoint folder nor one an engine holds."""
from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from rla_engine.client import EngineClient, EngineError
from rla_engine.paths import LOCK, OWNER, checkpoints_dir, lock_run, unlock_run
from rla_engine.store import open_store

from engine_support import TINY, keep_signal_handlers, rla, spawn, train, wait_for  # noqa: F401 (a fixture)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from fault_support import flock_holders

TABLES = ("metrics", "iterations", "events", "commands", "tasks")


pytestmark = pytest.mark.usefixtures("keep_signal_handlers")


def rows_of(db, run_id) -> dict[str, int]:
    with sqlite3.connect(db) as c:
        return {t: c.execute(f"SELECT count(*) FROM {t} WHERE run_id = ?", [run_id]).fetchone()[0] for t in TABLES}


def delete(db, run_id) -> None:
    async def go():
        client = EngineClient(db)
        try:
            await client.delete_run(run_id)
        finally:
            await client.close()
    asyncio.run(go())


def test_a_delete_while_a_resume_holds_the_run_is_refused_and_nothing_is_orphaned(tmp_path):
    db = tmp_path / "h.db"
    assert train(db, "r", 2) == 0
    lock = checkpoints_dir(db, "r") / LOCK
    proc = spawn(db, "resume", "r", "--iterations", "3")
    try:
        # the resume has its lock and is still loading (its row says completed): the window in
        # which a delete that only looks at the status deleted the run under it
        deadline = time.monotonic() + 60
        while proc.pid not in flock_holders(lock):
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read()
            time.sleep(0.001)
        os.kill(proc.pid, signal.SIGSTOP)
        assert open_store(db).get_run("r")["status"] == "completed"
        with pytest.raises(EngineError, match="run r is live \\(") as refused:
            delete(db, "r")
        # the engine's pid, once it has written it beside its lock (microseconds after taking it)
        assert f"(engine pid {proc.pid} on " in str(refused.value) or "(an engine holds its lock)" in str(refused.value)
        os.kill(proc.pid, signal.SIGCONT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
    assert proc.returncode == 0, err
    run = open_store(db).get_run("r")
    assert run["status"] == "completed" and run["iteration"] == 5
    assert open_store(db).orphaned_rows() == dict.fromkeys(TABLES, 0)
    delete(db, "r")                                   # once the engine is done, the delete goes through
    assert not checkpoints_dir(db, "r").exists() and rows_of(db, "r") == dict.fromkeys(TABLES, 0)


def deleted_under_its_engine(db, run_id, tables, before=None) -> tuple[int, str]:
    """Start run `run_id` (it never ends by itself), let `before(store)` happen, then delete its
    rows of `tables` and its run row behind its back (a hand edit; an older version's delete);
    return the engine's exit code and what it wrote to stderr."""
    proc = spawn(db, "run", *TINY, "--iterations", "100000", "--run-id", run_id)
    try:
        store = open_store(db)
        wait_for(lambda: (r := store.get_run(run_id)) and r["iteration"] >= 2, what="2 iterations")
        if before is not None:
            before(store)
        with sqlite3.connect(db, timeout=30) as c:
            for table in tables:
                c.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
            c.execute("DELETE FROM runs WHERE id = ?", [run_id])
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert "Traceback" not in err, err
    return proc.returncode, err


def test_an_engine_whose_run_row_is_deleted_stops_with_one_line_and_doctor_sweeps_what_it_left(tmp_path):
    db = tmp_path / "h.db"
    code, err = deleted_under_its_engine(db, "r", tables=())        # the row alone: its history stays behind
    assert code == 1, err
    assert err.strip().splitlines()[-1].startswith("rla: run r stopped: run r is no longer in ")
    assert "deleted while its engine ran" in err
    left = rows_of(db, "r")
    assert left["metrics"] > 0
    # beside it: another database's folder of a run of the same kind, and an older version's (no marker)
    other, unmarked = checkpoints_dir(db, "theirs"), checkpoints_dir(db, "old")
    for folder in (other, unmarked):
        folder.mkdir()
        (folder / "it-000000001.pt").write_bytes(b"keep")
    (other / OWNER).write_text("another-database-id")
    report = rla("doctor", db=db)
    assert report.returncode == 0, report.stderr
    assert f"found rows of deleted runs: {left['metrics']} metrics" in report.stdout
    assert "found checkpoint folders of deleted runs: 1" in report.stdout
    assert str(checkpoints_dir(db, "r")) in report.stdout
    assert rows_of(db, "r") == left and checkpoints_dir(db, "r").exists()     # a report changes nothing
    fixed = rla("doctor", "--fix", db=db)
    assert fixed.returncode == 0, fixed.stderr
    assert f"removed rows of deleted runs: {left['metrics']} metrics" in fixed.stdout
    assert rows_of(db, "r") == dict.fromkeys(TABLES, 0) and not checkpoints_dir(db, "r").exists()
    assert (other / "it-000000001.pt").read_bytes() == b"keep" == (unmarked / "it-000000001.pt").read_bytes()
    assert "found rows of deleted runs: none" in rla("doctor", db=db).stdout


def test_a_paused_engine_whose_run_row_is_deleted_stops_too(tmp_path):
    db = tmp_path / "h.db"

    def pause(store):
        store.add_command("p", "pause")
        wait_for(lambda: store.get_run("p")["status"] == "paused", what="the pause")
    code, err = deleted_under_its_engine(db, "p", TABLES, before=pause)
    assert code == 1 and "deleted while its engine ran" in err, err
    assert rows_of(db, "p") == dict.fromkeys(TABLES, 0)          # it wrote nothing after


def leftover_folder(db):
    """A checkpoint folder marked as this database's, of a run the database no longer has."""
    store = open_store(db)
    folder = checkpoints_dir(db, "gone")
    folder.mkdir(parents=True)
    (folder / OWNER).write_text(store.database_id)
    store.close()
    return folder


def test_doctor_leaves_a_leftover_folder_an_engine_holds(tmp_path):
    db = tmp_path / "h.db"
    folder = leftover_folder(db)
    fd = lock_run(folder)
    try:
        res = rla("doctor", "--fix", db=db)
    finally:
        unlock_run(fd)
    assert res.returncode == 0, res.stderr
    assert f"left alone (an engine holds it): {folder}" in res.stdout and folder.is_dir()
    assert "removed checkpoint folders of deleted runs: 0" in res.stdout


def test_a_doctor_report_writes_nothing_in_a_leftover_folder(tmp_path):
    db = tmp_path / "h.db"
    folder = leftover_folder(db)
    res = rla("doctor", db=db)
    assert res.returncode == 0 and "found checkpoint folders of deleted runs: 1" in res.stdout, res
    assert sorted(p.name for p in folder.iterdir()) == [OWNER]       # no lock file made to look
