"""Rows edited by hand: the readers and `rla runs` / `show` /
`resume` show one bad row as bad and keep the rest of the history readable; user text reaches a
terminal with its control characters escaped.

The database is the recorded group (three real runs, imported as `rla import` does); each test
edits it with sqlite3 as a user would and calls the real command in-process."""
import json
import math
import os
import socket
import sqlite3
import subprocess
import sys
import time

import pytest

from rla_engine import cli
from rla_engine.store import open_store


@pytest.fixture
def group_db(recorded, recorded_db):
    """A fresh database of three completed runs, and their ids (newest first, as `rla runs` lists)."""
    db = recorded_db(*recorded("recorded_group"))
    with sqlite3.connect(db) as c:
        ids = [r[0] for r in c.execute("SELECT id FROM runs ORDER BY created_at DESC")]
    return db, ids


def edit(db, sql, *args):
    conn = sqlite3.connect(db)
    try:
        conn.execute(sql, args)
        conn.commit()
    finally:
        conn.close()


def rla(capsys, *args):
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def listed(capsys, db, ids):
    """`rla runs` and `rla runs --json` succeed and list every run; return (text, rows)."""
    code, text, err = rla(capsys, "runs", "--db", str(db))
    assert code == 0, err
    assert all(i in text for i in ids), text
    code, out, err = rla(capsys, "runs", "--json", "--db", str(db))
    assert code == 0, err
    rows = json.loads(out)
    assert sorted(r["id"] for r in rows) == sorted(ids)
    return text, rows


RUN_EDITS = [   # column, stored value (SQL), what the reader must not choke on
    ("heartbeat_at", "'yesterday'"),
    ("iteration", "NULL"),
    ("status", "NULL"),
    ("status", "'exploded'"),
    ("started_at", "'last tuesday'"),
    ("created_at", "X'00ff'"),
    ("ended_at", "1e999"),
    ("started_at", "-5"),
    ("iteration", "'many'"),
    ("pid", "'abc'"),
    ("name", "NULL"),
    ("name", "X'1b5b324a'"),
    ("archived", "NULL"),
    ("archived", "'yes'"),
    ("device", "12345"),
]


@pytest.mark.parametrize("column, value", RUN_EDITS)
def test_a_hand_edited_run_row_is_shown_as_damaged_and_the_rest_stay_listed(group_db, capsys, column, value):
    db, ids = group_db
    bad = ids[1]
    edit(db, f"UPDATE runs SET {column} = {value} WHERE id = ?", bad)
    text, rows = listed(capsys, db, ids)
    row = next(r for r in rows if r["id"] == bad)
    if column == "device":       # a number in a text column reads as its text: listed as it is, not damaged
        assert column not in (row.get("damaged") or []), row
    else:
        assert column in row["damaged"], row
        line = next(line for line in text.splitlines() if line.startswith(bad))
        assert "damaged" in line or "?" in line, line
    for good in (i for i in ids if i != bad):
        assert "damaged" not in next(r for r in rows if r["id"] == good)
    code, out, err = rla(capsys, "show", bad, "--db", str(db))
    assert code == 0, err
    if column == "device":
        assert "device 12345" in out and "damaged" not in out, out
    else:
        assert f"damaged: {column}" in out or f", {column}" in out, out
    code, out, err = rla(capsys, "show", bad, "--json", "--db", str(db))
    assert code == 0 and json.loads(out)["run"]["id"] == bad
    if column == "device":
        assert str(json.loads(out)["run"]["device"]) == "12345"
    for good in (i for i in ids if i != bad):
        code, out, err = rla(capsys, "show", good, "--db", str(db))
        assert code == 0 and "damaged" not in out


def test_resume_of_a_damaged_run_exits_2_with_one_line_naming_the_column(group_db, capsys):
    db, ids = group_db
    edit(db, "UPDATE runs SET iteration = 'many' WHERE id = ?", ids[0])
    code, _, err = rla(capsys, "resume", ids[0], "--db", str(db))
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and ids[0] in lines[0] and "iteration" in lines[0], err


def test_a_task_with_no_difficulty_does_not_break_show(group_db, capsys):
    db, ids = group_db
    edit(db, "UPDATE tasks SET difficulty = NULL WHERE run_id = ? AND status = 'active' AND slot = 0", ids[0])
    edit(db, "UPDATE tasks SET slot = 'first', version = X'00' WHERE run_id = ? AND status = 'active' "
             "AND slot = 1", ids[0])
    code, out, err = rla(capsys, "show", ids[0], "--db", str(db))
    assert code == 0, err
    assert "pool:" in out and "unreadable" in out, out
    code, out, err = rla(capsys, "show", ids[0], "--json", "--db", str(db))
    pool = json.loads(out)["pool"]
    assert any("difficulty" in t.get("damaged", {}) for t in pool)
    assert any("slot" in t.get("damaged", {}) for t in pool)


def test_damaged_events_metrics_and_iterations_are_shown_as_such(group_db, capsys):
    db, ids = group_db
    run = ids[0]
    edit(db, "UPDATE events SET iteration = NULL, t = 'noon' WHERE run_id = ? AND kind = 'started'", run)
    edit(db, "UPDATE events SET kind = X'ff00' WHERE id = (SELECT max(id) FROM events WHERE run_id = ?)", run)
    edit(db, "UPDATE metrics SET value = 'lots' WHERE run_id = ? AND key = 'policy/success_rate' "
             "AND iteration = (SELECT max(iteration) FROM metrics WHERE run_id = ?)", run, run)
    edit(db, "UPDATE metrics SET iteration = 'later' WHERE run_id = ? AND key = 'loss/policy' AND iteration = 2", run)
    edit(db, "UPDATE iterations SET wall_s = 'slow', env_steps = NULL WHERE run_id = ? AND iteration = 2", run)
    edit(db, "UPDATE iterations SET iteration = 'x' WHERE run_id = ? AND iteration = 3", run)
    listed(capsys, db, ids)
    code, out, err = rla(capsys, "show", run, "--db", str(db))
    assert code == 0, err
    assert "[    ?] started" in out, out
    assert "unreadable rows:" in out and "metrics" in out and "events" in out
    code, out, err = rla(capsys, "show", run, "--json", "--db", str(db))
    info = json.loads(out)                   # strict JSON: no NaN token
    assert info["latest"]["policy/success_rate"] is None
    store = open_store(db, create=False)
    assert all(isinstance(r["iteration"], int) for r in store.iterations(run))
    assert any("wall_s" in r.get("damaged", {}) for r in store.iterations(run))
    cols = store.columns_since(run)
    assert math.isnan(cols["policy/success_rate"][1][-1])
    assert all(isinstance(i, int) for i, _ in zip(*store.series(run, "loss/policy")))
    events = store.events(run)
    assert events[0]["iteration"] == 0 and events[0]["t"] is None and "iteration" in events[0]["damaged"]
    assert isinstance(events[-1]["kind"], str) and "kind" in events[-1]["damaged"]
    assert store.last_iteration(run) == 4
    store.close()


def _dead_pid():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_liveness_reads_garbage_without_crashing_and_without_guessing(group_db, capsys):
    """A heartbeat it cannot read leaves the decision to the pid (this host) or to no one
    (another host); a pid it cannot read leaves it to the heartbeat."""
    db, ids = group_db
    here, now = socket.gethostname(), time.time()
    alive, gone, elsewhere = ids
    edit(db, "UPDATE runs SET status = 'running', heartbeat_at = 'yesterday', pid = ?, host = ? WHERE id = ?",
         os.getpid(), here, alive)
    edit(db, "UPDATE runs SET status = 'running', heartbeat_at = X'00', pid = ?, host = ? WHERE id = ?",
         _dead_pid(), here, gone)
    edit(db, "UPDATE runs SET status = 'paused', heartbeat_at = 'noon', pid = 'x', host = 'far.example', "
             "config_json = '7' WHERE id = ?", elsewhere)
    store = open_store(db, create=False)
    assert store.refresh_liveness() == [gone]
    row = store.get_run(gone)
    # it ended when a reader noticed: the unreadable heartbeat is not carried into ended_at
    assert row["status"] == "crashed" and abs(row["ended_at"] - time.time()) < 60
    assert store.get_run(alive)["status"] == "running"
    assert store.get_run(elsewhere)["status"] == "paused"
    edit(db, "UPDATE runs SET status = 'running', pid = 'abc', heartbeat_at = ?, host = ? WHERE id = ?",
         now - 3600, here, elsewhere)
    assert store.refresh_liveness(stale_after_s=15) == [elsewhere]     # an old beat still counts
    store.close()
    listed(capsys, db, ids)


def test_terminal_escapes_in_user_text_are_printed_escaped(group_db, capsys):
    db, ids = group_db
    edit(db, "UPDATE runs SET name = ?, preset = ?, error = ?, device = ? WHERE id = ?",
         "evil\x1b[2J\x07name\u202e", "p\x1b]0;title\x07", "boom\x9b31m", "cpu\r", ids[0])
    edit(db, "UPDATE events SET kind = ? WHERE run_id = ? AND kind = 'started'", "start\x1b[1m", ids[0])
    text, _ = listed(capsys, db, ids)
    code, out, _ = rla(capsys, "show", ids[0], "--db", str(db))
    assert code == 0
    for printed in (text, out):
        assert not any(ch in printed for ch in "\x1b\x07\x9b\r\u202e"), repr(printed)
    assert "evil\\x1b[2J\\x07name\\u202e" in text and "evil\\x1b[2J" in out
    assert "boom\\x9b31m" in out and "start\\x1b[1m" in out


def test_sql_and_python_agree_on_what_is_readable():
    """The readers test a row in Python; `rla show` counts unreadable rows in SQL: one spec, two
    forms, which must agree on every kind of value a hand edit can store."""
    from rla_engine.store import reads
    values = [None, 0, 1, -1, 7, 2 ** 31, 2 ** 62, -(2 ** 63), 0.5, 1.0, -0.0, 1e300, float("inf"), float("-inf"),
              "", "text", "1", b"", b"\x00\xff", 1796149586.5, 4e11, "running", "active", "damaged"]
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (v)")       # no affinity: every value stays as stored
    for spec in (reads.RUN_COLUMNS, reads.EVENT_COLUMNS, reads.TASK_COLUMN_KINDS, reads.ITERATION_COLUMNS,
                 reads.METRIC_COLUMNS):
        for column, kind in spec.items():
            for v in values:
                conn.execute("DELETE FROM t")
                conn.execute("INSERT INTO t VALUES (?)", [v])
                in_sql = bool(conn.execute(f"SELECT {reads.readable_sql(kind, 'v')} FROM t").fetchone()[0])
                assert in_sql == kind.ok(v), (column, v)
