"""Checkpoints written beside the loop: the file holds the state as it was at the boundary whatever
the loop does next, a failed write fails the run where a failed checkpoint did, and a run that
writes them in the background is resumable from each and stores the same metrics."""
from __future__ import annotations

import errno

import torch

from rla_engine import checkpoint
from rla_engine.checkpoint_writer import CheckpointFailed, CheckpointWriter
from rla_engine.config import build
from rla_engine.loop.trainer import Trainer
from rla_engine.paths import checkpoints_dir
from rla_engine.runner import Runner
from rla_engine.store import open_store


def test_the_file_holds_the_state_of_the_boundary_while_the_loop_changes_it(tmp_path):
    weights = torch.arange(1000, dtype=torch.float32)
    state = {"iteration": 4, "policy": {"w": weights}, "opt": {"state": {0: {"step": torch.tensor(3.0)}},
                                                               "param_groups": [{"lr": 0.1}]}}
    writer = CheckpointWriter(tmp_path, keep=2, owner=None, durable=3)
    path = writer.submit(4, state)
    weights.mul_(-1)                                   # the next iteration's update, in place
    state["opt"]["param_groups"][0]["lr"] = 0.5
    writer.wait()
    saved = checkpoint.load(path)
    assert torch.equal(saved["policy"]["w"], torch.arange(1000, dtype=torch.float32))
    assert saved["opt"]["param_groups"][0]["lr"] == 0.1
    assert writer.durable == 4 and path == checkpoint.path_of(tmp_path, 4)


def disk_full_at(monkeypatch, iteration: int) -> None:
    """The write of `iteration`'s checkpoint fails as on a full disk (after its temporary file exists)."""
    real = checkpoint.write_whole

    def write_whole(final, tmp, *chunks):
        if final.name == checkpoint.path_of(final.parent, iteration).name:
            tmp.write_bytes(b"partial")
            tmp.unlink()
            raise OSError(errno.ENOSPC, "No space left on device", str(tmp))
        real(final, tmp, *chunks)
    monkeypatch.setattr(checkpoint, "write_whole", write_whole)


def test_a_failed_write_is_raised_on_the_loops_thread_naming_the_iteration(tmp_path, monkeypatch):
    writer = CheckpointWriter(tmp_path, keep=2, owner=None, durable=1)
    disk_full_at(monkeypatch, 2)
    writer.submit(2, {"iteration": 2, "w": torch.zeros(3)})
    try:
        writer.wait()
        raise AssertionError("the failed write was not raised")
    except CheckpointFailed as failed:
        assert failed.iteration == 2 and isinstance(failed.error, OSError)
        assert "checkpoint of iteration 2" in str(failed)
    assert writer.durable == 1
    assert not list(tmp_path.glob(".it-*.tmp"))           # no debris: the temporary file went too
    writer.wait()                                         # raised once, then the writer is usable
    writer.submit(3, {"iteration": 3})
    writer.wait()
    assert writer.durable == 3


def test_a_run_that_fails_to_write_a_checkpoint_keeps_what_it_committed(tmp_path, monkeypatch):
    store = open_store(tmp_path / "h.db")
    cfg = build(preset="tiny", sets=["run.iterations=6"])
    tr = Trainer(cfg, torch.device("cpu"))
    store.create_run("r", name="blocked", preset="", config=cfg.to_dict(), device="cpu")
    disk_full_at(monkeypatch, 3)
    lines: list[str] = []
    assert Runner(store, "r", tr, 6, out=lines.append).run() == 1
    run = store.get_run("r")
    assert run["status"] == "failed" and "checkpoint of iteration 3" in run["error"]
    assert store.last_iteration("r") == 3                  # iteration 4 is not stored after the failure
    failed = store.events("r", kinds=["failed"])
    assert [e["iteration"] for e in failed] == [3]
    assert [checkpoint.iteration_of(p) for p in checkpoint.list_checkpoints(checkpoints_dir(store.path, "r"))
            if p.is_file()] == [1, 2]
