"""Checkpoints: written atomically (temporary file, fsync, rename), the last N kept, loaded with
`weights_only=True` so a checkpoint file can never run code.

A file is a fixed header followed by the `torch.save` payload, in one file so that the checksum
and the data it covers are renamed into place together (two files could be caught half-updated):

    offset  size  field
         0     8  magic  b"RLACKPT\\n"
         8     4  format version, little-endian uint32 (1)
        12     8  payload length in bytes, little-endian uint64
        20    32  sha256 of the payload
        52     …  payload (a torch.save zip archive)

`load` checks all of it before handing the bytes to torch, so damage is reported as a
`CheckpointError` naming the file and the reason, and `newest_good` can fall back to an older
checkpoint instead of resuming from garbage or dying with a traceback.
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import struct
from pathlib import Path

import torch

from .paths import fsync_path

_NAME = re.compile(r"^it-(\d{9})\.pt$")
_TMP = re.compile(r"^\.it-\d{9}\.pt\.tmp$")
MAGIC = b"RLACKPT\n"
VERSION = 1
_HEADER = struct.Struct("<8sIQ32s")
# What torch.save (zip format, the default since torch 1.6) starts with: the only thing a
# headerless file written by the previous version of this module can be.
_ZIP = b"PK\x03\x04"


class CheckpointError(Exception):
    """A checkpoint file that cannot be used; `path` and `reason` say which and why."""

    def __init__(self, path: Path, reason: str, message: str | None = None):
        super().__init__(message or f"checkpoint {path}: {reason}")
        self.path = Path(path)
        self.reason = reason


def save(folder: Path, iteration: int, state: dict, keep: int) -> Path:
    """Write `state` as `folder/it-NNNNNNNNN.pt` (mode 0600, folder 0700) and keep the newest
    `keep`. An OSError (e.g. ENOSPC) propagates after the temporary file is removed; the
    checkpoints already there are untouched."""
    folder = Path(folder)
    _make_private_dir(folder)
    clean_tmp(folder)
    final = folder / f"it-{iteration:09d}.pt"
    tmp = folder / f".{final.name}.tmp"
    buf = io.BytesIO()
    torch.save(state, buf)
    payload = buf.getbuffer()
    header = _HEADER.pack(MAGIC, VERSION, len(payload), hashlib.sha256(payload).digest())
    # O_EXCL: never write through a link or into someone else's file left under our name
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o600)   # the mode given to os.open is still filtered by umask
            f.write(header)
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_path(folder)
    _prune(folder, final, keep)
    return final


def _make_private_dir(folder: Path) -> None:
    # Folders we create are 0700 whatever the umask (mkdir's mode is filtered by it, chmod is
    # not); an existing folder is left as it is, as paths.make_private_dir does: it may be shared
    # on purpose, and the files in it are 0600 anyway.
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    for p in missing:
        os.chmod(p, 0o700)


def _prune(folder: Path, final: Path, keep: int) -> None:
    """Keep the file just written (known good) and the newest `keep - 1` older ones. Files newer
    than the one just written are left alone: they are what `newest_good` skipped as damaged on
    the way to the one this run resumed from, and the run overwrites them as it goes on."""
    older = [p for p in list_checkpoints(folder) if iteration_of(p) < iteration_of(final)]
    for old in older[: max(0, len(older) - (max(keep, 1) - 1))]:
        old.unlink(missing_ok=True)


def clean_tmp(folder: Path) -> int:
    """Remove temporary files left by a process killed mid-write; return how many. Only the run's
    one engine writes to its folder, so no other writer's file can be in progress."""
    folder = Path(folder)
    if not folder.is_dir():
        return 0
    removed = 0
    for p in folder.iterdir():
        if _TMP.match(p.name):
            p.unlink(missing_ok=True)
            removed += 1
    return removed


def list_checkpoints(folder: Path) -> list[Path]:
    """Oldest first."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if _NAME.match(p.name))


def iteration_of(path: Path) -> int:
    m = _NAME.match(path.name)
    if m is None:
        raise ValueError(f"{path.name} is not a checkpoint's name")
    return int(m.group(1))


def latest(folder: Path) -> Path | None:
    """The newest by name, not checked: use `newest_good` to resume."""
    found = list_checkpoints(folder)
    return found[-1] if found else None


def load(path: Path, device: torch.device | str = "cpu") -> dict:
    """The state saved in `path`, checked against its header; raises CheckpointError.

    A file without the header, written by the previous version of this module, is still loaded
    when it is a torch.save archive that torch can read (old runs must stay resumable); it has no
    checksum, so only the zip format's own checks guard it."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise CheckpointError(path, f"cannot read: {e.strerror or e}") from None
    if not data:
        raise CheckpointError(path, "empty file")
    if data.startswith(MAGIC) or MAGIC.startswith(data):
        payload = _verified(path, data)
    elif data.startswith(_ZIP):
        payload = memoryview(data)
    else:
        raise CheckpointError(path, "not a checkpoint")
    try:
        state = torch.load(io.BytesIO(payload), map_location=device, weights_only=True)
    except Exception as e:   # torch, pickle and zipfile raise many kinds; the caller needs one
        raise CheckpointError(path, f"cannot load: {type(e).__name__}: {e}") from None
    if not isinstance(state, dict):
        raise CheckpointError(path, f"not a checkpoint (holds a {type(state).__name__})")
    return state


def _verified(path: Path, data: bytes) -> memoryview:
    if len(data) < _HEADER.size:
        raise CheckpointError(path, f"truncated: {len(data)} of at least {_HEADER.size} bytes")
    _, version, length, digest = _HEADER.unpack_from(data)
    if version != VERSION:
        raise CheckpointError(path, f"unknown format version {version}")
    payload = memoryview(data)[_HEADER.size:]
    if len(payload) < length:
        raise CheckpointError(path, f"truncated: {len(data)} of {_HEADER.size + length} bytes")
    if len(payload) > length:
        raise CheckpointError(path, f"{len(payload) - length} bytes more than the header says")
    if hashlib.sha256(payload).digest() != digest:
        raise CheckpointError(path, "checksum mismatch")
    return payload


def newest_good(folder: Path, device: torch.device | str = "cpu") -> tuple[Path, dict, list[tuple[Path, str]]]:
    """The newest checkpoint that loads: its path, its state, and (path, reason) for each newer
    one skipped. Raises CheckpointError naming every file tried if none loads, or if there are
    none."""
    folder = Path(folder)
    skipped: list[tuple[Path, str]] = []
    for path in reversed(list_checkpoints(folder)):
        try:
            return path, load(path, device), skipped
        except CheckpointError as e:
            skipped.append((path, e.reason))
    if not skipped:
        raise CheckpointError(folder, "no checkpoint", f"no checkpoint in {folder}")
    tried = "; ".join(f"{p.name}: {r}" for p, r in skipped)
    raise CheckpointError(folder, "no good checkpoint", f"no good checkpoint in {folder}: {tried}")
