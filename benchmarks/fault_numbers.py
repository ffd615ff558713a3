"""Fault class "numbers": valid but extreme numbers, against real `rla` processes and the real
console offscreen (issue 34, finding 1 and two of finding 8).

    .venv/bin/python benchmarks/fault_numbers.py

Each case imports a group of two recorded runs (tests/data/recorded_group.json) whose pool
difficulty is 1.5e308 and 1.6e308, or 1e200 and -1e200 — an export `rla import` accepts — or
edits a stored configuration by hand to hold an integer of 400 digits, then checks what a person
gets: numbers written as numbers (1.5e+308, never 309 digits), reports that are written, and a
console that groups, compares and refreshes without a traceback.
"""
from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_support import ROOT, Verdict, last_line, rla, run_cases, run_standalone

RECORDED = ROOT / "tests" / "data" / "recorded_group.json"
DIFFICULTY = "env/difficulty_mean"
NEAR_MAX, OPPOSITE = (1.5e308, 1.6e308), (1e200, -1e200)
LONG_NUMBER = re.compile(r"\d{20}")
HUGE_INT = "1" + "0" * 400


def _imported(d: Path, values: tuple[float, float]) -> tuple[Path, list[str]]:
    """A database holding two runs of one group, DIFFICULTY at `values` (through `rla import`)."""
    doc = json.loads(RECORDED.read_text("utf-8"))
    doc["runs"] = doc["runs"][:2]
    for bundle, value in zip(doc["runs"], values):
        for row in bundle["metrics"]:
            if row["key"] == DIFFICULTY:
                row["value"] = value
    export, db = d / "extreme.json", d / "n.db"
    export.write_text(json.dumps(doc), "utf-8")
    res = rla(db, "import", str(export))
    if res.returncode != 0:
        raise RuntimeError(f"rla import: {last_line(res.stderr)}")
    return db, [b["run"]["id"] for b in doc["runs"]]


def _clean(res: subprocess.CompletedProcess) -> bool:
    return res.returncode == 0 and "Traceback" not in res.stderr


def runs_and_show_print_numbers(d: Path) -> tuple[bool, str]:
    db, ids = _imported(d, NEAR_MAX)
    runs, show = rla(db, "runs"), rla(db, "show", ids[0])
    ok = (_clean(runs) and _clean(show) and "1.5e+308" in runs.stdout and "1.6e+308" in runs.stdout
          and not LONG_NUMBER.search(runs.stdout + show.stdout))
    return ok, f"runs exit {runs.returncode}, show exit {show.returncode}: {runs.stdout.splitlines()[-1][:90]}"


def _group_report(d: Path, values: tuple[float, float], shown: str) -> tuple[bool, str]:
    db, ids = _imported(d, values)
    out = d / "groups.html"
    res = subprocess.run([sys.executable, "-m", "rla_gui.report", *ids, "--db", str(db), "--group-by", "run:group",
                          "--format", "html", "--out", str(out)], capture_output=True, text=True, timeout=180,
                         cwd=ROOT)
    ok = _clean(res) and out.exists() and shown in out.read_text("utf-8")
    return ok, f"exit {res.returncode}: {last_line(res.stderr or res.stdout)}"


def group_report_near_max(d: Path) -> tuple[bool, str]:
    return _group_report(d, NEAR_MAX, "1.55e+308 ± 7.07e+306")


def group_report_opposite(d: Path) -> tuple[bool, str]:
    return _group_report(d, OPPOSITE, "0.000 ± 1.41e+200")


def comparison_report_near_max(d: Path) -> tuple[bool, str]:
    db, ids = _imported(d, NEAR_MAX)
    res = rla(db, "export", *ids, "--format", "html", "--out", str(d / "cmp.html"), timeout=180)
    ok = _clean(res) and "Cannot set range" not in res.stderr and (d / "cmp.html").exists()
    return ok, f"exit {res.returncode}: {last_line(res.stderr or res.stdout)}"


def _console(db: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(Path(__file__).resolve()), "console", str(db), *args],
                          capture_output=True, text=True, timeout=180, cwd=ROOT,
                          env={**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen"})


def console_groups_and_compares(d: Path) -> tuple[bool, str]:
    db, _ = _imported(d, NEAR_MAX)
    res = _console(db, "run:group", "field:" + DIFFICULTY)
    ok = _clean(res) and "shown 1.55e+308 ± 7.07e+306; compared 1 group" in res.stdout
    return ok, f"exit {res.returncode}: {last_line(res.stdout if ok else res.stderr or res.stdout)}"


def console_config_integer_of_400_digits(d: Path) -> tuple[bool, str]:
    db, ids = _imported(d, (0.5, 0.6))
    with sqlite3.connect(db) as conn:      # the hand edit: policy.lam of the first run
        (text,) = conn.execute("SELECT config_json FROM runs WHERE id = ?", [ids[0]]).fetchone()
        config = json.loads(text)
        config["policy"]["lam"] = "@@"
        conn.execute("UPDATE runs SET config_json = ? WHERE id = ?", [json.dumps(config).replace('"@@"', HUGE_INT),
                                                                      ids[0]])
    res = _console(db, "config:policy.lam", "config:policy.lam")
    ok = _clean(res) and "refreshed" in res.stdout and "1e+400" in res.stdout
    return ok, f"exit {res.returncode}: {last_line(res.stdout if ok else res.stderr or res.stdout)}"


CASES = [runs_and_show_print_numbers, group_report_near_max, group_report_opposite, comparison_report_near_max,
         console_groups_and_compares, console_config_integer_of_400_digits]


def campaign(root: Path, verdict: Verdict, say=print) -> dict:
    return run_cases("numbers", "valid but extreme numbers", CASES, root, verdict, say)


# -- the console child --------------------------------------------------------------------------
def console_main(db: str, group_by: str, column: str) -> int:
    """The real main window on `db`: History shows `column` and groups by `group_by`, the first
    group is compared, History refreshes once more; prints what the group's row showed. Any
    exception, guard report or Qt warning is on stderr, and the exit status is 1."""
    import asyncio
    import logging
    import os

    import qasync
    from PySide6 import QtCore

    from rla_gui.app import build_app
    from rla_gui.main_window import MainWindow
    from rla_gui.panels.group_comparison import GroupComparisonPanel

    problems: list[str] = []
    sys.excepthook = lambda t, v, tb: problems.append(f"Traceback: uncaught {t.__name__}: {v}")

    class Caught(logging.Handler):       # what the guard kept from Qt: a failure all the same
        def emit(self, record: logging.LogRecord) -> None:
            problems.append(record.getMessage())
    logging.getLogger("rla_gui.guard").addHandler(Caught())
    app = build_app([])
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    loop.set_exception_handler(lambda _l, ctx: problems.append(f"asyncio: {ctx.get('message')}"))
    settings = QtCore.QSettings(os.path.join(tempfile.mkdtemp(), "c.ini"), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(Path(db), settings=settings)
    win.ask_close_choice = lambda run_id: "detach"      # type: ignore[method-assign]
    win.show()
    history = win.history

    async def until(predicate, what: str, timeout: float = 60.0):
        for _ in range(int(timeout / 0.05)):
            if value := predicate():
                return value
            await asyncio.sleep(0.05)
        raise TimeoutError(what)

    async def scenario() -> str:
        await until(lambda: len(history.model.rows) == 2, "the runs")
        history.set_columns([column] if not column.startswith("field:") else [])
        col = next(i for i, c in enumerate(history.model.columns) if c.id == column)
        history.set_group_by(group_by)

        def filled() -> bool:
            return column.startswith("field:") or all(r.get("columns") for r in history.model.rows)
        await until(lambda: history.groups.groups and filled() and history.groups.index(0, 0).data(), "the groups")
        await win.refresh_history()
        shown = [history.groups.index(i, col if group_by != column else 0).data()
                 for i in range(history.groups.rowCount())]
        history.tree.selectionModel().select(history.groups.index(0, 0),
                                             QtCore.QItemSelectionModel.SelectionFlag.Select
                                             | QtCore.QItemSelectionModel.SelectionFlag.Rows)
        history.buttons["Compare"].click()
        panel = await until(lambda: next((v for v in win.comparisons if isinstance(v, GroupComparisonPanel)), None),
                            "the group comparison")
        for plot in panel.plots:
            plot.grab()
        return f"shown {'; '.join(map(str, shown))}; compared {len(panel.groups)} group; refreshed"

    with loop:
        try:
            print(loop.run_until_complete(scenario()))
        except Exception as e:
            problems.append(f"Traceback: {type(e).__name__}: {e}")
        win.close()
        if win.finished is not None:
            loop.run_until_complete(asyncio.wait_for(win.finished, 30))
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["console"]:
        sys.exit(console_main(*sys.argv[2:5]))
    sys.exit(run_standalone(campaign, "numbers"))
