"""The command line that starts one program at each isolation level. Built from absolute paths found
once (a program never runs through a PATH search), with the constant part made once per pool.

Every level starts `python3 -I -S -c BOOT` (isolated mode: no user site, no PYTHON* variables, no
site module; BOOT below) in its own session. BOOT's first statements set the rlimits, each with its
hard limit, before the program's text is even read; the program (an unprivileged user without
CAP_SYS_RESOURCE, in every namespace) can lower them but never raise them. The engine starts the
command as itself, and its first exec drops to the slot's user (see Launcher.argv for why). What
differs is the wrapper:
  bubblewrap  nsenter (into the slot's network namespace, then the slot's user; slots.py) → bwrap →
              sh as pid 1 → python: new user, pid, IPC, UTS, cgroup and mount namespaces (and a
              network namespace of its own per run where there is no slot user); a read-only root
              of /usr, the program (copied in from a memfd), a few devices and /proc, with one
              writable place, a private bounded /tmp; cleared environment; dies with its parent.
  namespaces  unshare --net --ipc --uts (as root) --setuid slot → python: no network, an
              unprivileged user of its own; sees the host's files that the user may read.
  process     unshare --setuid slot (as root) → python: limits only.
Why not prlimit(1) in front, as before: one exec per run (about 1.5 ms) for what a few setrlimit
calls in the same process do; nothing of the program runs in between either way."""
from __future__ import annotations

import math
import os
import resource
import shutil
import sys
from dataclasses import dataclass

from .types import Limits

SAFE_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"
SANDBOX_UID = 65534          # the uid the program sees inside bubblewrap (nobody)
PROGRAM_DIR = "/tmp/prog"    # where the program sits inside bubblewrap
# -S keeps the system's site-packages and their .pth hooks out, but site is also what defines exit()
# and quit(), which model-written programs call (the reference runs them in a full interpreter). So
# python -c defines those two, then runs main.py as __main__ in a cleared module namespace; the
# program text is compiled before the namespace is cleared, and nothing of the engine is in it.
# (The rlimit statements that _rlimit_code puts in front of it leave only names that this clear removes.)
BOOT = ("import sys, builtins; builtins.exit = builtins.quit = sys.exit; sys.argv[0] = 'main.py'; "
        "(lambda code, ns, b: (ns.clear(), ns.update(__name__='__main__', __file__='main.py', __doc__=None, "
        "__builtins__=b, __spec__=None, __loader__=None, __package__=None), b.exec(code, ns)))"
        "(compile(open('main.py', 'rb').read(), 'main.py', 'exec'), globals(), builtins)")
# Inside bubblewrap the program is not pid 1 of its namespace: pid 1 ignores every signal it has no
# handler for, RLIMIT_CPU's SIGXCPU included. Nor is pid 1 bwrap's own init: bwrap exits as soon as
# the program does, before that init and the namespace are torn down, so their processes (orphaned
# to the host's init) would outlive the run. Pid 1 is ours (--as-pid-1), and bwrap exits only once
# the kernel has killed and reaped the whole namespace. That pid 1 is sh running the program as a
# child (`; exit $?` keeps sh from exec'ing it) and passing its exit on, 128 + signal as bwrap does;
# sh also reaps the orphans reparented to it. sh, not a forking Python as before: a forked Python
# copies its heap page by page as the child's refcounts and its interpreter shutdown touch it, which
# cost about 4 ms a run; sh's exec costs well under one.
INIT_SH = '"$@"; exit $?'
# The fallback pid 1 where no sh lies under a bound path: Python forks the program and waits.
BOOT_PID1 = ("import os\n"
             "pid = os.fork()\n"
             "if pid:\n"
             "    st = os.waitpid(pid, 0)[1]\n"
             "    os._exit(os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st))\n")


def tool(name: str) -> str | None:
    """Absolute path of a system tool, looked up on a fixed PATH (never the caller's)."""
    return shutil.which(name, path=SAFE_PATH)


def find_python() -> tuple[str, str]:
    """(interpreter, prefix) of a system Python for the programs: one under /usr when there is one
    (bubblewrap then needs no bind beyond /usr, and an unprivileged user can read it), else the
    engine's own base interpreter (a venv's python is a symlink to it). Never the venv itself: its
    site-packages (torch, the engine) are not the program's business."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK):
            return os.path.realpath(candidate), "/usr"
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    return base, sys.base_prefix


@dataclass(frozen=True)
class Launcher:
    level: str
    python: str
    prefix: str                  # the interpreter's installation; bound read-only when not under /usr
    bwrap: str | None = None
    unshare: str | None = None   # as root: drops to the slot's user (and, for namespaces, unshares)
    nsenter: str | None = None   # as root, bubblewrap: enters the slot's network namespace, drops
    init_sh: str | None = None   # bubblewrap's pid 1 (inside the sandbox), else BOOT_PID1

    def binds(self) -> list[str]:
        """Host paths bubblewrap shows (read-only): /usr, and the interpreter's prefix if elsewhere."""
        extra = [] if self.prefix == "/usr" or self.prefix.startswith("/usr/") else [self.prefix]
        return ["/usr", *extra]

    def argv(self, limits: Limits, uid: int | None, program_fd: int | None = None,
             status_fd: int | None = None, netns_fd: int | None = None) -> list[str]:
        """The command for one run, started by the engine as itself: the first exec drops to the slot's
        user (uid, when we are root; else None). Outside bubblewrap main.py is in the working folder;
        inside, bwrap copies it from program_fd. netns_fd: the slot's network namespace, if it has one.

        Why the drop is an exec and not Popen(user=): CPython gives up vfork when asked to change
        user, and a fork copies the engine's page tables, about 35 ms per GB of it (see benchmarks/
        sandbox.py); unshare(1) without a namespace option does setgroups([]), setgid, setuid, exec."""
        set_limits = _rlimit_code(limits, nproc=uid is not None)
        program = [self.python, "-I", "-S", "-c", set_limits + BOOT]     # in the job's folder, beside main.py
        if self.level == "bubblewrap":
            assert program_fd is not None
            inside = self._bwrap(set_limits, limits, program_fd, status_fd, own_net=netns_fd is None)
            if uid is None:
                return inside
            if netns_fd is not None:
                assert self.nsenter is not None
                # the namespace by the engine's own descriptor, opened by nsenter (still root) through
                # /proc and closed again after setns: never inherited, so the sandbox does not hold it
                return [self.nsenter, f"--net=/proc/{os.getpid()}/fd/{netns_fd}", f"--setgid={uid}",
                        f"--setuid={uid}", "--", *inside]
            return [*self._drop(uid), *inside]
        if self.level == "namespaces":
            assert self.unshare is not None and uid is not None
            # unshare needs root for the network namespace, then drops to the slot's user (setgroups
            # cleared first) before python runs
            return [self.unshare, "--net", "--ipc", "--uts", f"--setgid={uid}", f"--setuid={uid}", "--", *program]
        return program if uid is None else [*self._drop(uid), *program]

    def _drop(self, uid: int) -> list[str]:
        assert self.unshare is not None
        return [self.unshare, f"--setgid={uid}", f"--setuid={uid}", "--"]

    def _bwrap(self, set_limits: str, limits: Limits, program_fd: int, status_fd: int | None,
               own_net: bool) -> list[str]:
        assert self.bwrap is not None
        # --unshare-all, spelt out: the network namespace is the slot's (slots.py) where it has one
        a = [self.bwrap, "--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try",
             *(["--unshare-net"] if own_net else []), "--disable-userns",
             "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
             "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--hostname", "sandbox", "--as-pid-1",
             "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8",
             "--setenv", "HOME", PROGRAM_DIR, "--setenv", "TMPDIR", "/tmp"]
        for path in self.binds():
            a += ["--ro-bind", path, path]
        a += ["--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
              # the private /tmp is RAM: bounded so that many small files cannot fill it
              "--size", str(4 * limits.file_mb * 1024 * 1024), "--tmpfs", "/tmp", "--proc", "/proc"]
        # /dev: the device nodes a program may open and the /dev/std* links, in the sandbox's root
        # (read-only below). Not bwrap's --dev: that /dev is a tmpfs of no size limit, writable by the
        # program, and so is its /dev/shm (with the root's tmpfs, three ways around the bounded /tmp
        # to fill the machine's memory); it also mounts a devpts for pseudo-terminals that no
        # program here needs, and costs about 1 ms more a run. /dev/shm (POSIX semaphores, as
        # multiprocessing makes them) is the bounded /tmp.
        for dev in DEVICES:
            a += ["--dev-bind", f"/dev/{dev}", f"/dev/{dev}"]
        a += ["--symlink", "/proc/self/fd", "/dev/fd", "--symlink", "/proc/self/fd/0", "/dev/stdin",
              "--symlink", "/proc/self/fd/1", "/dev/stdout", "--symlink", "/proc/self/fd/2", "/dev/stderr",
              "--symlink", "/tmp", "/dev/shm",
              # bwrap copies the program out of the memfd into its own root and binds that copy
              # read-only (then closes the fd): no folder of ours to make, chown and remove per run
              "--perms", "0444", "--ro-bind-data", str(program_fd), f"{PROGRAM_DIR}/main.py",
              "--remount-ro", "/", "--chdir", PROGRAM_DIR]
        if status_fd is not None:
            a += ["--json-status-fd", str(status_fd)]
        if self.init_sh is not None:
            return [*a, "--", self.init_sh, "-c", INIT_SH, "sh", self.python, "-I", "-S", "-c", set_limits + BOOT]
        # the fallback pid 1 is the program's own interpreter, forking before BOOT, under the rlimits
        return [*a, "--", self.python, "-I", "-S", "-c", set_limits + BOOT_PID1 + BOOT]

    def env(self, home: str) -> dict[str, str]:
        """The whole environment the wrapper starts with: nothing of the engine's (bubblewrap clears
        even this)."""
        return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home, "TMPDIR": home}


DEVICES = ("null", "zero", "full", "random", "urandom")


def rlimits(limits: Limits, nproc: bool) -> list[tuple[int, int, int]]:
    """(resource, soft, hard) for one run."""
    cpu = max(1, math.ceil(limits.time_s))
    mem = limits.memory_mb * 1024 * 1024
    fsize = limits.file_mb * 1024 * 1024
    rl = [(resource.RLIMIT_AS, mem, mem),
          (resource.RLIMIT_CPU, cpu, cpu + 1),        # soft: SIGXCPU; a second later SIGKILL
          (resource.RLIMIT_FSIZE, fsize, fsize),
          (resource.RLIMIT_NOFILE, limits.open_files, limits.open_files),
          (resource.RLIMIT_CORE, 0, 0)]
    if nproc:
        # counted per real user (and, since Linux 5.14, per user namespace): meaningful only for the
        # slot's own uid (for root it is not enforced, and for a shared user it would count the
        # engine's processes too)
        rl.append((resource.RLIMIT_NPROC, limits.processes, limits.processes))
    return rl


def _rlimit_code(limits: Limits, nproc: bool) -> str:
    """The statements that set the run's rlimits, put in front of BOOT. setrlimit raises if the
    kernel refuses one: the run then ends in a traceback before the program's first line, never
    runs without its limits (and the probe, which starts the same way, finds the level not working)."""
    values = ", ".join(f"({r}, {s}, {h})" for r, s, h in rlimits(limits, nproc))
    return f"import resource\nfor r in ({values},):\n    resource.setrlimit(r[0], (r[1], r[2]))\n"


def launcher(level: str) -> tuple[Launcher | None, str]:
    """The launcher of a level, or None and what is missing for it."""
    python, prefix = find_python()
    root = os.geteuid() == 0
    unshare, nsenter = tool("unshare"), tool("nsenter")
    if root and (unshare is None or (level == "bubblewrap" and nsenter is None)):
        return None, "unshare and nsenter (util-linux) not found: they drop each run to its slot's user"
    if level == "bubblewrap":
        bwrap = tool("bwrap")
        if bwrap is None:
            return None, "bubblewrap is not installed (apt-get install bubblewrap)"
        return Launcher(level, python, prefix, bwrap=bwrap, unshare=unshare, nsenter=nsenter,
                        init_sh=_sh_inside()), ""
    if level == "namespaces":
        if not root:
            return None, "a network namespace and a user of its own need root"
        return Launcher(level, python, prefix, unshare=unshare), ""
    return Launcher(level, python, prefix, unshare=unshare), ""


def _sh_inside() -> str | None:
    """/usr/bin/sh when it is there: under /usr, which bubblewrap binds, so the sandbox sees it
    (with the libraries it links, as it does the interpreter's)."""
    sh = "/usr/bin/sh"
    return sh if os.access(sh, os.X_OK) and os.path.realpath(sh).startswith("/usr/") else None
