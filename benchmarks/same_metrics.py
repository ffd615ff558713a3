"""Behaviour guard for refactors: a `quickstart` run with a fixed seed (and the paper's judge,
`judge.profile = paper`) must store exactly the same metrics before and after a change that
claims not to change behaviour.

    .venv/bin/python benchmarks/same_metrics.py record   # once, on the tree before the change
    .venv/bin/python benchmarks/same_metrics.py check    # after it: exit 1 and the keys that differ

Every stored metric except the machine's measurements (`perf/*` timings, `sys/*` load) is compared
at full precision: one SHA-256 per key over its (iteration, value) pairs, and the final value of
each key for a readable diff. A key the record lacks is listed as new and differs from nothing (a
change may add keys); every recorded key must be there, equal. The record lives in
benchmarks/data/; `--iterations` shortens the run (the record notes how many it used).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from rla_engine.metrics import is_machine_key

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "benchmarks" / "data" / "quickstart-seed7.json"
SEED = 7


def fingerprint(iterations: int | None) -> dict:
    with tempfile.TemporaryDirectory(prefix="rla-same-") as tmp:
        db = Path(tmp) / "same.db"
        # the paper's judge, as the record was taken before the preset took the repaired one (issue 37)
        args = [sys.executable, "-m", "rla_engine.cli", "run", "--preset", "quickstart", "--seed", str(SEED),
                "--set", "judge.profile=paper", "--device", "cpu", "--db", str(db)]
        if iterations:
            args += ["--iterations", str(iterations)]
        res = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
        if res.returncode != 0:
            raise SystemExit(f"same_metrics: the run failed ({res.returncode}):\n"
                             f"{res.stdout[-2000:]}{res.stderr[-2000:]}")
        con = sqlite3.connect(db)
        rows = con.execute("SELECT key, iteration, value FROM metrics ORDER BY key, iteration").fetchall()
        con.close()
    keys: dict[str, dict] = {}
    for key, it, value in rows:
        if is_machine_key(key):
            continue
        k = keys.setdefault(key, {"hash": hashlib.sha256(), "n": 0, "last": None})
        k["hash"].update(f"{it}:{value!r};".encode())
        k["n"] += 1
        k["last"] = value
    return {"seed": SEED, "iterations": iterations or "preset",
            "keys": {key: {"sha256": k["hash"].hexdigest(), "n": k["n"], "last": k["last"]} for key, k in keys.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["record", "check"])
    ap.add_argument("--iterations", type=int)
    a = ap.parse_args()
    now = fingerprint(a.iterations)
    if a.action == "record":
        RECORD.parent.mkdir(parents=True, exist_ok=True)
        RECORD.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"recorded {len(now['keys'])} keys, {sum(k['n'] for k in now['keys'].values()):,} values in {RECORD}")
        return 0
    then = json.loads(RECORD.read_text())
    if then["iterations"] != now["iterations"]:
        raise SystemExit(f"same_metrics: the record is of {then['iterations']} iterations; run check with the same")
    new = sorted(now["keys"].keys() - then["keys"].keys())
    differ = sorted(k for k in then["keys"]
                    if then["keys"][k].get("sha256") != now["keys"].get(k, {}).get("sha256"))
    values = sum(now["keys"][k]["n"] for k in then["keys"] if k in now["keys"])
    if new:
        print(f"new (not in the record, not compared): {', '.join(new)}")
    if differ:
        for k in differ[:20]:
            was, is_now = then["keys"].get(k, {}).get("last"), now["keys"].get(k, {}).get("last")
            print(f"differs: {k}: recorded {was!r}, now {is_now!r}")
        print(f"{len(differ)} of {len(then['keys'])} keys differ")
        return 1
    print(f"same: {len(then['keys'])} keys, {values:,} values equal to the record (perf/*, sys/* excluded)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
