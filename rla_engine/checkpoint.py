"""Checkpoints: written atomically (temporary file, fsync, rename), the last N kept, loaded with
`weights_only=True` so a checkpoint file can never run code.

A file is a fixed header, the checkpoint's owner and the `torch.save` payload, in one file so
that the checksum and the data it covers are renamed into place together (two files could be
caught half-updated):

    offset  size  field
         0     8  magic  b"RLACKPT\\n"
         8     4  format version, little-endian uint32 (2)
        12     4  owner length in bytes, little-endian uint32
        16     8  payload length in bytes, little-endian uint64
        24    32  sha256 of owner + payload
        56     …  owner: UTF-8 JSON {"run": run id, "database": database id}
         …     …  payload (a torch.save zip archive)

The owner names the run and the database (by the id stored inside it, so a moved or copied
database still owns its checkpoints) that wrote the file, under the checksum: a file copied or
linked in from another run is refused by `load(..., owner=...)`, not resumed from. A file
without an owner (version 1, a headerless one from an older version, or version 2 signed `{}`)
loads only where the caller allows it (`unowned_ok`): a database that has written version 2
refuses them for its runs, since a stripped or blank header would otherwise let any file in;
an older database's runs still load theirs.

`load` checks all of it before handing the bytes to torch, so damage is reported as a
`CheckpointError` naming the file and the reason, and `newest_good` can fall back to an older
checkpoint instead of resuming from garbage or dying with a traceback.
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import json
import stat
import struct
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import torch

from .paths import write_whole

_NAME = re.compile(r"^it-(\d{9})\.pt$")
_TMP = re.compile(r"^\.it-\d{9}\.pt\.tmp$")
MAGIC = b"RLACKPT\n"
VERSION = 2
_HEADER = struct.Struct("<8sIIQ32s")
_HEADER_V1 = struct.Struct("<8sIQ32s")
_OWNER_MAX = 4096
# What torch.save (zip format, the default since torch 1.6) starts with: the only thing a
# headerless file written by the previous version of this module can be.
_ZIP = b"PK\x03\x04"


class Owner(NamedTuple):
    """Who wrote a checkpoint: the run and the database (its stored id, not its path)."""
    run: str
    database: str

    def describe(self) -> str:
        return f"run {self.run!r} of database {self.database}"


class CheckpointError(Exception):
    """A checkpoint file that cannot be used; `path` and `reason` say which and why."""

    def __init__(self, path: Path, reason: str, message: str | None = None):
        super().__init__(message or f"checkpoint {path}: {reason}")
        self.path = Path(path)
        self.reason = reason


Unpruned = Callable[[list[tuple[Path, str]]], None]


class NameTaken(CheckpointError):
    """Something that is no file of ours (a folder) holds the name a checkpoint would be written
    under: that checkpoint is not written, and the run goes on (the previous one stands)."""


def save(folder: Path, iteration: int, state: dict, keep: int, owner: Owner | None = None,
         unpruned: Unpruned | None = None) -> Path:
    """Write `state` as `folder/it-NNNNNNNNN.pt` (mode 0600, folder 0700), signed by `owner`, and
    keep the newest `keep`. An OSError (e.g. ENOSPC) propagates after the temporary file is
    removed; the checkpoints already there are untouched. An older file that cannot be deleted
    (an immutable file, something planted under a checkpoint's name) costs room, not the run: it
    is left, and handed with its reason to `unpruned`."""
    folder = Path(folder)
    _make_private_dir(folder)
    clean_tmp(folder)
    final = path_of(folder, iteration)
    if final.is_dir() and not final.is_symlink():    # a rename never replaces a folder (and must not)
        raise NameTaken(final, "a folder is in the way: this checkpoint was not written")
    tmp = folder / f".{final.name}.tmp"
    buf = io.BytesIO()
    torch.save(state, buf)
    payload = buf.getbuffer()
    who = json.dumps(owner._asdict() if owner else {}).encode()
    digest = hashlib.sha256(who)
    digest.update(payload)
    header = _HEADER.pack(MAGIC, VERSION, len(who), len(payload), digest.digest())
    write_whole(final, tmp, header, who, payload)
    left = _prune(folder, final, keep, owner)
    if left and unpruned is not None:
        unpruned(left)
    return final


def path_of(folder: Path, iteration: int) -> Path:
    """Where `save` writes iteration's checkpoint."""
    return Path(folder) / f"it-{iteration:09d}.pt"


def _make_private_dir(folder: Path) -> None:
    # Folders we create are 0700 whatever the umask (mkdir's mode is filtered by it, chmod is
    # not); an existing folder is left as it is, as paths.make_private_dir does: it may be shared
    # on purpose, and the files in it are 0600 anyway.
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    for p in missing:
        os.chmod(p, 0o700)


def _prune(folder: Path, final: Path, keep: int, owner: Owner | None) -> list[tuple[Path, str]]:
    """Keep the file just written (known good) and the newest `keep - 1` older ones. Files newer
    than the one just written are left alone: they are what `newest_good` skipped as damaged on
    the way to the one this run resumed from, and the run overwrites them as it goes on. Only
    the run's own files are ever deleted: not a link, not a file another run signed, not a
    folder planted under a checkpoint's name. Returns what was left that pruning would have
    deleted, with why (a folder; a file the system would not delete)."""
    older = [p for p in list_checkpoints(folder) if iteration_of(p) < iteration_of(final)
             and not p.is_symlink() and owner_of(p) in (None, owner)]
    planted = [p for p in older if p.is_dir()]
    left = [(p, "a folder, not a checkpoint file: left alone") for p in planted]
    older = [p for p in older if p not in planted]
    for old in older[: max(0, len(older) - (max(keep, 1) - 1))]:
        try:
            old.unlink(missing_ok=True)
        except OSError as e:       # an immutable file or folder (chattr +i), a read-only mount
            left.append((old, f"cannot delete it: {e.strerror or e}"))
    return left


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


def is_checkpoint_name(name: str) -> bool:
    return _NAME.match(name) is not None


def is_tmp_name(name: str) -> bool:
    return _TMP.match(name) is not None


def list_checkpoints(folder: Path) -> list[Path]:
    """Oldest first: every name a checkpoint could have, links included (`load` refuses those)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if _NAME.match(p.name))


def owner_of(path: Path) -> Owner | None:
    """The owner a checkpoint file names in its header (None for a file without one, or one
    that is not a checkpoint), read without loading the payload; the checksum is not checked."""
    try:
        with open(path, "rb", opener=_no_follow) as f:
            head = f.read(_HEADER.size)
            if len(head) < _HEADER.size or not head.startswith(MAGIC):
                return None
            _, version, n, _, _ = _HEADER.unpack(head)
            if version != VERSION or n > _OWNER_MAX:
                return None
            return _owner(f.read(n))
    except (OSError, ValueError):
        return None


def _owner(raw: bytes) -> Owner | None:
    """Raises ValueError for an owner that is not two strings."""
    data = json.loads(raw.decode("utf-8"))
    if not data:
        return None
    if not (isinstance(data, dict) and isinstance(data.get("run"), str) and isinstance(data.get("database"), str)):
        raise ValueError("malformed owner")
    return Owner(data["run"], data["database"])


def _no_follow(path, flags):
    return os.open(path, flags | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))


def iteration_of(path: Path) -> int:
    m = _NAME.match(path.name)
    if m is None:
        raise ValueError(f"{path.name} is not a checkpoint's name")
    return int(m.group(1))


def latest(folder: Path) -> Path | None:
    """The newest by name, not checked: use `newest_good` to resume."""
    found = list_checkpoints(folder)
    return found[-1] if found else None


class Unsigned(CheckpointError):
    """A checkpoint that names no owner, where the caller asked for one (`unowned_ok=False`)."""


def load(path: Path, device: torch.device | str = "cpu", owner: Owner | None = None,
         unowned_ok: bool = True) -> dict:
    """The state saved in `path`, checked against its header; raises CheckpointError.

    Never through a symbolic link, never a file that is not a regular one. With `owner`, a file
    that names another owner is refused, and so is one whose state is not of the iteration its
    name says (a copy planted under a newer name). A file without an owner (a headerless
    torch.save archive or format 1, written by an older version of this module; or format 2
    signed `{}`) is loaded only if `unowned_ok`: old runs must stay resumable, but where the
    database signs its checkpoints an unsigned file may have come from anywhere."""
    path = Path(path)
    data = _read_regular(path)
    if not data:
        raise CheckpointError(path, "empty file")
    if data.startswith(MAGIC) or MAGIC.startswith(data):
        payload, found = _verified(path, data)
        if owner is not None and found is not None and found != owner:
            raise CheckpointError(path, f"written by {found.describe()}, not by this run")
        unsigned = None if found is not None else (
            "format 1, which names no owner" if _version(data) == 1 else "its owner is blank")
    elif data.startswith(_ZIP):
        payload, unsigned = memoryview(data), "no header (an older version's format), so no owner"
    else:
        raise CheckpointError(path, "not a checkpoint")
    if unsigned is not None and not unowned_ok:
        raise Unsigned(path, f"unsigned: {unsigned}; this database signs its runs' checkpoints, so this file "
                             "may come from anywhere")
    try:
        state = torch.load(io.BytesIO(payload), map_location=device, weights_only=True)
    except Exception as e:   # torch, pickle and zipfile raise many kinds; the caller needs one
        raise CheckpointError(path, f"cannot load: {type(e).__name__}: {e}") from None
    if not isinstance(state, dict):
        raise CheckpointError(path, f"not a checkpoint (holds a {type(state).__name__})")
    held = state.get("iteration")
    if owner is not None and _NAME.match(path.name) and isinstance(held, int) and held != iteration_of(path):
        raise CheckpointError(path, f"holds iteration {held}, not the {iteration_of(path)} its name says")
    return state


def _read_regular(path: Path) -> bytes:
    """The file's bytes; a link, a FIFO or a device is refused before anything blocks on it."""
    try:
        with open(path, "rb", opener=_no_follow) as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise CheckpointError(path, "not a regular file")
            return f.read()
    except OSError as e:
        if path.is_symlink():
            raise CheckpointError(path, "a symbolic link (a checkpoint is never read through one)") from None
        raise CheckpointError(path, f"cannot read: {e.strerror or e}") from None


def _verified(path: Path, data: bytes) -> tuple[memoryview, Owner | None]:
    """The payload and the owner the header names, after checking sizes and the checksum."""
    version = _version(data)
    if version == 1:
        return _verified_v1(path, data), None
    if len(data) < _HEADER.size:
        raise CheckpointError(path, f"truncated: {len(data)} of at least {_HEADER.size} bytes")
    _, version, n, length, digest = _HEADER.unpack_from(data)
    if version != VERSION:
        raise CheckpointError(path, f"unknown format version {version}")
    if n > _OWNER_MAX:
        raise CheckpointError(path, f"an owner of {n} bytes (at most {_OWNER_MAX})")
    body = memoryview(data)[_HEADER.size:]
    if len(body) < n + length:
        raise CheckpointError(path, f"truncated: {len(data)} of {_HEADER.size + n + length} bytes")
    if len(body) > n + length:
        raise CheckpointError(path, f"{len(body) - n - length} bytes more than the header says")
    if hashlib.sha256(body).digest() != digest:
        raise CheckpointError(path, "checksum mismatch")
    try:
        found = _owner(bytes(body[:n]))
    except ValueError:     # covered by the checksum, so written so: not ours to trust
        raise CheckpointError(path, "an unreadable owner") from None
    return body[n:], found


def _version(data: bytes) -> int | None:
    return struct.unpack_from("<I", data, 8)[0] if len(data) >= 12 else None


def _verified_v1(path: Path, data: bytes) -> memoryview:
    if len(data) < _HEADER_V1.size:
        raise CheckpointError(path, f"truncated: {len(data)} of at least {_HEADER_V1.size} bytes")
    _, _, length, digest = _HEADER_V1.unpack_from(data)
    payload = memoryview(data)[_HEADER_V1.size:]
    if len(payload) < length:
        raise CheckpointError(path, f"truncated: {len(data)} of {_HEADER_V1.size + length} bytes")
    if len(payload) > length:
        raise CheckpointError(path, f"{len(payload) - length} bytes more than the header says")
    if hashlib.sha256(payload).digest() != digest:
        raise CheckpointError(path, "checksum mismatch")
    return payload


def newest_good(folder: Path, device: torch.device | str = "cpu", owner: Owner | None = None
                ) -> tuple[Path, dict, list[tuple[Path, str]]]:
    """The newest checkpoint that loads (for `owner`, see `load`): its path, its state, and
    (path, reason) for each newer one skipped. Raises CheckpointError naming every file tried if
    none loads, or if there are none."""
    folder = Path(folder)
    skipped: list[tuple[Path, str]] = []
    for path in reversed(list_checkpoints(folder)):
        try:
            return path, load(path, device, owner), skipped
        except CheckpointError as e:
            skipped.append((path, e.reason))
    if not skipped:
        raise CheckpointError(folder, "no checkpoint", f"no checkpoint in {folder}")
    tried = "; ".join(f"{p.name}: {r}" for p, r in skipped)
    raise CheckpointError(folder, "no good checkpoint", f"no good checkpoint in {folder}: {tried}")
