"""Checkpoints are checked, not trusted: a damaged newest file is skipped for the previous good one,
damage is reported by file and reason, writes are atomic, private and leave no debris."""
from __future__ import annotations

import errno
import hashlib
import os
import random
import stat

import pytest
import torch

from rla_engine import checkpoint


def state(i: int) -> dict:
    g = torch.Generator().manual_seed(i)
    return {"iteration": i, "policy": {"w": torch.randn(4, 3, generator=g), "b": torch.zeros(3)},
            "opt": {"lr": 0.01, "steps": [i, i + 1]}}


def same(a: dict, b: dict) -> bool:
    return (a["iteration"] == b["iteration"] and a["opt"] == b["opt"]
            and all(torch.equal(a["policy"][k], b["policy"][k]) for k in a["policy"]))


def two(tmp_path):
    """A good it-1 and the newest it-2, which the test then damages."""
    checkpoint.save(tmp_path, 1, state(1), keep=5)
    return checkpoint.save(tmp_path, 2, state(2), keep=5)


def flip(path, offsets):
    data = bytearray(path.read_bytes())
    for o in offsets:
        data[o] ^= 0xFF
    path.write_bytes(bytes(data))


HEADER = 56   # magic 8 + version 4 + owner length 4 + payload length 8 + sha256 32


def _zero(p): p.write_bytes(b"")
def _half(p): p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
def _less_one(p): p.write_bytes(p.read_bytes()[:-1])
def _random(p): p.write_bytes(random.Random(0).randbytes(p.stat().st_size))
def _flip_payload(p): flip(p, random.Random(1).sample(range(HEADER, p.stat().st_size), 64))
def _flip_sha(p): flip(p, [30])
def _flip_version(p): flip(p, [8])
def _flip_length(p): flip(p, [23])   # the top byte: claims far more than is there
def _magic(p): flip(p, [0])
def _text(p): p.write_text("hello, I am not a checkpoint\n")
def _trailing(p): p.write_bytes(p.read_bytes() + b"\0" * 10)
def _dir(p):
    p.unlink()
    p.mkdir()


def _legacy_truncated(p):
    torch.save(state(2), p)
    p.write_bytes(p.read_bytes()[:200])


DAMAGE = [
    (_zero, "empty file"),
    (_half, "truncated: "),
    (_less_one, "truncated: "),
    (_random, "not a checkpoint"),
    (_flip_payload, "checksum mismatch"),
    (_flip_sha, "checksum mismatch"),
    (_flip_version, "format version"),
    (_flip_length, "truncated: "),
    (_magic, "not a checkpoint"),
    (_text, "not a checkpoint"),
    (_trailing, "more than the header says"),
    (_dir, "cannot read"),
    (_legacy_truncated, "cannot load"),
]


@pytest.mark.parametrize("damage,reason", DAMAGE, ids=[d.__name__.strip("_") for d, _ in DAMAGE])
def test_damaged_newest_falls_back_to_previous(tmp_path, damage, reason):
    newest = two(tmp_path)
    damage(newest)
    with pytest.raises(checkpoint.CheckpointError) as e:
        checkpoint.load(newest)
    assert e.value.path == newest and reason in e.value.reason and newest.name in str(e.value)
    path, got, skipped = checkpoint.newest_good(tmp_path, "cpu")
    assert path.name == "it-000000001.pt" and same(got, state(1))
    assert len(skipped) == 1 and skipped[0][0] == newest and reason in skipped[0][1]


def test_unreadable_newest_falls_back(tmp_path, monkeypatch):
    newest = two(tmp_path)
    if os.geteuid() == 0:   # root reads a file whatever its mode: make the open fail as it would
        real = checkpoint._no_follow

        def denied(path, flags):
            if str(path) == str(newest):
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            return real(path, flags)

        monkeypatch.setattr(checkpoint, "_no_follow", denied)
    newest.chmod(0)
    try:
        path, got, skipped = checkpoint.newest_good(tmp_path)
    finally:
        newest.chmod(0o600)
    assert path.name == "it-000000001.pt" and same(got, state(1))
    assert skipped == [(newest, "cannot read: Permission denied")]


def test_truncation_reason_gives_sizes(tmp_path):
    newest = two(tmp_path)
    size = newest.stat().st_size
    newest.write_bytes(newest.read_bytes()[:-1])
    with pytest.raises(checkpoint.CheckpointError, match=f"truncated: {size - 1} of {size} bytes"):
        checkpoint.load(newest)
    newest.write_bytes(newest.read_bytes()[:12])
    with pytest.raises(checkpoint.CheckpointError, match=f"truncated: 12 of at least {HEADER} bytes"):
        checkpoint.load(newest)


def test_round_trip_carries_a_verified_header(tmp_path):
    path = checkpoint.save(tmp_path, 7, state(7), keep=3)
    assert path.name == "it-000000007.pt" and checkpoint.iteration_of(path) == 7
    assert same(checkpoint.load(path, torch.device("cpu")), state(7))
    data = path.read_bytes()
    assert data[:8] == checkpoint.MAGIC
    assert int.from_bytes(data[12:16], "little") == 2 and data[HEADER:HEADER + 2] == b"{}"   # no owner given
    assert int.from_bytes(data[16:24], "little") == len(data) - HEADER - 2
    assert data[24:56] == hashlib.sha256(data[HEADER:]).digest()
    assert checkpoint.newest_good(tmp_path)[0] == path == checkpoint.latest(tmp_path)


def test_all_damaged_names_every_file(tmp_path):
    for i in (1, 2, 3):
        checkpoint.save(tmp_path, i, state(i), keep=5)
    ckpts = checkpoint.list_checkpoints(tmp_path)
    ckpts[0].write_bytes(b"")
    _flip_payload(ckpts[1])
    _text(ckpts[2])
    with pytest.raises(checkpoint.CheckpointError) as e:
        checkpoint.newest_good(tmp_path)
    msg = str(e.value)
    assert str(tmp_path) in msg
    for p, why in zip(ckpts, ("empty file", "checksum mismatch", "not a checkpoint")):
        assert f"{p.name}: {why}" in msg


@pytest.mark.parametrize("make", [True, False], ids=["empty", "missing"])
def test_no_checkpoint(tmp_path, make):
    folder = tmp_path / "ckpts"
    if make:
        folder.mkdir()
        (folder / "database.txt").write_text("x")
    with pytest.raises(checkpoint.CheckpointError, match="no checkpoint in"):
        checkpoint.newest_good(folder)


def test_legacy_headerless_file_still_loads(tmp_path):
    torch.save(state(1), tmp_path / "it-000000001.pt")   # what the previous version wrote
    newest = checkpoint.save(tmp_path, 2, state(2), keep=5)
    _flip_payload(newest)
    path, got, skipped = checkpoint.newest_good(tmp_path)
    assert path.name == "it-000000001.pt" and same(got, state(1)) and skipped[0][0] == newest


def test_leftover_tmp_is_cleaned(tmp_path):
    left = tmp_path / ".it-000000004.pt.tmp"
    left.write_bytes(b"half a checkpoint")
    other = tmp_path / "notes.tmp"
    other.write_text("not ours")
    assert checkpoint.clean_tmp(tmp_path) == 1 and not left.exists() and other.exists()
    assert checkpoint.clean_tmp(tmp_path / "nowhere") == 0
    left.write_bytes(b"half a checkpoint")
    checkpoint.save(tmp_path, 4, state(4), keep=3)   # the same name a killed writer left
    assert not left.exists() and other.exists()
    assert same(checkpoint.load(tmp_path / "it-000000004.pt"), state(4))


def test_files_are_private_despite_umask(tmp_path):
    folder = tmp_path / "checkpoints" / "run"
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    old = os.umask(0o022)
    try:
        path = checkpoint.save(folder, 1, state(1), keep=3)
        in_shared = checkpoint.save(shared, 1, state(1), keep=3)
    finally:
        os.umask(old)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(folder.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # a folder that already exists may be shared on purpose: left as it is, the file still private
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755
    assert stat.S_IMODE(in_shared.stat().st_mode) == 0o600


def test_failed_write_leaves_no_tmp_and_keeps_previous(tmp_path, monkeypatch):
    two(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(OSError) as e:
        checkpoint.save(tmp_path, 3, state(3), keep=1)
    assert e.value.errno == errno.ENOSPC
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_failed_fsync_removes_tmp(tmp_path, monkeypatch):
    two(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError):
        checkpoint.save(tmp_path, 3, state(3), keep=1)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_prune_never_deletes_the_file_just_written(tmp_path):
    for i in (5, 6, 7):
        checkpoint.save(tmp_path, i, state(i), keep=2)
    written = checkpoint.save(tmp_path, 3, state(3), keep=2)
    assert written.exists()
    assert next(checkpoint.iteration_of(p) for p in checkpoint.list_checkpoints(tmp_path)) == 3


def test_prune_keeps_a_good_one_after_falling_back(tmp_path):
    """it-5 good, it-9 damaged: the run resumes from 5 and writes 6 with keep=1. Counting 9 as
    the one to keep would leave nothing loadable."""
    checkpoint.save(tmp_path, 5, state(5), keep=1)
    checkpoint.save(tmp_path, 9, state(9), keep=5)
    _flip_payload(tmp_path / "it-000000009.pt")
    path, _, skipped = checkpoint.newest_good(tmp_path)
    assert checkpoint.iteration_of(path) == 5 and len(skipped) == 1
    checkpoint.save(tmp_path, 6, state(6), keep=1)
    path, got, _ = checkpoint.newest_good(tmp_path)
    assert checkpoint.iteration_of(path) == 6 and same(got, state(6))


def test_prune_keeps_the_newest(tmp_path):
    for i in range(1, 7):
        checkpoint.save(tmp_path, i, state(i), keep=3)
    assert [checkpoint.iteration_of(p) for p in checkpoint.list_checkpoints(tmp_path)] == [4, 5, 6]
    assert checkpoint.newest_good(tmp_path)[2] == []
