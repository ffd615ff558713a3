"""`make test`: the suite as a few pytest processes, run a few at a time (one more than the cores).

Each part is its own pytest process with its own order; a part starts as soon as a slot is free,
the longest first. One more process than cores: many tests wait (an engine's subprocess, a sandbox's
wall deadline, an sshd's heartbeat, a console's timer), and the extra process runs while they do
(2026-12, 2 cores: 1002 CPU s in a wall of 600 s with two halves, a sixth of the CPU left idle).
Prints each part's output as it ends, then one closing line with the totals; exits non-zero if any
part failed. Extra arguments go to every part (e.g. -x, -k NAME). RLA_TEST_SLOTS sets the number
of processes at once.

Where the parts come from:
- The journeys run in a process no other console test has used: after the ~400 console tests, the
  ablation journey died of a segmentation fault in about half of the runs (a core dump:
  QTimerInfoList::activateTimers on a freed receiver; the cause is not yet found), and never in a
  fresh process. The console over SSH's journey and fault cases, and the report layout, keep them
  company.
- The engine's and the console's tests are split by file name, so that no part is much longer than
  the others (the last part to start decides when the suite ends); Ray, the language-model loop and
  the sandbox are a part of their own.
- The rest by folder. Seconds are from one measured run of the whole suite, three at once (2026-12),
  used only to start the longest first.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FRESH = ["tests/journeys", "tests/report/test_report_layout.py", "tests/remote/test_remote_console.py",
         "tests/remote/test_remote_faults.py"]
ENGINE_APART = ("tests/engine/test_ray.py", "tests/engine/test_ray_unreachable.py", "tests/engine/test_llm_loop.py",
                "tests/engine/test_sandbox_hostile.py", "tests/engine/test_sandbox_basics.py",
                "tests/engine/test_sandbox_cli.py")
COUNTS = re.compile(r"(\d+) (passed|failed|skipped|xfailed|xpassed|errors?)\b")


def files(folder: str, first: str, last: str, apart: tuple[str, ...] = ()) -> list[str]:
    """The test files of a folder whose name (after test_) starts with a letter in [first, last]."""
    return [str(p.relative_to(ROOT)) for p in sorted((ROOT / folder).glob("test_*.py"))
            if first <= p.name[5:6] <= last and str(p.relative_to(ROOT)) not in apart]


def parts() -> list[tuple[str, float, list[str]]]:
    """(name, seconds it took once, paths), longest first."""
    return sorted([
        ("console a-h", 200, files("tests/gui", "a", "h")),
        ("console i-z", 210, files("tests/gui", "i", "z")),
        ("remote, store, report, faults", 254,
         ["tests/remote", "tests/store", "tests/report", "tests/faults", *(f"--ignore={m}" for m in FRESH[1:])]),
        ("journeys", 217, FRESH),
        ("engine a-c", 249, files("tests/engine", "a", "c", ENGINE_APART)),
        ("engine d-z", 200, files("tests/engine", "d", "z", ENGINE_APART)),
        ("ray, language-model loop, sandbox", 146, list(ENGINE_APART)),
    ], key=lambda part: -part[1])


def run_part(paths: list[str], extra: list[str], log: Path, env: dict[str, str]) -> tuple[int, float]:
    started = time.monotonic()
    with open(log, "w") as out:
        code = subprocess.run([sys.executable, "-m", "pytest", *paths, *extra], cwd=ROOT, env=env,
                              stdout=out, stderr=subprocess.STDOUT).returncode
    return code, time.monotonic() - started


def main(extra: list[str]) -> int:
    # a `make test` started in the background (nohup, a CI runner) may inherit Ctrl-C ignored, and
    # every process would inherit that: the tests of Ctrl-C need it to be Python's own again
    signal.signal(signal.SIGINT, signal.default_int_handler)
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    slots = int(os.environ.get("RLA_TEST_SLOTS") or (os.cpu_count() or 2) + 1)
    todo = parts()
    totals: dict[str, int] = {}
    codes = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rla-tests-") as tmp, ThreadPoolExecutor(slots) as pool:
        futures = [(name, pool.submit(run_part, paths, extra, Path(tmp) / f"part{i}.log", env))
                   for i, (name, _s, paths) in enumerate(todo)]
        for i, (name, future) in enumerate(futures):
            code, took = future.result()
            codes.append(code)
            text = (Path(tmp) / f"part{i}.log").read_text(errors="replace")
            print(f"==== {name} (exit {code}, {took:.0f} s) ====")
            print(text.rstrip(), flush=True)
            last = [line for line in text.splitlines() if COUNTS.search(line)][-1:] or [""]
            for n, what in COUNTS.findall(last[0]):
                key = "errors" if what.startswith("error") else what
                totals[key] = totals.get(key, 0) + int(n)
    # exit 5 is "no test collected" (e.g. a -k that matches nothing in a part): not a failure
    failed = any(code not in (0, 5) for code in codes) or all(code == 5 for code in codes)
    print(f"{totals.get('passed', 0)} passed, {totals.get('failed', 0) + totals.get('errors', 0)} failed, "
          f"{totals.get('skipped', 0)} skipped in {time.monotonic() - started:.0f} s ({slots} at once)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
