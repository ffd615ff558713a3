"""Where the database, checkpoints and logs live, and the one rule for run ids that name them.
The console calls these same functions."""
from __future__ import annotations

import os
import re
import shutil
import socket
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


GAMES_ENV = "RLA_GAMES_DIR"


def games_root(db_path: str | Path) -> Path:
    """The TextWorld games a database's runs play (rla_engine/tasks/textworld_games.py)."""
    return Path(db_path).expanduser().resolve().parent / "games"


def keep_games_beside(db_path: str | Path) -> None:
    """Name the database's games folder for this engine process and every process it starts (an
    environment variable; a Ray worker is told it when it starts: games_named, use_games)."""
    os.environ[GAMES_ENV] = str(games_root(db_path))


def games_named() -> str | None:
    """The games folder this process was told of, if any: what a Ray worker is handed."""
    return os.environ.get(GAMES_ENV) or None


def use_games(named: str | None) -> None:
    """In a Ray worker: play the games the driver keeps. Handed as an argument, not as a Ray
    runtime_env: a runtime_env makes Ray start fresh worker processes instead of its pooled ones."""
    if named:
        os.environ[GAMES_ENV] = named


def games_dir() -> Path:
    """The games folder in use: the one an engine named for its database, else the user's cache
    (a family used without a database: a test, a benchmark)."""
    named = os.environ.get(GAMES_ENV)
    if named:
        return Path(named).expanduser()
    return Path(platformdirs.user_cache_dir(APP, appauthor=False)) / "games"


def checkpoints_root(db_path: str | Path) -> Path:
    return Path(db_path).expanduser().resolve().parent / "checkpoints"


def checkpoints_dir(db_path: str | Path, run_id: str) -> Path:
    return checkpoints_root(db_path) / check_run_id(run_id)


def logs_dir(db_path: str | Path) -> Path:
    return Path(db_path).expanduser().resolve().parent / "logs"


def log_path(db_path: str | Path, run_id: str) -> Path:
    return logs_dir(db_path) / f"{check_run_id(run_id)}.log"


def run_config_name(run_id: str) -> str:
    """The name of the TOML the console or `rla ablate` writes for a run it starts: named after
    the run, and so no choice of the user's to record as its preset (names.recorded_preset)."""
    return f"{check_run_id(run_id)}.toml"


def run_config_path(db_path: str | Path, run_id: str) -> Path:
    """The TOML the console hands to a spawned `rla run`."""
    return logs_dir(db_path) / run_config_name(run_id)


# SQLite's own files beside the database: the write-ahead log, its shared-memory index and the
# rollback journal. Replacing one under a live connection is corruption ("disk I/O error").
SQLITE_SIBLINGS = {"-wal": "write-ahead log", "-shm": "shared-memory file", "-journal": "rollback journal"}


# What the engines and the console keep directly in the logs folder: a run's log and
# configuration, an ablation's lock. Anything else there (the console's ablation summaries and
# their `.logs/` folders) is an ordinary output.
LOGS_OWN_SUFFIXES = (".log", ".toml", ".lock")


def database_files(db_path: str | Path) -> tuple[dict[Path, str], dict[Path, str], Path]:
    """What belongs to the database and only the store and engines may write: its files (the
    database and its SQLite siblings) and its folders (checkpoints), each with what it is in
    words, and the logs folder, whose `LOGS_OWN_SUFFIXES` files are the engines' own. A database
    named through a link has both names: SQLite's siblings may follow either."""
    given = Path(os.path.abspath(Path(db_path).expanduser()))
    files = {}
    for db in dict.fromkeys((given, Path(os.path.realpath(given)))):
        files[db] = f"the database {db}"
        files.update({Path(f"{db}{suffix}"): f"the database's {what} ({db}{suffix})"
                      for suffix, what in SQLITE_SIBLINGS.items()})
    root = checkpoints_root(db_path)
    return files, {root: f"the database's checkpoint folder {root}"}, logs_dir(db_path)


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


def remove_run_files(db_path: str | Path, run_id: str, database_id: str | None) -> None:
    """Delete a run's checkpoint folder, log and config: only ever those, only inside the
    database's own folders, never through a symbolic link."""
    root = checkpoints_root(db_path)
    folder = checkpoints_dir(db_path, run_id)
    if folder.parent != root:       # cannot happen with a checked id; a last guard, not the rule
        raise UnsafeRunId(f"checkpoint folder {folder} is outside {root}")
    if folder.is_symlink():
        folder.unlink()
    elif folder.is_dir():
        if database_id is None or not owned_by(folder, database_id, Path(db_path)):
            return      # an imported copy: the files belong to the original run's database
        shutil.rmtree(folder, ignore_errors=True)
    for path in (log_path(db_path, run_id), run_config_path(db_path, run_id)):
        if path.is_symlink() or path.is_file():
            path.unlink(missing_ok=True)


OWNER = "database.txt"
LOCK = "engine.lock"


class RunBusy(Exception):
    """Another process holds a claim (a run's engine lock, an ablation group's lock)."""

    def __init__(self, who: str, holder: str):
        super().__init__(f"{who} holds it ({holder})")
        self.who, self.holder = who, holder


def claim(folder: Path, database_id: str, db_path: Path) -> None:
    """Record which database a run's checkpoints belong to, by the id stored inside the database
    (a moved or copied database is still the same one; a run imported into another database in
    the same folder has the same run id, and must neither resume from nor delete these). A
    marker written by an older version (the database's path) is brought up to the id, and so is
    an empty one (an older version killed between creating it and writing it). Written whole or
    not at all (a temporary file renamed over it): a SIGKILL here must not leave a run that
    `rla resume` calls another database's."""
    make_private_dir(folder)
    owner = folder / OWNER
    if not owner.exists() or _marker(owner) in ("", str(Path(db_path).resolve())):
        tmp = folder / (OWNER + ".tmp")
        tmp.unlink(missing_ok=True)      # a kill's leftover: the marker it was writing is rewritten
        write_whole(owner, tmp, database_id.encode())


def owned_by(folder: Path, database_id: str, db_path: Path) -> bool:
    """True if the folder is this database's: its marker names the database's id (or, written by
    an older version, its path), or it has none (it predates ownership records) or an empty one
    (an older version killed while writing it)."""
    owner = folder / OWNER
    if not owner.exists() and not owner.is_symlink():
        return True
    return _marker(owner) in ("", database_id, str(Path(db_path).resolve()))


def marked_by(folder: Path, database_id: str) -> bool:
    """True only if the folder's marker names this database's id: unlike `owned_by`, a folder
    without one (an older version's, a start killed early) is no proof (`rla doctor`)."""
    return _marker(folder / OWNER) == database_id


def _marker(owner: Path) -> str | None:
    try:
        with open(owner, encoding="utf-8", opener=_no_follow) as f:
            return f.read(4096).strip()
    except (OSError, UnicodeDecodeError):
        return None


def _no_follow(path, flags):
    return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0))


def lock_run(folder: Path) -> int:
    """Take the run's one engine claim: an exclusive lock on `folder/engine.lock` (see hold_lock)."""
    return hold_lock(folder / LOCK, "another engine")


def lock_group(db_path: str | Path, group: str) -> int:
    """The one `rla ablate` of a group in a database: a lock beside the runs' logs (see hold_lock)."""
    return hold_lock(make_private_dir(logs_dir(db_path)) / f"ablate-{group}.lock", "another rla ablate")


def hold_lock(path: Path, who: str) -> int:
    """An exclusive lock on `path`, held for as long as the returned descriptor is open (the OS
    drops it when the process dies, however it dies, so a crash never leaves a stale claim).
    Raises RunBusy, naming `who` holds it and its pid, when another process has it. Close the
    descriptor with `unlock_run`. Never through a link; not inherited by child processes."""
    import fcntl   # POSIX only, as the rest of the engine's process handling
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, PRIVATE_FILE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown"
        os.close(fd)
        raise RunBusy(who, holder) from None
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
    return fd


def unlock_run(fd: int) -> None:
    os.close(fd)     # closing drops the lock; the file stays, as a lock file must


def write_whole(final: Path, tmp: Path, *chunks: bytes | memoryview) -> None:
    """Write `chunks` as `final`, whole or not at all: into `tmp` (created anew, this user's only,
    never through a link or into another's file), fsync'd, renamed over `final`, the folder
    fsync'd. On any error `tmp` is removed and `final` is as it was."""
    # O_EXCL: never write through a link or into someone else's file left under our name
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), PRIVATE_FILE)   # the mode given to os.open is still filtered by umask
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_path(final.parent)


def fsync_path(path: str | Path) -> None:
    """fsync a file or a folder by path (a folder after a rename, so the new name is durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
