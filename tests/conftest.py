"""Shared fixtures: kept minimal on purpose."""
from pathlib import Path

import pytest


@pytest.fixture
def tmp_db(tmp_path: Path) -> Path:
    """Path of a database file that does not exist yet, in its own temporary folder."""
    return tmp_path / "experiments.db"
