"""Shared fixtures: kept minimal on purpose."""
import json
from pathlib import Path

import pytest

RECORDED = Path(__file__).parent / "data"     # made by tests/data/make_recorded_runs.py


@pytest.fixture
def tmp_db(tmp_path: Path) -> Path:
    """Path of a database file that does not exist yet, in its own temporary folder."""
    return tmp_path / "experiments.db"


@pytest.fixture(scope="session")
def recorded():
    """recorded(name) -> the run bundles of tests/data/<name>.json, a fresh copy each call:
    "recorded_group" (three gridworld runs of one group; exactly judge.m and policy.lam differ)
    or "recorded_arithmetic" (one arithmetic run). See tests/data/make_recorded_runs.py."""
    from rla_engine.store import MULTI_FORMAT

    def load(name: str) -> list[dict]:
        doc = json.loads((RECORDED / f"{name}.json").read_text("utf-8"))
        return doc["runs"] if doc["format"] == MULTI_FORMAT else [doc]
    return load


@pytest.fixture(scope="module")
def recorded_db(tmp_path_factory):
    """recorded_db(*bundles) -> a fresh database (in its own temporary folder) holding these
    runs, imported by the real store as `rla import` does. Imported runs have no checkpoints."""
    from rla_engine.store import open_store

    def make(*bundles: dict) -> Path:
        db = tmp_path_factory.mktemp("recorded") / "runs.db"
        store = open_store(db)
        try:
            store.import_runs(list(bundles))
        finally:
            store.close()
        return db
    return make
