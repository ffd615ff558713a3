"""Writing export files safely: never over an existing file unless forced, never a partial file.

Each output is first written to a temporary file in its own folder (same filesystem, so the
final step is a rename), flushed and fsynced, then moved into place. Without `force` the move is
a hard link, which fails atomically if the name appeared meanwhile; with `force` it is
os.replace. Any error removes the temporaries, and a group of files (CSV writes two) is put in
place only once every member is complete. Torch-free and Qt-free.
"""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from rla_engine.paths import fsync_path


def refuse_existing(paths: list[Path], force: bool) -> None:
    """Raise before any work is done when an output cannot be written (FileExistsError for an
    existing file without `force`; FileNotFoundError / IsADirectoryError for a bad target)."""
    for p in paths:
        if p.is_dir():
            raise IsADirectoryError(f"{p} is a folder; give a file name")
        if not p.parent.is_dir():
            raise FileNotFoundError(f"folder {p.parent} does not exist")
        if not force and (p.exists() or p.is_symlink()):
            raise FileExistsError(f"{p} already exists (use --force to overwrite)")


def _mode_for(path: Path) -> int:
    """The mode a plain `open(path, "w")` would give (mkstemp makes 0600 files): the existing
    file's mode when overwriting, else 0666 less the umask."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        pass
    try:   # read the umask without setting it (os.umask is process-wide and racy in a GUI)
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _temp_beside(path: Path) -> Path:
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{path.suffix}")
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
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)          # atomic "create if absent"
    except FileExistsError:
        raise FileExistsError(f"{path} already exists (use --force to overwrite)") from None
    except OSError:                 # a filesystem without hard links: check, then rename
        if path.exists() or path.is_symlink():
            raise FileExistsError(f"{path} already exists (use --force to overwrite)") from None
        os.replace(tmp, path)
        return
    os.unlink(tmp)


@contextmanager
def atomic_paths(paths: list[Path], force: bool) -> Iterator[list[Path]]:
    """Yield one temporary path per output; the caller writes them (a PDF writer that opens its
    own file, say). On a clean exit each is fsynced and moved into place; on any error, nothing
    is left behind — neither temporaries nor, for a group, the members already placed."""
    paths = [Path(p) for p in paths]
    refuse_existing(paths, force)
    existed = {p: p.exists() for p in paths}
    temps: list[Path] = []
    placed: list[Path] = []
    try:
        for p in paths:
            temps.append(_temp_beside(p))
        yield list(temps)
        for t, p in zip(temps, paths):
            os.chmod(t, _mode_for(p))
            fsync_path(t)
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


def write_atomic_many(files: dict[Path, bytes | str], force: bool) -> None:
    """Write several files as a group (str is written as UTF-8)."""
    paths = list(files)
    with atomic_paths(paths, force) as temps:
        for t, p in zip(temps, paths):
            data = files[p]
            t.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)


def write_atomic(path: Path, data: bytes | str, force: bool) -> None:
    """Write one file: refuses an existing `path` unless `force` (FileExistsError), and leaves
    either the complete new file or no change at all."""
    write_atomic_many({Path(path): data}, force)
