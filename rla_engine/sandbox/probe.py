"""What isolation this machine gives, found by running a tiny program at each level and looking at
what it could do, not by assuming: a bubblewrap that is installed but cannot create namespaces
(a container without user namespaces) is reported as not working, with bwrap's own reason."""
from __future__ import annotations

import contextlib
import json
import os
import socket
import tempfile
import threading

from .execute import run_job
from .launch import launcher
from .slots import acquire, release
from .types import LEVELS, Isolation, Job, Limits, Status

_PROGRAM = """\
import json, os, resource, socket, sys
cfg = json.loads(sys.stdin.buffer.read())
r = {"uid": os.getuid(), "env": sorted(os.environ)}
s = socket.socket()
s.settimeout(1)
try:
    s.connect(("127.0.0.1", cfg["port"]))
    r["net"] = True
except OSError:
    r["net"] = False
r["home"] = os.access(cfg["home"], os.R_OK)
r["host_visible"] = os.path.exists(cfg["cwd"]) or os.path.exists(cfg["home"])
r["as"] = resource.getrlimit(resource.RLIMIT_AS)[0]
r["nproc"] = resource.getrlimit(resource.RLIMIT_NPROC)[0]
print(json.dumps(r))
"""
ALLOWED_ENV = {"PATH", "LANG", "HOME", "TMPDIR", "PWD"}   # PWD: bwrap --chdir sets it
_cache: dict[str, tuple[Isolation | None, str]] = {}
_lock = threading.Lock()


def probe(refresh: bool = False) -> Isolation:
    """The best level that works here (bubblewrap, then namespaces, then process); cached."""
    for level in LEVELS:
        iso, _ = probe_level(level, refresh)
        if iso is not None:
            return iso
    raise OSError("no sandbox level works here: " + "; ".join(f"{lv}: {probe_level(lv)[1]}" for lv in LEVELS))


def probe_level(level: str, refresh: bool = False) -> tuple[Isolation | None, str]:
    """(its guarantees, "") when the level works here, else (None, what is missing)."""
    with _lock:
        if refresh or level not in _cache:
            _cache[level] = _probe(level)
        return _cache[level]


def _probe(level: str) -> tuple[Isolation | None, str]:
    launch, why = launcher(level)
    if launch is None:
        return None, why
    limits = Limits(time_s=5, memory_mb=256)
    with socket.socket() as listener, tempfile.TemporaryDirectory(prefix="rla-sandbox-probe-") as root:
        os.chmod(root, 0o711)
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        cfg = {"port": listener.getsockname()[1], "home": os.path.expanduser("~"), "cwd": os.getcwd()}
        slots = acquire(1, netns=level == "bubblewrap")
        try:
            ex = run_job(Job(_PROGRAM, json.dumps(cfg).encode(), limits=limits), launch, slots[0], root)
        finally:
            release(slots)
    if ex.status != Status.OK:
        return None, f"the probe program did not run ({ex.status.value}, {ex.detail}): {_tail(ex.stderr)}"
    try:
        seen = json.loads(ex.stdout)
    except ValueError:
        return None, f"the probe program printed {ex.stdout[:200]!r}"
    own_user = slots[0].uid is not None
    return Isolation(level, _guarantees(level, seen, own_user, limits)), ""


def _guarantees(level: str, seen: dict, own_user: bool, limits: Limits) -> list[tuple[str, bool, str]]:
    bwrap = level == "bubblewrap"
    return [
        ("fresh process per run", True, "`python3 -I -S main.py` per job, in its own session, stdin from a file"),
        ("resource limits", seen["as"] == limits.memory_mb * 1024 * 1024,
         "hard rlimits set before the program's first line: CPU seconds, address space, file size, "
         "open files, no core files"),
        ("process-count limit", seen["nproc"] == limits.processes,
         "RLIMIT_NPROC of the slot's own user" if own_user else "no user of its own to count (not root)"),
        ("no network", not seen["net"],
         "a network namespace of the slot's own, with only a loopback that is down" if bwrap and own_user
         else "own network namespace (only a loopback)" if level != "process"
         else "shares the host's network: it reached 127.0.0.1"),
        ("environment cleared", set(seen["env"]) <= ALLOWED_ENV, "only PATH, LANG, HOME, TMPDIR are set"),
        ("home folder unreadable", not seen["home"],
         "not mounted" if bwrap else "file permissions against the sandbox's user"),
        ("private filesystem", not seen["host_visible"],
         "only /usr and the program (read-only), a few devices, /proc and a private, bounded /tmp "
         "(the one writable place) are mounted" if bwrap
         else "sees the host's files, kept out only by file permissions"),
        ("unprivileged user of its own", own_user,
         "one uid per worker slot (61000+), nothing else runs as it" if own_user
         else "runs as the engine's user" + (" (nobody inside a user namespace)" if bwrap else "")),
        ("no survivors", bwrap or own_user,
         "pid namespace: every descendant dies with the run" if bwrap
         else "after each run every process of the slot's user is killed" if own_user
         else "only the process group is killed: a program that leaves its session survives"),
        ("cannot signal the engine", bwrap or own_user,
         "pid namespace" if bwrap else "another user" if own_user else "same user as the engine"),
    ]


def _tail(b: bytes) -> str:
    with contextlib.suppress(Exception):
        return " ".join(b.decode("utf-8", "replace").split())[-300:]
    return ""
