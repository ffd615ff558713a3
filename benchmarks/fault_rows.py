"""Fault class "rows": rows edited by hand with sqlite3, against the
real `rla runs`, `rla runs --json`, `rla show` and `rla resume` processes.

    .venv/bin/python benchmarks/fault_rows.py [--all | --quick]

One database of three real tiny runs is built once; each hand edit is made on a fresh copy of it,
in one row of the middle run: every column of runs, events, tasks, metrics and iterations set to
NULL, a blob, and — a number column — text, the largest integer, a negative number and infinity,
or — a text column — text carrying terminal escapes (SQLite's column affinity turns a number
stored in a text column into text, so those add nothing there). `--all` stores every value in
every column (also a huge finite real, plain text, numbers in text columns) and shows every run
after each edit; `--quick` one value per column.

The guarantees: no command ends in a traceback; `runs` and `show` exit 0 and still list the other
two runs; `--json` stays strict JSON; a run row that holds what its column cannot hold is shown as
damaged (and `resume` of it — once per column with a blob, it costs a few seconds — exits 2 with one line
naming the column); no control character or bidi override stored by the edit reaches the terminal
raw. Every command is a real `rla` process.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_support import ROOT, Verdict, last_line, rla, table, tiny

ESCAPES = "\x1b[2J\x1b]0;pwned\x07\u202eevil\x9b31m"
VALUES = {    # what a hand edit stores: label -> (SQL literal, parameter)
    "NULL": ("NULL", None), "text": ("?", "yesterday"), "max int": ("9223372036854775807", None),
    "negative": ("-7", None), "huge real": ("1e308", None), "infinity": ("1e999", None),
    "blob": ("X'00ff1b5b324a'", None), "escapes": ("?", ESCAPES),
}
# Which row of the middle run each table's edit hits: one that `show` prints (the last event,
# an active task, the last value of a key `runs` lists, the last iteration).
ROW = {"runs": "id = :run",
       "events": "rowid = (SELECT max(rowid) FROM events WHERE run_id = :run)",
       "tasks": "rowid = (SELECT max(rowid) FROM tasks WHERE run_id = :run AND status = 'active')",
       "metrics": "rowid = (SELECT max(rowid) FROM metrics WHERE run_id = :run AND key = 'policy/success_rate')",
       "iterations": "rowid = (SELECT max(rowid) FROM iterations WHERE run_id = :run)"}
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")   # a newline is output's own

# What a run row's columns hold (the reader's contract, written out here independently of the
# store's code): an edit that stores something else must be shown as damaged.
TIMES = {"created_at": False, "started_at": True, "ended_at": True, "heartbeat_at": True}   # NULL allowed?
REQUIRED_TEXT = {"id", "name", "config_json"}
STATUSES = {"running", "paused", "completed", "stopped", "failed", "crashed"}


def expect_damaged(column: str, stored) -> bool:
    """Must the run row be shown as damaged after this edit of `column` (stored: what SQLite kept)?"""
    if column in TIMES:
        ok = (stored is None and TIMES[column]) or (type(stored) in (int, float) and 0 <= stored <= 253402300799)
    elif column == "pid":
        ok = stored is None or (type(stored) is int and 1 <= stored < 2 ** 31)
    elif column == "iteration":
        ok = type(stored) is int and stored >= 0
    elif column == "archived":
        ok = stored in (0, 1) and type(stored) is int
    elif column == "status":
        ok = stored in STATUSES
    else:           # text columns: any text; NULL only where optional (notes and tags read as "")
        ok = isinstance(stored, str) or (stored is None and column not in REQUIRED_TEXT)
    return not ok


def build(base: Path, say) -> tuple[Path, list[str]]:
    db = base / "runs.db"
    for i in range(3):
        res = rla(db, "run", *tiny(), "--iterations", "3", "--name", f"rows {i}", timeout=300)
        if res.returncode != 0:
            raise RuntimeError(f"building run {i}: {last_line(res.stderr)}")
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")    # the file alone is the whole history
        ids = [r[0] for r in conn.execute("SELECT id FROM runs ORDER BY created_at")]
    finally:
        conn.close()
    say(f"rows: built {len(ids)} runs in {db}")
    return db, ids


NUMBER_VALUES = ("NULL", "blob", "text", "max int", "negative", "infinity")
TEXT_VALUES = ("NULL", "blob", "escapes")


def edits(db: Path, every: bool) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(db)
    try:
        columns = [(t, col[1], col[2].upper()) for t in ROW for col in conn.execute(f"PRAGMA table_info({t})")]
    finally:
        conn.close()
    return [(t, column, label) for t, column, declared in columns
            for label in (VALUES if every else TEXT_VALUES if declared == "TEXT" else NUMBER_VALUES)]


def _clean(res, what: str, problems: list[str], codes=(0,)) -> bool:
    out = res.stdout + res.stderr
    if "Traceback" in out:
        problems.append(f"{what}: traceback: {last_line(res.stderr)}")
        return False
    if res.returncode not in codes:
        problems.append(f"{what}: exit {res.returncode}: {last_line(res.stderr)}")
        return False
    if raw := UNSAFE.search(out):
        problems.append(f"{what}: a raw control character reached the terminal: {raw.group()!r}")
        return False
    return True


def attempt(base_db: Path, ids: list[str], work: Path, t: str, column: str, label: str, every: bool = False,
            resume: bool = True) -> dict:
    """One edit on a fresh copy; returns what held and what did not. `every`: show every run
    after it (else the edited one and one other); `resume`: try `rla resume` if the edit damaged
    the run's row."""
    d = work / f"{t}.{column}.{label.replace(' ', '_')}"
    d.mkdir(parents=True)
    db = d / "runs.db"
    shutil.copy(base_db, db)
    run = ids[1]
    sql, param = VALUES[label]
    conn = sqlite3.connect(db)
    try:
        rowid = conn.execute("SELECT rowid FROM runs WHERE id = ?", [run]).fetchone()[0]
        args = {"run": run, **({"v": param} if param is not None else {})}
        conn.execute(f"UPDATE {t} SET {column} = {sql.replace('?', ':v')} WHERE {ROW[t]}", args)
        conn.commit()
        # what SQLite kept (a column's affinity turns the number 7 into the text '7', …)
        stored = conn.execute(f"SELECT {column} FROM runs WHERE rowid = ?", [rowid]).fetchone()[0] \
            if t == "runs" else None
    except sqlite3.Error as e:        # SQLite itself refuses it (an integer primary key, a unique key)
        conn.close()
        return {"applied": False, "why": str(e)}
    conn.close()
    problems: list[str] = []
    checks: dict[str, bool] = {}
    others = [i for i in ids if i != run]
    edited_id = t == "runs" and column == "id"

    res = rla(db, "runs")
    checks["exit 0, no traceback, nothing raw"] = _clean(res, "runs", problems)
    listed = all(i in res.stdout for i in others)
    text_lines = res.stdout.splitlines()
    res_json = rla(db, "runs", "--json")
    checks["exit 0, no traceback, nothing raw"] &= _clean(res_json, "runs --json", problems)
    try:
        rows = json.loads(res_json.stdout, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
        checks["--json is strict JSON"] = True
    except ValueError as e:
        rows = []
        checks["--json is strict JSON"] = False
        problems.append(f"runs --json: not strict JSON: {e}")
    listed = listed and all(any(r.get("id") == i for r in rows) for i in others) and len(rows) == 3
    checks["the other runs still listed"] = listed
    if not listed:
        problems.append(f"runs: lists {[r.get('id') for r in rows]}")

    if t == "runs":
        mine: dict = next((r for r in rows if r.get("id") not in others), {})
        flagged = column in (mine.get("damaged") or {})
        line = next((ln for ln in text_lines if ln and not any(ln.startswith(i) for i in others)
                     and not ln.startswith("id ")), "")
        want = expect_damaged(column, stored)
        shown = flagged and ("[damaged:" in line)
        checks["a damaged run row is shown as damaged"] = shown if want else not flagged
        if shown != want:
            problems.append(f"runs: {column} = {label}: flagged {flagged}, expected {want}; line {line[:100]!r}")
        if want and not edited_id and resume:
            res = rla(db, "resume", run)
            lines = res.stderr.strip().splitlines()
            ok = (_clean(res, "resume", problems, codes=(2,)) and len(lines) == 1 and column in lines[0]
                  and run in lines[0])
            checks["resume of a damaged run: exit 2, one line naming it"] = ok
            if not ok:
                problems.append(f"resume: exit {res.returncode}: {res.stderr.strip()[:160]!r}")

    shows_ok = True
    for i in (ids if every else [run, others[0]]):
        res = rla(db, "show", i)
        gone = edited_id and i == run        # its id is what was edited: `show` of the old id is refused
        shows_ok &= _clean(res, f"show {i}", problems, codes=(2,) if gone else (0,))
        if gone and res.returncode == 2 and len(res.stderr.strip().splitlines()) != 1:
            shows_ok = False
            problems.append(f"show {i}: not one line: {res.stderr!r}")
    checks["show: exit 0, no traceback, nothing raw"] = shows_ok
    if not edited_id:
        res = rla(db, "show", run, "--json")
        ok = _clean(res, "show --json", problems)
        try:
            json.loads(res.stdout, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
        except ValueError as e:
            ok = False
            problems.append(f"show --json: not strict JSON: {e}")
        checks["--json is strict JSON"] &= ok
    shutil.rmtree(d, ignore_errors=True)
    return {"applied": True, "checks": checks, "problems": problems}


def campaign(root: Path, verdict: Verdict, say=print, every: bool = False, quick: bool = False) -> dict:
    """Build the database, make every edit (see the module), check; return {"tried", "held"}."""
    base, ids = build(root / "base", say)
    todo = edits(base, every)
    if quick:           # one value per column, a different one from column to column
        firsts: dict[tuple[str, str], list] = {}
        for e in todo:
            firsts.setdefault(e[:2], []).append(e)
        todo = [vs[n % len(vs)] for n, vs in enumerate(firsts.values())]
    # `resume` costs seconds (it loads the engine): every run column once, with the edit that
    # damages any column (a blob), or after every damaging edit with --all
    plan = [(t, column, label, every or label == "blob") for t, column, label in todo]
    work = root / "edits"

    def one(edit: tuple[str, str, str, bool]) -> tuple[tuple[str, str, str], dict]:
        t, column, label, resume = edit
        return (t, column, label), attempt(base, ids, work, t, column, label, every=every, resume=resume)
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        results = list(pool.map(one, plan))
    per_table: dict[str, list[int]] = {}
    refused = 0
    for (t, column, label), r in results:
        if not r["applied"]:
            refused += 1
            continue
        edit_held = all(r["checks"].values())
        per_table.setdefault(t, [0, 0])
        per_table[t][0] += 1
        per_table[t][1] += int(edit_held)
        for guarantee, ok in r["checks"].items():
            verdict.check(f"rows: {guarantee}", ok, f"{t}.{column} = {label}: " + "; ".join(r["problems"])[:300])
    tried = sum(v[0] for v in per_table.values())
    held = sum(v[1] for v in per_table.values())
    rows = [(t, v[0], v[1]) for t, v in per_table.items()] + [("all", tried, held)]
    say(table(f"rows: hand-edited rows against rla runs / show / resume ({refused} edits SQLite itself refused)",
              rows, ("table", "tried", "held")))
    return {"tried": tried, "held": held}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    how = ap.add_mutually_exclusive_group()
    how.add_argument("--all", action="store_true", help="every value in every column, every run shown after each")
    how.add_argument("--quick", action="store_true", help="one value per column")
    a = ap.parse_args()
    os.chdir(ROOT)
    v = Verdict()
    with tempfile.TemporaryDirectory(prefix="rla-rows-") as tmp:
        campaign(Path(tmp), v, every=a.all, quick=a.quick)
    sys.exit(v.report())
