"""Fault class "links": what a hostile or careless user puts in a
run's checkpoint folder, and moved databases, against real `rla` processes.

    .venv/bin/python benchmarks/fault_links.py

Each case builds its own database, plants something, runs `rla run` or `rla resume`, and checks
the guarantee: nothing outside the run's own files is written, deleted or resumed from, and a
resume says (an event and a line) what it passed over and what the history lost.
"""
from __future__ import annotations

import shutil
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_support import Verdict, last_line, rla, run_cases, run_standalone, tiny


def ckpt(db: Path, run_id: str) -> Path:
    return db.resolve().parent / "checkpoints" / run_id


def _train(db: Path, run_id: str, n: int, *sets: str) -> None:
    res = rla(db, "run", *tiny(*sets), "--iterations", str(n), "--run-id", run_id)
    assert res.returncode == 0, res.stderr


def _events(db: Path, run_id: str, kind: str) -> list[str]:
    with sqlite3.connect(db) as c:
        return [r[0] for r in c.execute("SELECT payload_json FROM events WHERE run_id = ? AND kind = ?",
                                        [run_id, kind])]


def _refused(res) -> bool:
    return res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr


def folder_is_link(d: Path) -> tuple[bool, str]:
    db, target = d / "h.db", d / "elsewhere"
    target.mkdir()
    (target / "it-000000004.pt").write_bytes(b"x")
    ckpt(db, "x").parent.mkdir(parents=True)
    ckpt(db, "x").symlink_to(target)
    res = rla(db, "run", *tiny(), "--iterations", "1", "--run-id", "x")
    return _refused(res) and [p.name for p in target.iterdir()] == ["it-000000004.pt"], last_line(res.stderr)


def older_version_folder(d: Path) -> tuple[bool, str]:
    db = d / "h.db"
    ckpt(db, "x").mkdir(parents=True)
    (ckpt(db, "x") / "it-000000009.pt").write_bytes(b"old")
    res = rla(db, "run", *tiny(), "--iterations", "1", "--run-id", "x")
    return _refused(res) and (ckpt(db, "x") / "it-000000009.pt").read_bytes() == b"old", last_line(res.stderr)


def _resume_skips(d: Path, plant: Callable[[Path, Path], str], n: int = 6) -> tuple[bool, str]:
    db = d / "h.db"
    _train(db, "a", 4)
    _train(db, "b", n)
    name = plant(ckpt(db, "a"), ckpt(db, "b"))
    res = rla(db, "resume", "b", "--iterations", "1")
    skipped = " ".join(_events(db, "b", "checkpoint_skipped"))
    resumed = " ".join(_events(db, "b", "resumed_from_checkpoint"))
    ok = res.returncode == 0 and name in skipped and name not in resumed and name in res.stdout
    return ok, f"exit {res.returncode}; skipped {skipped[:120]}; {last_line(res.stderr)}"


def newest_is_link_to_other_run(d: Path) -> tuple[bool, str]:
    def plant(a: Path, b: Path) -> str:
        (b / "it-000000006.pt").unlink()
        (b / "it-000000006.pt").symlink_to(a / "it-000000004.pt")
        return "it-000000006.pt"
    return _resume_skips(d, plant)


def newest_is_copy_of_other_run(d: Path) -> tuple[bool, str]:
    def plant(a: Path, b: Path) -> str:
        shutil.copy(a / "it-000000004.pt", b / "it-000000006.pt")
        return "it-000000006.pt"
    return _resume_skips(d, plant)


def own_copy_planted_as_newer(d: Path) -> tuple[bool, str]:
    def plant(_a: Path, b: Path) -> str:
        shutil.copy(b / "it-000000005.pt", b / "it-000000999.pt")
        return "it-000000999.pt"
    return _resume_skips(d, plant)


def own_copy_renamed_within(d: Path) -> tuple[bool, str]:
    def plant(_a: Path, b: Path) -> str:
        shutil.copy(b / "it-000000004.pt", b / "it-000000006.pt")
        return "it-000000006.pt"
    return _resume_skips(d, plant)


def database_behind_checkpoints(d: Path) -> tuple[bool, str]:
    db = d / "h.db"
    _train(db, "r", 6)
    with sqlite3.connect(db) as c:
        for t in ("metrics", "iterations"):
            c.execute(f"DELETE FROM {t} WHERE run_id = 'r' AND iteration > 2")
    res = rla(db, "resume", "r", "--iterations", "1")
    gap = _events(db, "r", "history_gap")
    ok = res.returncode == 0 and len(gap) == 1 and "iterations 3–6 are missing" in res.stdout
    return ok, f"exit {res.returncode}; gap events {gap}; {last_line(res.stderr)}"


def moved_database(d: Path) -> tuple[bool, str]:
    _train(d / "home" / "h.db", "r", 2)
    shutil.move(d / "home", d / "moved")
    res = rla(d / "moved" / "h.db", "resume", "r", "--iterations", "1")
    return res.returncode == 0, last_line(res.stderr)


def reserve_and_lock_links(d: Path) -> tuple[bool, str]:
    db, precious = d / "h.db", d / "precious"
    precious.write_text("keep")
    _train(db, "r", 2)
    (ckpt(db, "r") / "space-reserve").symlink_to(precious)
    first = rla(db, "resume", "r", "--iterations", "1")
    (ckpt(db, "r") / "engine.lock").unlink()
    (ckpt(db, "r") / "engine.lock").symlink_to(precious)
    second = rla(db, "resume", "r", "--iterations", "1")
    ok = first.returncode == 0 and _refused(second) and precious.read_text() == "keep"
    return ok, f"{first.returncode}, {last_line(second.stderr)}"


CASES = [folder_is_link, older_version_folder, newest_is_link_to_other_run, newest_is_copy_of_other_run,
         own_copy_planted_as_newer, own_copy_renamed_within, database_behind_checkpoints, moved_database,
         reserve_and_lock_links]


def campaign(root: Path, verdict: Verdict, say=print) -> dict:
    return run_cases("links", "the checkpoint folder as a hostile user leaves it", CASES, root, verdict, say)


if __name__ == "__main__":
    sys.exit(run_standalone(campaign, "links"))
