"""One job, start to reaped: spawn the launcher's command, stream its output under a cap, enforce
the wall deadline, kill what is left, and say what came of it. Never raises for the job's sake:
whatever goes wrong on our side is a sandbox_error with the reason.

The program and its stdin travel in memfds (anonymous, in RAM, gone with their last descriptor):
bubblewrap copies the program into the sandbox from one, so that level needs no folder on disk;
the other levels write main.py into a private folder of the slot's user, their working folder."""
from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator

from .classify import classify
from .launch import Launcher
from .slots import Slot, sweep
from .types import STDERR_TAIL, Execution, Job, Status

CHUNK = 65_536
EXIT_GRACE_S = 0.3     # after the program exits, how long its pipes may stay open (a daemon holding them)


def run_job(job: Job, launcher: Launcher, slot: Slot, root: str) -> Execution:
    start = time.monotonic()
    job_dir = None
    try:
        if launcher.level != "bubblewrap":
            job_dir = _job_dir(job, slot, root)
        return _spawn_and_watch(job, launcher, slot, job_dir, start)
    except Exception as e:          # our failure, not the program's: never scored as the policy's
        return Execution(Status.SANDBOX_ERROR, b"", b"", time.monotonic() - start, None,
                         f"{type(e).__name__}: {e}")
    finally:
        if job_dir is not None:
            _remove(job_dir)


@contextlib.contextmanager
def _memfd(name: str, data: bytes) -> Iterator[int]:
    """A descriptor of an anonymous in-memory file holding data, read from its start. Close-on-exec:
    only the descriptors Popen is given (stdin, pass_fds) reach the child."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, os.SEEK_SET)
        yield fd
    finally:
        os.close(fd)


def _job_dir(job: Job, slot: Slot, root: str) -> str:
    """A folder of the slot's user holding main.py: the program's working folder (the levels other
    than bubblewrap), which it may write in and which is removed with whatever it left there."""
    job_dir = tempfile.mkdtemp(dir=root)
    main = os.path.join(job_dir, "main.py")
    fd = os.open(main, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o400)
    with os.fdopen(fd, "wb") as f:
        f.write(job.program.encode("utf-8", "surrogatepass"))
    if slot.uid is not None:
        os.chown(main, slot.uid, slot.uid)
        os.chown(job_dir, slot.uid, slot.uid)
    return job_dir


def _spawn_and_watch(job: Job, launcher: Launcher, slot: Slot, job_dir: str | None,
                     start: float) -> Execution:
    limits = job.limits
    bwrap = launcher.level == "bubblewrap"
    # stdin from an anonymous file, never a pipe: a program that does not read cannot block us
    with contextlib.ExitStack() as fds:
        stdin_fd = fds.enter_context(_memfd("stdin", job.stdin))
        if bwrap:
            program_fd = fds.enter_context(_memfd("main.py", job.program.encode("utf-8", "surrogatepass")))
            status_r, status_w = os.pipe()
            fds.callback(os.close, status_w)
            argv = launcher.argv(limits, slot.uid, program_fd, status_w, slot.netns_fd)
            passed = [program_fd, status_w]
        else:
            status_r = -1
            argv = launcher.argv(limits, slot.uid)
            passed = []
        try:
            # started as the engine's user: the command's first exec drops to the slot's (launch.py)
            proc = subprocess.Popen(
                argv, stdin=stdin_fd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                cwd=job_dir or "/", env=launcher.env(job_dir or "/"), start_new_session=True, close_fds=True,
                pass_fds=passed)
        except BaseException:
            if bwrap:
                os.close(status_r)
            raise
    try:
        out, err, err_total, reason = _watch(proc, start + limits.wall_s(), limits.output_bytes)
        if reason is not None or launcher.level != "bubblewrap":
            # bubblewrap's pid namespace takes every descendant with it; elsewhere a daemon that
            # left the session is found by its user
            _kill_group(proc.pid)
            sweep(slot)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        started = _read_all(status_r) if bwrap else b'"child-pid"'
    finally:
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        if bwrap:
            os.close(status_r)
    seconds = time.monotonic() - start
    return classify(job, bytes(out), bytes(err[-STDERR_TAIL:]), err_total, seconds, proc.returncode,
                    usage.ru_utime + usage.ru_stime, reason, bubblewrap=bwrap, started=b'"child-pid"' in started)


def _watch(proc: subprocess.Popen, deadline: float, cap: int) -> tuple[bytearray, bytearray, int, str | None]:
    """Read stdout and stderr until both close and the process has exited, the deadline passes
    ("timeout") or either passes the cap ("output"). The stderr kept is a bounded tail."""
    assert proc.stdout is not None and proc.stderr is not None
    out, err, err_total = bytearray(), bytearray(), 0
    sel = selectors.DefaultSelector()
    pidfd = os.pidfd_open(proc.pid)
    try:
        sel.register(proc.stdout.fileno(), selectors.EVENT_READ, "out")
        sel.register(proc.stderr.fileno(), selectors.EVENT_READ, "err")
        sel.register(pidfd, selectors.EVENT_READ, "exit")
        exited_at: float | None = None
        while True:
            now = time.monotonic()
            pipes_open = len(sel.get_map()) - (0 if exited_at is not None else 1)
            if exited_at is not None and (pipes_open == 0 or now >= exited_at + EXIT_GRACE_S):
                return out, err, err_total, None
            if now >= deadline:
                return out, err, err_total, "timeout"
            for key, _ in sel.select(min(deadline - now, 0.5)):
                if key.data == "exit":
                    sel.unregister(pidfd)
                    exited_at = time.monotonic()
                    continue
                chunk = os.read(key.fd, CHUNK)
                if not chunk:
                    sel.unregister(key.fd)
                elif key.data == "out":
                    out += chunk
                    if len(out) > cap:
                        del out[cap:]
                        return out, err, err_total, "output"
                else:
                    err_total += len(chunk)
                    err += chunk
                    del err[:-STDERR_TAIL]
                    if err_total > cap:
                        return out, err, err_total, "output"
    finally:
        sel.close()
        os.close(pidfd)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _read_all(fd: int) -> bytes:
    os.set_blocking(fd, False)
    data = b""
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(fd, 4096):
            data += chunk
            if len(data) > 65_536:
                break
    return data


def _remove(job_dir: str) -> None:
    shutil.rmtree(job_dir, ignore_errors=True)
    if os.path.exists(job_dir):      # without root: a program that made its folders unreadable
        for here, dirs, _ in os.walk(job_dir):
            for d in dirs:
                with contextlib.suppress(OSError):
                    os.chmod(os.path.join(here, d), 0o700)
        shutil.rmtree(job_dir, ignore_errors=True)
