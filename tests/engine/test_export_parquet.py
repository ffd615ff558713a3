"""`rla export --format parquet`: the CSV's long format in two typed Parquet files,
`X.parquet` (metrics) and `X.events.parquet`, written by the same safe-write rules as every export.

The database holds a real tiny run made by `rla run` in a subprocess (so the module's first test
takes the ~7 s of a run) and the recorded arithmetic run of tests/data; exports go through the
real `rla` command and are checked against the database with an independent sqlite3 connection.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rla_engine import cli
from rla_engine.client import EngineClient
from rla_engine.export import output_paths
from rla_engine.export.command import run_export
from rla_engine.store import open_store

METRIC_SCHEMA = pa.schema([("run_id", pa.string()), ("iteration", pa.int64()), ("key", pa.string()),
                           ("value", pa.float64()), ("t", pa.float64())])
EVENT_SCHEMA = pa.schema([("run_id", pa.string()), ("id", pa.int64()), ("iteration", pa.int64()),
                          ("t", pa.float64()), ("kind", pa.string()), ("payload_json", pa.string())])


def rla(*args, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rla_engine.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def refused(capsys, args: list, *words: str) -> None:
    """`rla ARGS` (the command's own main, in this process: a refusal needs no new interpreter)
    exits 2 with one line on stderr, no traceback, holding every one of `words`."""
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert code == 2, (code, err)
    assert len(lines) == 1 and "Traceback" not in err and not out, err
    assert all(w in lines[0] for w in words), lines[0]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, recorded) -> tuple[Path, list[str]]:
    """(database, [tiny run id, recorded run id]): a fresh tiny run and a recorded arithmetic run
    in one database; tests must not change it."""
    db = tmp_path_factory.mktemp("parquet") / "runs.db"
    r = rla("run", "--db", db, "--preset", "tiny", "--iterations", 3, timeout=300)
    assert r.returncode == 0, r.stderr
    (bundle,) = recorded("recorded_arithmetic")
    store = open_store(db)
    try:
        store.import_runs([bundle])
    finally:
        store.close()
    with sqlite3.connect(db) as c:
        tiny = c.execute("SELECT id FROM runs WHERE id != ?", [bundle["run"]["id"]]).fetchone()[0]
    return db, [tiny, bundle["run"]["id"]]


def stored_rows(db: Path, run_ids: list[str]) -> tuple[list[tuple], list[tuple]]:
    """(metric rows, event rows) of the runs, in the export's order."""
    with sqlite3.connect(db) as c:
        metrics = [row for i in run_ids for row in c.execute(
            "SELECT run_id, iteration, key, value, t FROM metrics WHERE run_id = ? ORDER BY iteration, key", [i])]
        events = [row for i in run_ids for row in c.execute(
            "SELECT run_id, id, iteration, t, kind, payload_json FROM events WHERE run_id = ? ORDER BY id", [i])]
    return metrics, events


def rows_of(path: Path) -> list[tuple]:
    return [tuple(r.values()) for r in pq.read_table(path).to_pylist()]


def test_two_runs_are_the_databases_rows_in_typed_columns(runs, tmp_path):
    db, ids = runs
    out = tmp_path / "results.parquet"
    r = rla("export", *ids, "--format", "parquet", "--out", out, "--db", db)
    assert r.returncode == 0, r.stderr
    events_file = tmp_path / "results.events.parquet"
    assert r.stdout.startswith(f"wrote {out} (") and f" and {events_file} (" in r.stdout
    assert sorted(os.listdir(tmp_path)) == ["results.events.parquet", "results.parquet"]
    assert pq.read_schema(out).remove_metadata() == METRIC_SCHEMA
    assert pq.read_schema(events_file).remove_metadata() == EVENT_SCHEMA
    metrics, events = stored_rows(db, ids)
    assert rows_of(out) == metrics      # exact: the same doubles, not close ones
    assert rows_of(events_file) == events
    # both runs, the tiny one first as asked, each with its whole history
    run_column = pq.read_table(out, columns=["run_id"]).column("run_id").to_pylist()
    n_tiny = sum(1 for m in metrics if m[0] == ids[0])
    assert n_tiny > 30 and len(metrics) - n_tiny > 30
    assert run_column == [ids[0]] * n_tiny + [ids[1]] * (len(metrics) - n_tiny)
    assert {e[0] for e in events} == set(ids)
    assert all(json.loads(e[5]) is not None for e in events)
    for p in (out, events_file):
        assert stat.S_IMODE(p.stat().st_mode) == 0o600


def test_an_existing_file_is_refused_without_force_and_replaced_with_it(runs, tmp_path, capsys):
    db, ids = runs
    out, events_file = tmp_path / "r.parquet", tmp_path / "r.events.parquet"
    events_file.write_text("someone's notes")
    refused(capsys, ["export", ids[0], "--format", "parquet", "--out", out, "--db", db],
            str(events_file), "already exists (use --force to overwrite)")
    assert sorted(os.listdir(tmp_path)) == ["r.events.parquet"]      # nothing written, no temporary left
    assert events_file.read_text() == "someone's notes"
    assert cli.main(["export", ids[0], "--format", "parquet", "--out", str(out), "--db", str(db), "--force"]) == 0
    assert rows_of(events_file) == stored_rows(db, ids[:1])[1]
    assert stat.S_IMODE(events_file.stat().st_mode) == 0o600


@pytest.mark.parametrize("linked", ["r.parquet", "r.events.parquet"])
def test_a_link_as_either_file_is_refused_even_with_force(runs, tmp_path, capsys, linked):
    db, ids = runs
    theirs = tmp_path / "theirs.parquet"
    theirs.write_bytes(b"keep me")
    (tmp_path / linked).symlink_to(theirs)
    for force in ([], ["--force"]):
        refused(capsys, ["export", ids[0], "--format", "parquet", "--out", tmp_path / "r.parquet", "--db", db, *force],
                str(tmp_path / linked), "symbolic link", "give the real path")
    assert theirs.read_bytes() == b"keep me" and (tmp_path / linked).is_symlink()
    assert sorted(os.listdir(tmp_path)) == sorted([linked, "theirs.parquet"])


@pytest.mark.parametrize("out, written", [("a/x.parquet", ["a/x.parquet", "a/x.events.parquet"]),
                                          ("a/x.PARQUET", ["a/x.PARQUET", "a/x.events.parquet"]),
                                          ("a/x", ["a/x", "a/x.events.parquet"]),
                                          ("a/x.csv", ["a/x.csv", "a/x.csv.events.parquet"])])
def test_the_events_file_is_named_as_the_csvs_is(out, written):
    assert output_paths("parquet", out) == [Path(w) for w in written]


def test_a_hand_edited_cell_is_a_null_and_its_row_stays(runs, tmp_path):
    db, ids = runs
    edited = tmp_path / "edited.db"
    shutil.copy(db, edited)
    with sqlite3.connect(edited) as c:
        c.execute("UPDATE metrics SET value = 'n/a' WHERE run_id = ? AND iteration = 2", [ids[0]])
        c.execute("UPDATE events SET iteration = 'two' WHERE run_id = ? AND iteration = 2", [ids[0]])
    code, line = run_export(edited, ids[:1], "parquet", tmp_path / "e.parquet")
    assert code == 0, line
    metrics, events = stored_rows(edited, ids[:1])
    got = rows_of(tmp_path / "e.parquet")
    assert len(got) == len(metrics)
    assert got == [m if m[1] != 2 else (*m[:3], None, m[4]) for m in metrics]
    assert any(m[1] == 2 for m in metrics)
    got_events = rows_of(tmp_path / "e.events.parquet")
    assert got_events == [e if e[2] != "two" else (e[0], e[1], None, *e[3:]) for e in events]
    assert any(e[2] == "two" for e in events)


WHAT_IT_LOADED = """
import json, sys
heavy = lambda: {m.split(".")[0] for m in sys.modules} & {"pyarrow", "torch", "PySide6", "pyqtgraph"}
from rla_engine import cli
before = heavy()       # sqlite_utils imports pandas, and pandas pyarrow, where pandas is installed
code = cli.main(sys.argv[1:])
print(json.dumps({"code": code, "loaded": sorted(heavy() - before), "pyarrow": "pyarrow" in sys.modules}))
"""


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_only_a_parquet_export_loads_pyarrow(runs, tmp_path, fmt):
    db, ids = runs
    r = subprocess.run([sys.executable, "-c", WHAT_IT_LOADED, "export", ids[0], "--format", fmt,
                        "--out", str(tmp_path / f"r.{fmt}"), "--db", str(db)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout.splitlines()[-1])
    assert result["code"] == 0
    if fmt == "csv":
        assert result["loaded"] == []
    else:
        assert result["pyarrow"] and set(result["loaded"]) <= {"pyarrow"}


def test_the_consoles_client_writes_parquet_on_its_export_thread(runs, tmp_path):
    db, ids = runs

    async def export() -> str:
        client = EngineClient(db)
        try:
            return await client.export(ids, "parquet", tmp_path / "c.parquet", force=False)
        finally:
            await client.close()
    line = asyncio.run(export())
    assert line.startswith(f"wrote {tmp_path / 'c.parquet'} (")
    assert rows_of(tmp_path / "c.parquet") == stored_rows(db, ids)[0]


def test_pandas_and_polars_read_both_files_without_options(runs, tmp_path):
    readers = [m for m in ("pandas", "polars") if _importable(m)]
    if not readers:
        pytest.skip("neither pandas nor polars is installed (neither is a dependency)")
    db, ids = runs
    assert rla("export", *ids, "--format", "parquet", "--out", tmp_path / "r.parquet", "--db", db).returncode == 0
    metrics, events = stored_rows(db, ids)
    for name in readers:
        module = __import__(name)
        m, e = (module.read_parquet(tmp_path / f) for f in ("r.parquet", "r.events.parquet"))
        assert list(m.columns) == METRIC_SCHEMA.names and list(e.columns) == EVENT_SCHEMA.names
        assert len(m) == len(metrics) and len(e) == len(events)
        assert list(m["value"]) == [row[3] for row in metrics]
        assert list(e["id"]) == [row[1] for row in events]
        assert str(m["iteration"].dtype).lower() == "int64" and str(m["value"].dtype).lower() == "float64"


def _importable(name: str) -> bool:
    try:
        __import__(name)
    except ImportError:
        return False
    return True
