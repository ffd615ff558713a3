"""Executions per second of the sandbox pool (bubblewrap, and the fallbacks where this machine has
them) against a plain subprocess pool (same trivial program reading stdin and printing), then
1,000 sandboxed runs checking that no process, zombie or descriptor is left.
Target: sandboxed ≥ 0.6× plain.

Each pool runs at its own default worker count and, where that differs from the plain pool's, at
the plain pool's too; each figure is the best of --rounds (other work on a small machine only ever
slows a round down). Then the milliseconds of one run alone (workers=1), and bubblewrap again with
the engine's heap grown by --heap-mb: a sandbox that forked the engine per run would slow with it
(the plain pool never does: subprocess uses vfork there).
Run: .venv/bin/python benchmarks/sandbox.py [--runs N] [--rounds N] [--workers N] [--heap-mb N]"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rla_engine.sandbox import Job, Limits, SandboxPool, Status
from rla_engine.sandbox.launch import find_python
from rla_engine.sandbox.probe import probe_level
from rla_engine.sandbox.slots import live_processes_of

PROGRAM = "import sys\nprint(int(sys.stdin.read()) * 2)\n"
LIMITS = Limits(time_s=2, memory_mb=256)


def plain(runs: int, workers: int) -> float:
    """The same program with nothing around it: subprocess.run per job, in a thread pool."""
    python = find_python()[0]

    def one(i: int) -> bytes:
        return subprocess.run([python, "-I", "-S", "-c", PROGRAM], input=b"%d" % i, capture_output=True,
                              check=True).stdout

    with ThreadPoolExecutor(workers) as ex:
        start = time.perf_counter()
        outs = list(ex.map(one, range(runs)))
        took = time.perf_counter() - start
    assert outs == [b"%d\n" % (2 * i) for i in range(runs)]
    return runs / took


def sandboxed(level: str, runs: int, workers: int) -> float:
    with SandboxPool(require="any", workers=workers, force_level=level) as pool:
        pool.run([Job(PROGRAM, b"1", limits=LIMITS)] * workers)         # warm: the probe and page cache
        jobs = [Job(PROGRAM, b"%d" % i, b"%d" % (2 * i), LIMITS) for i in range(runs)]
        start = time.perf_counter()
        results = pool.run(jobs)
        took = time.perf_counter() - start
    bad = [r for r in results if r.status != Status.OK]
    assert not bad, bad[:3]
    return runs / took


def leak_check(runs: int, workers: int) -> str:
    me = Path(f"/proc/{os.getpid()}")
    fds = len(list((me / "fd").iterdir()))
    procs = len([p for p in os.listdir("/proc") if p.isdigit()])
    with SandboxPool(require="any", workers=workers, force_level="bubblewrap") as pool:
        results = pool.run([Job(PROGRAM, b"%d" % i, b"%d" % (2 * i), LIMITS) for i in range(runs)])
        left = [pid for slot in pool._slots if slot.uid is not None for pid in live_processes_of(slot.uid)]
    kids = sum(len((t / "children").read_text().split()) for t in (me / "task").iterdir())
    ok = sum(r.status == Status.OK for r in results)
    after = len([p for p in os.listdir("/proc") if p.isdigit()])
    fds_after = len(list((me / "fd").iterdir()))
    verdict = "PASS" if ok == runs and not left and kids == 0 and fds_after <= fds and after <= procs + 2 else "FAIL"
    return (f"{runs} runs: {ok} ok; processes on the machine {procs} → {after}; our children {kids}; "
            f"slot users' processes left {len(left)}; our descriptors {fds} → {fds_after}: {verdict}")


def best(rounds: int, measure: Callable[..., float], *args) -> float:
    return max(measure(*args) for _ in range(rounds))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="the plain pool's workers")
    ap.add_argument("--heap-mb", type=int, default=1024, help="0: skip the large-heap row")
    a = ap.parse_args()
    levels = [lv for lv in ("bubblewrap", "namespaces", "process") if probe_level(lv)[0] is not None]
    default = SandboxPool.default_workers
    rows = [("plain subprocess", a.workers, best(a.rounds, plain, a.runs, a.workers))]
    for level in levels:
        own = default(level)
        rows.append((f"sandbox: {level}", own, best(a.rounds, sandboxed, level, a.runs, own)))
        if own != a.workers:
            rows.append((f"sandbox: {level}", a.workers, best(a.rounds, sandboxed, level, a.runs, a.workers)))
    base = rows[0][2]
    print(f"{a.runs} runs, best of {a.rounds}, {os.cpu_count()} cores")
    print(f"{'pool':<22} {'workers':>7} {'runs/s':>8} {'× plain':>8}")
    for name, workers, rate in rows:
        print(f"{name:<22} {workers:>7} {rate:>8.1f} {rate / base:>8.2f}")
    seq = max(50, a.runs // 4)
    print(f"one run alone (workers=1, {seq} runs): plain {1000 / best(a.rounds, plain, seq, 1):.1f} ms"
          + "".join(f", {lv} {1000 / best(a.rounds, sandboxed, lv, seq, 1):.1f} ms" for lv in levels))
    ratio = max((rate for name, _, rate in rows if name == "sandbox: bubblewrap"), default=0.0) / base
    print(f"bubblewrap / plain = {ratio:.2f} (target ≥ 0.60): {'PASS' if ratio >= 0.6 else 'MISS'}")
    if a.heap_mb and "bubblewrap" in levels:
        heap = bytearray(a.heap_mb * 1024 * 1024)
        heap[::4096] = b"\1" * len(range(0, len(heap), 4096))      # touched: resident, as the engine's is
        rate = best(a.rounds, sandboxed, "bubblewrap", a.runs // 2, default("bubblewrap"))
        print(f"bubblewrap with the engine's heap {a.heap_mb} MiB larger: {rate:.1f} runs/s "
              f"({rate / base:.2f} × plain)")
        del heap
    print(leak_check(1000, default("bubblewrap")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
