"""Checkpoints written beside the loop instead of in it.

At the iteration boundary the run's state is copied to memory (`snapshot`: a copy of every tensor,
a fraction of a millisecond for the embedded models); serialising it, writing it and fsync'ing it
(`checkpoint.save`, most of a checkpoint's cost) then happen on a background thread while the next
iteration runs.

What stays as it was:
- a file is never half-written: `checkpoint.save` still writes a temporary file, fsyncs it and
  renames it, so a SIGKILL at any moment leaves the newest complete checkpoint to resume from;
- one write at a time, in iteration order: `submit` first waits for the previous write, so at most
  one copy of the state is held beside the live one;
- a failed write (a full disk) fails the run: the error is raised on the loop's thread at its next
  `submit` or `wait`, as `CheckpointFailed` naming the iteration; the Runner waits before it stores
  the next iteration, so a failure is recorded where it was before;
- `durable` is the newest iteration whose checkpoint is on disk, which is what a stop that cuts an
  iteration short relies on (Runner._stop_requested);
- a folder planted under a checkpoint's name, and older files that pruning had to leave (an
  immutable file, such a folder), do not fail the run: that checkpoint is not written, or the old
  file stays; `take_warnings` hands them to the loop's thread, which says so.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import torch

from . import checkpoint


class CheckpointFailed(Exception):
    """The background write of `iteration`'s checkpoint raised `error`."""

    def __init__(self, iteration: int, error: BaseException):
        super().__init__(f"checkpoint of iteration {iteration}: {type(error).__name__}: {error}")
        self.iteration, self.error = iteration, error


def snapshot(state: Any) -> Any:
    """`state` with every tensor copied (to the CPU: the file is written from there) and every
    container rebuilt, so that the loop may change its own state while the copy is written. The
    other leaves (numbers, strings, None) are immutable."""
    if isinstance(state, torch.Tensor):
        return state.detach().to("cpu", copy=True)
    if isinstance(state, dict):
        return type(state)((k, snapshot(v)) for k, v in state.items())
    if isinstance(state, (list, tuple)):
        return type(state)(snapshot(v) for v in state)
    return state


class CheckpointWriter:
    def __init__(self, folder: Path, keep: int, owner: checkpoint.Owner | None, durable: int):
        self.folder, self.keep, self.owner = Path(folder), keep, owner
        self.durable = durable            # the newest iteration whose checkpoint is on disk
        self._thread: threading.Thread | None = None
        self._failed: CheckpointFailed | None = None
        self._warnings: dict[Path, str] = {}     # written by the write's thread, read after `wait`

    def submit(self, iteration: int, state: dict) -> Path:
        """Start writing `state` as `iteration`'s checkpoint and return its path at once (after the
        write under way, if any: raises CheckpointFailed if that one failed)."""
        self.wait()
        copied = snapshot(state)
        self._thread = threading.Thread(target=self._write, args=(iteration, copied),
                                        name=f"checkpoint {iteration}", daemon=True)
        self._thread.start()
        return checkpoint.path_of(self.folder, iteration)

    def _write(self, iteration: int, state: dict) -> None:
        try:
            checkpoint.save(self.folder, iteration, state, self.keep, self.owner, self._warnings.update)
            self.durable = iteration
        except checkpoint.NameTaken as e:     # the previous checkpoint stands; said, not fatal
            self._warnings[e.path] = e.reason
        except BaseException as e:   # handed to the loop's thread, which fails the run with it
            self._failed = CheckpointFailed(iteration, e)

    def take_warnings(self) -> dict[Path, str]:
        """Checkpoints not written and older files pruning left since the last call, each with
        why (after `wait`)."""
        left, self._warnings = self._warnings, {}
        return left

    def wait(self) -> None:
        """Return once no write is under way; raise CheckpointFailed if the last one failed."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        failed, self._failed = self._failed, None
        if failed is not None:
            raise failed
