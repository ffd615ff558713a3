"""Language-model runs as a user starts them: `rla run --preset llm-tiny` in a real subprocess, bad
model paths, and a task family installed from its own package through the entry point."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rla_engine import metrics
from rla_engine.store import open_store
from rla_engine.vocabulary import EventKind

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "rla-family-example"


def rla(*args, db=None, env=None, timeout=300):
    cmd = [sys.executable, "-m", "rla_engine.cli", *args] + (["--db", str(db)] if db else [])
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory):
    return {"RLA_MODEL_CACHE": str(tmp_path_factory.mktemp("models"))}


def test_the_llm_tiny_preset_runs_and_stores_what_the_console_shows(tmp_path, model_cache):
    db = tmp_path / "llm.db"
    res = rla("run", "--preset", "llm-tiny", "--run-id", "lm", "--set", "eval.tasks_per_tier=1", db=db,
              env=model_cache)
    assert res.returncode == 0, res.stderr[-3000:]
    store = open_store(db)
    run = store.get_run("lm")
    assert run["status"] == "completed" and run["iteration"] == 3
    by_it = store.metrics_by_iteration("lm")
    assert sorted(by_it) == [1, 2, 3] and metrics.EVAL_SUCCESS in by_it[2]
    kinds = [e["kind"] for e in store.events("lm")]
    assert kinds.count(EventKind.SAMPLES) == 3
    assert (db.parent / "checkpoints" / "lm").is_dir()
    # resumable like any run: one more iteration from the last checkpoint
    res = rla("resume", "lm", "--iterations", "1", db=db, env=model_cache)
    assert res.returncode == 0, res.stderr[-3000:]
    assert open_store(db).get_run("lm")["iteration"] == 4


def test_a_folder_that_is_not_a_model_exits_2(tmp_path):
    folder = tmp_path / "empty-model"
    folder.mkdir()
    res = rla("run", "--preset", "llm-tiny", "--set", f"policy.model_path={folder}", db=tmp_path / "h.db")
    assert res.returncode == 2 and "policy.model_path" in res.stderr and str(folder) in res.stderr


@pytest.mark.parametrize("key", ["judge.model_path", "env.model_path"])
def test_a_missing_model_of_a_later_role_is_refused_before_any_model_is_screened(tmp_path, key):
    """The policy's tiny-random is fine; the judge's (or environment model's) folder is missing: the
    one line names that field, and transformers was never imported to screen the policy's first."""
    script = ("import sys\nfrom rla_engine.cli import main\n"
              f"code = main(['run', '--preset', 'llm-tiny', '--set', '{key}={tmp_path / 'gone'}', "
              f"'--db', '{tmp_path / 'h.db'}'])\n"
              "print(code, 'transformers' in sys.modules)\n")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert res.stdout.split() == ["2", "False"], (res.stdout, res.stderr)
    assert key in res.stderr and "does not exist" in res.stderr
    assert not (tmp_path / "h.db").exists()


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory):
    """The worked example of docs/families.md, installed by pip into its own folder."""
    site = tmp_path_factory.mktemp("site")
    res = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
                          "--no-index", "--quiet", "--target", str(site), str(EXAMPLE)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return site


def test_a_family_installed_as_its_own_package_appears_in_the_form(plugin_site):
    script = """
import sys
from PySide6.QtWidgets import QApplication
from rla_engine.tasks import family_kind, family_names
from rla_gui.widgets.config_form import ConfigForm
app = QApplication([])
form = ConfigForm()
combo = form.editors["task.family"].widget
listed = [combo.itemData(i) for i in range(combo.count())]
print(family_kind("parity"), "parity" in family_names("text"), "parity" in listed, "torch" in sys.modules)
"""
    env = {**os.environ, "PYTHONPATH": str(plugin_site), "QT_QPA_PLATFORM": "offscreen"}
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.split() == ["text", "True", "True", "False"]


def test_a_plugin_family_runs(tmp_path, plugin_site, model_cache):
    db = tmp_path / "p.db"
    res = rla("run", "--preset", "llm-tiny", "--set", "task.family=parity", "--iterations", "1",
              "--set", "eval.every=5", db=db,
              env={**model_cache, "PYTHONPATH": str(plugin_site)})
    assert res.returncode == 0, res.stderr[-3000:]
    tasks = open_store(db).tasks(open_store(db).list_runs()[0]["id"])
    assert tasks and all(t["family"] == "parity" for t in tasks)


def test_the_embedded_backend_never_imports_transformers():
    script = """
import sys, torch
from rla_engine.config import build
from rla_engine.loop.trainer import Trainer
Trainer(build(preset="tiny"), torch.device("cpu")).step()
print("transformers" in sys.modules, "rla_engine.llm" in sys.modules)
"""
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == ["False", "False"]
