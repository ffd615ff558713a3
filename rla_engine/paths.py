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


OWNER = "database.txt"


def claim(folder: Path, db_path: Path) -> None:
    """Record which database a run's checkpoints belong to: a run imported into another database
    in the same folder has the same id, and must neither resume from nor delete these."""
    folder.mkdir(parents=True, exist_ok=True)
    owner = folder / OWNER
    if not owner.exists():
        owner.write_text(str(Path(db_path).resolve()), encoding="utf-8")


def owned_by(folder: Path, db_path: Path) -> bool:
    """True if the folder is this database's (or predates ownership records)."""
    owner = folder / OWNER
    return not owner.exists() or owner.read_text(encoding="utf-8").strip() == str(Path(db_path).resolve())


def fsync_path(path: str | Path) -> None:
    """fsync a file or a folder by path (a folder after a rename, so the new name is durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
