"""Where the database, checkpoints and logs live, and the one rule for run ids that name them.
The console calls these same functions."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import platformdirs

APP = "rlanything"
# A run id names folders and files (checkpoints/<id>/, logs/<id>.log): whatever brought it in
# (the CLI, the console, an import, a row of the database itself), it must not climb out of them.
RUN_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")
RUN_ID_RULE = "letters, digits, '.', '_' or '-', at most 100, starting with a letter or digit"
PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


class UnsafeRunId(ValueError):
    """A run id that could name a path outside its own folder."""


def check_run_id(run_id: object) -> str:
    if not isinstance(run_id, str) or not RUN_ID_RE.match(run_id):
        raise UnsafeRunId(f"run id {str(run_id)[:120]!r} is not allowed: expected {RUN_ID_RULE}")
    return run_id


def default_db_path() -> Path:
    """`$RLA_DB`, else `<user data dir>/rlanything/experiments.db`."""
    env = os.environ.get("RLA_DB")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir(APP, appauthor=False)) / "experiments.db"


def checkpoints_root(db_path: str | Path) -> Path:
    return Path(db_path).expanduser().resolve().parent / "checkpoints"


def checkpoints_dir(db_path: str | Path, run_id: str) -> Path:
    return checkpoints_root(db_path) / check_run_id(run_id)


def logs_dir(db_path: str | Path) -> Path:
    return Path(db_path).expanduser().resolve().parent / "logs"


def log_path(db_path: str | Path, run_id: str) -> Path:
    return logs_dir(db_path) / f"{check_run_id(run_id)}.log"


def run_config_path(db_path: str | Path, run_id: str) -> Path:
    """The TOML the console hands to a spawned `rla run`."""
    return logs_dir(db_path) / f"{check_run_id(run_id)}.toml"


def make_private_dir(folder: Path) -> Path:
    """Create a folder (and missing parents) for this user only. An existing folder is left as it
    is: it may be shared on purpose."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    for p in missing:
        os.chmod(p, PRIVATE_DIR)   # mkdir's mode is filtered by the umask; chmod is not
    return folder


def open_private(path: Path, mode: str = "ab"):
    """Open a file for writing, creating it readable by this user only (logs, configs)."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if "a" in mode else os.O_TRUNC)
    fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), PRIVATE_FILE)
    return os.fdopen(fd, mode)


def remove_run_files(db_path: str | Path, run_id: str) -> None:
    """Delete a run's checkpoint folder, log and config: only ever those, only inside the
    database's own folders, never through a symbolic link."""
    root = checkpoints_root(db_path)
    folder = checkpoints_dir(db_path, run_id)
    if folder.parent != root:       # cannot happen with a checked id; a last guard, not the rule
        raise UnsafeRunId(f"checkpoint folder {folder} is outside {root}")
    if folder.is_symlink():
        folder.unlink()
    elif folder.is_dir():
        if not owned_by(folder, Path(db_path)):
            return      # an imported copy: the files belong to the original run's database
        shutil.rmtree(folder, ignore_errors=True)
    for path in (log_path(db_path, run_id), run_config_path(db_path, run_id)):
        if path.is_symlink() or path.is_file():
            path.unlink(missing_ok=True)


OWNER = "database.txt"


def claim(folder: Path, db_path: Path) -> None:
    """Record which database a run's checkpoints belong to: a run imported into another database
    in the same folder has the same id, and must neither resume from nor delete these."""
    make_private_dir(folder)
    owner = folder / OWNER
    if not owner.exists():
        with open_private(owner, "w") as f:
            f.write(str(Path(db_path).resolve()))


def owned_by(folder: Path, db_path: Path) -> bool:
    """True if the folder is this database's (or predates ownership records)."""
    owner = folder / OWNER
    try:
        return not owner.exists() or owner.read_text(encoding="utf-8").strip() == str(Path(db_path).resolve())
    except (OSError, UnicodeDecodeError):
        return False


def fsync_path(path: str | Path) -> None:
    """fsync a file or a folder by path (a folder after a rename, so the new name is durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
