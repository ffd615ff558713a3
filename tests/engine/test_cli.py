"""The `rla` command as a user runs it: real subprocesses, a real SQLite file."""
import json
import os
import subprocess
import sys

import pytest

from rla_engine import metrics
from rla_engine.names import recorded_preset
from rla_engine.paths import run_config_path
from rla_engine.store import open_store

TINY = ["--preset", "tiny"]


def rla(*args, db=None, timeout=120):
    cmd = [sys.executable, "-m", "rla_engine.cli", *args] + (["--db", str(db)] if db else [])
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.parametrize("args, field", [
    (["--set", "policy.nope=1"], "policy.nope"),
    (["--set", "policy.lam=fast"], "policy.lam"),
    (["--set", "policy.lam=-0.5"], "policy.lam"),
    (["--set", "judge.m=0"], "judge.m"),
    (["--set", "rollout.tasks_per_iter=0"], "rollout.tasks_per_iter"),
    (["--set", "judge.band_low=0.8", "--set", "judge.band_high=0.8"], "judge.band_low"),
    (["--set", "task.family=chess"], "task.family"),
    (["--preset", "nope"], "preset"),
    (["--iterations", "0"], "run.iterations"),
    (["--set", "wrong"], "wrong"),
    # language-model runs: a model that is not there, for each role, or none at all
    (["--preset", "llm-tiny", "--set", "policy.model_path=/no/such/model"], "policy.model_path"),
    (["--preset", "llm-tiny", "--set", "judge.model_path=/no/such/judge"], "judge.model_path"),
    (["--preset", "llm-tiny", "--set", "env.model_path=/no/such/rewriter"], "env.model_path"),
    (["--preset", "llm-tiny", "--set", "policy.model_path="], "task.family"),
])
def test_invalid_config_exits_2_names_the_field_and_writes_nothing(tmp_path, args, field):
    db = tmp_path / "h.db"
    res = rla("run", *args, db=db)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0] and "Traceback" not in res.stderr
    assert not db.exists()


def test_input_refused_before_the_database_is_answered_without_the_store_or_torch(tmp_path):
    # a typo costs a user (and this suite, some hundred times) ~0.1 s, not the ~0.35 s of
    # importing the store's libraries (sqlite_utils, numpy), and a run or database refused by the
    # store costs no torch (~1.5 s); the same process then lists the runs, which does import the
    # store: the check sees imports
    open_store(tmp_path / "h.db").close()
    script = f"""
import sys
from rla_engine import cli
db, folder = {str(tmp_path / "h.db")!r}, {str(tmp_path)!r}
refused = [["run", "--preset", "nope", "--db", db], ["run", "--set", "judge.m=0", "--db", db],
           ["run", "--run-id", "../up", "--db", db], ["ablate", "--seeds", "x", "--budget", "10", "--db", db],
           ["resume", "../up", "--db", db]]
by_the_store = [["resume", "nosuch", "--db", db], ["run", "--preset", "tiny", "--db", folder]]
loaded = lambda: [m for m in ("torch", "numpy", "sqlite_utils", "rla_engine.store") if m in sys.modules]
print([cli.main(argv) for argv in refused], loaded())
print([cli.main(argv) for argv in by_the_store], loaded())
print(cli.main(["runs", "--db", db]), loaded())
"""
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    lines = res.stdout.splitlines()
    assert lines[0] == "[2, 2, 2, 2, 2] []", res.stdout + res.stderr
    assert lines[1] == "[2, 2] ['numpy', 'sqlite_utils', 'rla_engine.store']", res.stdout + res.stderr
    assert lines[-1] == "0 ['numpy', 'sqlite_utils', 'rla_engine.store']", res.stdout + res.stderr


def test_invalid_config_leaves_an_existing_database_untouched(tmp_path):
    db = tmp_path / "h.db"
    assert rla("run", *TINY, "--iterations", "1", db=db).returncode == 0
    before = db.read_bytes()
    res = rla("run", "--set", "judge.m=0", db=db)
    assert res.returncode == 2 and "judge.m" in res.stderr
    assert db.read_bytes() == before


def test_corrupt_or_unwritable_database_exits_2_and_changes_nothing(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    before = bad.read_bytes()
    res = rla("run", *TINY, "--iterations", "1", db=bad)
    assert res.returncode == 2 and str(bad) in res.stderr and "Traceback" not in res.stderr
    assert bad.read_bytes() == before
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    res = rla("run", *TINY, "--iterations", "1", db=blocker / "sub" / "h.db")
    assert res.returncode == 2 and "Traceback" not in res.stderr


def test_run_then_runs_show_presets(tmp_path):
    db = tmp_path / "h.db"
    res = rla("run", *TINY, "--iterations", "3", "--name", "cli test", db=db)
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("it ") >= 3 and "μ" in res.stdout and "it/s" in res.stdout
    runs = json.loads(rla("runs", "--json", db=db).stdout)
    assert len(runs) == 1 and runs[0]["status"] == "completed" and runs[0]["iteration"] == 3
    assert runs[0]["name"] == "cli test" and runs[0][metrics.SUCCESS] is not None
    shown = json.loads(rla("show", runs[0]["id"], "--json", db=db).stdout)
    assert shown["config"]["rollout"]["tasks_per_iter"] == 4
    assert metrics.EVAL_SUCCESS in shown["latest"]
    assert len([t for t in shown["pool"] if t["status"] == "active"]) == 8
    text = rla("show", runs[0]["id"], db=db).stdout
    assert "completed" in text and "pool: 8 slots" in text
    names = rla("presets").stdout
    assert all(p in names for p in ("quickstart", "gridworld", "arithmetic"))
    store = open_store(db)
    assert [r["iteration"] for r in store.iterations(runs[0]["id"])] == [0, 1, 2, 3]


def test_a_run_records_its_preset_or_the_users_config_file_and_not_one_written_for_it():
    """The console and `rla ablate` start `rla run --config <a file they wrote, named after the
    run>`: History's preset column showed that name, and its grouping by preset made a group of
    each run."""
    run_id = "20261206-055610-65e7"
    written = run_config_path("/data/h.db", run_id)
    assert recorded_preset(run_id, None, str(written)) == ""
    assert recorded_preset(run_id, None, f"/data/ablations/{run_id}.toml") == ""
    assert recorded_preset(run_id, "tiny", str(written)) == "tiny"
    assert recorded_preset(run_id, None, "/home/me/experiment.toml") == "experiment.toml"
    assert recorded_preset("another-run", None, str(written)) == f"{run_id}.toml"
    assert recorded_preset(run_id, None, None) == ""


def test_show_and_resume_of_an_unknown_run_exit_2(tmp_path):
    db = tmp_path / "h.db"
    assert rla("run", *TINY, "--iterations", "1", db=db).returncode == 0
    for args in (["show", "nope"], ["resume", "nope"]):
        res = rla(*args, db=db)
        assert res.returncode == 2 and "nope" in res.stderr
