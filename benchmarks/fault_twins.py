"""Fault class "twins": two engines of one run at once, as real processes.

    .venv/bin/python benchmarks/fault_twins.py [--trials N]

* twin starts: `rla run --run-id twin` twice at the same moment, seeds 0 and 1. Exactly one may
  run; the other exits 2 having changed nothing; the run then resumes, and every metric of the
  winner's history and of the resume equals an undisturbed run of the winner's seed.
* twin resumes: two `rla resume` of one crashed run at once. One resumes, the other exits 2 (or,
  if it came after the first had finished, resumes in its turn); never a `failed` event, and the
  history has no hole.
* twin ablations: two `rla ablate` of one group at once: one runs, the other exits 2.
"""
from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_support import ROOT, Engine, Verdict, comparable, compare, last_line, rla, table, tiny

ITERATIONS, MORE = 6, 2


def _conn(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(db, timeout=60)


def _own_folder(folder: Path) -> Path:
    """A database in a folder of its own: two databases' runs named "twin" in one folder would share
    checkpoints/twin, which the second is refused (the folder holds another database's files)."""
    folder.mkdir()
    return folder / "h.db"


def _reference(root: Path, seed: int) -> dict:
    db = _own_folder(root / f"ref-{seed}")
    assert rla(db, "run", *tiny(), "--iterations", str(ITERATIONS), "--seed", str(seed), "--run-id", "twin",
               ).returncode == 0
    assert rla(db, "resume", "twin", "--iterations", str(MORE)).returncode == 0
    return comparable(_conn(db), "twin")


def _refused_cleanly(eng: Engine, code: int) -> bool:
    err = [line for _, s, line in eng.lines if s == "err"]
    return code == 2 and len(err) == 1 and "Traceback" not in eng.output()


def twin_starts(root: Path, trials: int, v: Verdict) -> tuple[int, int]:
    refs = {seed: _reference(root, seed) for seed in (0, 1)}
    held = 0
    for i in range(trials):
        db = _own_folder(root / f"start-{i}")
        engines = {seed: Engine(db, "run", *tiny(), "--iterations", str(ITERATIONS), "--seed", str(seed),
                                "--run-id", "twin") for seed in (0, 1)}
        codes = {seed: e.wait(timeout=300) for seed, e in engines.items()}
        winners = [s for s, c in codes.items() if c == 0]
        ok = v.check("twins: exactly one of two starts runs", len(winners) == 1, f"trial {i}: exit codes {codes}")
        if not ok:
            continue
        (winner,), loser = winners, 1 - winners[0]
        ok &= v.check("twins: the second start exits 2 with one line", _refused_cleanly(engines[loser], codes[loser]),
                      f"trial {i}: {last_line(engines[loser].output())}")
        res = rla(db, "resume", "twin", "--iterations", str(MORE))
        ok &= v.check("twins: the run resumes", res.returncode == 0, f"trial {i}: {last_line(res.stderr)}")
        n, same, diff = compare(refs[winner], comparable(_conn(db), "twin"))
        ok &= v.check("twins: history and resume are the winner's own", n > 0 and same == n,
                      f"trial {i}: {same}/{n} values equal the seed-{winner} run; {diff}")
        held += ok
    return trials, held


def twin_resumes(root: Path, trials: int, v: Verdict) -> tuple[int, int]:
    held = 0
    for i in range(trials):
        db = _own_folder(root / f"resume-{i}")
        assert rla(db, "run", *tiny(), "--iterations", "3", "--run-id", "r").returncode == 0
        with _conn(db) as c:
            c.execute("UPDATE runs SET status = 'crashed' WHERE id = 'r'")
        engines = [Engine(db, "resume", "r", "--iterations", str(MORE)) for _ in range(2)]
        codes = sorted(e.wait(timeout=300) for e in engines)
        conn = _conn(db)
        its = [r[0] for r in conn.execute("SELECT iteration FROM iterations WHERE run_id = 'r' ORDER BY iteration")]
        failed = conn.execute("SELECT count(*) FROM events WHERE run_id = 'r' AND kind = 'failed'").fetchone()[0]
        status = conn.execute("SELECT status FROM runs WHERE id = 'r'").fetchone()[0]
        one = codes == [0, 2] and its[-1] == 3 + MORE
        both = codes == [0, 0] and its[-1] == 3 + 2 * MORE          # the second came after the first ended
        refused = [e for e in engines if e.proc.returncode == 2]
        ok = v.check("twins: two resumes, one engine at a time", one or both, f"trial {i}: codes {codes}, its {its}")
        ok &= v.check("twins: the refused resume says one line",
                      all(_refused_cleanly(e, 2) for e in refused), f"trial {i}: "
                      + "; ".join(last_line(e.output()) for e in refused))
        whole = its == list(range(its[0], its[-1] + 1))
        ok &= v.check("twins: no failure, no hole", failed == 0 and status == "completed" and whole,
                      f"trial {i}: {failed} failed events, {status}, {its}")
        held += ok
    return trials, held


def twin_ablations(root: Path, trials: int, v: Verdict) -> tuple[int, int]:
    held = 0
    for i in range(trials):
        db = _own_folder(root / f"ablate-{i}")
        out = db.parent / "ablate.md"
        args = ("ablate", "--preset", "tiny", "--seeds", "0", "--budget", "300", "--arms", "outcome",
                "--out", str(out))
        engines = [Engine(db, *args) for _ in range(2)]
        codes = sorted(e.wait(timeout=300) for e in engines)
        refused = [e for e in engines if e.proc.returncode == 2]
        ok = v.check("twins: one ablation of a group at a time", codes in ([0, 2], [0, 0]), f"trial {i}: {codes}")
        ok &= v.check("twins: the refused ablation names the other", all(
            "being run by another rla ablate" in e.output() for e in refused),
            "; ".join(last_line(e.output()) for e in refused))
        held += ok
    return trials, held


def campaign(root: Path, verdict: Verdict, say=print, trials: int = 8) -> dict:
    root.mkdir(parents=True, exist_ok=True)
    rows = [(name, *fn(root, n, verdict)) for name, fn, n in (
        ("two `rla run --run-id twin` at once", twin_starts, trials),
        ("two `rla resume` of a crashed run at once", twin_resumes, trials),
        ("two `rla ablate` of one group at once", twin_ablations, max(2, trials // 2)))]
    say(table("twins: two engines of one run", rows, ("attack", "tried", "held")))
    return {"tried": sum(r[1] for r in rows), "held": sum(r[2] for r in rows)}


if __name__ == "__main__":
    import os
    os.chdir(ROOT)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=8)
    a = ap.parse_args()
    v = Verdict()
    with tempfile.TemporaryDirectory(prefix="rla-twins-") as tmp:
        campaign(Path(tmp), v, trials=a.trials)
    sys.exit(v.report())
