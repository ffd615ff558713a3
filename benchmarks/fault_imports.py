"""Fault class "imports": hostile files against the real `rla import`.

    .venv/bin/python benchmarks/fault_imports.py [--full]

Every variant starts from one real export (tests/data/recorded_arithmetic.json, a recorded run)
and spoils one thing: each field of the run and of the first row of every part set to null, a
value of the wrong type, 2^63, a 5,000-digit integer, NaN, Infinity or a lone surrogate; payloads
and configurations with such values inside, nested 100 or 100,000 deep; names with terminal
escapes or of 2 MB; rows the database keys alike; a second run that is bad. And files that are
not regular (a FIFO, /dev/zero, a link to it, a folder), too big (a sparse file over the limit),
empty, binary, or no export. Each import goes to its own copy of a database holding another run.

The guarantees (written out here, not read from the engine's rules): a refusal is exit 2 with one
line on stderr naming the field (or what the file is), no traceback, and the database's rows
unchanged; a null that is accepted leaves a run that `rla show` and `rla export --format json`
read with exit 0, stored as strict JSON; real exports still import (an imported run exports
again identically). By default every field gets a null and one other hostile value, a different
one from field to field (~120 imports, a minute or two on 2 cores); --full tries all of them.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_support import ROOT, Verdict, rla, table

GOOD = ROOT / "tests" / "data" / "recorded_arithmetic.json"
OTHER = ROOT / "tests" / "data" / "recorded_group.json"
RAW = '"@RAW@"'                     # replaced by JSON text json.dumps cannot write
HUGE = "1" + "0" * 5000
MEMORY = 4 << 30                    # what a reader of /dev/zero may take before it is stopped
# the fields a reader cannot do without, so a null there must be refused
NULL_REFUSED = {"events[0].payload", "tasks[0].difficulty"}
# the fields that hold numbers and JSON objects, per part (DESIGN §4); all others hold text
NUMBERS = {"run": {"created_at", "started_at", "ended_at", "heartbeat_at", "pid", "iteration", "archived"},
           "iterations": {"iteration", "t", "env_steps", "wall_s"}, "metrics": {"iteration", "value", "t"},
           "events": {"id", "iteration", "t"},
           "tasks": {"uid", "slot", "version", "difficulty", "last_acc", "prev_acc", "new_acc", "created_iteration",
                     "decided_iteration"}}
OBJECTS = {"config", "payload"}
# hostile value -> (JSON text in place of the field's value, must it always be refused?)
VALUES = {"null": ("null", False), "wrong type": (None, True), "2^63": (str(2**63), True),
          "5000 digits": (HUGE, True), "NaN": ("NaN", True), "Infinity": ("Infinity", True),
          "-Infinity": ("-Infinity", True), "surrogate": ('"x\\ud800y"', True)}


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _wrong(where: str, key: str) -> str:
    """A value of another JSON type than the field's own (text for a number, a list for an object)."""
    return '"7"' if key in NUMBERS[where] else "[1]" if key in OBJECTS else "7"


def _edit(good: dict, where: str, key, raw: str) -> str:
    """The export as text with the field `key` of the run (or of a part's first row) replaced by
    raw JSON text."""
    doc = json.loads(json.dumps(good))
    node = doc[where] if where == "run" else doc[where][0]
    node[key] = "@RAW@"
    return json.dumps(doc).replace(RAW, raw)


def _path(where: str, key: str) -> str:
    return f"{where}.{key}" if where == "run" else f"{where}[0].{key}"


def field_variants(good: dict, full: bool) -> list[dict]:
    """Null in every field; and in every field one of the other hostile values, a different one
    from field to field (`full`: every one of them in every field, ~8x the imports)."""
    out = []
    hostile = [k for k in VALUES if k != "null"]
    fields = [(where, key) for where in ("run", "iterations", "metrics", "events", "tasks")
              for key in (good[where] if where == "run" else good[where][0])]
    for n, (where, key) in enumerate(fields):
        path = _path(where, key)
        for label in ["null", *(hostile if full else [hostile[n % len(hostile)]])]:
            raw, refuse = VALUES[label]
            out.append({"group": f"field: {label}", "name": f"{path} = {label}", "named": path,
                        "text": _edit(good, where, key, raw or _wrong(where, key)),
                        "refuse": refuse or path in NULL_REFUSED})
    return out


def _nest(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


def nested_variants(good: dict) -> list[dict]:
    spoil = [("payload: surrogate key", "events", "payload", '{"x\\udfffy": 1}'),
             ("payload: NaN inside", "events", "payload", '{"a": [1, {"b": NaN}]}'),
             ("payload: 2^64 inside", "events", "payload", '{"a": [18446744073709551616]}'),
             ("payload: 5000 digits inside", "events", "payload", '{"a": {"b": ' + HUGE + "}}"),
             ("payload: list", "events", "payload", "[1, 2]"),
             ("payload: nested 100", "events", "payload", _nest(100)),
             ("payload: nested 100,000", "events", "payload", _nest(100_000)),   # the parser stops: no path
             ("config: surrogate value", "run", "config", '{"task": {"family": "x\\ud800"}}'),
             ("config: Infinity", "run", "config", '{"policy": {"lr": Infinity}}'),
             ("config: 2^63", "run", "config", '{"run": {"seed": 9223372036854775808}}'),
             ("name: escapes", "run", "name", json.dumps("\x1b[2J\x1b]0;pwned\x07")),
             ("name: 2 MB", "run", "name", json.dumps("n" * 2_000_000)),
             ("notes: 2 MB", "run", "notes", json.dumps("n" * 2_000_000)),
             ("metric key: newline", "metrics", "key", '"a\\nb"'),
             ("difficulty: 1.5", "tasks", "difficulty", "1.5"),
             ("event time: 1e300", "events", "t", "1e300")]
    out = [{"group": "inside values", "name": name, "refuse": True, "text": _edit(good, where, key, raw),
            "named": "nested too deeply" if "100,000" in name else _path(where, key)}
           for name, where, key, raw in spoil]
    for part in ("iterations", "metrics", "tasks"):
        doc = json.loads(json.dumps(good))
        doc[part].append(dict(doc[part][0]))
        out.append({"group": "inside values", "name": f"{part}: a row twice", "named": f"{part}[",
                    "refuse": True, "text": json.dumps(doc)})
    first, second = json.loads(OTHER.read_text("utf-8"))["runs"][1:3]
    second["events"][0]["payload"] = {"x": "\ud800"}
    out.append({"group": "inside values", "name": "second of two runs bad", "named": "runs[1].events[0].payload",
                "refuse": True, "text": json.dumps({"format": "rlanything-runs/1", "runs": [first, second]})})
    return out


def file_variants() -> list[dict]:
    """Files that are not an export to read: made in the variant's folder by `make`."""
    def fifo(p: Path):
        os.mkfifo(p)

    def zero_link(p: Path):
        p.symlink_to("/dev/zero")

    def sparse(p: Path):
        with p.open("wb") as f:
            f.truncate((1 << 30) + 1)       # over the documented 1 GiB limit; no disk used

    def write(data: bytes):
        return lambda p: p.write_bytes(data)
    cases = [("FIFO", fifo, "FIFO"), ("/dev/zero", None, "character device"), ("link to /dev/zero", zero_link,
             "character device"), ("folder", lambda p: p.mkdir(), "folder"), ("sparse 1 GiB + 1", sparse, "bytes"),
             ("empty", write(b""), "not a JSON export"), ("binary", write(bytes(range(256)) * 4), "not a JSON export"),
             ("a list", write(b"[1, 2]"), "format"), ("unknown format", write(b'{"format": "x/9"}'), "format"),
             ("NaN at the top", write(b"NaN"), "format")]
    return [{"group": "files", "name": name, "named": named, "refuse": True, "make": make}
            for name, make, named in cases]


def _dump(db: Path) -> list[str]:
    with sqlite3.connect(db) as c:
        return list(c.iterdump())


def _strict(db: Path) -> bool:
    def refuse(token):
        raise ValueError(token)
    with sqlite3.connect(db) as c:
        texts = [r[0] for r in c.execute("SELECT payload_json FROM events UNION ALL SELECT config_json FROM runs")]
    try:
        return all(isinstance(json.loads(t, parse_constant=refuse), dict) for t in texts)
    except ValueError:
        return False


def _one_line(r: subprocess.CompletedProcess) -> str | None:
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    return lines[0] if len(lines) == 1 and "Traceback" not in r.stderr + r.stdout else None


def _readers_ok(db: Path, run_id: str, work: Path) -> list[str]:
    problems = []
    for args in (["show", run_id], ["export", run_id, "--format", "json", "--out", str(work / "again.json")]):
        r = rla(db, *args, timeout=60)
        if r.returncode != 0 or "Traceback" in r.stderr:
            problems.append(f"rla {args[0]} exit {r.returncode}: {r.stderr.strip()[-160:]}")
    return problems


def attempt(v: dict, template: Path, before: list[str], run_id: str, work: Path) -> dict:
    work.mkdir(parents=True)
    db = work / "runs.db"
    shutil.copy(template, db)
    file = Path("/dev/zero") if v["name"] == "/dev/zero" else work / "import.json"
    if "make" in v:
        if v["make"] is not None:
            v["make"](file)
    else:
        file.write_text(v["text"], "ascii")
    try:
        r = rla(db, "import", str(file), timeout=60, preexec=_limit_memory)
    except subprocess.TimeoutExpired:
        return {"refused": False, "problems": ["no answer in 60 s (blocked reading?)"]}
    line = _one_line(r)
    if r.returncode == 2:
        problems = [] if line is not None and v["named"] in line else [f"not one line naming {v['named']}: "
                                                                        f"{r.stderr.strip()[-200:]!r}"]
        if _dump(db) != before:
            problems.append("the database's rows changed")
        return {"refused": True, "problems": problems}
    if r.returncode != 0 or v["refuse"]:
        return {"refused": False, "problems": [f"exit {r.returncode}: {r.stderr.strip()[-200:]!r}"]}
    problems = _readers_ok(db, run_id, work)
    return {"refused": False, "problems": problems + ([] if _strict(db) else ["non-standard JSON stored"])}


def valid_imports(root: Path, verdict: Verdict) -> tuple[int, int]:
    """Real exports import; an imported run exports again identically and re-imports."""
    checks = []
    db, other = root / "valid.db", root / "valid-other.db"
    for args in (["import", str(OTHER)], ["import", str(GOOD)], ["import", str(GOOD), "--as", "renamed-1"]):
        r = rla(db, *args, timeout=120)
        checks.append((f"rla {' '.join(args[1:])}", r.returncode == 0 and not r.stderr.strip(), r.stderr[-200:]))
    run_id = json.loads(GOOD.read_text("utf-8"))["run"]["id"]
    out = root / "valid-again.json"
    r = rla(db, "export", run_id, "--format", "json", "--out", str(out), timeout=120)
    r2 = rla(other, "import", str(out), timeout=120) if r.returncode == 0 else r
    same = r2.returncode == 0 and json.loads(out.read_text("utf-8")) == json.loads(GOOD.read_text("utf-8"))
    checks.append(("export of an imported run re-imports, identical", same, (r.stderr + r2.stderr)[-200:]))
    for what, ok, err in checks:
        verdict.check("imports: valid exports still import", ok, f"{what}: {err!r}")
    return len(checks), sum(ok for _, ok, _ in checks)


def campaign(root: Path, verdict: Verdict, say=print, full: bool = False) -> dict:
    root.mkdir(parents=True, exist_ok=True)      # faults.py passes a folder that does not exist yet
    good = json.loads(GOOD.read_text("utf-8"))
    template, first = root / "template.db", root / "first.json"
    # another run the refusals must leave alone (runs[0] of OTHER; the two-run variant uses the others)
    runs = json.loads(OTHER.read_text("utf-8"))["runs"]
    first.write_text(json.dumps({"format": "rlanything-runs/1", "runs": runs[:1]}), "ascii")
    r = rla(template, "import", str(first), timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"cannot build the template database: {r.stderr[-300:]}")
    before = _dump(template)
    todo = field_variants(good, full) + nested_variants(good) + file_variants()
    with ThreadPoolExecutor(max_workers=max(2, min(16, os.cpu_count() or 2))) as pool:
        results = list(pool.map(lambda nv: attempt(nv[1], template, before, good["run"]["id"],
                                                   root / f"v{nv[0]:04d}"), enumerate(todo)))
    groups: dict[str, list[int]] = {}
    for v, res in zip(todo, results):
        variant_held = not res["problems"]
        g = groups.setdefault(v["group"], [0, 0, 0])
        g[0], g[1], g[2] = g[0] + 1, g[1] + int(variant_held), g[2] + int(res["refused"])
        guarantee = "imports: refused in one line naming the field, nothing written" if res["refused"] or v["refuse"] \
            else "imports: an accepted import stays readable"
        verdict.check(guarantee, variant_held, f"{v['name']}: " + "; ".join(res["problems"])[:300])
    tried_valid, held_valid = valid_imports(root, verdict)
    rows = [(g, n, h, rf) for g, (n, h, rf) in groups.items()] + [("valid exports", tried_valid, held_valid, 0)]
    tried = sum(r[1] for r in rows)
    held = sum(r[2] for r in rows)
    say(table("imports: hostile files against rla import", [*rows, ("all", tried, held, sum(r[3] for r in rows))],
              ("variant", "tried", "held", "refused")))
    return {"tried": tried, "held": held}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="every hostile value in every field (~8x the imports)")
    a = ap.parse_args()
    os.chdir(ROOT)
    v = Verdict()
    with tempfile.TemporaryDirectory(prefix="rla-imports-") as tmp:
        campaign(Path(tmp), v, full=a.full)
    sys.exit(v.report())
