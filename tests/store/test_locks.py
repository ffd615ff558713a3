"""Writers wait for one another: no "database is locked" reaches a user while an engine writes
or while another process holds the write lock for a while."""
import signal
import sqlite3
import sys
import threading
import time
from pathlib import Path

import pytest

from rla_engine.store import WriteError, open_store, schema

sys.path.insert(0, str(Path(__file__).parents[1] / "engine"))
from engine_support import TINY, only_run, spawn, wait_for


def hold_write_lock(db, seconds, started):
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    started.set()
    time.sleep(seconds)
    conn.execute("COMMIT")
    conn.close()


def test_a_write_waits_out_a_lock_held_longer_than_sqlites_own_wait(tmp_db, monkeypatch):
    monkeypatch.setattr(schema, "BUSY_TIMEOUT_MS", 100)   # so the test need not hold it for long
    store = open_store(tmp_db, lock_wait_s=10)
    store.create_run("r", name="r", preset="", config={}, device="cpu")
    for write in (lambda: store.set_notes("r", "written while locked"),
                  lambda: store.create_run("r2", name="fts trigger", preset="", config={}, device="cpu"),
                  lambda: store.commit_iteration("r", 1, env_steps=1, wall_s=0.1, metrics={"a": 1.0},
                                                 events=[], tasks=[])):
        started = threading.Event()
        holder = threading.Thread(target=hold_write_lock, args=(tmp_db, 1.0, started))
        holder.start()
        started.wait()
        t = time.monotonic()
        write()
        assert time.monotonic() - t >= 0.8
        holder.join()
    assert store.get_run("r")["notes"] == "written while locked" and store.last_iteration("r") == 1


def test_a_lock_held_past_the_writers_patience_is_a_clear_error_and_writes_nothing(tmp_db, monkeypatch):
    monkeypatch.setattr(schema, "BUSY_TIMEOUT_MS", 100)
    store = open_store(tmp_db, lock_wait_s=0.3)
    store.create_run("r", name="r", preset="", config={}, device="cpu")
    started = threading.Event()
    holder = threading.Thread(target=hold_write_lock, args=(tmp_db, 1.5, started))
    holder.start()
    started.wait()
    with pytest.raises(WriteError, match="another process holds its write lock"):
        store.set_notes("r", "lost?")
    holder.join()
    assert store.get_run("r")["notes"] == ""
    store.set_notes("r", "now")      # the connection is usable again
    assert store.get_run("r")["notes"] == "now"


def test_notes_runs_and_commands_never_fail_beside_a_live_engine(tmp_db):
    proc = spawn(tmp_db, "run", *TINY, "--iterations", "100000")
    try:
        store = open_store(tmp_db)
        run = wait_for(lambda: (r := only_run(store)) and r["iteration"] >= 2 and r, what="a live engine")
        # at least 50 rounds of writes, and for as long as the engine takes to commit 3 iterations
        # among them (whatever the machine's speed); the deadline only stops a hang
        start, n, deadline = run["iteration"], 0, time.monotonic() + 180
        while n < 50 or store.get_run(run["id"])["iteration"] < start + 3:
            assert time.monotonic() < deadline, f"{n} rounds, no 3 iterations committed beside them"
            store.set_notes(run["id"], f"note {n}")
            store.set_tags(run["id"], [f"t{n}"])
            store.create_run(f"side-{n}", name="beside", preset="", config={}, device="cpu")
            store.add_command(run["id"], "checkpoint" if n % 10 == 0 else "bogus")
            n += 1
        assert store.get_run(run["id"])["notes"] == f"note {n - 1}"
        assert store.get_run(run["id"])["status"] == "running"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    assert store.get_run(run["id"])["status"] == "stopped"
