"""Valid but extreme numbers, as a person can put them in a database: an export whose runs hold
1.5e308 or ±1e200 (accepted by `rla import`), and a stored configuration edited by hand to hold
an integer of 400 digits. Shared by the History/compare/report tests and the every-model test."""
from __future__ import annotations

import copy
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from rla_engine import metrics

HUGE_INT = 10 ** 400          # no float holds it: float() raises OverflowError
# what the finding used, and the pair whose squares overflow
EXTREMES = {"near-max": (1.5e308, 1.6e308), "opposite": (1e200, -1e200)}


def extreme_export(recorded_runs: list[dict], values: tuple[float, ...], out: Path,
                   key: str = metrics.DIFFICULTY_MEAN) -> Path:
    """The first len(values) recorded runs of one group, `key` at `values[i]` in run i at every
    iteration, written as `rla export --format json` writes several runs."""
    from rla_engine.store import MULTI_FORMAT
    runs = []
    for bundle, value in zip(recorded_runs, values):
        bundle = copy.deepcopy(bundle)
        for row in bundle["metrics"]:
            if row["key"] == key:
                row["value"] = value
        runs.append(bundle)
    out.write_text(json.dumps({"format": MULTI_FORMAT, "runs": runs}), "utf-8")
    return out


def rla(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rla_engine.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def imported(db: Path, export: Path) -> list[str]:
    """Import `export` into `db` through `rla import`; the run ids, in the file's order."""
    res = rla("import", str(export), "--db", str(db))
    assert res.returncode == 0, res.stderr
    return [b["run"]["id"] for b in json.loads(export.read_text("utf-8"))["runs"]]


def set_config_value(db: Path, run_id: str, section: str, key: str, literal: str) -> None:
    """A hand edit of a stored configuration: `section.key` set to the JSON `literal` (e.g. 400 digits)."""
    with sqlite3.connect(db) as conn:
        (text,) = conn.execute("SELECT config_json FROM runs WHERE id = ?", [run_id]).fetchone()
        config = json.loads(text)
        config[section][key] = "@@"
        conn.execute("UPDATE runs SET config_json = ? WHERE id = ?",
                     [json.dumps(config).replace('"@@"', literal), run_id])

