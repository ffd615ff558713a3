"""The SQLite store (DESIGN §1, §4): schema and migrations, atomic iterations, rewind, commands,
liveness, refusing unusable files, and the reads the console and CLI rely on.

Every test uses a real SQLite file in a temporary folder and checks it, where it matters, with an
independent `sqlite3` connection rather than through the Store itself.
"""
from __future__ import annotations

import math
import os
import socket
import sqlite3
import subprocess
import sys
import time

import pytest

from rla_engine import store as store_mod
from rla_engine.store import Store, StoreError, open_store
from rla_engine.vocabulary import CommandOutcome, CommandResult

from plain_user import as_plain_user, needs_a_plain_user

RUN_TABLES = ("metrics", "iterations", "events", "commands", "tasks")


# ----------------------------------------------------------------------------- helpers


@pytest.fixture
def store(tmp_db):
    s = open_store(tmp_db)
    yield s
    s.close()


def make_run(s: Store, run_id: str = "r1", config: dict | None = None) -> str:
    s.create_run(run_id, name=f"name-{run_id}", preset="quickstart", config=config or {}, device="cpu")
    return run_id


def task_row(uid: int, created: int, **over) -> dict:
    row = {"uid": uid, "slot": uid % 4, "version": 0, "family": "gridworld",
           "params_json": '{"size": 5}', "difficulty": 0.3, "status": "active", "last_acc": 0.5,
           "direction": None, "prev_acc": None, "new_acc": None, "critic_json": None,
           "created_iteration": created, "decided_iteration": None}
    row.update(over)
    return row


def commit(s: Store, run_id: str, it: int, *, metrics=None, events=None, tasks=None) -> None:
    s.commit_iteration(
        run_id, it, env_steps=100 * it, wall_s=0.5,
        metrics={"policy/reward": float(it), "loss/policy": 1.0 / it} if metrics is None else metrics,
        events=[("iteration", {"n": it})] if events is None else events,
        tasks=[task_row(it, it)] if tasks is None else tasks)


def raw(path) -> sqlite3.Connection:
    """An independent connection: what another process would see."""
    return sqlite3.connect(str(path))


def count(path, table: str, run_id: str | None = None) -> int:
    with raw(path) as c:
        if run_id is None:
            return c.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        col = "id" if table == "runs" else "run_id"
        return c.execute(f"SELECT count(*) FROM {table} WHERE {col} = ?", [run_id]).fetchone()[0]


def snapshot(path, run_id: str) -> dict:
    """Every row of one run, table by table, for before/after comparisons."""
    with raw(path) as c:
        out = {t: sorted(c.execute(f"SELECT * FROM {t} WHERE run_id = ?", [run_id]).fetchall(), key=repr)
               for t in RUN_TABLES}
        out["runs"] = c.execute("SELECT * FROM runs WHERE id = ?", [run_id]).fetchall()
    return out


def folder_state(folder) -> dict:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


# ----------------------------------------------------------------------------- schema, migrations


def test_new_database_gets_schema_through_named_migrations(tmp_db):
    s = open_store(tmp_db)
    s.close()
    with raw(tmp_db) as c:
        tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        migrations = [r[0] for r in c.execute("SELECT name FROM _migrations ORDER BY name")]
        metric_cols = [r[1] for r in c.execute("PRAGMA table_info(metrics)")]
    assert {"_migrations", "runs", "iterations", "metrics", "events", "commands", "tasks"} <= tables
    assert migrations == ["001_schema", "002_runs_fts", "003_process_start", "004_database_id",
                          "005_command_outcome", "006_signed_checkpoints"]
    assert metric_cols == ["run_id", "iteration", "key", "value", "t"]


def test_the_task_row_has_one_definition(tmp_db):
    """vocabulary.TaskFields: the table's columns, a bundle's task fields (checked in the table's
    order: the store inserts them by position) and the store's reading rules are its."""
    from rla_engine import bundle, bundle_check
    from rla_engine.store.reads import TASK_COLUMN_KINDS
    from rla_engine.vocabulary import TASK_COLUMNS, TASK_FIELDS
    open_store(tmp_db).close()
    with raw(tmp_db) as c:
        assert tuple(r[1] for r in c.execute("PRAGMA table_info(tasks)")) == TASK_COLUMNS == ("run_id", *TASK_FIELDS)
    assert tuple(bundle.TASK_RULES) == TASK_FIELDS and set(bundle_check.TASK) == set(TASK_FIELDS)
    assert set(TASK_COLUMN_KINDS) == set(TASK_FIELDS)


def test_new_database_is_in_wal_mode(tmp_db):
    open_store(tmp_db).close()
    with raw(tmp_db) as c:   # journal_mode=wal is persistent: a fresh connection sees it
        assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_reopening_applies_no_migration_twice_and_keeps_data(tmp_db):
    s = open_store(tmp_db)
    make_run(s, "keep")
    commit(s, "keep", 1)
    s.close()
    with raw(tmp_db) as c:
        before = c.execute("SELECT name, applied_at FROM _migrations").fetchall()
    for _ in range(2):
        s = open_store(tmp_db)
        assert s.get_run("keep")["iteration"] == 1
        assert [r["iteration"] for r in s.iterations("keep")] == [1]
        s.close()
    with raw(tmp_db) as c:
        assert c.execute("SELECT name, applied_at FROM _migrations").fetchall() == before


def test_a_new_migration_is_applied_once_to_an_existing_database(tmp_db, monkeypatch):
    open_store(tmp_db).close()
    calls = []

    def m002(db):
        calls.append(1)
        db.execute("ALTER TABLE runs ADD COLUMN extra TEXT")

    monkeypatch.setattr(store_mod.schema, "MIGRATIONS", [*store_mod.schema.MIGRATIONS, ("999_extra", m002)])
    open_store(tmp_db).close()
    open_store(tmp_db).close()
    assert calls == [1]
    with raw(tmp_db) as c:
        assert [r[0] for r in c.execute("SELECT name FROM _migrations ORDER BY name")] == \
            ["001_schema", "002_runs_fts", "003_process_start", "004_database_id", "005_command_outcome",
             "006_signed_checkpoints", "999_extra"]
        assert "extra" in [r[1] for r in c.execute("PRAGMA table_info(runs)")]


def test_a_migration_that_fails_half_way_leaves_nothing_behind(tmp_db, monkeypatch):
    open_store(tmp_db).close()

    def broken(db):
        db["new_table"].create({"x": int})
        raise RuntimeError("migration bug")

    def fixed(db):
        db["new_table"].create({"x": int})

    monkeypatch.setattr(store_mod.schema, "MIGRATIONS", [*store_mod.schema.MIGRATIONS, ("002_new", broken)])
    with pytest.raises(Exception, match="migration bug"):
        open_store(tmp_db)
    with raw(tmp_db) as c:
        tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "new_table" not in tables
    # the fixed release of the same migration then applies cleanly
    monkeypatch.setattr(store_mod.schema, "MIGRATIONS", [*store_mod.schema.MIGRATIONS[:-1], ("002_new", fixed)])
    open_store(tmp_db).close()


# ----------------------------------------------------------------------------- commit_iteration


def test_commit_iteration_writes_everything_of_the_iteration(store, tmp_db):
    run = make_run(store)
    store.commit_iteration(run, 1, env_steps=640, wall_s=1.25,
                           metrics={"policy/reward": 0.5, "loss/policy": 2},
                           events=[("pool", {"accepted": 3}), ("note", {})],
                           tasks=[task_row(7, 1), task_row(8, 1, status="pending")])
    assert store.get_run(run)["iteration"] == 1
    assert store.last_iteration(run) == 1
    it = store.iterations(run)
    assert [(r["iteration"], r["env_steps"], r["wall_s"]) for r in it] == [(1, 640, 1.25)]
    assert store.metrics_by_iteration(run) == {1: {"policy/reward": 0.5, "loss/policy": 2.0}}
    assert [(e["kind"], e["payload"], e["iteration"]) for e in store.events(run)] == \
        [("pool", {"accepted": 3}, 1), ("note", {}, 1)]
    assert {t["uid"]: t["status"] for t in store.tasks(run)} == {7: "active", 8: "pending"}
    assert [t["uid"] for t in store.tasks(run, statuses=["pending"])] == [8]
    # and another process sees it all (committed, not just buffered in our connection)
    assert count(tmp_db, "metrics", run) == 2 and count(tmp_db, "iterations", run) == 1


def _bad_task(s, run):
    commit(s, run, 3, tasks=[task_row(30, 3), task_row(31, 3, params_json={"not": "a string"})])


def _bad_event(s, run):
    commit(s, run, 3, events=[("ok", {}), ("bad", {"obj": object()})])


def _nan_metric(s, run):
    commit(s, run, 3, metrics={"policy/reward": 1.0, "loss/policy": float("nan")})


@pytest.mark.parametrize("fail", [_bad_task, _bad_event, _nan_metric],
                         ids=["task-insert-fails", "event-payload-fails", "nan-metric"])
def test_failed_commit_stores_nothing_of_that_iteration(store, tmp_db, fail):
    run = make_run(store)
    commit(store, run, 1)
    commit(store, run, 2)
    before = snapshot(tmp_db, run)
    with pytest.raises((ValueError, TypeError, sqlite3.Error, StoreError)):
        fail(store, run)
    assert snapshot(tmp_db, run) == before
    with raw(tmp_db) as c:
        for table, col in (("metrics", "iteration"), ("events", "iteration"),
                           ("iterations", "iteration"), ("tasks", "created_iteration")):
            assert c.execute(f"SELECT count(*) FROM {table} WHERE {col} = 3").fetchone()[0] == 0, table
    assert store.get_run(run)["iteration"] == 2
    assert [r["iteration"] for r in store.iterations(run)] == [1, 2]
    # the connection is not left inside a broken transaction: the retry goes through
    commit(store, run, 3)
    assert [r["iteration"] for r in store.iterations(run)] == [1, 2, 3]
    assert store.get_run(run)["iteration"] == 3


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf"), None, "0.5"],
                         ids=["nan", "inf", "-inf", "none", "string"])
def test_non_finite_or_non_numeric_metrics_are_refused(store, tmp_db, bad):
    run = make_run(store)
    with pytest.raises(ValueError, match="rm/precision"):
        commit(store, run, 1, metrics={"policy/reward": 0.1, "rm/precision": bad})
    assert count(tmp_db, "metrics") == 0
    assert count(tmp_db, "iterations") == 0


def test_nothing_non_finite_is_ever_stored(store, tmp_db):
    run = make_run(store)
    for it, v in enumerate([0.5, float("nan"), 1e308, float("inf"), -2.0, float("-inf")], start=1):
        try:
            commit(store, run, it, metrics={"x": v})
        except ValueError:
            pass
    with raw(tmp_db) as c:
        values = [r[0] for r in c.execute("SELECT value FROM metrics")]
    assert values and all(isinstance(v, float) and math.isfinite(v) for v in values)
    assert sorted(values) == [-2.0, 0.5, 1e308]


def test_metric_rows_are_unique_per_run_iteration_key(store, tmp_db):
    run = make_run(store)
    commit(store, run, 1, metrics={"a": 1.0, "b": 2.0})
    commit(store, run, 1, metrics={"a": 5.0})       # the same iteration written again
    with raw(tmp_db) as c:
        rows = c.execute("SELECT key, value FROM metrics WHERE run_id = ? AND iteration = 1 ORDER BY key",
                         [run]).fetchall()
        assert rows == [("a", 5.0), ("b", 2.0)]
        with pytest.raises(sqlite3.IntegrityError):
            c.execute("INSERT INTO metrics (run_id, iteration, key, value, t) VALUES (?, 1, 'a', 9.0, 0)",
                      [run])
        # the same key at another iteration or in another run is a different row
        c.execute("INSERT INTO metrics (run_id, iteration, key, value, t) VALUES (?, 2, 'a', 9.0, 0)", [run])
        c.execute("INSERT INTO metrics (run_id, iteration, key, value, t) VALUES ('other', 1, 'a', 9.0, 0)")


# ----------------------------------------------------------------------------- rewind


def test_rewind_deletes_rows_after_k_and_keeps_the_rest(store, tmp_db):
    run, other = make_run(store, "r1"), make_run(store, "r2")
    for it in range(1, 6):
        commit(store, run, it)
        commit(store, other, it)
    cmd = store.add_command(run, "pause")
    other_before = snapshot(tmp_db, other)

    gone = store.rewind(run, 3)

    # iterations 4 and 5: 2 metrics + 1 iteration row + 1 event + 1 task each
    assert gone == 2 * (2 + 1 + 1 + 1)
    assert [r["iteration"] for r in store.iterations(run)] == [1, 2, 3]
    assert sorted(store.metrics_by_iteration(run)) == [1, 2, 3]
    assert sorted(t["created_iteration"] for t in store.tasks(run)) == [1, 2, 3]
    events = store.events(run)
    assert [e["iteration"] for e in events if e["kind"] == "iteration"] == [1, 2, 3]
    assert events[-1]["kind"] == "rewound" and events[-1]["iteration"] == 3
    assert events[-1]["payload"]["to"] == 3
    assert store.get_run(run)["iteration"] == 3
    assert store.last_iteration(run) == 3
    assert store.command(cmd)["kind"] == "pause"              # commands are not history
    assert snapshot(tmp_db, other) == other_before              # another run is untouched
    # the run goes on from k: iteration 4 can be committed again
    commit(store, run, 4, metrics={"policy/reward": 42.0})
    assert store.series(run, "policy/reward") == ([1, 2, 3, 4], [1.0, 2.0, 3.0, 42.0])


# ----------------------------------------------------------------------------- commands


def test_commands_round_trip(store):
    run, other = make_run(store, "r1"), make_run(store, "r2")
    a = store.add_command(run, "pause")
    b = store.add_command(run, "set_difficulty", {"value": 0.4})
    c = store.add_command(run, "set_difficulty", {"value": None})
    store.add_command(other, "stop")
    pending = store.pending_commands(run)
    assert [(p["id"], p["kind"], p["payload"]) for p in pending] == \
        [(a, "pause", {}), (b, "set_difficulty", {"value": 0.4}), (c, "set_difficulty", {"value": None})]

    store.finish_command(b, CommandResult(CommandOutcome.APPLIED, "difficulty 0.4"))
    assert [p["id"] for p in store.pending_commands(run)] == [a, c]
    done = store.command(b)
    assert (done["outcome"], done["detail"]) == ("applied", "difficulty 0.4") and done["applied_at"] is not None
    assert [p["kind"] for p in store.pending_commands(other)] == ["stop"]


def test_a_command_closed_by_an_older_program_reads_as_its_outcome_and_detail(tmp_db, monkeypatch):
    """Before migration 005 a command's outcome and detail were one text, `result`."""
    monkeypatch.setattr(store_mod.schema, "MIGRATIONS", store_mod.schema.MIGRATIONS[:4])
    old = open_store(tmp_db)
    run = make_run(old)
    closed = {text: old.add_command(run, "pause") for text in
              ("applied", "applied: ckpt-000007.pt", "ignored: already paused", "rejected: x: y", "what?")}
    pending = old.add_command(run, "stop")
    old.close()
    with raw(tmp_db) as c:
        assert "outcome" not in [r[1] for r in c.execute("PRAGMA table_info(commands)")]
        c.executemany("UPDATE commands SET applied_at = ?, result = ? WHERE id = ?",
                      [(time.time(), text, i) for text, i in closed.items()])
    monkeypatch.undo()
    store = open_store(tmp_db)
    try:
        read = {text: (store.command(i)["outcome"], store.command(i)["detail"]) for text, i in closed.items()}
        assert read == {"applied": (CommandOutcome.APPLIED, None),
                        "applied: ckpt-000007.pt": (CommandOutcome.APPLIED, "ckpt-000007.pt"),
                        "ignored: already paused": (CommandOutcome.IGNORED, "already paused"),
                        "rejected: x: y": (CommandOutcome.REJECTED, "x: y"),
                        "what?": (None, "what?")}            # no outcome: the text is kept as the detail
        assert (store.command(pending)["outcome"], store.command(pending)["detail"]) == (None, None)
        assert [p["id"] for p in store.pending_commands(run)] == [pending]
        store.finish_command(pending, CommandResult(CommandOutcome.APPLIED))
        assert store.command(pending)["outcome"] == CommandOutcome.APPLIED
    finally:
        store.close()


def test_malformed_command_payload_comes_back_as_none(store, tmp_db):
    run = make_run(store)
    good = store.add_command(run, "resume")
    with raw(tmp_db) as c:
        c.execute("INSERT INTO commands (run_id, kind, payload_json, created_at) VALUES (?, ?, ?, ?)",
                  [run, "set_difficulty", "{value: oops", time.time()])
    pending = store.pending_commands(run)
    assert [(p["kind"], p["payload"]) for p in pending] == [("resume", {}), ("set_difficulty", None)]
    assert pending[0]["id"] == good


# ----------------------------------------------------------------------------- liveness


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _set(path, run_id, **fields):
    cols = ", ".join(f"{k} = ?" for k in fields)
    with raw(path) as c:
        c.execute(f"UPDATE runs SET {cols} WHERE id = ?", [*fields.values(), run_id])


def test_liveness_on_this_host_goes_by_pid(store, tmp_db):
    dead, alive, paused_dead, done = (make_run(store, r) for r in ("dead", "alive", "paused", "done"))
    pid = _dead_pid()
    host = socket.gethostname()
    _set(tmp_db, dead, pid=pid, host=host, heartbeat_at=time.time())        # fresh beat, dead pid
    _set(tmp_db, paused_dead, pid=pid, host=host, status="paused")
    _set(tmp_db, alive, pid=os.getpid(), host=host, heartbeat_at=time.time() - 3600)  # old beat, live pid
    _set(tmp_db, done, pid=pid, host=host)
    store.set_status(done, "completed")

    assert sorted(store.refresh_liveness(stale_after_s=15)) == ["dead", "paused"]
    for r in ("dead", "paused"):
        row = store.get_run(r)
        assert row["status"] == "crashed" and row["ended_at"] is not None and row["error"]
    assert store.get_run("alive")["status"] == "running"
    assert store.get_run("done")["status"] == "completed"
    assert store.refresh_liveness(stale_after_s=15) == []      # marking happens once


def test_liveness_on_another_host_goes_by_heartbeat_age(store, tmp_db):
    now = time.time()
    stale = make_run(store, "stale")
    fresh = make_run(store, "fresh")
    # the local pid must not matter for a run on another host (it is some other machine's pid)
    _set(tmp_db, stale, host="elsewhere.example", pid=os.getpid(), heartbeat_at=now - 60)
    _set(tmp_db, fresh, host="elsewhere.example", pid=_dead_pid(), heartbeat_at=now - 5)
    assert store.refresh_liveness(stale_after_s=15) == ["stale"]
    assert store.get_run("stale")["status"] == "crashed"
    assert store.get_run("fresh")["status"] == "running"


def test_liveness_uses_the_runs_own_stale_after_s_by_default(store, tmp_db):
    now = time.time()
    patient = make_run(store, "patient", config={"run": {"stale_after_s": 120.0}})
    default = make_run(store, "default", config={})
    for r in (patient, default):
        _set(tmp_db, r, host="elsewhere.example", pid=None, heartbeat_at=now - 60)
    assert store.refresh_liveness() == ["default"]            # 60 s > 15 s default, < 120 s
    assert store.get_run("patient")["status"] == "running"


# ----------------------------------------------------------------------------- unusable files


def test_corrupt_file_raises_store_error_and_is_left_untouched(tmp_path):
    path = tmp_path / "corrupt.db"
    path.write_bytes(os.urandom(8192))
    before = folder_state(tmp_path)
    with pytest.raises(StoreError) as e:
        open_store(path)
    assert str(path) in str(e.value)
    assert folder_state(tmp_path) == before        # same bytes, and no -wal/-shm/-journal made


def test_sqlite_file_of_another_application_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "other.db"
    with sqlite3.connect(str(path)) as c:
        c.execute("CREATE TABLE foo (x INTEGER)")
        c.execute("INSERT INTO foo VALUES (1)")
    before = folder_state(tmp_path)
    with pytest.raises(StoreError) as e:
        open_store(path)
    assert str(path) in str(e.value) and "foo" in str(e.value)
    assert folder_state(tmp_path) == before
    with raw(path) as c:
        assert {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} == {"foo"}
        assert c.execute("PRAGMA journal_mode").fetchone()[0] != "wal"


def test_directory_path_is_refused(tmp_path):
    folder = tmp_path / "a_folder.db"
    folder.mkdir()
    with pytest.raises(StoreError, match="directory"):
        open_store(folder)
    assert list(folder.iterdir()) == []


OPEN_IN_A_PROCESS = """
import sys
from rla_engine.store import StoreError, open_store
try:
    open_store(sys.argv[1])
except StoreError as e:
    print(e)
    sys.exit(2)
"""


@needs_a_plain_user
def test_unwritable_folder_is_refused(tmp_path):
    folder = tmp_path / "readonly"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        res = subprocess.run(as_plain_user([sys.executable, "-c", OPEN_IN_A_PROCESS, str(folder / "x.db")]),
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 2 and str(folder) in res.stdout, (res.returncode, res.stdout, res.stderr)
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o700)


def test_create_false_on_a_missing_file_raises_and_creates_nothing(tmp_path):
    path = tmp_path / "sub" / "missing.db"
    with pytest.raises(StoreError) as e:
        open_store(path, create=False)
    assert str(path) in str(e.value)
    assert not path.exists() and not path.parent.exists()
    assert list(tmp_path.iterdir()) == []


def test_create_false_opens_an_existing_database(tmp_db):
    s = open_store(tmp_db)
    make_run(s, "x")
    s.close()
    s = open_store(tmp_db, create=False)
    assert s.run_exists("x")
    s.close()


# ----------------------------------------------------------------------------- reads


def test_latest_metrics_takes_each_keys_own_last_value(store):
    run, other = make_run(store, "r1"), make_run(store, "r2")
    for it in range(1, 26):
        m = {"policy/reward": float(it)}
        if it % 10 == 0:
            m["eval/success_rate"] = it / 100
        commit(store, run, it, metrics=m, tasks=[])
    commit(store, other, 30, metrics={"eval/success_rate": 0.99, "policy/reward": -1.0}, tasks=[])
    assert store.latest_metrics(run) == {"policy/reward": 25.0, "eval/success_rate": 0.2}
    assert store.latest_metrics(other) == {"eval/success_rate": 0.99, "policy/reward": -1.0}
    assert store.latest_metrics("nobody") == {}


def test_metrics_filters_by_iteration_and_key(store):
    run = make_run(store)
    for it in range(1, 5):
        commit(store, run, it)
    rows = store.metrics(run, after_iteration=2, keys=["policy/reward"])
    assert [(r["iteration"], r["key"], r["value"]) for r in rows] == \
        [(3, "policy/reward", 3.0), (4, "policy/reward", 4.0)]
    assert store.series(run, "loss/policy")[0] == [1, 2, 3, 4]


def test_delete_run_removes_every_row_of_that_run_only(store, tmp_db):
    a, b = make_run(store, "a"), make_run(store, "b")
    for run in (a, b):
        commit(store, run, 1)
        commit(store, run, 2)
        store.add_command(run, "pause")
        store.add_event(run, 2, "paused", {})
    b_before = snapshot(tmp_db, b)
    store.delete_run(a)
    for table in (*RUN_TABLES, "runs"):
        assert count(tmp_db, table, a) == 0, table
    assert snapshot(tmp_db, b) == b_before
    assert not store.run_exists(a) and store.run_exists(b)


def test_notes_tags_archive_and_list_runs(store, tmp_db):
    old, new = make_run(store, "old"), make_run(store, "new")
    _set(tmp_db, old, created_at=1000.0)
    _set(tmp_db, new, created_at=2000.0)
    store.set_notes(old, "baseline, λ = 1")
    store.set_tags(old, [" ablation ", "", "lam1"])
    assert store.get_run(old)["notes"] == "baseline, λ = 1"
    assert store.get_run(old)["tags"] == "ablation,lam1"
    assert [r["id"] for r in store.list_runs()] == ["new", "old"]          # newest first

    store.set_archived(old)
    assert [r["id"] for r in store.list_runs()] == ["new"]
    assert [r["id"] for r in store.list_runs(include_archived=True)] == ["new", "old"]
    store.set_archived(old, False)
    assert [r["id"] for r in store.list_runs()] == ["new", "old"]


def test_run_lifecycle_fields(store):
    run = make_run(store, config={"task": {"family": "gridworld"}})
    row = store.get_run(run)
    assert row["status"] == "running" and row["pid"] == os.getpid() and row["host"] == socket.gethostname()
    assert store.run_config(run) == {"task": {"family": "gridworld"}}
    store.set_status(run, "paused")
    assert store.get_run(run)["ended_at"] is None
    store.set_status(run, "failed", error="boom")
    row = store.get_run(run)
    assert row["status"] == "failed" and row["error"] == "boom" and row["ended_at"] is not None
    store.claim_run(run, "cuda")
    row = store.get_run(run)
    assert row["status"] == "running" and row["ended_at"] is None and row["error"] is None
    assert row["device"] == "cuda"


# ----------------------------------------------------------------------------- two processes' view


def test_engine_and_reader_see_each_others_commits(tmp_db):
    engine, reader = open_store(tmp_db), open_store(tmp_db)
    try:
        make_run(engine, "r")
        assert reader.run_exists("r")
        commit(engine, "r", 1)
        assert reader.get_run("r")["iteration"] == 1
        assert reader.latest_metrics("r")["policy/reward"] == 1.0

        cmd = reader.add_command("r", "pause")
        assert [c["id"] for c in engine.pending_commands("r")] == [cmd]
        engine.finish_command(cmd, CommandResult(CommandOutcome.IGNORED, "already paused"))
        assert (reader.command(cmd)["outcome"], reader.command(cmd)["detail"]) == ("ignored", "already paused")
        reader.set_notes("r", "from the console")
        assert engine.get_run("r")["notes"] == "from the console"
    finally:
        engine.close()
        reader.close()


def test_reader_is_not_blocked_by_an_open_write_transaction(tmp_db):
    engine, reader = open_store(tmp_db), open_store(tmp_db)
    try:
        make_run(engine, "r")
        commit(engine, "r", 1)
        conn = engine.db.conn
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE runs SET iteration = 99 WHERE id = 'r'")
        # WAL: the reader never waits on the writer. With no busy timeout a wait would be an
        # immediate "database is locked", whatever the machine's speed
        reader.db.conn.execute("PRAGMA busy_timeout = 0")
        assert reader.get_run("r")["iteration"] == 1            # the last committed state
        assert [r["iteration"] for r in reader.iterations("r")] == [1]
        conn.rollback()
    finally:
        engine.close()
        reader.close()


def test_non_finite_payloads_are_stored_as_strict_json(store, tmp_db):
    import json as _json
    run = make_run(store)
    cmd = store.add_command(run, "set_difficulty", {"value": float("nan")})
    store.add_event(run, 0, "note", {"x": float("inf"), "nested": [float("-inf"), 1.0]})
    with raw(tmp_db) as c:
        texts = [r[0] for r in c.execute("SELECT payload_json FROM commands")] + \
                [r[0] for r in c.execute("SELECT payload_json FROM events")]
    for text in texts:   # a strict parser (no NaN/Infinity tokens) reads every payload
        _json.loads(text, parse_constant=lambda tok: (_ for _ in ()).throw(ValueError(tok)))
    assert store.pending_commands(run)[0]["payload"] == {"value": "nan"}
    assert store.command(cmd)["applied_at"] is None


def test_the_store_does_not_import_pandas_where_it_is_installed():
    """sqlite_utils imports pandas when it can (0.3 s in every `rla` process): the store hides it,
    and a later `import pandas` still works."""
    script = ("import sys\nimport rla_engine.store, rla_engine.cli\nassert 'pandas' not in sys.modules\n"
              "import pandas\nprint(pandas.DataFrame({'a': [1]}).shape)\n")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.strip() == "(1, 1)", res.stderr
