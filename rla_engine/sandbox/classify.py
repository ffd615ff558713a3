"""What came of a run, from facts the program cannot forge into a sandbox_error: that verdict
comes only from our side (a spawn failure, or bubblewrap never starting the program: its status
fd never named a child). A program printing "bwrap: …" and exiting 1 is a runtime_error."""
from __future__ import annotations

import math
import re
import signal

from .compare import outputs_match
from .types import Execution, Job, Status

# the last lines of a Python that ran out of address space (RLIMIT_AS): the MemoryError traceback's
# last line, or the interpreter's own fatal error when even raising failed
_MEMORY = re.compile(rb"^(MemoryError\b|Fatal Python error: .*(memory|MemoryError)|.*Cannot allocate memory)",
                     re.M | re.I)


def classify(job: Job, out: bytes, err: bytes, err_total: int, seconds: float, rc: int | None, cpu_s: float,
             reason: str | None, bubblewrap: bool, started: bool) -> Execution:
    if bubblewrap and rc is not None and 128 < rc < 128 + 65:
        rc = -(rc - 128)        # bwrap reports a program killed by signal N as exit 128 + N
    if bubblewrap and not started:
        return Execution(Status.SANDBOX_ERROR, out, err, seconds, rc,
                         "bubblewrap did not start the program: " + err.decode("utf-8", "replace").strip()[-300:])
    if reason == "timeout" or _cpu_limit(rc, max(cpu_s, seconds), job.limits.time_s):
        # under bubblewrap the CPU time is not seen (bwrap does not reap its namespace's init)
        cpu = "" if bubblewrap else f", cpu {cpu_s:.2f}s"
        return Execution(Status.TIMEOUT, out, err, seconds, rc,
                         f"wall {seconds:.2f}s{cpu} (limit {job.limits.time_s}s CPU, {job.limits.wall_s()}s wall)")
    if reason == "output":
        return Execution(Status.OUTPUT_LIMIT, out, err, seconds, rc,
                         f"more than {job.limits.output_bytes} bytes on stdout or stderr ({err_total} on stderr)")
    if rc != 0:
        if _MEMORY.search(err[-2048:]):
            return Execution(Status.MEMORY_LIMIT, out, err, seconds, rc, f"memory limit {job.limits.memory_mb} MiB")
        return Execution(Status.RUNTIME_ERROR, out, err, seconds, rc, _exit_text(rc))
    if job.expected is not None and not outputs_match(out, job.expected):
        return Execution(Status.WRONG_ANSWER, out, err, seconds, rc)
    return Execution(Status.OK, out, err, seconds, rc)


def _cpu_limit(rc: int | None, cpu_s: float, time_s: float) -> bool:
    """Killed by RLIMIT_CPU: SIGXCPU at the soft limit, SIGKILL at the hard one a second later (a
    program that ignores SIGXCPU). cpu_s is at least the wall time where CPU time is not known."""
    if rc == -signal.SIGXCPU:
        return True
    return rc == -signal.SIGKILL and cpu_s >= max(1, math.ceil(time_s)) - 0.05


def _exit_text(rc: int | None) -> str:
    if rc is not None and rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit code {rc}"
