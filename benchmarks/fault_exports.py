"""Fault class "exports": an export aimed at the database it reads, chart keys that look like
options, and Ctrl-C at every moment of an export, against real `rla` processes (and the
console's own export command, the client it runs exports through).

    .venv/bin/python benchmarks/fault_exports.py

The guarantees: the database, its -wal, -shm and -journal, its checkpoint folder and anything in
it (by a symbolic link, a hard link or its own name) are refused with --force in every format,
before any work, the database left byte for byte and a live engine's readers unaffected; any
metric key reaches the report as its chart; a bad --chart or --out is one line, exit 2;
`rla ablate --out /dev/full` creates nothing; an interrupted export says one line, no traceback,
and the truth about which files it wrote.
"""
from __future__ import annotations

import asyncio
import fcntl
import hashlib
import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_support import ROOT, Engine, Verdict, last_line, rla, run_cases, run_standalone, tiny

FORMATS = ("json", "csv", "html")
HOSTILE_KEYS = ["-x", "--", "a,b", " edge ", "--help", "ключ/λ"]
RECORDED = ROOT / "tests" / "data" / "recorded_arithmetic.json"


def _refused(res) -> bool:
    return res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "-"
            for p in sorted(folder.rglob("*"))}


def _trained(d: Path) -> Path:
    """A database with a real run "r" of two iterations and its checkpoint folder: made once per
    campaign, copied into each case's folder."""
    source = d.parent / "_trained"
    if not (source / "h.db").exists():
        source.mkdir(exist_ok=True)
        res = rla(source / "h.db", "run", *tiny(), "--iterations", "2", "--run-id", "r")
        assert res.returncode == 0, res.stderr
    shutil.copytree(source, d, dirs_exist_ok=True)
    return d / "h.db"


def _refused_in_every_format(d: Path, target) -> tuple[bool, str]:
    db = _trained(d)
    out = target(d, db)
    before = _digest(d)
    lines = []
    ok = True
    for fmt in FORMATS:
        res = rla(db, "export", "r", "--format", fmt, "--out", str(out), "--force")
        ok &= _refused(res)
        lines.append(f"{fmt}: {last_line(res.stderr)[-70:]}")
    ok &= _digest(d) == before and rla(db, "runs").returncode == 0
    return ok, "; ".join(lines)


def out_is_the_database(d: Path) -> tuple[bool, str]:
    return _refused_in_every_format(d, lambda d, db: db)


def out_is_the_wal(d: Path) -> tuple[bool, str]:
    return _refused_in_every_format(d, lambda d, db: Path(f"{db}-wal"))


def out_is_the_shm(d: Path) -> tuple[bool, str]:
    return _refused_in_every_format(d, lambda d, db: Path(f"{db}-shm"))


def out_is_the_journal(d: Path) -> tuple[bool, str]:
    return _refused_in_every_format(d, lambda d, db: Path(f"{db}-journal"))


def out_is_a_symlink_to_the_database(d: Path) -> tuple[bool, str]:
    def target(d: Path, db: Path) -> Path:
        (d / "report.json").symlink_to(db)
        return d / "report.json"
    return _refused_in_every_format(d, target)


def out_is_a_hard_link_to_the_database(d: Path) -> tuple[bool, str]:
    def target(d: Path, db: Path) -> Path:
        os.link(db, d / "report.json")
        return d / "report.json"
    return _refused_in_every_format(d, target)


def out_is_the_checkpoint_folder(d: Path) -> tuple[bool, str]:
    return _refused_in_every_format(d, lambda d, db: d / "checkpoints")


def out_is_a_checkpoint_file(d: Path) -> tuple[bool, str]:
    def target(d: Path, db: Path) -> Path:
        return sorted((d / "checkpoints" / "r").glob("it-*.pt"))[-1]
    return _refused_in_every_format(d, target)


def out_is_the_wal_beside_a_live_engine(d: Path) -> tuple[bool, str]:
    db = _trained(d)
    engine = Engine(db, "run", *tiny(), "--iterations", "30", "--run-id", "live")
    try:
        deadline = time.monotonic() + 90
        while engine.progress() < 2 and engine.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        res = rla(db, "export", "r", "--format", "json", "--out", f"{db}-wal", "--force")
        reader = rla(db, "runs")
    finally:
        code = engine.wait(timeout=180)
    ok = _refused(res) and reader.returncode == 0 and "I/O" not in reader.stderr and code == 0
    return ok, f"export: {last_line(res.stderr)[-60:]}; reader exit {reader.returncode}; engine exit {code}"


def hostile_keys_bundle() -> dict:
    """The recorded run as "h", with a metric of every key in HOSTILE_KEYS (tests use it too)."""
    bundle = json.loads(RECORDED.read_text("utf-8"))
    bundle["run"]["id"] = "h"
    iterations = sorted({m["iteration"] for m in bundle["metrics"]})
    bundle["metrics"] += [{"iteration": i, "key": k, "value": float(i), "t": 1.0e9 + i}
                          for k in HOSTILE_KEYS for i in iterations]
    return bundle


def _imported_with_hostile_keys(d: Path) -> Path:
    (d / "hostile.json").write_text(json.dumps(hostile_keys_bundle()), "utf-8")
    db = d / "keys.db"
    assert rla(db, "import", str(d / "hostile.json")).returncode == 0
    return db


def added_headings(report: Path) -> list[str]:
    """The headings of a report's added charts, as a reader sees them."""
    text = report.read_text("utf-8")
    added = text[text.index("Added charts"):text.index("Configuration")]
    return [html.unescape(h) for h in re.findall(r"<h3>(.*?)</h3>", added)]


def console_export(db: Path, run_id: str, out: Path, charts: list[list[str]]) -> str:
    """An HTML export through the client the console exports with (File ▸ Export…), with added
    charts; its line, or EngineError (tests use it too)."""
    from rla_engine.client import EngineClient

    async def export() -> str:
        client = EngineClient(db)
        try:
            return await client.export([run_id], "html", out, force=False, charts=charts)
        finally:
            await client.close()
    return asyncio.run(export())


def hostile_chart_keys_from_the_console(d: Path) -> tuple[bool, str]:
    db, out = _imported_with_hostile_keys(d), d / "console.html"
    line = console_export(db, "h", out, [[k] for k in HOSTILE_KEYS])
    headings = added_headings(out)
    return headings == HOSTILE_KEYS, f"{line[:50]}; headings {headings}"


def hostile_chart_keys_from_the_command_line(d: Path) -> tuple[bool, str]:
    db, out = _imported_with_hostile_keys(d), d / "cli.html"
    res = rla(db, "export", "h", "--format", "html", "--out", str(out),
              *[a for k in HOSTILE_KEYS for a in ("--chart-json", json.dumps([k]))])
    headings = added_headings(out) if out.exists() else []
    return res.returncode == 0 and headings == HOSTILE_KEYS, f"exit {res.returncode}; headings {headings}"


def chart_is_end_of_options(d: Path) -> tuple[bool, str]:
    db = _imported_with_hostile_keys(d)
    res = rla(db, "export", "h", "--format", "html", "--out", str(d / "x.html"), "--chart=--")
    return _refused(res) and not (d / "x.html").exists(), last_line(res.stderr)


def out_is_empty(d: Path) -> tuple[bool, str]:
    db = _imported_with_hostile_keys(d)
    results = [rla(db, "export", "h", "--format", fmt, "--out", "") for fmt in ("json", "csv", "parquet", "html")]
    return all(_refused(r) and "--out" in r.stderr for r in results), last_line(results[-1].stderr)


ABLATE = ["ablate", "--preset", "tiny", "--seeds", "0", "--budget", "1600", "--arms", "outcome"]


def ablate_out_is_dev_full(d: Path) -> tuple[bool, str]:
    res = rla(d / "new.db", *ABLATE, "--out", "/dev/full")
    return _refused(res) and list(d.iterdir()) == [], f"{last_line(res.stderr)}; left {os.listdir(d)}"


def ablate_out_is_the_database(d: Path) -> tuple[bool, str]:
    db = _trained(d)
    before = _digest(d)
    res = rla(db, *ABLATE, "--out", str(db), "--force")
    return _refused(res) and _digest(d) == before, last_line(res.stderr)


def _export_process(db: Path, fmt: str, out: Path) -> subprocess.Popen:
    """`rla export` in a session of its own, as a terminal runs it: Ctrl-C goes to the group."""
    return subprocess.Popen([sys.executable, "-m", "rla_engine.cli", "export", "r", "--db", str(db), "--format", fmt,
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT, start_new_session=True)


def _one_truthful_line(proc: subprocess.Popen, outs: list[Path]) -> tuple[bool, str]:
    stdout, stderr = proc.communicate(timeout=120)
    lines = stderr.strip().splitlines()
    if proc.returncode == 0:
        return "Traceback" not in stderr and all(p.exists() for p in outs), f"finished first: {last_line(stdout)}"
    if proc.returncode == -signal.SIGINT:
        # in Python's own startup (site, the import system: no project frame in its traceback), or
        # on its way out after the work: the project had no line to say
        done = all(p.exists() for p in outs) and stdout.startswith("wrote")
        ok = "rla_engine" not in stderr and (done or not any(p.exists() for p in outs))
        return ok, f"killed by SIGINT{' in startup' if lines else ''}; {last_line(stdout)}"
    written = [p for p in outs if p.exists()]
    truthful = (all(str(p) in stderr for p in written) if written else "nothing written" in stderr
                or stderr.strip() == "rla: interrupted")
    ok = proc.returncode == 130 and len(lines) == 1 and "Traceback" not in stderr and truthful
    return ok, f"exit {proc.returncode}: {last_line(stderr)}"


def interrupt_during_imports(db: Path, out: Path, module: str) -> tuple[int, list[str]]:
    """`rla export` to `out`, Ctrl-C'd right after Python says (`-X importtime`, on stderr) that
    `module` is imported: the exit status and the lines the command said. The pipe is made one
    page small and left unread from then on, so the command blocks on its next import line and
    cannot finish before the signal lands: the moment is hit every time, never passed by."""
    proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "rla_engine.cli", "export", "r", "--db",
                             str(db), "--format", "json", "--out", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, start_new_session=True)
    assert proc.stderr is not None
    fcntl.fcntl(proc.stderr.fileno(), fcntl.F_SETPIPE_SZ, 4096)
    lines = []
    for line in proc.stderr:
        lines.append(line.rstrip("\n"))
        if line.startswith("import time:") and line.rsplit("|", 1)[-1].strip() == module:
            break
    os.killpg(proc.pid, signal.SIGINT)
    _, rest = proc.communicate(timeout=120)
    said = [x for x in lines + rest.splitlines() if not x.startswith("import time:")]
    return proc.returncode, said


# modules `rla export` imports after its Ctrl-C line is set up: the first, one in the middle, the last
# before main() starts, and the first that the command imports itself (cli.py imports the store
# late). Each is followed by more than a pipe's page of import lines, so the command blocks on one
# of them (in the imports, or in the command) until the signal lands.
LATE_IMPORTS = ("rla_engine.config", "rla_engine.export", "rla_engine.text", "rla_engine.bundle")


def ctrl_c_while_starting(d: Path) -> tuple[bool, str]:
    db = _trained(d)
    results = []
    for module in LATE_IMPORTS:
        out = d / f"{module}.json"
        code, said = interrupt_during_imports(db, out, module)
        results.append((code == 130 and said in (["rla: interrupted"], ["rla export: interrupted; nothing written"])
                        and not out.exists(), f"{module}: {code} {said[-1:] if said else ''}"))
    return all(ok for ok, _ in results), "; ".join(what for _, what in results)


def ctrl_c_while_the_renderer_starts(d: Path) -> tuple[bool, str]:
    import psutil
    db, out = _trained(d), d / "r.html"
    proc = _export_process(db, "html", out)
    deadline = time.monotonic() + 60
    while not psutil.Process(proc.pid).children() and time.monotonic() < deadline:
        time.sleep(0.002)
    os.killpg(proc.pid, signal.SIGINT)
    return _one_truthful_line(proc, [out])


def ctrl_c_once_the_report_is_written(d: Path) -> tuple[bool, str]:
    db, out = _trained(d), d / "r.html"
    proc = _export_process(db, "html", out)
    deadline = time.monotonic() + 120
    while not out.exists() and time.monotonic() < deadline:
        time.sleep(0.001)
    os.killpg(proc.pid, signal.SIGINT)
    return _one_truthful_line(proc, [out])


CASES = [out_is_the_database, out_is_the_wal, out_is_the_shm, out_is_the_journal, out_is_a_symlink_to_the_database,
         out_is_a_hard_link_to_the_database, out_is_the_checkpoint_folder, out_is_a_checkpoint_file,
         out_is_the_wal_beside_a_live_engine, hostile_chart_keys_from_the_console,
         hostile_chart_keys_from_the_command_line, chart_is_end_of_options, out_is_empty, ablate_out_is_dev_full,
         ablate_out_is_the_database, ctrl_c_while_starting, ctrl_c_while_the_renderer_starts,
         ctrl_c_once_the_report_is_written]


def campaign(root: Path, verdict: Verdict, say=print) -> dict:
    root.mkdir(parents=True, exist_ok=True)
    return run_cases("exports", "exports aimed at the database, hostile chart keys, Ctrl-C", CASES, root, verdict,
                     say)


if __name__ == "__main__":
    sys.exit(run_standalone(campaign, "exports"))
