"""Where the database, checkpoints and logs live. The console calls these same functions."""
from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP = "rlanything"


def default_db_path() -> Path:
    """`$RLA_DB`, else `<user data dir>/rlanything/experiments.db`."""
    env = os.environ.get("RLA_DB")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir(APP, appauthor=False)) / "experiments.db"


def checkpoints_dir(db_path: str | Path, run_id: str) -> Path:
    return Path(db_path).expanduser().resolve().parent / "checkpoints" / run_id


def logs_dir(db_path: str | Path) -> Path:
    return Path(db_path).expanduser().resolve().parent / "logs"


def log_path(db_path: str | Path, run_id: str) -> Path:
    return logs_dir(db_path) / f"{run_id}.log"


def run_config_path(db_path: str | Path, run_id: str) -> Path:
    """The TOML the console hands to a spawned `rla run`."""
    return logs_dir(db_path) / f"{run_id}.toml"
