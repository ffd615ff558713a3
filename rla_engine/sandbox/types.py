"""The sandbox's vocabulary: what a job is, the limits it runs under, and what came of it.
Bytes throughout: a model's program may print anything, and nothing here decodes it."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from ..errors import InputError


class Status(enum.StrEnum):      # a str too: "ok" == Status.OK
    OK = "ok"
    WRONG_ANSWER = "wrong_answer"
    TIMEOUT = "timeout"
    RUNTIME_ERROR = "runtime_error"
    OUTPUT_LIMIT = "output_limit"
    MEMORY_LIMIT = "memory_limit"
    SANDBOX_ERROR = "sandbox_error"     # the sandbox failed, never the program: not scored as the policy's


@dataclass(frozen=True)
class Limits:
    time_s: float = 4.0          # CPU seconds (RLIMIT_CPU); the wall deadline is 1.5× this plus a margin
    memory_mb: int = 512         # address space of each process (RLIMIT_AS)
    output_bytes: int = 1_000_000  # stdout, and separately stderr, beyond this: killed, output_limit
    file_mb: int = 16            # largest file the program may write (RLIMIT_FSIZE)
    open_files: int = 64         # RLIMIT_NOFILE
    processes: int = 64          # RLIMIT_NPROC of the sandbox's own user (only where it has one)

    def wall_s(self) -> float:
        # slack over the CPU limit: two cores shared by several programs make wall time noisy
        return self.time_s * 1.5 + 0.5


@dataclass(frozen=True)
class Job:
    program: str
    stdin: bytes = b""
    expected: bytes | None = None    # compared here, in the parent: it never enters the child
    limits: Limits = Limits()


@dataclass
class Execution:
    status: Status
    stdout: bytes
    stderr: bytes                    # its last STDERR_TAIL bytes
    seconds: float                   # wall time from spawn to reaped
    returncode: int | None           # negative: killed by that signal (as subprocess reports it)
    detail: str = ""                 # why, for sandbox_error, timeout, output_limit, memory_limit


STDERR_TAIL = 16_384


@dataclass(frozen=True)
class Isolation:
    level: str                                   # "bubblewrap" | "namespaces" | "process"
    guarantees: list[tuple[str, bool, str]] = field(default_factory=list)   # (name, holds, how or why not)

    def holds(self, name: str) -> bool:
        return any(n == name and h for n, h, _ in self.guarantees)

    def missing(self) -> list[str]:
        return [f"{n} ({how})" for n, h, how in self.guarantees if not h]


class SandboxUnavailable(InputError):
    """sandbox.require = isolated on a machine where no isolating level works: a setup problem the
    person fixes (install bubblewrap), reported like any invalid input."""


LEVELS = ("bubblewrap", "namespaces", "process")
ISOLATED = ("bubblewrap", "namespaces")
