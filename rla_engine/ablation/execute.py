"""Running an ablation's plan: each run is a real `rla run` (or `rla resume`) subprocess, so a
crash in one arm cannot take the others with it and every run is resumable on its own.

A rerun of the same command skips the group's completed runs, resumes the stopped, crashed or
failed ones from their checkpoints, starts the missing ones, and leaves live ones to the
process that runs them.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import NamedTuple

from ..commandline import resume_command, run_command
from ..config import from_dict
from ..errors import InputError
from ..paths import run_config_name
from ..store import Store
from ..summary import config_differences
from ..vocabulary import LIVE, Status
from .arms import PlannedRun
from .outputs import log_file

POLL_S = 0.5


class Step(StrEnum):
    """What `rla ablate` does with a planned run."""
    START = "start"
    RESUME = "resume"
    SKIP = "skip"


class Todo(NamedTuple):
    step: Step
    why: str = ""               # a skip's reason


def _todo(store: Store, run: PlannedRun, group: str) -> Todo:
    """Start, resume or skip (and why), after checking that an existing run is this plan's run."""
    row = store.get_run(run.run_id)
    if row is None:
        return Todo(Step.START)
    if row.get("group_id") != group:
        raise InputError(f"run {run.run_id} exists outside group {group}; choose another --group")
    stored = from_dict(store.run_config(run.run_id)).to_dict()
    # where a run's work happens (executor.*) does not change what the run is
    differ = [k for k in config_differences([stored, run.config.to_dict()]) if not k.startswith("executor.")]
    if differ:
        raise InputError(f"run {run.run_id} of group {group} was started with other settings "
                         f"({', '.join(differ[:4])}); rerun with the same settings or choose another --group")
    if row["status"] == Status.COMPLETED:
        return Todo(Step.SKIP, "completed")
    if row["status"] in LIVE:
        return Todo(Step.SKIP, f"{row['status']} in process {row['pid']}")
    return Todo(Step.RESUME)


def _command(run: PlannedRun, step: Step, db: Path, group: str, config_dir: Path, preset: str | None) -> list[str]:
    if step == Step.RESUME:
        return resume_command(sys.executable, db, run.run_id)
    path = config_dir / run_config_name(run.run_id)
    path.write_text(run.config.to_toml(), encoding="utf-8")
    return run_command(sys.executable, db, config=path, run_id=run.run_id, name=run.name, preset=preset, group=group)


def execute(store: Store, runs: list[PlannedRun], group: str, *, jobs: int, log_dir: Path,
            say: Callable[[str], None], preset: str | None = None, env: dict | None = None) -> list[str]:
    """Bring every planned run to completion, `jobs` at a time; return the ids that failed. `env`
    is added to the runs' environment (a Ray cluster's address). `log_dir` exists (outputs.py)."""
    todo = [(r, _todo(store, r, group)) for r in runs]
    for r, t in todo:
        if t.step == Step.SKIP:
            say(f"{r.run_id}: {t.why}")
    queue = [(r, t.step) for r, t in todo if t.step != Step.SKIP]
    failed: list[str] = []
    live: dict[str, tuple[subprocess.Popen, float]] = {}
    with tempfile.TemporaryDirectory(prefix="rla-ablate-") as tmp:
        try:
            _loop(queue, live, failed, store.path, group, jobs, log_dir, Path(tmp), say, preset,
                  {**os.environ, **(env or {})})
        except KeyboardInterrupt:
            # Ctrl-C reached the runs too (one process group): each stops at its iteration
            # boundary with a checkpoint, so the same command resumes them
            say("interrupted: waiting for the runs to stop and checkpoint")
            for proc, _t0 in live.values():
                proc.wait(timeout=120)
            raise
    return failed


def _loop(queue: list, live: dict, failed: list[str], db: Path, group: str, jobs: int, log_dir: Path,
          tmp: Path, say: Callable[[str], None], preset: str | None, env: dict) -> None:
    while queue or live:
        while queue and len(live) < jobs:
            r, step = queue.pop(0)
            log = log_file(log_dir, r.run_id)
            proc = subprocess.Popen(_command(r, step, db, group, tmp, preset), stdout=log,
                                    stderr=subprocess.STDOUT, env=env)
            log.close()
            live[r.run_id] = (proc, time.monotonic())
            say(f"{r.run_id}: {'started' if step == Step.START else 'resumed'} ({r.name})")
        time.sleep(POLL_S)
        for run_id, (proc, t0) in list(live.items()):
            code = proc.poll()
            if code is None:
                continue
            del live[run_id]
            took = time.monotonic() - t0
            if code == 0:
                say(f"{run_id}: done in {took:.0f} s")
            else:
                failed.append(run_id)
                say(f"{run_id}: exit {code} after {took:.0f} s — see {log_dir / (run_id + '.log')}")
