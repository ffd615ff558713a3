"""One unprivileged user per worker slot, so that what a program does as "its user" touches only
its own slot: RLIMIT_NPROC counts only its processes, os.kill(-1, 9) reaches only them, and the
sweep after a run (kill everything of that uid) can never hit another worker's program, another
pool's, or the engine. Ownership across processes is an flock on /run/rla-sandbox/<uid>.lock (the
convention of IOI's `isolate`: uids 60000 + box). Without root there is no user to give: slots then
have uid None, and only the process group / session can be killed.

A bubblewrap slot (as root) also owns a network namespace of its own, made once and entered by
every run of that slot, instead of bwrap making and destroying one per run: that pair is about
1.5 ms of the two cores per run (the loopback device's set-up and the kernel's asynchronous
teardown). It has no interface but a loopback that stays down, so nothing can be reached or
listened on through it; it belongs to the host's user namespace, so a program (in a user namespace
of its own, without capabilities) cannot configure it; and runs of one slot never overlap, while
each run's processes (and with them every socket) are gone before the next starts. Different
slots never share one: a program cannot reach another slot's program through it (not even over
abstract unix sockets, which are per network namespace)."""
from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import signal
import subprocess
import time
from dataclasses import dataclass

from .launch import tool

FIRST_UID = 61000
LAST_UID = 61999
LOCK_DIR = "/run/rla-sandbox"


@dataclass
class Slot:
    uid: int | None
    lock_fd: int | None = None
    netns_fd: int | None = None     # the slot's own network namespace (bubblewrap, as root)


def acquire(n: int, netns: bool = False) -> list[Slot]:
    """n slots; with netns (the bubblewrap level), each with its network namespace, when root."""
    if os.geteuid() != 0:
        return [Slot(None) for _ in range(n)]
    os.makedirs(LOCK_DIR, mode=0o700, exist_ok=True)
    st = os.lstat(LOCK_DIR)
    if st.st_uid != 0 or st.st_mode & 0o022:     # a folder someone else could plant locks in
        raise OSError(f"{LOCK_DIR} is not root's own private folder")
    taken: set[int] = set()
    with contextlib.suppress(OSError):
        taken = {p.pw_uid for p in pwd.getpwall()}     # never borrow a real account's uid
    slots: list[Slot] = []
    for uid in range(FIRST_UID, LAST_UID + 1):
        if len(slots) == n:
            break
        if uid in taken:
            continue
        fd = os.open(f"{LOCK_DIR}/{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        slot = Slot(uid, fd)
        slots.append(slot)   # from here on released with the others should anything below fail
        sweep(slot)          # leftovers of a pool that died holding this uid
        if netns:
            try:
                slot.netns_fd = _new_netns()
            except BaseException:
                release(slots)
                raise
    if len(slots) < n:
        release(slots)
        raise OSError(f"only {len(slots)} of {n} sandbox users free in {FIRST_UID}–{LAST_UID}")
    return slots


def release(slots: list[Slot]) -> None:
    for slot in slots:
        if slot.netns_fd is not None:
            os.close(slot.netns_fd)        # the namespace goes with its last reference
            slot.netns_fd = None
        if slot.lock_fd is not None:
            sweep(slot)
            os.close(slot.lock_fd)
            slot.lock_fd = None


def _new_netns() -> int:
    """A descriptor of a new, empty network namespace. unshare(1) makes it and runs cat in it; once
    cat echoes a byte it runs there, and its /proc/<pid>/ns/net is opened, which keeps the namespace
    alive after cat exits."""
    unshare, cat = tool("unshare"), tool("cat")
    if unshare is None or cat is None:
        raise OSError("unshare and cat (util-linux, coreutils) are needed for the slots' network namespaces")
    proc = subprocess.Popen([unshare, "--net", "--", cat], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env={}, close_fds=True)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b"x")
        proc.stdin.flush()
        if proc.stdout.read(1) != b"x":
            raise OSError("unshare --net did not start")
        fd = os.open(f"/proc/{proc.pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        proc.stdin.close()
        proc.stdout.close()
        proc.wait()
    if os.fstat(fd).st_ino == os.stat("/proc/self/ns/net").st_ino:
        os.close(fd)
        raise OSError("unshare --net left cat in the engine's own network namespace")
    return fd


def sweep(slot: Slot) -> None:
    """Kill every process of the slot's user: with kill(-1, SIGKILL) sent *as that user*, which the
    kernel applies atomically against fork (a storm cannot outrun it); without /usr/bin/kill, or
    if that fails, by scanning /proc until none is left."""
    if slot.uid is None:
        return
    kill, unshare = tool("kill"), tool("unshare")
    if kill is not None and unshare is not None:
        # a failed kill leaves the scan below to do it
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            # unshare without a namespace option: setgroups([]), setgid, setuid, exec kill. Not
            # Popen(user=), which forks the whole engine (no vfork when the user changes)
            subprocess.run([unshare, f"--setgid={slot.uid}", f"--setuid={slot.uid}", "--", kill, "-KILL", "-1"],
                           env={}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=10, check=True)
            return
    for _ in range(50):
        pids = _pids_of(slot.uid)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def _pids_of(uid: int) -> list[int]:
    """Live (not zombie) processes whose real uid is `uid`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as f:
                text = f.read(2048)
        except OSError:
            continue
        state = uid_line = b""
        for line in text.split(b"\n"):
            if line.startswith(b"State:"):
                state = line.split()[1]
            elif line.startswith(b"Uid:"):
                uid_line = line
                break
        if uid_line and int(uid_line.split()[1]) == uid and state != b"Z":
            found.append(int(name))
    return found


def live_processes_of(uid: int) -> list[int]:
    """For the tests and the benchmark: what of this user is still running."""
    return _pids_of(uid)
