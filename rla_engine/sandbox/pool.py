"""Run many jobs at once: a thread per worker, each owning one slot (its own user) at a time,
each job one fresh process. Order of results is the order of jobs."""
from __future__ import annotations

import os
import queue
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor

from ..errors import InputError
from .execute import run_job
from .launch import Launcher, launcher
from .probe import probe, probe_level
from .slots import Slot, acquire, release
from .types import ISOLATED, LEVELS, Execution, Isolation, Job, SandboxUnavailable


class SandboxPool:
    def __init__(self, require: str = "isolated", workers: int | None = None, force_level: str | None = None):
        if require not in ("isolated", "any"):
            raise InputError(f"sandbox require {require!r}: must be isolated or any")
        if force_level is not None and force_level not in LEVELS:
            raise InputError(f"sandbox level {force_level!r}: must be one of {', '.join(LEVELS)}")
        self.isolation = self._choose(require, force_level)
        launch, why = launcher(self.isolation.level)
        if launch is None:
            raise SandboxUnavailable(why)
        self._launcher: Launcher = launch
        self.workers = max(1, workers or self.default_workers(self.isolation.level))
        self._slots: list[Slot] = acquire(self.workers, netns=self.isolation.level == "bubblewrap")
        self._free: queue.Queue[Slot] = queue.Queue()
        for slot in self._slots:
            self._free.put(slot)
        self._root = tempfile.mkdtemp(prefix="rla-sandbox-")
        os.chmod(self._root, 0o711)     # each job's own folder below is its slot user's, 0700
        self._threads = ThreadPoolExecutor(self.workers, thread_name_prefix="sandbox")
        self._closed = False

    @staticmethod
    def default_workers(level: str) -> int:
        """One worker per core, at every level: a run is CPU-bound (an interpreter starting, bwrap
        building the namespaces), and 3, 4 or 6 workers on 2 cores measured no faster for
        bubblewrap than 2 (benchmarks/sandbox.py)."""
        return os.cpu_count() or 1

    @staticmethod
    def _choose(require: str, force_level: str | None) -> Isolation:
        if force_level is not None:
            iso, why = probe_level(force_level)
            if iso is None:
                raise SandboxUnavailable(f"sandbox level {force_level} does not work here: {why}")
        else:
            iso = probe()
        if require == "isolated" and iso.level not in ISOLATED:
            reasons = "; ".join(f"{lv}: {probe_level(lv)[1]}" for lv in ISOLATED)
            raise SandboxUnavailable(
                f"sandbox.require = isolated, but only the {iso.level} level works here ({reasons}); "
                "install bubblewrap (apt-get install bubblewrap) or set sandbox.require = any")
        return iso

    def run(self, jobs: list[Job]) -> list[Execution]:
        if self._closed:
            raise RuntimeError("the sandbox pool is closed")
        return list(self._threads.map(self._one, jobs))

    def _one(self, job: Job) -> Execution:
        slot = self._free.get()
        try:
            return run_job(job, self._launcher, slot, self._root)
        finally:
            self._free.put(slot)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._threads.shutdown(wait=True)
        release(self._slots)
        shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()
