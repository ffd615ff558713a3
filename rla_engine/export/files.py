"""Writing export files safely: only regular files, never over an existing file unless forced,
never a partial file, readable by the user only. Torch-free and Qt-free.

The rules, checked before any work (`refuse_existing`) and again just before the first file is
put in place:

* An output is a regular file. An existing path that is anything else — a folder, a device
  such as /dev/full, a named pipe, a socket — is refused with or without `force`, and so is a
  symbolic link, whatever it points to (see `_check_target` for why). A refused export
  changes nothing.
* Its folder must exist, be a folder and take a new file. `refuse_existing` makes sure of that
  by creating and removing a temporary file there, so an unwritable target (a missing folder, a
  path under a regular file, a read-only filesystem, /proc) is invalid input reported before
  rendering, not a failure after it.
* Every file written is mode 0600 — the user's only — whatever the umask, and also when
  `force` replaces an existing file (the new file is a new inode; its content is new too).

Each output is first written to a temporary file in its own folder (same filesystem, so the
final step is a rename), chmod-ed, flushed and fsynced, then moved into place. Without `force`
the move is a hard link, which fails atomically if the name appeared meanwhile; with `force` it
is os.replace, after the targets were checked once more (what is left is a window of
microseconds between that check and the rename; POSIX has no "replace only a regular file").
Any error removes the temporaries, and a group of files (CSV writes two) is put in place only
once every member is complete and every target has passed the check.

* Never the database's own files: given the database, a target that is the database, its -wal,
  -shm or -journal, its checkpoint folder or anything inside it, or a run's log, configuration or
  lock in its logs folder is refused with or without `force` (`refuse_protected`). Real files are
  compared, not names: a link, a hard link or a folder reached by another path to one of them is
  the same file.

Refusals raise `OutputError` (an OSError; its subclasses are also FileExistsError,
IsADirectoryError or FileNotFoundError as fits): invalid input, one line naming the path.
"""
from __future__ import annotations

import errno
import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from collections.abc import Iterator, Mapping

from ..paths import LOGS_OWN_SUFFIXES, database_files, fsync_path
from ..user_files import kind_of

MODE = 0o600   # every file an export writes

# errors of the writability probe that are a failing machine, not a bad --out: let them through
_RUNTIME_ERRNOS = {getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EIO", "ENOMEM", "EMFILE", "ENFILE")
                   if hasattr(errno, name)}


class OutputError(OSError):
    """An output path that cannot or must not be written: invalid input (exit 2)."""


class OutputExistsError(OutputError, FileExistsError):
    """A regular file is there and `force` was not given."""


class OutputIsFolderError(OutputError, IsADirectoryError):
    """The output path is a folder."""


class OutputFolderMissingError(OutputError, FileNotFoundError):
    """The output's folder (or a folder above it) does not exist."""


class ProtectedOutputError(OutputError):
    """The output is one of the database's own files or folders: refused even with `force`."""


def _folder_problem(path: Path) -> OutputError | None:
    """Why `path`'s folder cannot hold it, or None when it is an existing folder."""
    folder = path.parent
    try:
        st = os.stat(folder)              # follows links: a linked folder (/tmp on macOS) is fine
    except (FileNotFoundError, NotADirectoryError):
        st = None
    except OSError as e:
        return OutputError(f"cannot write {path}: folder {folder}: {e.strerror}")
    if st is not None and stat.S_ISDIR(st.st_mode):
        return None
    # name the first component that is missing or not a folder
    for a in [*reversed(folder.parents), folder]:
        try:
            st = os.stat(a)
        except (FileNotFoundError, NotADirectoryError):
            return OutputFolderMissingError(f"cannot write {path}: folder {a} does not exist")
        except OSError as e:
            return OutputError(f"cannot write {path}: folder {a}: {e.strerror}")
        if not stat.S_ISDIR(st.st_mode):
            return OutputFolderMissingError(f"cannot write {path}: {a} is a {kind_of(st.st_mode)}, not a folder")
    return OutputFolderMissingError(f"cannot write {path}: folder {folder} does not exist")


def _check_target(path: Path, force: bool) -> None:
    """Refuse `path` unless it is absent, or a regular file and `force`.

    A symbolic link is refused whatever it points to. Writing "through" it cannot be done
    atomically — the rename that makes the write atomic replaces the link itself, leaving the
    file it points to unchanged, which is the opposite of what the user meant — and resolving it
    first would write wherever the link says, which in a shared folder is the classic way to
    make a program overwrite someone else's file (and a check-then-write race besides). Refusing
    is predictable and the message says what to do instead: give the real path."""
    try:
        st = os.lstat(path)               # never follows a final link
    except FileNotFoundError:
        return
    except OSError as e:
        raise OutputError(f"cannot write {path}: {e.strerror}") from None
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        try:
            to = f" (to {os.readlink(path)})"
        except OSError:
            to = ""
        raise OutputError(f"{path} is a symbolic link{to}; give the real path")
    if stat.S_ISDIR(mode):
        raise OutputIsFolderError(f"{path} is a folder; give a file name")
    if not stat.S_ISREG(mode):
        raise OutputError(f"{path} is a {kind_of(mode)}, not a regular file; export writes only regular files")
    if not force:
        raise OutputExistsError(f"{path} already exists (use --force to overwrite)")


def _probe_folder(path: Path) -> None:
    """Make sure a new file can be created beside `path` (create and remove one)."""
    os.unlink(_temp_beside(path))


def check_outputs(paths: list[Path], force: bool) -> None:
    """The checks on the targets alone (no file created): folder, kind, existence."""
    for p in paths:
        try:
            problem = _folder_problem(p)
            if problem is not None:
                raise problem
            _check_target(p, force)
        except ValueError as e:           # an embedded NUL byte
            raise OutputError(f"cannot write {p!r}: {e}") from None


def _stat(path: str | Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def _same(a: os.stat_result | None, b: os.stat_result | None) -> bool:
    return a is not None and b is not None and os.path.samestat(a, b)


def _protected_as(path: Path, files: Mapping[Path, str], folders: Mapping[Path, str], logs: Path) -> str | None:
    """What of the database's `path` really is (after links, by device and inode where it
    exists), or None."""
    try:
        real = Path(os.path.realpath(path))
    except ValueError:        # an embedded NUL: no file at all (check_outputs says so)
        return None
    st = _stat(real)
    for f, what in files.items():
        if real == Path(os.path.realpath(f)) or _same(st, _stat(f)):
            return what
    for folder, what in folders.items():
        root, root_st = Path(os.path.realpath(folder)), _stat(folder)
        # every folder above the target, by inode too: a bind mount or another name of the folder
        if real == root or root in real.parents or any(_same(_stat(a), root_st) for a in real.parents):
            return what if real == root else f"inside {what}"
    if real.suffix in LOGS_OWN_SUFFIXES and (real.parent == Path(os.path.realpath(logs))
                                             or _same(_stat(real.parent), _stat(logs))):
        return f"a run's log, configuration or lock in the database's logs folder {logs}"
    return None


def refuse_protected(paths: list[Path], db_path: str | Path) -> None:
    """Raise ProtectedOutputError when an output is the database at `db_path`, one of its SQLite
    files, its checkpoint folder or anything inside, or an engine's own file in its logs folder:
    never written, `force` or not."""
    files, folders, logs = database_files(db_path)
    for p in paths:
        what = _protected_as(Path(p), files, folders, logs)
        if what is not None:
            raise ProtectedOutputError(f"cannot write {p}: it is {what}; exports never replace the "
                                       "database's own files, even with --force")


def refuse_existing(paths: list[Path], force: bool, probe: bool = True, db: str | Path | None = None) -> None:
    """Raise before any work is done when an output cannot be written: OutputError (see the
    module's rules) for one of the database `db`'s own files, a bad, special, linked or — without
    `force` — existing target, or an unwritable folder (found by creating and removing a file
    there when `probe`)."""
    paths = [Path(p) for p in paths]
    if db is not None:
        refuse_protected(paths, db)
    check_outputs(paths, force)
    if probe:
        for p in {p.parent: p for p in paths}.values():
            _probe_folder(p)


def _temp_beside(path: Path) -> Path:
    try:
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{path.suffix}")
    except OSError as e:
        if e.errno in _RUNTIME_ERRNOS:
            raise
        raise OutputError(f"cannot write {path}: cannot create a file in folder {path.parent} "
                          f"({e.strerror or e})") from None
    os.close(fd)
    return Path(name)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:   # not possible on every platform (Windows); the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _place(tmp: Path, path: Path, force: bool) -> None:
    if force:
        os.replace(tmp, path)     # the target was just checked to be absent or a regular file
        return
    try:
        os.link(tmp, path)          # atomic "create if absent" (never follows a link at `path`)
    except FileExistsError:
        _check_target(path, force)  # say what is there: a special file, a link, …
        raise OutputExistsError(f"{path} already exists (use --force to overwrite)") from None
    except OSError:                 # a filesystem without hard links: check, then rename
        _check_target(path, force)
        os.replace(tmp, path)
        return
    os.unlink(tmp)


@contextmanager
def atomic_paths(paths: list[Path], force: bool) -> Iterator[list[Path]]:
    """Yield one temporary path per output; the caller writes them (a PDF writer that opens its
    own file, say). On a clean exit each is made mode 0600, fsynced and moved into place; on any
    error, nothing is left behind — neither temporaries nor, for a group, the members already
    placed."""
    paths = [Path(p) for p in paths]
    check_outputs(paths, force)
    existed = {p: os.path.lexists(p) for p in paths}
    temps: list[Path] = []
    placed: list[Path] = []
    try:
        for p in paths:
            temps.append(_temp_beside(p))
        yield list(temps)
        for t in temps:
            os.chmod(t, MODE)       # mkstemp's mode already; a writer may have made its own file
            fsync_path(t)
        check_outputs(paths, force)   # again: a FIFO or a link may have appeared while rendering
        for t, p in zip(temps, paths):
            _place(t, p, force)
            placed.append(p)
        for folder in {p.parent for p in paths}:
            _fsync_dir(folder)
    except BaseException:
        # A file this call created is taken back; a forced overwrite already done cannot be.
        for p in placed:
            if not existed[p]:
                p.unlink(missing_ok=True)
        raise
    finally:
        for t in temps:
            t.unlink(missing_ok=True)


@contextmanager
def atomic_path(path: Path, force: bool) -> Iterator[Path]:
    """atomic_paths for one file."""
    with atomic_paths([path], force) as (tmp,):
        yield tmp


def write_atomic_many(files: Mapping[Path, bytes | str], force: bool) -> None:
    """Write several files as a group (str is written as UTF-8)."""
    paths = list(files)
    with atomic_paths(paths, force) as temps:
        for t, p in zip(temps, paths):
            data = files[p]
            t.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)


def write_atomic(path: Path, data: bytes | str, force: bool) -> None:
    """Write one file: refuses an existing `path` unless `force` (OutputExistsError, a
    FileExistsError) and any non-regular target (OutputError), and leaves either the complete
    new file or no change at all."""
    write_atomic_many({Path(path): data}, force)
