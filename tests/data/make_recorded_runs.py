"""Record the runs the console and report tests load instead of training.

What it records, through the real CLI (`rla run`, then `rla export --format json`), all with
`--preset tiny --iterations 4 --seed 1` (evaluations at iterations 2 and 4):

    recorded_group.json       three gridworld runs of group "abl" (MULTI format, this order):
                                "base"           the tiny preset as it is
                                "outcome only"   --set policy.lam=0
                                "five verdicts"  --set judge.m=5 --set policy.lam=0.5
                              so exactly judge.m and policy.lam differ across the group
    recorded_arithmetic.json  one arithmetic run, "arithmetic" (--set task.family=arithmetic)

Each file is the project's own export format (`rla export --format json`, Store.export_run):
the run row with its config, iterations, metrics, events (episodes included) and the task
pool. Tests import them into a fresh temporary database (tests/conftest.py, `recorded_db`);
an imported run has no checkpoints, so resume is refused for it: tests that need one train.

Rerun it (seconds of training; under a minute with the start-up of four engines) after a change
of the schema, the bundle format, the tiny preset, or what a run records (a bundle the store
no longer accepts fails the fixture with the store's message naming the field):

    .venv/bin/python tests/data/make_recorded_runs.py

then run the console and report tests and commit the new files. Run ids, times, host and pid
change with each recording; the tests read them from the files, never hard-code them.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMON = ["--preset", "tiny", "--iterations", "4", "--seed", "1"]
# file stem → [(run name, arguments)], in the order the file lists the runs
RECORDINGS: dict[str, list[tuple[str, list[str]]]] = {
    "recorded_group": [
        ("base", ["--group", "abl"]),
        ("outcome only", ["--group", "abl", "--set", "policy.lam=0"]),
        ("five verdicts", ["--group", "abl", "--set", "judge.m=5", "--set", "policy.lam=0.5"]),
    ],
    "recorded_arithmetic": [("arithmetic", ["--set", "task.family=arithmetic"])],
}


def rla(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rla_engine.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def finished(proc: subprocess.Popen) -> str:
    out, _ = proc.communicate(timeout=600)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(map(str, proc.args))} failed:\n{out}")
    return out


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="rla-recording-") as tmp:
        db = str(Path(tmp) / "runs.db")
        # every run at once (independent engines, one database), each named uniquely
        procs = {name: rla("run", "--db", db, "--name", name, *COMMON, *args)
                 for runs in RECORDINGS.values() for name, args in runs}
        for proc in procs.values():
            finished(proc)
        from rla_engine.store import open_store
        store = open_store(Path(db), create=False)
        ids = {r["name"]: r["id"] for r in store.list_runs()}
        store.close()
        for stem, runs in RECORDINGS.items():
            out = HERE / f"{stem}.json"
            print(finished(rla("export", *(ids[name] for name, _ in runs), "--format", "json",
                               "--out", str(out), "--force", "--db", db)).strip())
            os.chmod(out, 0o644)     # exports are private (0600); these are shared test data


if __name__ == "__main__":
    main()
