"""Data exports and imports: `rla export --format csv|json`, `rla import`, the store's
bundles and run search, and the safe file writing every export goes through.

A real run, recorded by tests/data/make_recorded_runs.py, is imported once per module into a
fresh database; exports and imports are real subprocesses on real SQLite files, checked against
the database with an independent sqlite3 connection. Failure cases that need a fault injected run in-process.
"""
from __future__ import annotations

import csv
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rla_engine.store import BUNDLE_FORMAT, MULTI_FORMAT, StoreError, open_store
from rla_engine.export import ExportInputError, files, tabular
from rla_engine.export.bundles import load_bundles
from rla_gui import report
from rla_gui.report.environment import environment_info


def rla(*args, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rla_engine.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def one_line_error(r: subprocess.CompletedProcess) -> str:
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def dump(db: Path) -> list[str]:
    """Every row of every table, as another process would see it."""
    with sqlite3.connect(str(db)) as c:
        return list(c.iterdump())


@pytest.fixture(scope="module")
def stored(recorded, recorded_db) -> tuple[Path, str]:
    """(database, run id) of one real run (the recorded arithmetic run of tests/data, imported
    into a fresh database that holds only it); tests must not change it."""
    (bundle,) = recorded("recorded_arithmetic")
    return recorded_db(bundle), bundle["run"]["id"]


@pytest.fixture
def store(tmp_path):
    s = open_store(tmp_path / "other.db")
    yield s
    s.close()


@pytest.fixture(params=["fts5", "no-fts5"])
def search_store(request, tmp_path, monkeypatch):
    """A store with the search index, and one as an SQLite built without FTS5 leaves it."""
    if request.param == "no-fts5":
        from rla_engine import store as store_mod
        migrations = store_mod.schema.MIGRATIONS
        monkeypatch.setattr(store_mod.schema, "MIGRATIONS",
                            [*migrations[:1], ("002_runs_fts", lambda db: None), *migrations[2:]])
    s = open_store(tmp_path / "search.db")
    assert s._has_search_index() == (request.param == "fts5")
    yield s
    s.close()


def bundle_of(db: Path, run_id: str) -> dict:
    s = open_store(db, create=False)
    try:
        return s.export_run(run_id)
    finally:
        s.close()


# ----------------------------------------------------------------------------- CSV


def test_csv_round_trips_exactly_against_the_database(stored, tmp_path):
    db, run_id = stored
    out = tmp_path / "run.csv"
    r = rla("export", run_id, "--format", "csv", "--out", out, "--db", db)
    assert r.returncode == 0, r.stderr
    assert f"wrote {out}" in r.stdout and "bytes" in r.stdout
    with out.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    with sqlite3.connect(str(db)) as c:
        stored_rows = c.execute("SELECT run_id, iteration, key, value, t FROM metrics "
                                "ORDER BY iteration, key").fetchall()
        events = c.execute("SELECT run_id, id, iteration, t, kind, payload_json FROM events ORDER BY id").fetchall()
    assert rows[0] == ["run_id", "iteration", "key", "value", "t"]
    assert len(rows) - 1 == len(stored_rows) > 50
    for got, want in zip(rows[1:], stored_rows):
        assert (got[0], int(got[1]), got[2], float(got[3]), float(got[4])) == want
    # the events file beside it has every event, payload text as stored
    with (tmp_path / "run.events.csv").open(newline="", encoding="utf-8") as f:
        ev = list(csv.reader(f))
    assert ev[0] == ["run_id", "id", "iteration", "t", "kind", "payload_json"]
    assert len(ev) - 1 == len(events) > 3
    for got, want in zip(ev[1:], events):
        assert (got[0], int(got[1]), int(got[2]), float(got[3]), got[4], got[5]) == want
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.csv", "run.events.csv"]


def test_csv_of_several_runs_holds_every_run(stored, tmp_path):
    db, run_id = stored
    both = tmp_path / "both.db"
    s = open_store(both)
    s.import_runs([bundle_of(db, run_id), bundle_of(db, run_id)], [run_id, "second"])
    s.close()
    assert report.export(both, [run_id, "second"], "csv", tmp_path / "cmp") == [
        (tmp_path / "cmp", (tmp_path / "cmp").stat().st_size),
        (tmp_path / "cmp.events.csv", (tmp_path / "cmp.events.csv").stat().st_size)]
    with (tmp_path / "cmp").open(newline="") as f:
        ids = [row[0] for row in csv.reader(f)][1:]
    n = len(bundle_of(db, run_id)["metrics"])
    assert ids == [run_id] * n + ["second"] * n


# ----------------------------------------------------------------------------- JSON and import


def test_json_export_import_export_gives_the_identical_bundle(stored, tmp_path):
    db, run_id = stored
    first, second, other = tmp_path / "first.json", tmp_path / "second.json", tmp_path / "other.db"
    assert rla("export", run_id, "--format", "json", "--out", first, "--db", db).returncode == 0
    r = rla("import", first, "--db", other)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["imported", run_id]
    assert rla("export", run_id, "--format", "json", "--out", second, "--db", other).returncode == 0
    a, b = json.loads(first.read_text("utf-8")), json.loads(second.read_text("utf-8"))
    assert a["format"] == BUNDLE_FORMAT and a["run"]["id"] == run_id and a["run"]["status"] == "completed"
    assert {"iterations", "metrics", "events", "tasks"} <= a.keys() and a["run"]["config"]["task"]
    assert a == b
    assert first.read_bytes() == second.read_bytes()
    # and the imported rows are the stored ones, column for column
    with sqlite3.connect(str(db)) as c1, sqlite3.connect(str(other)) as c2:
        for table, order in (("metrics", "iteration, key"), ("iterations", "iteration"), ("events", "id"),
                             ("tasks", "uid")):
            q = f"SELECT * FROM {table} ORDER BY {order}"
            assert c1.execute(q).fetchall() == c2.execute(q).fetchall(), table


def test_importing_an_existing_run_id_exits_2_and_changes_nothing(stored, tmp_path):
    db, run_id = stored
    out = tmp_path / "run.json"
    assert rla("export", run_id, "--format", "json", "--out", out, "--db", db).returncode == 0
    before = dump(db)
    r = rla("import", out, "--db", db)
    assert r.returncode == 2
    assert run_id in one_line_error(r) and "already exists" in r.stderr
    assert dump(db) == before


def test_import_as_renames_the_run(stored, tmp_path):
    db, run_id = stored
    out, other = tmp_path / "run.json", tmp_path / "other.db"
    assert rla("export", run_id, "--format", "json", "--out", out, "--db", db).returncode == 0
    r = rla("import", out, "--db", other, "--as", "renamed-1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["imported", "renamed-1"]
    original, copy = bundle_of(db, run_id), bundle_of(other, "renamed-1")
    assert copy["run"].pop("id") == "renamed-1" and original["run"].pop("id") == run_id
    assert copy == original
    # a second import under another id in the same database: event ids are taken, so the
    # copy gets fresh ones, in the same order, with the same content
    assert rla("import", out, "--db", other, "--as", "renamed-2").returncode == 0
    third = bundle_of(other, "renamed-2")
    strip = lambda evs: [{k: v for k, v in e.items() if k != "id"} for e in evs]   # noqa: E731
    assert strip(third["events"]) == strip(copy["events"])
    assert [e["id"] for e in third["events"]] == sorted(e["id"] for e in third["events"])
    assert min(e["id"] for e in third["events"]) > max(e["id"] for e in copy["events"])
    assert third["metrics"] == copy["metrics"] and third["tasks"] == copy["tasks"]


def test_several_runs_export_as_one_json_and_import_together(stored, tmp_path):
    db, run_id = stored
    both, other, out = tmp_path / "both.db", tmp_path / "other.db", tmp_path / "runs.json"
    s = open_store(both)
    s.import_runs([bundle_of(db, run_id)] * 2, [run_id, "second"])
    s.close()
    r = subprocess.run([sys.executable, "-m", "rla_gui.report", "--db", str(both), "--format", "json",
                        "--out", str(out), run_id, "second"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text("utf-8"))
    assert doc["format"] == MULTI_FORMAT and [b["run"]["id"] for b in doc["runs"]] == [run_id, "second"]
    r = rla("import", out, "--db", other)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["imported", run_id, "imported", "second"]
    assert [bundle_of(other, i) for i in (run_id, "second")] == [bundle_of(both, i) for i in (run_id, "second")]
    assert rla("import", out, "--db", tmp_path / "x.db", "--as", "one").returncode == 2


def _bad_bundles(good: dict):
    def edit(fn):
        b = json.loads(json.dumps(good))
        fn(b)
        return json.dumps(b)
    yield "not json", "{ nope", "not a JSON export"
    yield "a list", "[1, 2]", "format"
    yield "other format", json.dumps({"format": "something/9"}), "format"
    yield "bad value", edit(lambda b: b["metrics"][3].__setitem__("value", "high")), "metrics[3].value"
    yield "infinite value", edit(lambda b: b["metrics"][0].__setitem__("value", 1e999)), "metrics[0].value"
    yield "no metrics", edit(lambda b: b.pop("metrics")), "metrics"
    yield "unknown field", edit(lambda b: b["tasks"][0].__setitem__("evil", 1)), "tasks[0]"
    yield "bad status", edit(lambda b: b["run"].__setitem__("status", "exploded")), "run.status"
    yield "path in id", edit(lambda b: b["run"].__setitem__("id", "../../etc")), "../../etc"
    yield "duplicate metric", edit(lambda b: b["metrics"].append(b["metrics"][0])), "metric"


@pytest.mark.parametrize("case", range(10))
def test_malformed_import_exits_2_with_one_line_and_writes_nothing(stored, tmp_path, case):
    db, run_id = stored
    name, text, needle = list(_bad_bundles(bundle_of(db, run_id)))[case]
    f, other = tmp_path / "bad.json", tmp_path / "other.db"
    f.write_text(text, "utf-8")
    open_store(other).close()
    before = dump(other)
    r = rla("import", f, "--db", other)
    assert r.returncode == 2, (name, r.stderr)
    assert needle in one_line_error(r), name
    assert dump(other) == before


def test_import_of_a_missing_file_exits_2(tmp_path):
    r = rla("import", tmp_path / "nope.json", "--db", tmp_path / "x.db")
    assert r.returncode == 2 and "no such file" in one_line_error(r)


def test_a_live_run_is_imported_as_stopped(stored, store):
    db, run_id = stored
    b = bundle_of(db, run_id)
    b["run"].update(status="running", ended_at=None, error=None)
    store.import_run(b, "was-live")
    run = store.get_run("was-live")
    assert run["status"] == "stopped" and run["ended_at"] == b["run"]["heartbeat_at"]
    assert "imported while running" in run["error"]
    assert store.refresh_liveness() == []


# ----------------------------------------------------------------------------- refusing and failing


def test_export_refuses_to_overwrite_without_force(stored, tmp_path):
    db, run_id = stored
    out = tmp_path / "run.json"
    out.write_text("keep me")
    r = rla("export", run_id, "--format", "json", "--out", out, "--db", db)
    assert r.returncode == 2 and str(out) in one_line_error(r) and "--force" in r.stderr
    assert out.read_text() == "keep me"
    r = rla("export", run_id, "--format", "json", "--out", out, "--db", db, "--force")
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text("utf-8"))["run"]["id"] == run_id
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def test_csv_refuses_when_either_of_its_files_exists(stored, tmp_path):
    db, run_id = stored
    (tmp_path / "run.events.csv").write_text("keep")
    with pytest.raises(ExportInputError, match=r"run\.events\.csv"):
        report.export(db, [run_id], "csv", tmp_path / "run.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.events.csv"]


def test_unknown_run_id_or_bad_format_exits_2(stored, tmp_path):
    db, run_id = stored
    r = rla("export", run_id, "no-such-run", "--format", "csv", "--out", tmp_path / "x.csv", "--db", db)
    assert r.returncode == 2 and "no-such-run" in one_line_error(r)
    r = rla("export", run_id, "--format", "docx", "--out", tmp_path / "x.docx", "--db", db)
    assert r.returncode == 2
    r = subprocess.run([sys.executable, "-m", "rla_gui.report", "--db", str(db), "--format", "docx",
                        "--out", str(tmp_path / "x"), run_id], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "docx" in one_line_error(r)
    r = rla("export", run_id, "--format", "json", "--out", tmp_path / "no" / "dir" / "x.json", "--db", db)
    assert r.returncode == 2 and "does not exist" in one_line_error(r)
    assert list(tmp_path.iterdir()) == []


def test_a_writer_failing_half_way_leaves_no_file(tmp_path):
    target = tmp_path / "report.pdf"
    with pytest.raises(RuntimeError, match="half way"):
        with files.atomic_path(target, force=False) as tmp:
            assert tmp.parent == tmp_path and tmp.suffix == ".pdf"
            tmp.write_bytes(b"%PDF-1.4 half")
            raise RuntimeError("renderer died half way")
    assert list(tmp_path.iterdir()) == []
    # with --force over an existing file: the old file stays whole
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with files.atomic_path(target, force=True) as tmp:
            tmp.write_bytes(b"new, partial")
            raise RuntimeError("again")
    assert target.read_bytes() == b"old" and list(tmp_path.iterdir()) == [target]


def test_an_export_failing_mid_way_leaves_no_partial_or_temporary_file(stored, tmp_path, monkeypatch):
    db, run_id = stored
    # the events CSV fails after the metrics CSV was rendered
    monkeypatch.setattr(tabular, "events_csv", lambda bundles: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        report.export(db, [run_id], "csv", tmp_path / "run.csv")
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    # the second file of the group cannot be put in place: the first is taken back
    real_place, calls = files._place, []

    def place(tmp, path, force):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real_place(tmp, path, force)
    monkeypatch.setattr(files, "_place", place)
    with pytest.raises(OSError, match="No space"):
        report.export(db, [run_id], "csv", tmp_path / "run.csv")
    assert len(calls) == 2 and list(tmp_path.iterdir()) == []
    # a disk that fills while writing JSON
    monkeypatch.setattr(files, "fsync_path", lambda p: (_ for _ in ()).throw(OSError(28, "No space")))
    with pytest.raises(OSError):
        report.export(db, [run_id], "json", tmp_path / "run.json")
    assert list(tmp_path.iterdir()) == []


def test_write_atomic_refuses_existing_and_writes_private_files(tmp_path):
    p = tmp_path / "a.txt"
    files.write_atomic(p, "één", force=False)
    assert p.read_text("utf-8") == "één"
    assert p.stat().st_mode & 0o777 == 0o600       # for the user only, whatever the umask
    with pytest.raises(FileExistsError, match="--force"):
        files.write_atomic(p, b"x", force=False)
    os.chmod(p, 0o640)
    files.write_atomic(p, b"x", force=True)
    assert p.read_bytes() == b"x" and p.stat().st_mode & 0o777 == 0o600
    with pytest.raises(IsADirectoryError):
        files.write_atomic(tmp_path, b"x", force=True)


# ----------------------------------------------------------------------------- boundaries


WRAPPER = textwrap.dedent("""\
    import json, runpy, sys
    try:
        runpy.run_module("rla_gui.report", run_name="__main__", alter_sys=True)
    except SystemExit as e:
        code = e.code
    from rla_gui.report.environment import environment_info
    info = environment_info()
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "shiboken6", "pyqtgraph", "torch"))
    print(json.dumps({"code": code, "heavy": heavy[:5], "info": info}))
    """)


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_csv_and_json_exports_import_neither_qt_nor_torch(stored, tmp_path, fmt):
    db, run_id = stored
    out = tmp_path / f"run.{fmt}"
    r = subprocess.run([sys.executable, "-c", WRAPPER, "--db", str(db), "--format", fmt, "--out", str(out), run_id],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result["code"] == 0 and out.exists()
    assert result["heavy"] == []
    info = result["info"]
    assert info["python"].count(".") == 2 and info["packages"]["numpy"] and info["packages"]["sqlite-utils"]
    assert set(info["packages"]) == {"rlanything", "torch", "numpy", "PySide6", "pyqtgraph", "sqlite-utils", "qasync"}


def test_load_bundles_keeps_order_drops_duplicates_and_names_unknown_runs(stored, tmp_path):
    db, run_id = stored
    assert [b["run"]["id"] for b in load_bundles(db, [run_id, run_id])] == [run_id]
    with pytest.raises(ExportInputError, match="'x', 'y'"):
        load_bundles(db, [run_id, "x", "y"])
    with pytest.raises(ExportInputError, match="does not exist"):
        load_bundles(tmp_path / "missing.db", [run_id])
    assert not (tmp_path / "missing.db").exists()


def test_environment_info_names_this_interpreter():
    info = environment_info()
    assert info["python"] == ".".join(map(str, sys.version_info[:3]))
    assert info["sqlite"] == sqlite3.sqlite_version


@pytest.mark.parametrize("fmt, magic", [("html", b"<"), ("pdf", b"%PDF")])
def test_html_and_pdf_dispatch_to_their_renderers(stored, tmp_path, fmt, magic):
    pytest.importorskip(f"rla_gui.report.{fmt}")
    db, run_id = stored
    out = tmp_path / f"run.{fmt}"
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    r = subprocess.run([sys.executable, "-m", "rla_engine.cli", "export", run_id, "--format", fmt,
                        "--out", str(out), "--db", str(db)], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes().lstrip()[:len(magic)].lower() == magic.lower()
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]


# ----------------------------------------------------------------------------- the store


def test_export_run_of_an_unknown_id_raises(store):
    with pytest.raises(StoreError, match="no run 'nope'"):
        store.export_run("nope")


def test_import_is_all_or_nothing_across_runs(stored, store):
    db, run_id = stored
    good = bundle_of(db, run_id)
    bad = json.loads(json.dumps(good))
    bad["iterations"][1]["env_steps"] = 1.5
    with pytest.raises(StoreError, match=r"runs\[1\].iterations\[1\].env_steps"):
        store.import_runs([good, bad], ["a", "b"])
    assert store.list_runs(include_archived=True) == []
    with pytest.raises(StoreError, match="more than once"):
        store.import_runs([good, good])
    store.import_run(good)
    with pytest.raises(StoreError, match="already exists"):
        store.import_runs([good], [run_id])
    assert [r["id"] for r in store.list_runs()] == [run_id]


def _runs_for_search(s):
    for rid, name in (("r1", "gridworld baseline"), ("r2", "arithmetic sweep"), ("r3", "Grid ablation <b>")):
        s.create_run(rid, name=name, preset="", config={}, device="cpu")
        s.set_status(rid, "completed")


def test_search_finds_runs_by_name_notes_and_tags_and_follows_edits(search_store):
    store = search_store
    _runs_for_search(store)
    assert set(store.search_runs("grid")) == {"r1", "r3"}
    assert store.search_runs("arith") == ["r2"]
    assert store.search_runs("grid baseline") == ["r1"]          # every word must match
    store.set_notes("r2", "Judge collapsed after the learning-rate change")
    store.set_tags("r2", ["lr-sweep", "keep"])
    store.heartbeat("r2")                                           # not a searchable column
    assert store.search_runs("collapsed") == ["r2"]
    assert store.search_runs("keep") == ["r2"]
    assert store.search_runs("lr-sweep") == ["r2"]
    store.set_notes("r2", "fine now")
    assert store.search_runs("collapsed") == [] and store.search_runs("fine") == ["r2"]
    store.set_archived("r2")
    assert store.search_runs("fine") == [] and store.search_runs("fine", include_archived=True) == ["r2"]
    store.delete_run("r1")
    assert store.search_runs("gridworld") == [] and store.search_runs("grid") == ["r3"]
    assert store.search_runs("") == ["r3"] and store.search_runs("  ", include_archived=True) == ["r3", "r2"]


@pytest.mark.parametrize("query", ['"', 'OR', 'a"b OR', 'a*', '*', '<script>', 'NEAR(grid', 'grid AND',
                                   "'; DROP TABLE runs; --", '(', '^', 'name:grid', '\x00', 'ü' * 500])
def test_hostile_queries_neither_raise_nor_inject(search_store, query):
    store = search_store
    _runs_for_search(store)
    assert isinstance(store.search_runs(query), list)
    assert len(store.list_runs()) == 3
    assert store.search_runs("ablation <b>") == ["r3"] and store.search_runs("script") == []


@pytest.mark.parametrize("between", ["\x00", "\x01", "\x1b", "\x7f", "\x9b", "\ud800"])
def test_a_control_character_in_the_search_separates_words(search_store, between):
    # a NUL inside a word ended FTS5's query early: OperationalError "unterminated string"
    store = search_store
    _runs_for_search(store)
    assert store.search_runs(f"grid{between}ablation") == ["r3"]
    assert store.search_runs(f"grid{between}") == store.search_runs("grid")
    assert store.search_runs(f"{between}arith{between}{between}sweep{between}") == ["r2"]
    assert store.search_runs(f"zebra{between}grid") == []


def test_an_older_database_gets_the_search_index_with_its_runs(tmp_path, monkeypatch):
    from rla_engine.store import schema
    db = tmp_path / "old.db"
    # a database from before the search index (what migrate() reads: schema.MIGRATIONS)
    monkeypatch.setattr(schema, "MIGRATIONS", [m for m in schema.MIGRATIONS if m[0] != "002_runs_fts"])
    s = open_store(db)
    assert not s._has_search_index()        # it really is a database from before the search index
    _runs_for_search(s)
    s.close()
    monkeypatch.undo()
    s = open_store(db)
    assert set(s.search_runs("grid")) == {"r1", "r3"}
    s.rebuild_search()
    assert set(s.search_runs("grid")) == {"r1", "r3"}
    s.close()
