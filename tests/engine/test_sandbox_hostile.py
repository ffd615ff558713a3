"""Hostile programs against the sandbox, on bubblewrap and on the fallbacks (namespaces, process:
forced, so a machine with bwrap tests them too). Each test names the guard it checks; removing that
guard makes it fail (see the module report in rla_engine/sandbox). Small limits keep them fast."""
from __future__ import annotations

import os
import resource
import socket
import dataclasses
import textwrap

import pytest

from rla_engine.sandbox import Job, Limits, SandboxPool, Status
from rla_engine.sandbox.slots import live_processes_of

ROOT = os.geteuid() == 0
FAST = Limits(time_s=1, memory_mb=256, output_bytes=1_000_000, file_mb=16, open_files=64, processes=32)
SHORT = Limits(time_s=0.5, memory_mb=256, processes=32)      # for the ones that only sleep
ALL = ["bubblewrap", "namespaces", "process"]
ISOLATING = ["bubblewrap", "namespaces"]


@pytest.fixture(scope="module", params=ALL)
def pool(request):
    yield from _pool(request.param)


@pytest.fixture(scope="module", params=ISOLATING)
def isolating_pool(request):
    yield from _pool(request.param)


def _pool(level):
    if level != "bubblewrap" and not ROOT:
        pytest.skip("the fallback levels give each slot its own user only as root (CI runs as root)")
    p = SandboxPool(require="any", workers=2, force_level=level)
    yield p
    p.close()


def run(pool, program, stdin=b"", expected=None, limits=FAST):
    return pool.run([Job(textwrap.dedent(program), stdin, expected, limits)])[0]


def survivors(pool):
    """Processes still running as any of the pool's slot users (bubblewrap's too: outside its user
    namespace they are the slot's uid)."""
    return [pid for slot in pool._slots if slot.uid is not None for pid in live_processes_of(slot.uid)]


def test_infinite_loop_times_out_on_cpu(pool):           # guard: RLIMIT_CPU / the wall deadline
    ex = run(pool, "while True: pass")
    assert ex.status == Status.TIMEOUT and ex.seconds < FAST.wall_s() + 1


def test_sleep_times_out_on_the_wall_deadline(pool):      # guard: the wall deadline (no CPU used)
    ex = run(pool, "import time; print('start', flush=True); time.sleep(60)", limits=SHORT)
    assert ex.status == Status.TIMEOUT and ex.stdout == b"start\n" and ex.seconds < SHORT.wall_s() + 1


def test_ignoring_sigterm_does_not_help(pool):            # guard: SIGKILL, not SIGTERM, at the deadline
    ex = run(pool, """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGXCPU, signal.SIG_IGN)
        time.sleep(60)
    """, limits=SHORT)
    assert ex.status == Status.TIMEOUT and ex.seconds < SHORT.wall_s() + 1


def test_closed_stdout_and_stderr_then_loop(pool):        # guard: the exit is watched, not the pipes' EOF
    ex = run(pool, "import os, time\nos.close(1)\nos.close(2)\ntime.sleep(60)", limits=SHORT)
    assert ex.status == Status.TIMEOUT and ex.seconds < SHORT.wall_s() + 1
    ex = run(pool, "import os\nos.close(1)\nprint('lost')")
    assert ex.status == Status.RUNTIME_ERROR and ex.seconds < 2


def test_bounded_fork_storm_is_capped_and_leaves_nothing(pool):   # guards: RLIMIT_NPROC; pid ns / sweep
    ex = run(pool, """
        import os, time
        kids = 0
        for _ in range(300):
            try:
                pid = os.fork()
            except OSError:
                break
            if pid == 0:
                time.sleep(30)
                os._exit(0)
            kids += 1
        print(kids)
    """)
    assert ex.status == Status.OK, ex
    if ROOT:                       # RLIMIT_NPROC counts the slot's own user only
        assert int(ex.stdout) < FAST.processes
    assert survivors(pool) == []


def test_setsid_double_fork_daemon_dies_with_the_run(pool):   # guard: pid namespace / the uid sweep
    ex = run(pool, """
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                for fd in (0, 1, 2):
                    os.close(fd)
                time.sleep(60)
            os._exit(0)
        os.wait()
        print("parent done")
    """)
    assert ex.status == Status.OK and ex.stdout == b"parent done\n" and ex.seconds < 2
    assert survivors(pool) == []


def test_kill_minus_one_reaches_only_its_own_slot(pool):    # guard: pid namespace / one user per slot
    other = Job("import time; time.sleep(0.8); print('alive')", limits=FAST)
    # kill(-1) signals everything the caller may signal but itself: inside bubblewrap's pid namespace
    # that is nothing, as a slot's user it is that slot's processes
    killer = Job("import os, time\ntime.sleep(0.2)\ntry:\n    os.kill(-1, 9)\nexcept OSError:\n    pass\n"
                 "print('still here')", limits=FAST)
    a, b = pool.run([other, killer])
    assert a.status == Status.OK and a.stdout == b"alive\n"
    assert b.stdout == b"still here\n"


def test_memory_bomb(pool):                                  # guard: RLIMIT_AS
    # 100 MB a chunk, two CPU seconds: page faults here sometimes took ~90 ms per 10 MB (a loaded
    # machine), and a bomb of small chunks then met the CPU limit first; the status alone shows
    # the address-space limit stopped it (without the limit the bomb runs into the CPU limit)
    ex = run(pool, "chunks = []\nwhile True:\n    chunks.append(bytearray(10**8))",
             limits=dataclasses.replace(FAST, time_s=2))
    assert ex.status == Status.MEMORY_LIMIT, ex


def test_100_mb_of_output_stays_bounded(pool):               # guard: the streamed output cap
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    ex = run(pool, "import sys\nfor _ in range(100):\n    sys.stdout.buffer.write(b'x' * 2**20)")
    assert ex.status == Status.OUTPUT_LIMIT and len(ex.stdout) == FAST.output_bytes and ex.seconds < 3
    ex = run(pool, "import sys\nfor _ in range(100):\n    sys.stderr.buffer.write(b'y' * 2**20)")
    assert ex.status == Status.OUTPUT_LIMIT and len(ex.stderr) <= 16_384
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000     # KiB


def test_large_file_write(pool):                             # guard: RLIMIT_FSIZE
    ex = run(pool, "with open('big', 'wb') as f:\n    f.write(b'x' * (64 * 2**20))\nprint('wrote')")
    assert ex.status == Status.RUNTIME_ERROR and b"File too large" in ex.stderr


def test_files_cannot_fill_the_machines_memory(pool):   # guard: read-only root and /dev; a bounded /tmp
    if pool.isolation.level != "bubblewrap":
        pytest.skip("only bubblewrap has a filesystem of its own; the fallbacks write where the host lets them")
    # every place the program might write lives in RAM inside bubblewrap: only the bounded /tmp
    # (4 × file_mb) may take anything, /dev/shm and the working folder included
    ex = run(pool, """
        import os
        mb = 0
        for n, d in enumerate(('/', '/dev', '/dev/shm', '/tmp', '.', '/proc', '/usr')):
            for i in range(8):
                try:     # names of their own: /dev/shm is /tmp, and reopening a file frees its space
                    with open(os.path.join(d, f'fill{n}-{i}'), 'wb') as f:
                        for _ in range(16):
                            f.write(b'x' * 2**20)
                            mb += 1
                except OSError:
                    break
        print(mb)
    """)
    assert ex.status == Status.OK, ex
    assert int(ex.stdout) <= 4 * FAST.file_mb


def test_deep_recursion_segfault_is_a_runtime_error(pool):   # guard: a signal death is classified, no core
    # through map(), each level is a C call too: the C stack overflows (plain Python recursion in
    # 3.11 only grows the heap)
    ex = run(pool, "import sys\nsys.setrecursionlimit(10**6)\ndef f(n):\n    return list(map(f, [n + 1]))\nf(0)")
    assert ex.status == Status.RUNTIME_ERROR and ex.returncode == -11, ex
    assert not os.path.exists("core")


def test_network_connection_fails(isolating_pool):           # guard: the network namespace
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        ex = run(isolating_pool, f"""
            import socket
            s = socket.socket()
            s.settimeout(0.5)
            try:
                s.connect(("127.0.0.1", {port}))
                print("connected")
            except OSError as e:
                print("refused", e)
        """)
        assert ex.status == Status.OK and ex.stdout.startswith(b"refused")
        with pytest.raises(BlockingIOError):
            listener.accept()


def test_environment_canary_is_not_visible(pool, monkeypatch):   # guard: the explicit, cleared env
    monkeypatch.setenv("RLA_SANDBOX_CANARY", "canary-7d1f")
    ex = run(pool, f"""
        import os
        print(dict(os.environ))
        try:
            print(open('/proc/{os.getpid()}/environ', 'rb').read())
        except OSError as e:
            print('engine environ:', type(e).__name__)
    """)
    assert ex.status == Status.OK and b"canary-7d1f" not in ex.stdout


def test_home_and_database_canaries_are_unreadable(pool, tmp_path):   # guard: mounts / the slot's user
    home_canary = os.path.join(os.path.expanduser("~"), f".rla-sandbox-canary-{os.getpid()}")
    db_dir = tmp_path / "runs"
    db_dir.mkdir()
    (db_dir / "rla.db").write_bytes(b"SQLite format 3\x00 db-canary-51c2")
    (db_dir / "secret.txt").write_text("db-canary-51c2")
    with open(home_canary, "w") as f:
        f.write("home-canary-9a3e")
    try:
        ex = run(pool, f"""
            import os
            for path in ({home_canary!r}, {str(db_dir / "rla.db")!r}, {str(db_dir / "secret.txt")!r}):
                try:
                    print(open(path, 'rb').read())
                except OSError as e:
                    print('denied', type(e).__name__)
            try:
                print(os.listdir({str(db_dir)!r}))
            except OSError as e:
                print('denied', type(e).__name__)
        """)
    finally:
        os.unlink(home_canary)
    assert ex.status == Status.OK
    assert ex.stdout.count(b"denied") == 4 and b"canary" not in ex.stdout


def test_the_expected_output_never_enters_the_child(pool):    # guard: expected is compared in the parent
    # the secret is assembled here so that the program's own text never holds it whole
    ex = run(pool, """
        import gc, os, sys
        target = "".join(["EXPECTED", "-SECRET-", "4242"])
        def holds(o):
            return isinstance(o, (str, bytes)) and o is not target and target in (o if isinstance(o, str) else
                                                                                 o.decode("latin-1"))
        found = any(holds(v) for o in gc.get_objects()
                    for v in (o.values() if isinstance(o, dict) else o if isinstance(o, (list, tuple)) else ()))
        found |= target in repr(dict(os.environ)) + repr(sys.argv) + sys.stdin.read()
        for name in os.listdir("."):
            try:
                found |= target.encode() in open(name, "rb").read()
            except OSError:
                pass
        print("FOUND" if found else "nothing")
    """, expected=b"EXPECTED-SECRET-4242")
    assert ex.status == Status.WRONG_ANSWER and ex.stdout == b"nothing\n"


def test_non_utf8_output_and_input(pool):                     # guard: bytes throughout
    ex = run(pool, "import sys\nsys.stdout.buffer.write(sys.stdin.buffer.read()[::-1])\n"
                   "sys.stderr.buffer.write(b'\\xff\\xfe err')", stdin=b"\x80\xff 1 2\n", expected=b"\n2 1 \xff\x80")
    assert ex.status == Status.OK and ex.stdout == b"\n2 1 \xff\x80" and ex.stderr == b"\xff\xfe err"


def test_exit_after_partial_output(pool):
    ex = run(pool, "print('partial')\nexit()", expected=b"partial")
    assert ex.status == Status.OK
    ex = run(pool, "import sys\nprint('partial')\nsys.exit(3)", expected=b"partial")
    assert ex.status == Status.RUNTIME_ERROR and ex.returncode == 3 and ex.stdout == b"partial\n"


def test_a_correct_200_kb_answer_passes(pool):
    numbers = list(range(40_000))
    stdin = " ".join(map(str, numbers)).encode()
    expected = "\n".join(str(n * 2) for n in numbers).encode()
    assert len(expected) > 200_000
    ex = run(pool, "import sys\nfor t in sys.stdin.buffer.read().split():\n    print(int(t) * 2)", stdin, expected)
    assert ex.status == Status.OK, ex.detail


def test_a_program_cannot_claim_a_sandbox_error(pool):        # guard: sandbox_error only from our side
    ex = run(pool, "import sys\nsys.stderr.write('bwrap: Can\\'t mount proc\\n')\nsys.exit(1)")
    assert ex.status == Status.RUNTIME_ERROR


def test_no_process_or_descriptor_growth_over_200_runs(pool):
    me = f"/proc/{os.getpid()}"
    fds, kids = len(os.listdir(f"{me}/fd")), _children()
    results = pool.run([Job("import sys\nprint(sys.stdin.read().strip())", b"%d" % i, b"%d" % i, FAST)
                        for i in range(200)])
    assert [r.status for r in results] == [Status.OK] * 200
    assert len(os.listdir(f"{me}/fd")) <= fds and _children() == kids == []
    assert survivors(pool) == []


def _children() -> list[int]:
    """This process's children, zombies included (a run not reaped would show here)."""
    mine = []
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        with open(f"/proc/{os.getpid()}/task/{task}/children") as f:
            mine += [int(p) for p in f.read().split()]
    return mine
