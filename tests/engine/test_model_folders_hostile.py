"""Hostile model folders: a config value that is not a number, weights of
other shapes, pickles that would run code, a GGUF header that lies, a model larger than the
machine, an index that points out of the folder. `rla run` refuses each with exit code 2 and one
line naming the field, the path and the reason, creates no database, and runs nothing from the
folder; `check_loadable` (what launch checks of each model before creating anything) says the same.

The folders are built here from the tiny-random model (benchmarks/fault_models.py has the builders
and the full campaign through real subprocesses); `rla` runs in-process, its stderr read at the
file-descriptor level, so a warning printed by any library would count as a second line.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import fault_models

from rla_engine.cli import main
from rla_engine.llm import sources

CASES = ["hidden_size 'abc'", "weights of other shapes", "pickle that runs code (raw)", "pickle that runs code (zip)",
         "GGUF counts 2**62", "a model bigger than memory", "index escaping the folder", "safetensors truncated"]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RLA_MODEL_CACHE", str(folder / "cache"))    # the judge cases load tiny-random first
        fault_models.good_folder(folder)
        yield folder


@pytest.mark.parametrize("name", CASES)
def test_rla_run_refuses_a_hostile_model_in_one_line_naming_the_field(root, name, capfd, tmp_path):
    key, path = fault_models.make_case(root, name)
    db = tmp_path / "runs.db"
    capfd.readouterr()
    rc = main(["run", "--preset", "llm-tiny", "--set", f"{key}={path}", "--db", str(db)])
    err = capfd.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"rla: invalid config: {key} = {str(path)!r}: "), lines[0]
    for word in fault_models.CASES[name][2]:
        assert word in lines[0]
    assert not (root / fault_models.SENTINEL).exists(), "a pickle or a config ran code from the folder"
    assert not db.exists()


def check_loadable(path: str) -> str | None:
    """launch.check_models's two checks of one model, in its order."""
    return sources.check_source(path) or sources.check_headers(path)


@pytest.mark.parametrize("name", CASES)
def test_check_loadable_gives_the_same_reason_before_anything_is_loaded(root, name):
    _, path = fault_models.make_case(root, name)
    reason = check_loadable(str(path))
    assert reason is not None and "\n" not in reason
    for word in fault_models.CASES[name][2]:
        assert word in reason
    assert not (root / fault_models.SENTINEL).exists()


def test_a_good_folder_passes_the_check(root):
    assert check_loadable(str(fault_models.good_folder(root))) is None


def test_load_model_keeps_the_reason_apart_from_the_path(root):
    _, path = fault_models.make_case(root, "hidden_size 'abc'")
    with pytest.raises(sources.ModelLoadError) as err:
        sources.load_model(str(path), device="cpu", dtype="auto", trainable=False)
    assert err.value.reason == "config.json hidden_size = 'abc' is not a number"
    assert str(err.value) == f"model {str(path)!r} could not be loaded: {err.value.reason}"
