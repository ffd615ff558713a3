"""`rla import` of hostile files: every field of every bundle is checked —
types, ranges, sizes, text that encodes — before anything is written, and only a regular file of
bounded size is read at all. A refusal is exit 2 with one line naming the file and the field
path; the database is not even created. What is accepted stays readable: strict JSON only, and
the dashboard takes an event row whose payload is not an object (old databases hold some).

Real parts throughout: real JSON files from a recorded run (tests/data), the real `rla` main
in-process (a subprocess only where the old behaviour hangs or eats memory), real SQLite files.
"""
from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rla_engine import bundle_check
from rla_engine.cli import main
from rla_engine.errors import InputError
from rla_engine.export import bundles as bundles_mod
from rla_engine.store import MULTI_FORMAT, StoreError, open_store

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")      # the dashboard test's QApplication

HUGE = "1" + "0" * 5000
PLACEHOLDER = '"@RAW@"'          # replaced by raw JSON text that json.dumps cannot write


def _set(path: str, value):
    """An edit of a bundle: the dotted/indexed path (e.g. "events.0.payload") set to value."""
    def edit(b: dict) -> None:
        *parents, last = path.split(".")
        node = b
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        node[int(last) if last.isdigit() else last] = value
    return edit


def _nest(depth: int):
    v: dict = {}
    for _ in range(depth):
        v = {"a": v}
    return v


# (id, edit of the recorded arithmetic bundle, raw text for PLACEHOLDER, text the one line names)
CASES = [
    # integers SQLite cannot hold, or that do not fit the field
    ("int-2**63", _set("iterations.0.env_steps", 2**63), None, "iterations[0].env_steps"),
    ("int-2**64", _set("metrics.0.iteration", 2**64), None, "metrics[0].iteration"),
    ("int-below-int64", _set("events.0.payload.x", -(2**63) - 1), None, "events[0].payload.x"),
    ("int-2**63-as-a-real", _set("metrics.0.value", 2**63), None, "metrics[0].value"),
    ("int-2**63-in-config", _set("run.config.run.seed", 2**63), None, "run.config.run.seed"),
    ("int-5000-digits", _set("run.pid", "@RAW@"), HUGE, "run.pid"),
    ("int-5000-digits-in-payload", _set("events.1.payload.n", "@RAW@"), HUGE, "events[1].payload.n"),
    ("pid-not-a-pid", _set("run.pid", 2**40), None, "run.pid"),
    ("event-id-at-int64-max", _set("events.0.id", 2**63 - 1), None, "events[0].id"),
    ("negative-iteration", _set("metrics.2.iteration", -1), None, "metrics[2].iteration"),
    ("archived-2", _set("run.archived", 2), None, "run.archived"),
    # lone surrogates, in every kind of string
    ("surrogate-name", _set("run.name", "x\ud800y"), None, "run.name"),
    ("surrogate-notes", _set("run.notes", "x\udfffy"), None, "run.notes"),
    ("surrogate-tags", _set("run.tags", "\ud800"), None, "run.tags"),
    ("surrogate-error", _set("run.error", "e\ud800"), None, "run.error"),
    ("surrogate-host", _set("run.host", "h\ud800"), None, "run.host"),
    ("surrogate-metric-key", _set("metrics.0.key", "k\ud800"), None, "metrics[0].key"),
    ("surrogate-event-kind", _set("events.0.kind", "x\ud800y"), None, "events[0].kind"),
    ("surrogate-task-family", _set("tasks.0.family", "\udc00"), None, "tasks[0].family"),
    ("surrogate-task-params", _set("tasks.0.params_json", '{"a": "\ud800"}'), None, "tasks[0].params_json"),
    ("surrogate-payload-value", _set("events.0.payload.s", "x\ud800y"), None, "events[0].payload.s"),
    ("surrogate-payload-key", _set("events.0.payload.x\ud800y", 1), None, "events[0].payload"),
    ("surrogate-config-key", _set("run.config.k\ud800", 1), None, "run.config"),
    # nulls and wrong types the readers cannot take
    ("difficulty-null", _set("tasks.0.difficulty", None), None, "tasks[0].difficulty"),
    ("payload-null", _set("events.3.payload", None), None, "events[3].payload: expected a JSON object, got null"),
    ("payload-list", _set("events.0.payload", [1, 2]), None, "events[0].payload"),
    ("payload-text", _set("events.0.payload", "x"), None, "events[0].payload"),
    ("event-iteration-null", _set("events.0.iteration", None), None, "events[0].iteration"),
    ("task-slot-null", _set("tasks.0.slot", None), None, "tasks[0].slot"),
    ("metric-value-null", _set("metrics.0.value", None), None, "metrics[0].value"),
    ("config-null", _set("run.config", None), None, "run.config"),
    ("config-list", _set("run.config", []), None, "run.config"),
    ("name-number", _set("run.name", 5), None, "run.name"),
    ("difficulty-text", _set("tasks.0.difficulty", "0.5"), None, "tasks[0].difficulty"),
    ("iteration-float", _set("iterations.0.iteration", 1.5), None, "iterations[0].iteration"),
    ("archived-true", _set("run.archived", True), None, "run.archived"),
    # numbers out of range
    ("difficulty-1.5", _set("tasks.1.difficulty", 1.5), None, "tasks[1].difficulty"),
    ("difficulty-negative", _set("tasks.1.difficulty", -0.1), None, "tasks[1].difficulty"),
    ("time-1e300", _set("events.0.t", 1e300), None, "events[0].t"),
    ("time-negative", _set("run.created_at", -5.0), None, "run.created_at"),
    ("wall-negative", _set("iterations.0.wall_s", -1.0), None, "iterations[0].wall_s"),
    # non-standard JSON numbers: refused by the parser's hook, named by the check
    ("nan-in-payload", _set("events.0.payload.x", "@RAW@"), "NaN", "events[0].payload.x"),
    ("infinity-in-config", _set("run.config.policy.lr", "@RAW@"), "Infinity", "run.config.policy.lr"),
    ("minus-infinity-value", _set("metrics.0.value", "@RAW@"), "-Infinity", "metrics[0].value"),
    ("1e999-in-payload", _set("events.0.payload.x", "@RAW@"), "1e999", "events[0].payload.x"),
    # sizes and text a terminal or a table cannot show on one line
    ("name-too-long", _set("run.name", "n" * (bundle_check.LABEL_CHARS + 1)), None, "run.name"),
    ("notes-too-long", _set("run.notes", "n" * (bundle_check.TEXT_CHARS + 1)), None, "run.notes"),
    ("escape-in-name", _set("run.name", "\x1b[2Jgone"), None, "run.name"),
    ("newline-in-key", _set("metrics.0.key", "a\nb"), None, "metrics[0].key"),
    ("payload-nested-too-deep", _set("events.0.payload", _nest(bundle_check.JSON_DEPTH + 2)), None,
     "events[0].payload"),
    # rows the database would key alike
    ("duplicate-iteration", lambda b: b["iterations"].append(dict(b["iterations"][0])), None, "iterations["),
    ("duplicate-task-uid", lambda b: b["tasks"].append(dict(b["tasks"][0])), None, "tasks["),
]


@pytest.fixture(scope="module")
def good(recorded) -> dict:
    (bundle,) = recorded("recorded_arithmetic")
    return bundle


def write(path: Path, doc, raw: str | None = None) -> Path:
    text = json.dumps(doc)
    if raw is not None:
        text = text.replace(PLACEHOLDER, raw)
    path.write_text(text, "ascii")
    return path


def rla_import(capsys, file: Path, db: Path, *extra: str) -> tuple[int, list[str]]:
    rc = main(["import", str(file), "--db", str(db), *extra])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return rc, err.splitlines()


def assert_refused(capsys, file: Path, db: Path, named: str) -> str:
    rc, lines = rla_import(capsys, file, db)
    assert rc == 2 and len(lines) == 1, lines
    assert named in lines[0] and str(file) in lines[0], lines[0]
    assert not db.exists(), "a refused import created the database"
    return lines[0]


def test_the_cases_are_distinct():
    ids = [c[0] for c in CASES]
    assert len(set(ids)) == len(ids) >= 50


@pytest.mark.parametrize("edit, raw, named", [pytest.param(e, r, n, id=i) for i, e, r, n in CASES])
def test_a_bad_field_exits_2_naming_it_and_writes_nothing(capsys, tmp_path, good, edit, raw, named):
    doc = json.loads(json.dumps(good))
    edit(doc)
    assert_refused(capsys, write(tmp_path / "import.json", doc, raw), tmp_path / "fresh.db", named)


def test_a_bad_second_run_leaves_an_existing_database_untouched(capsys, tmp_path, recorded):
    first, second, third = recorded("recorded_group")
    db = tmp_path / "runs.db"
    store = open_store(db)
    store.import_runs([first])
    store.close()
    with sqlite3.connect(db) as c:
        before = list(c.iterdump())
    third["events"][0]["payload"] = {"name": "x\ud800y", "n": 2**64}
    rc, lines = rla_import(capsys, write(tmp_path / "import.json", {"format": MULTI_FORMAT, "runs": [second, third]}),
                           db)
    assert rc == 2 and len(lines) == 1 and "runs[1].events[0].payload.name" in lines[0], lines
    with sqlite3.connect(db) as c:
        assert list(c.iterdump()) == before


def test_the_store_api_refuses_the_same_bundles(tmp_path, good):
    """Store.import_runs (the console, tests, benchmarks) checks every field too."""
    store = open_store(tmp_path / "api.db")
    bad = json.loads(json.dumps(good))
    bad["events"][2]["payload"] = None
    with pytest.raises(StoreError, match=r"bundle\.events\[2\]\.payload: expected a JSON object, got null"):
        store.import_runs([bad])
    bad["events"][2]["payload"] = {"x": float("nan")}
    with pytest.raises(StoreError, match=r"events\[2\]\.payload\.x: expected a finite number"):
        store.import_run(bad)
    assert store.list_runs(include_archived=True) == []
    store.close()


# ----------------------------------------------------------------------------- what is read at all


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))   # the old code read /dev/zero until this


def _rla_subprocess(tmp_path: Path, file: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rla_engine.cli", "import", file, "--db", str(tmp_path / "fresh.db")],
                          capture_output=True, text=True, timeout=60, preexec_fn=_limited)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_file_that_is_not_regular_is_refused_without_reading_it(tmp_path, kind):
    if kind == "fifo":
        fifo = tmp_path / "import.json"
        os.mkfifo(fifo)
        file, named = str(fifo), "FIFO"
    else:
        file, named = "/dev/zero", "character device"
    r = _rla_subprocess(tmp_path, file)    # the old code blocked on the FIFO for ever (60 s here)
    lines = r.stderr.splitlines()
    assert r.returncode == 2 and len(lines) == 1 and named in lines[0] and file in lines[0], r.stderr
    assert not (tmp_path / "fresh.db").exists()


def test_a_folder_is_refused(capsys, tmp_path):
    (tmp_path / "export").mkdir()
    assert "folder" in assert_refused(capsys, tmp_path / "export", tmp_path / "fresh.db", "")


def test_a_file_over_the_size_limit_is_refused_before_it_is_parsed(capsys, tmp_path, good, monkeypatch):
    f = write(tmp_path / "import.json", good)
    monkeypatch.setattr(bundles_mod, "MAX_IMPORT_BYTES", f.stat().st_size - 1)
    assert_refused(capsys, f, tmp_path / "fresh.db", f"{f.stat().st_size - 1:,} bytes")
    monkeypatch.setattr(bundles_mod, "MAX_IMPORT_BYTES", f.stat().st_size)
    assert rla_import(capsys, f, tmp_path / "fresh.db")[0] == 0


# ----------------------------------------------------------------------------- what is accepted


def test_real_exports_still_import_and_are_stored_as_strict_json(capsys, tmp_path, recorded):
    runs = recorded("recorded_group")
    db = tmp_path / "runs.db"
    rc, _ = rla_import(capsys, write(tmp_path / "import.json", {"format": MULTI_FORMAT, "runs": runs}), db)
    assert rc == 0
    store = open_store(db)
    assert [store.export_run(b["run"]["id"]) == b for b in runs] == [True] * 3
    store.close()

    def refuse(token):
        raise AssertionError(f"non-standard JSON stored: {token}")
    with sqlite3.connect(db) as c:
        texts = [r[0] for r in c.execute("SELECT payload_json FROM events UNION ALL SELECT config_json FROM runs")]
    assert all(isinstance(json.loads(t, parse_constant=refuse), dict) for t in texts)


def test_the_field_rules_cover_every_column_in_the_insert_order(tmp_path):
    """A migration that adds a column must add its rule (export_run would export it, and the
    import would refuse it as an unknown field)."""
    store = open_store(tmp_path / "cols.db")
    cols = {t: [r[1] for r in store.db.execute(f"PRAGMA table_info({t})")]
            for t in ("runs", "iterations", "metrics", "events", "tasks")}
    store.close()
    assert set(bundle_check.RUN) == set(cols["runs"]) - {"config_json"} | {"config"}
    assert list(bundle_check.ITERATION) == cols["iterations"][1:]
    assert list(bundle_check.METRIC) == cols["metrics"][1:]
    assert list(bundle_check.EVENT) == [c.removesuffix("_json") for c in cols["events"] if c != "run_id"]
    assert list(bundle_check.TASK) == cols["tasks"][1:]


ANY_TEXT = st.characters(exclude_categories=())       # lone surrogates and control characters too
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats()
    | st.text(ANY_TEXT, max_size=8) | st.sampled_from(["x\ud800", "\udfff", "ok"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(ANY_TEXT, max_size=4), inner, max_size=3),
    max_leaves=8)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=JSON_VALUES)
@example(value=float("nan"))
@example(value=["x\ud800", 2**64])
@example(value={"deep": [[1.5, None, True, "ok"]]})
def test_any_payload_is_refused_naming_it_or_stored_as_the_same_strict_json(tmp_path, good, value):
    doc = json.loads(json.dumps(good))
    doc["events"][0]["payload"] = {"v": value}
    f = tmp_path / "import.json"
    f.write_text(json.dumps(doc), "ascii")
    try:
        (bundle,) = bundles_mod.read_bundles(f)
    except InputError as e:
        assert "events[0].payload.v" in str(e) and "\n" not in str(e)
        return
    store = open_store(tmp_path / "any.db")
    try:
        run_id = store.import_runs([bundle], [f"r{len(store.list_runs(include_archived=True))}"])[0]
        (stored,) = store.db.execute("SELECT payload_json FROM events WHERE run_id = ? ORDER BY id LIMIT 1", [run_id])
    finally:
        store.close()
    assert json.loads(stored[0]) == {"v": value}
    json.dumps(json.loads(stored[0]), allow_nan=False)


# ----------------------------------------------------------------------------- the readers


def test_the_dashboard_takes_events_whose_payload_is_not_an_object(qapp):
    from rla_gui.panels.dashboard import DashboardPanel
    from rla_gui.session import RunSession
    panel = DashboardPanel(RunSession(None))
    odd = [{"id": 1, "iteration": 3, "kind": "variant_accepted", "payload": None},
           {"id": 2, "iteration": 4, "kind": "variant_rejected", "payload": [1, 2]},
           {"id": 3, "iteration": 5, "kind": "variant_accepted", "payload": {"difficulty": "hard"}},
           {"id": 4, "iteration": None, "kind": "variant_rejected", "payload": {"difficulty": 0.4}},
           {"id": 5, "iteration": None, "kind": "rewound", "payload": None},
           {"id": 6, "iteration": 6, "kind": "variant_accepted", "payload": {"difficulty": 0.7}}]
    panel.add_events(odd)
    panel.refresh()
    assert panel.difficulty.variants[-1] == (6, 0.7, True)
    panel.deleteLater()
