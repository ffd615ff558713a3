"""Fault class "lifecycle": a run deleted while an engine works on it, checkpoints stripped of
their signature, and a checkpoint folder an attacker fills, against real `rla` processes.

    .venv/bin/python benchmarks/fault_lifecycle.py

Each case builds its own database and checks the guarantee: a delete never leaves rows or files
of no run (it is refused while an engine holds the run; an engine whose row is deleted behind its
back stops, and `rla doctor --fix` sweeps what it left, with counts); a database that signs its
checkpoints resumes from no unsigned one unless told to (`--accept-unowned-checkpoints`); what is
planted in a checkpoint folder costs room, not the run, and is said once, not once per file.
"""
from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_support import Engine, Verdict, flock_holders, last_line, rla, run_cases, run_standalone, tiny

TABLES = ("metrics", "iterations", "events", "commands", "tasks")
HEADER = 56       # rla_engine.checkpoint's format-2 header


def ckpt(db: Path, run_id: str) -> Path:
    return db.resolve().parent / "checkpoints" / run_id


def _train(db: Path, run_id: str, n: int) -> None:
    res = rla(db, "run", *tiny(), "--iterations", str(n), "--run-id", run_id)
    assert res.returncode == 0, res.stderr


def _events(db: Path, run_id: str, kind: str) -> list[str]:
    with sqlite3.connect(db) as c:
        return [r[0] for r in c.execute("SELECT payload_json FROM events WHERE run_id = ? AND kind = ?",
                                        [run_id, kind])]


def _orphans(db: Path) -> int:
    with sqlite3.connect(db) as c:
        return sum(c.execute(f"SELECT count(*) FROM {t} WHERE run_id NOT IN (SELECT id FROM runs)").fetchone()[0]
                   for t in TABLES)


def _status(db: Path, run_id: str) -> str | None:
    with sqlite3.connect(db) as c:
        row = c.execute("SELECT status FROM runs WHERE id = ?", [run_id]).fetchone()
    return row[0] if row else None


def _delete(db: Path, run_id: str) -> str:
    """The console's delete (EngineClient.delete_run); '' when done, else the refusal."""
    from rla_engine.client import EngineClient, EngineError

    async def go() -> str:
        client = EngineClient(db)
        try:
            await client.delete_run(run_id)
            return ""
        except EngineError as e:
            return str(e)
        finally:
            await client.close()
    return asyncio.run(go())


# -- delete against a live engine --------------------------------------------------------------
def delete_during_starting_resume(d: Path) -> tuple[bool, str]:
    db = d / "h.db"
    _train(db, "r", 2)
    eng = Engine(db, "resume", "r", "--iterations", "3")
    lock = ckpt(db, "r") / "engine.lock"
    deadline = time.monotonic() + 60
    while eng.pid not in flock_holders(lock) and eng.alive() and time.monotonic() < deadline:
        time.sleep(0.001)
    os.kill(eng.pid, signal.SIGSTOP)      # between taking the run and marking it live
    try:
        window = _status(db, "r") == "completed"
        refusal = _delete(db, "r")
    finally:
        os.kill(eng.pid, signal.SIGCONT)
    rc = eng.wait(120)
    live = ("run r is live (an engine holds its lock)", f"run r is live (engine pid {eng.pid}")
    ok = window and refusal.startswith(live) and rc == 0 and _status(db, "r") == "completed" and _orphans(db) == 0
    return ok, f"in window {window}; refusal {refusal!r}; resume exit {rc}; orphans {_orphans(db)}"


def row_deleted_behind_the_engine(d: Path) -> tuple[bool, str]:
    db = d / "h.db"
    eng = Engine(db, "run", *tiny(), "--iterations", "100000", "--run-id", "r")
    deadline = time.monotonic() + 90
    while eng.progress() < 2 and eng.alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    with sqlite3.connect(db, timeout=30) as c:        # a hand edit, or an older version's delete
        c.execute("DELETE FROM runs WHERE id = 'r'")
    rc = eng.wait(60)
    said = last_line("\n".join(line for _, s, line in eng.lines if s == "err"))
    report = rla(db, "doctor")
    fixed = rla(db, "doctor", "--fix")
    ok = (rc == 1 and "deleted while its engine ran" in said and "Traceback" not in eng.output()
          and "checkpoint folders of deleted runs: 1" in report.stdout and _orphans(db) == 0
          and not ckpt(db, "r").exists() and "removed rows of deleted runs:" in fixed.stdout)
    return ok, f"exit {rc}: {said[:90]}; doctor: {report.stdout.splitlines()[1:2]}"


# -- unsigned checkpoints in a signing database ---------------------------------------------------
def _payload(path: Path) -> bytes:
    data = path.read_bytes()
    return data[HEADER + int.from_bytes(data[12:16], "little"):]


def _stripped(p: bytes) -> bytes:
    return p


def _blank_owner(p: bytes) -> bytes:
    return struct.pack("<8sIIQ32s", b"RLACKPT\n", 2, 2, len(p), hashlib.sha256(b"{}" + p).digest()) + b"{}" + p


def _format_1(p: bytes) -> bytes:
    return struct.pack("<8sIQ32s", b"RLACKPT\n", 1, len(p), hashlib.sha256(p).digest()) + p


def _unsigned(d: Path, forge: Callable[[bytes], bytes]) -> tuple[bool, str]:
    """Another database's checkpoint of a run of the same id, forged into this run's newest."""
    db, other = d / "h.db", d / "other" / "o.db"
    _train(db, "r", 3)
    _train(other, "r", 3)
    planted = forge(_payload(ckpt(other, "r") / "it-000000003.pt"))
    (ckpt(db, "r") / "it-000000003.pt").write_bytes(planted)
    res = rla(db, "resume", "r", "--iterations", "1")
    refused = (res.returncode == 0 and "it-000000003.pt" in " ".join(_events(db, "r", "checkpoint_skipped"))
               and "it-000000002.pt" in _events(db, "r", "resumed_from_checkpoint")[-1])
    (ckpt(db, "r") / "it-000000003.pt").write_bytes(planted)       # the resume (from 2 to 3) wrote its own over it
    flagged = rla(db, "resume", "r", "--iterations", "1", "--accept-unowned-checkpoints")
    accepted = flagged.returncode == 0 and "it-000000003.pt" in _events(db, "r", "resumed_from_checkpoint")[-1]
    return refused and accepted, f"refused {refused}, accepted with the flag {accepted}; {last_line(res.stdout)}"


def stripped_header_from_another_database(d: Path) -> tuple[bool, str]:
    return _unsigned(d, _stripped)


def signed_with_a_blank_owner(d: Path) -> tuple[bool, str]:
    return _unsigned(d, _blank_owner)


def format_1_in_a_signing_database(d: Path) -> tuple[bool, str]:
    return _unsigned(d, _format_1)


# -- a checkpoint folder an attacker fills ---------------------------------------------------------
def _chattr(flag: str, path: Path) -> bool:
    return shutil.which("chattr") is not None and subprocess.run(
        ["chattr", flag, str(path)], capture_output=True).returncode == 0


def immutable_older_checkpoint(d: Path) -> tuple[bool, str]:
    db = d / "h.db"
    _train(db, "r", 3)
    oldest = ckpt(db, "r") / "it-000000001.pt"
    if not _chattr("+i", oldest):
        return False, "chattr +i failed"
    try:
        res = rla(db, "resume", "r", "--iterations", "3")
    finally:
        _chattr("-i", oldest)
    warnings = _events(db, "r", "checkpoint_warning")
    ok = res.returncode == 0 and _status(db, "r") == "completed" and len(warnings) == 1 and oldest.exists()
    return ok, f"exit {res.returncode}; {len(warnings)} warning event(s); {last_line(res.stderr or res.stdout)}"


def folder_planted_as_a_checkpoint(d: Path) -> tuple[bool, str]:
    db = d / "h.db"
    _train(db, "r", 3)
    for name in ("it-000000001.pt", "it-000000003.pt"):
        (ckpt(db, "r") / name).unlink()
        (ckpt(db, "r") / name).mkdir()
        (ckpt(db, "r") / name / "inside").write_text("keep")
    res = rla(db, "resume", "r", "--iterations", "3")
    skipped = " ".join(_events(db, "r", "checkpoint_skipped"))
    ok = (res.returncode == 0 and "Traceback" not in res.stderr and _status(db, "r") == "completed"
          and "Is a directory" in skipped and len(_events(db, "r", "checkpoint_warning")) >= 1)
    return ok, f"exit {res.returncode}; skipped {skipped[:90]}; {last_line(res.stderr)}"


def thousands_of_planted_names(d: Path) -> tuple[bool, str]:
    db = d / "h.db"
    _train(db, "r", 2)
    for i in range(3000):
        (ckpt(db, "r") / f"it-{100_000 + i:09d}.pt").write_bytes(b"junk")
    codes = [rla(db, "resume", "r", "--iterations", "1").returncode for _ in range(2)]
    n = len(_events(db, "r", "checkpoint_skipped"))
    return codes == [0, 0] and n == 2, f"exits {codes}; {n} checkpoint_skipped events over 2 resumes"


CASES: list[Callable[[Path], tuple[bool, str]]] = [
    delete_during_starting_resume, row_deleted_behind_the_engine, stripped_header_from_another_database,
    signed_with_a_blank_owner, format_1_in_a_signing_database, immutable_older_checkpoint,
    folder_planted_as_a_checkpoint, thousands_of_planted_names]


def campaign(root: Path, verdict: Verdict, say=print) -> dict:
    probe = root / "immutable-probe"
    probe.parent.mkdir(parents=True, exist_ok=True)
    probe.write_bytes(b"")
    cases = CASES
    if _chattr("+i", probe):
        _chattr("-i", probe)
    else:          # not root, or a file system without the flag: that case is not tried here
        say("lifecycle: immutable older checkpoint: not tried (chattr +i is not available here)")
        cases = [c for c in CASES if c is not immutable_older_checkpoint]
    return run_cases("lifecycle", "deletes against live engines, unsigned checkpoints, planted folders",
                     cases, root, verdict, say)


if __name__ == "__main__":
    sys.exit(run_standalone(campaign, "lifecycle"))
