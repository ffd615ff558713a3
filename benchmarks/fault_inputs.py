"""Fault class "inputs": what a user names or types that is not what it seems, against real
`rla` processes and a real database.

    .venv/bin/python benchmarks/fault_inputs.py

* `rla run --config` and `rla ablate --config` given /dev/zero, a FIFO nobody writes to, a folder,
  a 50 MB file and a link to /dev/zero (issue 34, finding 6): each must exit 2 within seconds with
  one line naming the file and what it is, without reading it (the process's memory is limited
  to 3 GB, as /dev/zero once took 3.9 GB in 4 s), the database not created.
* History's search (the store's full-text search, which the console's search box calls) given a
  NUL, other control characters and a lone surrogate inside words, on a database of real runs
  (finding 8): no exception, and the character separates words as the index reads them.
* A real `rla run` whose judge's gradient is NaN while its loss is finite (finding 8): the run
  fails, and its not_finite event names the judge's gradient norm, not `loss/policy`.
"""
from __future__ import annotations

import os
import resource
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_support import ROOT, Verdict, last_line, rla, run_cases, run_standalone, tiny

ANSWER_WITHIN_S = 20          # a refusal takes well under a second; a FIFO once hung for ever
MEMORY = 3 << 30              # what a reader of /dev/zero may take before it is stopped
RECORDED = ROOT / "tests" / "data" / "recorded_group.json"     # three real gridworld runs


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


# -- --config: files that are not a small regular file -----------------------------------------
def _fifo(d: Path) -> str:
    os.mkfifo(d / "config.toml")
    return str(d / "config.toml")


def _folder(d: Path) -> str:
    (d / "config.toml").mkdir()
    return str(d / "config.toml")


def _link_to_zero(d: Path) -> str:
    (d / "config.toml").symlink_to("/dev/zero")
    return str(d / "config.toml")


def _fifty_megabytes(d: Path) -> str:
    with (d / "config.toml").open("wb") as f:
        f.truncate(50 << 20)            # sparse: 50 MB to read, no disk used
    return str(d / "config.toml")


FILES: dict[str, tuple[Callable[[Path], str], str]] = {
    "dev zero": (lambda d: "/dev/zero", "character device"), "fifo": (_fifo, "FIFO"),
    "folder": (_folder, "folder"), "50 MB file": (_fifty_megabytes, "52,428,800 bytes"),
    "link to dev zero": (_link_to_zero, "character device")}
COMMANDS = {"run": ["run"], "ablate": ["ablate", "--seeds", "0", "--budget", "100"]}


def _config_refused(d: Path, command: str, file: str) -> tuple[bool, str]:
    make, named = FILES[file]
    path, db = make(d), d / "fresh.db"
    started = time.monotonic()
    try:
        res = rla(db, *COMMANDS[command], "--config", path, timeout=ANSWER_WITHIN_S, preexec=_limit_memory)
    except subprocess.TimeoutExpired:
        return False, f"rla {command} --config {file}: no answer within {ANSWER_WITHIN_S} s"
    took = time.monotonic() - started
    lines = res.stderr.strip().splitlines()
    ok = res.returncode == 2 and len(lines) == 1 and path in lines[0] and named in lines[0] and not db.exists()
    return ok, f"exit {res.returncode} in {took:.1f} s: {last_line(res.stderr)}"


def _config_case(command: str, file: str) -> Callable[[Path], tuple[bool, str]]:
    def case(d: Path) -> tuple[bool, str]:
        return _config_refused(d, command, file)
    case.__name__ = f"{command}_config_{file.replace(' ', '_')}"
    return case


# -- History's search ---------------------------------------------------------------------------
def _runs_db(d: Path) -> tuple[Path, str]:
    """A database of the recorded runs, the first with notes to search for."""
    db = d / "h.db"
    res = rla(db, "import", str(RECORDED))
    if res.returncode != 0:
        raise RuntimeError(f"cannot import the recorded runs: {last_line(res.stderr)}")
    with sqlite3.connect(db) as c:
        run_id = c.execute("SELECT id FROM runs ORDER BY id LIMIT 1").fetchone()[0]
        c.execute("UPDATE runs SET notes = 'judge collapsed after the override; zebra' WHERE id = ?", [run_id])
    return db, run_id


def _search(d: Path, separators: str) -> tuple[bool, str]:
    from rla_engine.store import open_store
    db, noted = _runs_db(d)
    store = open_store(db, create=False)
    problems = []
    try:
        for ch in separators:
            for query, expected in ((f"zebra{ch}collapsed", [noted]), (f"{ch}zebra{ch}", [noted]),
                                    (f"zebra{ch}nothing", [])):
                got: list[str] | str
                try:
                    got = store.search_runs(query)
                except Exception as e:      # what the console's search box showed as "error: …"
                    got = f"{type(e).__name__}: {e}"
                if got != expected:
                    problems.append(f"{query!r} -> {got}")
    finally:
        store.close()
    return not problems, "; ".join(problems)[:300] or f"{len(separators) * 3} searches as expected"


def search_with_nul(d: Path) -> tuple[bool, str]:
    return _search(d, "\x00")


def search_with_control_characters(d: Path) -> tuple[bool, str]:
    return _search(d, "\x01\x08\x1b\x7f\x85\x9b")


def search_with_lone_surrogate(d: Path) -> tuple[bool, str]:
    return _search(d, "\ud800\udfff")


# -- a NaN gradient in the judge ----------------------------------------------------------------
# `rla run` as the command runs it, its judge network made to give NaN gradients (a finite loss)
POISONED_RUN = """
import sys
import torch
from rla_engine.models import networks
from rla_engine.cli import main

made = networks.JudgeNet.__init__
def poisoned(self, *a, **k):
    made(self, *a, **k)
    for p in self.parameters():
        p.register_hook(lambda g: g * float("nan"))
networks.JudgeNet.__init__ = poisoned
sys.exit(main(sys.argv[1:]))
"""


def judge_nan_gradient(d: Path) -> tuple[bool, str]:
    db = d / "h.db"
    res = subprocess.run([sys.executable, "-c", POISONED_RUN, "run", *tiny(), "--iterations", "6",
                          "--run-id", "r", "--db", str(db)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    with sqlite3.connect(db) as c:
        keys = [r[0] for r in c.execute("SELECT json_extract(payload_json, '$.key') FROM events WHERE run_id = 'r' "
                                        "AND kind = 'alert' AND json_extract(payload_json, '$.alert') = 'not_finite' "
                                        "AND json_extract(payload_json, '$.state') = 'raised'")]
    ok = res.returncode == 1 and keys == ["health/judge_grad_norm"]
    return ok, f"exit {res.returncode}; not_finite names {keys}; {last_line(res.stderr)}"


CASES = [*(_config_case(c, f) for c in COMMANDS for f in FILES),
         search_with_nul, search_with_control_characters, search_with_lone_surrogate, judge_nan_gradient]


def campaign(root: Path, verdict: Verdict, say=print) -> dict:
    return run_cases("inputs", "special files as --config, control characters in the search, a NaN judge gradient",
                     CASES, root, verdict, say)


if __name__ == "__main__":
    sys.exit(run_standalone(campaign, "inputs"))
