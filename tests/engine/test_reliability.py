"""Reliability and hostile input, each case one finding of the fault campaign: run ids that are
paths, malformed commands, failures on a full disk, damaged checkpoints, kills before the first
iteration, reused pids, files only the user can read. Real `rla` subprocesses, real files."""
import asyncio
import errno
import json
import os
import signal
import socket
import sqlite3
import stat
import time

import pytest

from rla_engine import checkpoint
from rla_engine.client import EngineClient
from rla_engine.paths import checkpoints_dir, claim, log_path
from rla_engine.store import SCHEMA_VERSION, StoreError, WriteError, open_store
from rla_engine.vocabulary import CommandOutcome

from engine_support import TINY, one_line_error, only_run, rla, spawn, wait_for


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


# -- 1. a run id is never a path ----------------------------------------------------------------
@pytest.mark.parametrize("bad", ["../../x", "..", "a/b", ".hidden", "-x", "x" * 101, "a\nb"])
def test_a_run_id_that_is_a_path_is_refused_before_anything_is_written(tmp_path, bad):
    home = tmp_path / "home"
    home.mkdir()
    db = home / "h.db"
    line = one_line_error(rla("run", *TINY, "--iterations", "1", f"--run-id={bad}", db=db))
    assert "run id" in line
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["home"]
    with pytest.raises(StoreError, match="run id"):
        open_store(db).create_run(bad, name="x", preset="", config={}, device="cpu")


def test_deleting_a_run_whose_stored_id_is_a_path_keeps_every_other_file(tmp_path):
    home = tmp_path / "home"
    db = home / "h.db"
    store = open_store(db)
    store.create_run("good", name="good", preset="", config={}, device="cpu")
    store.set_status("good", "completed")
    claim(checkpoints_dir(db, "good"), store.database_id, db)
    (checkpoints_dir(db, "good") / "it-000000001.pt").write_bytes(b"x")
    (home / "unrelated.txt").write_text("keep me")
    for bad in ("..", "../..", "."):        # rows written by an older program or by hand
        with sqlite3.connect(db) as c:
            c.execute("INSERT INTO runs (id, name, status, config_json) VALUES (?, 'bad', 'stopped', '{}')", [bad])

    async def delete_all():
        client = EngineClient(db)
        for bad in ("..", "../..", "."):
            await client.delete_run(bad)
        await client.close()
    asyncio.run(delete_all())
    assert db.exists() and (home / "unrelated.txt").read_text() == "keep me"
    assert (checkpoints_dir(db, "good") / "it-000000001.pt").exists()
    assert [r["id"] for r in store.list_runs()] == ["good"]
    assert one_line_error(rla("resume", "..", db=db)).startswith("rla: run id '..' is not allowed")


def test_deleting_a_run_whose_checkpoint_folder_is_a_link_removes_only_the_link(tmp_path):
    db = tmp_path / "h.db"
    store = open_store(db)
    store.create_run("r", name="r", preset="", config={}, device="cpu")
    store.set_status("r", "stopped")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious").write_text("x")
    checkpoints_dir(db, "r").parent.mkdir(parents=True)
    checkpoints_dir(db, "r").symlink_to(elsewhere)

    async def delete():
        client = EngineClient(db)
        await client.delete_run("r")
        await client.close()
    asyncio.run(delete())
    assert (elsewhere / "precious").exists() and not checkpoints_dir(db, "r").exists()


# -- 3. malformed command rows never kill a live run --------------------------------------------
HOSTILE = {
    "not-utf8": ("set_difficulty", b'{"value": "\xff\xfe"}'),
    "deep": ("set_difficulty", ("[" * 30_000 + "]" * 30_000).encode()),
    "deeper-and-big": ("set_difficulty", ("[" * 100_000 + "]" * 100_000).encode()),
    "5000-digits": ("set_difficulty", ('{"value": ' + "9" * 5000 + "}").encode()),
    "one-megabyte": ("set_difficulty", ('{"value": "' + "x" * 1_000_000 + '"}').encode()),
    "kind-not-text": (b"\xff\x00pause", b"{}"),
    "kind-number": (7, b"{}"),
    "payload-list": ("pause", b"[1, 2]"),
}


def test_malformed_command_rows_are_rejected_with_an_event_and_the_run_goes_on(tmp_path):
    db = tmp_path / "h.db"
    proc = spawn(db, "run", *TINY, "--iterations", "40")
    store = open_store(db)
    run = wait_for(lambda: (r := only_run(store)) and r["iteration"] >= 1 and r, what="a live run")
    ids = {}
    with sqlite3.connect(db) as c:
        for name, (kind, payload) in HOSTILE.items():
            ids[name] = c.execute("INSERT INTO commands (run_id, kind, payload_json, created_at) VALUES (?, ?, ?, ?)",
                                  [run["id"], kind, payload, time.time()]).lastrowid
    good = store.add_command(run["id"], "checkpoint")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert store.get_run(run["id"])["status"] == "completed"
    outcomes = {name: store.command(i)["outcome"] for name, i in ids.items()}
    assert set(outcomes.values()) == {CommandOutcome.REJECTED}, outcomes
    results = {name: store.command(i)["detail"] for name, i in ids.items()}
    assert all(results.values()), results                    # each with its reason
    assert "UTF-8" in results["not-utf8"] and "deeply" in results["deep"]
    assert "bytes; at most" in results["one-megabyte"]
    assert store.command(good)["outcome"] == CommandOutcome.APPLIED
    rejected = [e for e in store.events(run["id"]) if e["kind"] == "command_rejected"]
    assert sorted(e["payload"]["command"] for e in rejected) == sorted(ids.values())
    # an event keeps an excerpt of a big payload, not the payload
    assert max(len(json.dumps(e["payload"])) for e in rejected) < 1000


# -- 4. a failure that cannot be written, and a failure kept through a resume -------------------
def test_a_failure_is_recorded_at_the_last_committed_iteration_and_survives_resume(tmp_path, monkeypatch):
    db = tmp_path / "h.db"
    res = rla("run", *TINY, "--iterations", "7", "--set", "run.checkpoint_every=5", db=db)
    assert res.returncode == 0, res.stderr
    store = open_store(db)
    run_id = only_run(store)["id"]
    checkpoint.latest(checkpoints_dir(db, run_id)).unlink()    # the one taken when it ended: 5 is left
    # what a disk-full failure at iteration 8 leaves: the failure event at committed iteration 7
    with sqlite3.connect(db) as c:
        c.execute("UPDATE runs SET status = 'failed' WHERE id = ?", [run_id])
    store.end_run(run_id, 7, "failed", {"iteration": 8, "error": "OSError: [Errno 28] No space left"},
                  error="iteration 8: OSError: [Errno 28] No space left on device")
    res = rla("resume", run_id, "--iterations", "1", db=db)
    assert res.returncode == 0, res.stderr
    kinds = [(e["kind"], e["iteration"]) for e in store.events(run_id)]
    assert ("failed", 7) in kinds and ("rewound", 5) in kinds
    assert "No space left" in json.dumps([e["payload"] for e in store.events(run_id, kinds=["failed"])])


def test_when_the_disk_fills_the_reserve_is_given_up_to_record_the_failure(tmp_path, monkeypatch):
    import torch

    from rla_engine.config import build
    from rla_engine.loop.trainer import Trainer
    from rla_engine.runner import Runner
    store = open_store(tmp_path / "h.db")
    cfg = build(preset="tiny", sets=["run.iterations=5"])
    tr = Trainer(cfg, torch.device("cpu"))
    store.create_run("r", name="full", preset="", config=cfg.to_dict(), device="cpu")
    real_save, real_end = checkpoint.save, store.end_run
    reserve_seen = []

    def save(folder, iteration, state, keep, owner=None, unpruned=None):
        if iteration == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_save(folder, iteration, state, keep, owner, unpruned)

    def end_run(*a, **kw):       # the first try meets the full disk; the reserve makes room
        if not reserve_seen:
            reserve_seen.append((checkpoints_dir(store.path, "r") / "space-reserve").exists())
            raise WriteError("cannot write database: the disk is full", disk_full=True)
        return real_end(*a, **kw)
    monkeypatch.setattr(checkpoint, "save", save)
    monkeypatch.setattr(store, "end_run", end_run)
    assert Runner(store, "r", tr, 5, out=lambda s: None).run() == 1
    run = store.get_run("r")
    assert reserve_seen == [True]
    assert run["status"] == "failed" and "No space left" in run["error"]
    assert "checkpoint of iteration 3" in run["error"]
    failed = store.events("r", kinds=["failed"])
    assert failed and failed[0]["iteration"] == 3 == store.last_iteration("r")
    assert not (checkpoints_dir(store.path, "r") / "space-reserve").exists()


def test_a_failed_commit_names_the_iteration_that_was_not_stored(tmp_path, monkeypatch):
    import torch

    from rla_engine.config import build
    from rla_engine.loop.trainer import Trainer
    from rla_engine.runner import Runner
    store = open_store(tmp_path / "h.db")
    cfg = build(preset="tiny", sets=["run.iterations=5"])
    tr = Trainer(cfg, torch.device("cpu"))
    store.create_run("r", name="x", preset="", config=cfg.to_dict(), device="cpu")
    real = store.commit_iteration

    def commit(run_id, iteration, **kw):
        if iteration == 2:
            raise WriteError("cannot write database: the disk is full", disk_full=True)
        return real(run_id, iteration, **kw)
    monkeypatch.setattr(store, "commit_iteration", commit)
    assert Runner(store, "r", tr, 5, out=lambda s: None).run() == 1
    run = store.get_run("r")
    assert run["error"].startswith("iteration 2 (storing it): WriteError")
    assert store.events("r", kinds=["failed"])[0]["iteration"] == 1 == store.last_iteration("r")


# -- 5. damaged checkpoints: the newest good one, with an event ----------------------------------
def test_resume_skips_a_damaged_newest_checkpoint_with_an_event(tmp_path):
    db = tmp_path / "h.db"
    assert rla("run", *TINY, "--iterations", "4", db=db).returncode == 0
    store = open_store(db)
    run_id = only_run(store)["id"]
    folder = checkpoints_dir(db, run_id)
    newest = checkpoint.latest(folder)
    data = bytearray(newest.read_bytes())
    data[-200:-136] = bytes(64)                       # 64 bytes zeroed inside the payload
    newest.write_bytes(bytes(data))
    (folder / f".{newest.name}.tmp").write_bytes(b"half")   # a write that was killed
    res = rla("resume", run_id, "--iterations", "1", db=db)
    assert res.returncode == 0, res.stderr
    skipped = store.events(run_id, kinds=["checkpoint_skipped"])
    assert [e["payload"]["checkpoint"] for e in skipped] == [newest.name]
    assert "checksum" in skipped[0]["payload"]["reason"]
    assert not list(folder.glob(".*.tmp"))
    for p in checkpoint.list_checkpoints(folder):
        p.write_bytes(b"")
    line = one_line_error(rla("resume", run_id, db=db))
    assert "cannot be resumed" in line and "empty file" in line


# -- 6. a run killed before its first iteration can be resumed ----------------------------------
def test_a_run_killed_as_soon_as_it_appears_can_be_resumed(tmp_path):
    db = tmp_path / "h.db"
    proc = spawn(db, "run", *TINY, "--iterations", "3")
    store = open_store(db)
    run = wait_for(lambda: only_run(store), what="the run row", timeout=60)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert checkpoint.list_checkpoints(checkpoints_dir(db, run["id"]))
    res = rla("resume", run["id"], db=db)
    assert res.returncode == 0, res.stderr
    assert store.get_run(run["id"])["status"] == "completed"
    assert [r["iteration"] for r in store.iterations(run["id"])] == [0, 1, 2, 3]


# -- 7. a reused pid is not a live engine ---------------------------------------------------------
def test_a_live_pid_with_another_start_time_or_a_stale_heartbeat_is_a_crashed_run(tmp_db):
    store = open_store(tmp_db)
    for rid in ("mine", "reused", "old-row-stale", "old-row-fresh"):
        store.create_run(rid, name=rid, preset="", config={}, device="cpu")
    now = time.time()
    with sqlite3.connect(tmp_db) as c:       # every row names this test's own, living, pid
        c.execute("UPDATE runs SET pid = ?, host = ?", [os.getpid(), socket.gethostname()])
        c.execute("UPDATE runs SET pid_start = 'another-boot/12345' WHERE id = 'reused'")
        c.execute("UPDATE runs SET pid_start = NULL, heartbeat_at = ? WHERE id = 'old-row-stale'", [now - 3600])
        c.execute("UPDATE runs SET pid_start = NULL, heartbeat_at = ? WHERE id = 'old-row-fresh'", [now])
    assert sorted(store.refresh_liveness()) == ["old-row-stale", "reused"]
    assert {r["id"]: r["status"] for r in store.list_runs()} == {
        "mine": "running", "reused": "crashed", "old-row-stale": "crashed", "old-row-fresh": "running"}


# -- 8. clear one-line errors instead of tracebacks ----------------------------------------------
def test_a_file_called_checkpoints_beside_the_database_is_a_clear_error(tmp_path):
    db = tmp_path / "h.db"
    (tmp_path / "checkpoints").write_text("not a folder")
    line = one_line_error(rla("run", *TINY, "--iterations", "1", db=db))
    assert "checkpoint folder" in line and "a file is in the way" in line
    assert open_store(db).list_runs() == []


def test_show_on_a_damaged_database_says_what_is_wrong(tmp_path):
    db = tmp_path / "h.db"
    assert rla("run", *TINY, "--iterations", "1", db=db).returncode == 0
    run_id = only_run(open_store(db))["id"]
    with sqlite3.connect(db) as c:
        c.execute("UPDATE runs SET config_json = '{broken' WHERE id = ?", [run_id])
        c.execute("UPDATE events SET payload_json = '[[[' WHERE run_id = ?", [run_id])
    res = rla("show", run_id, db=db)
    assert res.returncode == 0 and "Traceback" not in res.stderr
    assert "configuration is damaged" in res.stdout
    assert rla("show", run_id, "--json", db=db).returncode == 0
    assert "configuration is damaged" in one_line_error(rla("resume", run_id, db=db))
    with sqlite3.connect(db) as c:
        c.execute("DROP TABLE events")
    assert "table events is missing" in one_line_error(rla("show", run_id, db=db))


@pytest.mark.parametrize("argv", [["run", "--iterations", "abc"], ["frobnicate"], [], ["show"],
                                  ["run", "--device", "tpu"], ["export", "x", "--format", "doc", "--out", "o"]])
def test_usage_mistakes_are_one_line(tmp_path, argv):
    assert "rla" in one_line_error(rla(*argv, db=None if not argv else tmp_path / "h.db"))


# -- 9. schema versions --------------------------------------------------------------------------
def test_a_database_from_a_newer_program_is_refused_naming_both_versions(tmp_path):
    for how in ("PRAGMA user_version = 42", "INSERT INTO _migrations VALUES ('077_future', 0)"):
        db = tmp_path / f"{how[:6]}.db"
        open_store(db).close()
        c = sqlite3.connect(db)
        c.execute(how)
        c.commit()
        c.close()
        before = db.read_bytes()
        line = one_line_error(rla("runs", db=db))
        assert "newer version" in line and f"this program knows schema version {SCHEMA_VERSION}" in line
        assert ("version 42" in line) if "42" in how else ("077_future" in line)
        assert db.read_bytes() == before


def test_a_database_from_an_older_program_is_migrated_in_place(tmp_path, monkeypatch):
    from rla_engine.store import schema
    db = tmp_path / "old.db"
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:2])
    open_store(db).close()
    monkeypatch.undo()
    store = open_store(db)
    store.create_run("r", name="r", preset="", config={}, device="cpu")
    assert store.get_run("r")["pid_start"]
    assert len(store.database_id) == 32
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == len(schema.MIGRATIONS)


# -- 11. files for the user only -----------------------------------------------------------------
def test_database_checkpoints_and_logs_are_private(tmp_path):
    old = os.umask(0o022)
    try:
        home = tmp_path / "home"
        db = home / "h.db"

        async def start():
            from rla_engine.config import build
            client = EngineClient(db)
            run_id = await client.start(build(preset="tiny", sets=["run.iterations=2"]))
            await client.wait(run_id)
            await client.close()
            return run_id
        run_id = asyncio.run(start())
    finally:
        os.umask(old)
    assert mode(home) == 0o700 and mode(db) == 0o600
    assert mode(checkpoints_dir(db, run_id)) == 0o700
    assert all(mode(p) == 0o600 for p in checkpoints_dir(db, run_id).iterdir())
    assert mode(log_path(db, run_id)) == 0o600 and mode(log_path(db, run_id).parent) == 0o700
    assert all(mode(p) == 0o600 for p in home.glob("h.db*"))


# -- 12. smaller ---------------------------------------------------------------------------------
def test_a_file_that_is_not_sqlite_is_never_turned_into_a_database(tmp_path):
    empty, text = tmp_path / "empty.db", tmp_path / "notes.txt"
    empty.write_bytes(b"")
    text.write_text("my notes")
    assert "empty file" in one_line_error(rla("runs", db=empty))
    assert "empty file" in one_line_error(rla("run", *TINY, "--iterations", "1", db=empty))
    notadb = one_line_error(rla("runs", db=text))
    assert "not an SQLite database" in notadb and "name a new path with --db" in notadb
    assert empty.read_bytes() == b"" and text.read_text() == "my notes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db", "notes.txt"]


# -- 4 and 8. reading on a full disk and in a read-only folder ----------------------------------
@pytest.fixture
def small_disk(tmp_path):
    """A 3 MB tmpfs (root only; skipped where mounting is not allowed)."""
    import subprocess
    point = tmp_path / "disk"
    point.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(point)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    yield point
    subprocess.run(["umount", "-l", str(point)], capture_output=True)


def test_read_only_commands_work_on_a_full_disk_and_in_a_read_only_folder(small_disk):
    import subprocess
    db = small_disk / "h.db"
    store = open_store(db)
    store.create_run("r", name="on a small disk", preset="", config={}, device="cpu")
    store.end_run("r", 0, "failed", {"error": "disk full"}, error="iteration 1: disk full")
    store.close()
    with open(small_disk / "filler", "wb") as f:
        with pytest.raises(OSError):
            while True:
                f.write(bytes(1 << 16))
    for args in (["runs"], ["show", "r"], ["runs", "--json"]):
        res = rla(*args, db=db)
        assert res.returncode == 0 and "on a small disk" in res.stdout, res.stderr
    assert "cannot be resumed" in one_line_error(rla("resume", "r", db=db))
    (small_disk / "filler").unlink()
    assert subprocess.run(["mount", "-o", "remount,ro", str(small_disk)]).returncode == 0
    res = rla("show", "r", db=db)
    assert res.returncode == 0 and "iteration 1: disk full" in res.stdout, res.stderr
    line = one_line_error(rla("run", *TINY, "--iterations", "1", db=db))
    assert "read-only" in line.lower()
