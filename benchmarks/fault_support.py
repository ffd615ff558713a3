"""What the fault benchmarks (faults.py, soak.py) and their small versions (tests/faults) share:
engines as real `rla` subprocesses, what the database says (integrity, half iterations, metrics
to compare), where a stopped engine was (read from /proc, never from hooks in the engine), a
disk that can be filled, and the real console in a child process that reports its event-loop
lateness, the errors a user would see, its memory and how many points it holds.

Run as a script it is that console child:
    python benchmarks/fault_support.py console --db DB --out OUT.json --seconds S [--run ID | --follow]
"""
from __future__ import annotations

import argparse
import array
import contextlib
import json
import os
import re
import resource
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TINY = ["--preset", "tiny"]          # resources/presets/tiny.toml
# what a lock error looks like wherever it surfaces (SQLite's messages, an exception's name)
LOCK_TEXT = re.compile(r"database is locked|database table is locked|SQLITE_BUSY|sqlite3\.OperationalError: locked",
                       re.I)
PROGRESS = re.compile(r"^it\s+(\d+)/\d+")
TMP_NAME = re.compile(r"^\.it-\d+\.pt\.tmp$")
MACHINE_PREFIXES = ("perf/", "sys/")     # rla_engine.metrics.MACHINE_PREFIXES, read below when importable
try:
    from rla_engine.metrics import MACHINE_PREFIXES
except Exception:   # the harness must report a broken engine, not die importing it
    pass


def tiny(*sets: str) -> list[str]:
    return [*TINY, *[a for s in sets for a in ("--set", s)]]


# -- processes ------------------------------------------------------------------------------
class Engine:
    """One `rla …` process; two threads read its output line by line, with the time of each."""

    def __init__(self, db: Path, *args: str, env: dict | None = None, preexec=None):
        self.args = args
        self.lines: list[tuple[float, str, str]] = []
        self.proc = subprocess.Popen([sys.executable, "-m", "rla_engine.cli", *args, "--db", str(db)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
                                     preexec_fn=preexec, errors="replace")
        self.started = time.monotonic()
        self._readers = [threading.Thread(target=self._read, args=(s, n), daemon=True)
                         for s, n in ((self.proc.stdout, "out"), (self.proc.stderr, "err"))]
        for t in self._readers:
            t.start()

    def _read(self, stream, name: str) -> None:
        for line in stream:
            self.lines.append((time.monotonic(), name, line.rstrip("\n")))

    @property
    def pid(self) -> int:
        return self.proc.pid

    def progress(self) -> int:
        """The last iteration this process printed (0 before its first)."""
        its = [int(m.group(1)) for _, s, line in list(self.lines) if s == "out" and (m := PROGRESS.match(line))]
        return its[-1] if its else 0

    def output(self) -> str:
        return "\n".join(f"[{s}] {line}" for _, s, line in list(self.lines))

    def wait(self, timeout: float | None = None) -> int:
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            self.lines.append((time.monotonic(), "err", f"[harness] killed after {timeout:.0f} s timeout"))
        for t in self._readers:
            t.join(timeout=5)
        return rc

    def alive(self) -> bool:
        return self.proc.poll() is None


def rla(db: Path, *args: str, timeout: float = 120, preexec=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rla_engine.cli", *args, "--db", str(db)], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT, preexec_fn=preexec, errors="replace",
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


# -- where a process is, seen from outside --------------------------------------------------
def proc_state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def sigstop(pid: int, timeout: float = 30.0) -> bool:
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc_state(pid) in ("T", "t", "gone", "Z"):
            return True
        time.sleep(0.0005)
    return False


def _locks_on(path: Path) -> list[list[str]]:
    """The locks held on `path`'s file, as /proc/locks lists them (each line split: type, access,
    pid, device:inode, start, …); locks waited for ("->") left out. Seen from outside, never by
    trying a lock (which would make its holder's own try fail)."""
    try:
        ino = os.stat(path).st_ino
        with open("/proc/locks") as f:
            text = f.read()
    except OSError:
        return []
    rows = (line.split() for line in text.splitlines())
    return [p for p in rows if len(p) >= 8 and "->" not in p and p[5].rsplit(":", 1)[-1] == str(ino)]


def write_lock_holders(shm: Path) -> set[int]:
    """Pids holding SQLite's WAL write lock on this database: an exclusive POSIX lock on byte
    120 of the -shm file (WALINDEX_LOCK_OFFSET + WAL_WRITE_LOCK)."""
    return {int(p[4]) for p in _locks_on(shm) if p[1] == "POSIX" and p[3] == "WRITE" and p[6] == "120"}


def flock_holders(path: Path) -> set[int]:
    """Pids holding a BSD lock (flock) on `path`: a run's engine.lock."""
    return {int(p[4]) for p in _locks_on(path) if p[1] == "FLOCK"}


def open_tmp(pid: int, folder: Path) -> bool:
    """Does the process hold a temporary checkpoint file of `folder` open?"""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(folder)) and TMP_NAME.match(os.path.basename(target)):
            return True
    return False


def tmp_files(folder: Path) -> list[str]:
    try:
        return sorted(p.name for p in folder.iterdir() if TMP_NAME.match(p.name))
    except OSError:
        return []


def wal_uncommitted_frames(wal: Path) -> int:
    """Frames at the end of the WAL, after its last commit frame, that carry the WAL's current
    salts: a transaction that was being written when the writer died. (SQLite ignores them on
    recovery; they show that the kill landed inside the commit's write.)"""
    try:
        data = wal.read_bytes()
    except OSError:
        return 0
    if len(data) < 32:
        return 0
    page = struct.unpack(">I", data[8:12])[0]
    salts = data[16:24]
    n, last_commit, pos = 0, 0, 32
    while pos + 24 <= len(data):
        if data[pos + 8:pos + 16] != salts:
            break
        n += 1
        if struct.unpack(">I", data[pos + 4:pos + 8])[0]:   # "database size after commit" ≠ 0
            last_commit = n
        pos += 24 + page
    return n - last_commit


# -- what the database says -----------------------------------------------------------------
def connect(db: Path, timeout: float = 60.0) -> sqlite3.Connection:
    conn = sqlite3.connect(str(db), timeout=timeout, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
    return conn


def integrity(db: Path) -> str:
    """"ok", or what is wrong (also when SQLite cannot read the file at all)."""
    try:
        conn = connect(db)
        try:
            return "; ".join(r[0] for r in conn.execute("PRAGMA integrity_check"))
        finally:
            conn.close()
    except sqlite3.DatabaseError as e:
        return f"unreadable: {e}"


def run_ids(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT id FROM runs ORDER BY created_at")]


def half_iterations(conn: sqlite3.Connection, run_id: str, since: int = -1) -> list[str]:
    """Violations of "an iteration exists iff its `iterations` row exists", read in one snapshot.

    Every row the engine writes, inside an iteration's commit or outside it (rewound,
    resumed_from_checkpoint, command events, stopped/completed/failed, task rows of an override),
    is stamped with an iteration; none may be later than the last committed one, iterations are
    contiguous, and each committed iteration ≥ 1 has its metrics. `since` limits the per-iteration
    checks to a tail (a run with a million stored iterations)."""
    out: list[str] = []
    conn.execute("BEGIN")
    try:
        lo, last, n = conn.execute("SELECT min(iteration), max(iteration), count(*) FROM iterations "
                                   "WHERE run_id = ? AND iteration > ?", [run_id, since]).fetchone()
        whole_last = conn.execute("SELECT max(iteration) FROM iterations WHERE run_id = ?", [run_id]).fetchone()[0]
        last_all = -1 if whole_last is None else whole_last
        if n and last - lo + 1 != n:
            out.append(f"{run_id}: iterations not contiguous ({n} rows for {lo}..{last})")
        for what, sql in (("metrics", "SELECT max(iteration) FROM metrics WHERE run_id = ?"),
                          ("events", "SELECT max(iteration) FROM events WHERE run_id = ?"),
                          ("tasks created", "SELECT max(created_iteration) FROM tasks WHERE run_id = ?"),
                          ("tasks decided", "SELECT max(decided_iteration) FROM tasks WHERE run_id = ?")):
            top = conn.execute(sql, [run_id]).fetchone()[0]
            if top is not None and top > last_all:
                kinds = ""
                if what == "events":
                    kinds = " (" + ", ".join(sorted({r[0] for r in conn.execute(
                        "SELECT kind FROM events WHERE run_id = ? AND iteration > ?", [run_id, last_all])})) + ")"
                out.append(f"{run_id}: {what} at iteration {top} > last committed {last_all}{kinds}")
        orphans = conn.execute(
            "SELECT count(*) FROM (SELECT DISTINCT iteration FROM metrics WHERE run_id = ? AND iteration > ?) m "
            "WHERE NOT EXISTS (SELECT 1 FROM iterations i WHERE i.run_id = ? AND i.iteration = m.iteration)",
            [run_id, since, run_id]).fetchone()[0]
        if orphans:
            out.append(f"{run_id}: metrics of {orphans} iteration(s) without an iterations row")
        bare = conn.execute(
            "SELECT count(*) FROM iterations i WHERE run_id = ? AND iteration >= 1 AND iteration > ? AND NOT EXISTS "
            "(SELECT 1 FROM metrics m WHERE m.run_id = i.run_id AND m.iteration = i.iteration)",
            [run_id, since]).fetchone()[0]
        if bare:
            out.append(f"{run_id}: {bare} committed iteration(s) without metrics")
    finally:
        conn.execute("ROLLBACK")
    return out


def comparable(conn: sqlite3.Connection, run_id: str) -> dict[tuple[int, str], float]:
    """The run's metrics but the machine's measurements (timings, system load): what a rerun repeats."""
    skip = "".join(" AND key NOT LIKE ?" for _ in MACHINE_PREFIXES)
    return {(it, k): v for it, k, v in conn.execute(
        f"SELECT iteration, key, value FROM metrics WHERE run_id = ?{skip}",
        [run_id, *(prefix + "%" for prefix in MACHINE_PREFIXES)])}


def compare(ref: dict, got: dict) -> tuple[int, int, str]:
    """(values compared, values equal, first difference) of two runs' comparable metrics."""
    keys = set(ref) | set(got)
    equal = sum(1 for k in keys if k in ref and k in got and ref[k] == got[k])
    diff = next((f"{k}: {ref.get(k)!r} vs {got.get(k)!r}" for k in sorted(keys)
                 if ref.get(k) != got.get(k)), "")
    return len(keys), equal, diff


def run_row(conn: sqlite3.Connection, run_id: str) -> dict:
    cur = conn.execute("SELECT * FROM runs WHERE id = ?", [run_id])
    row = cur.fetchone()
    return dict(zip([d[0] for d in cur.description], row)) if row else {}


def committed(conn: sqlite3.Connection, run_id: str) -> int:
    r = conn.execute("SELECT max(iteration) FROM iterations WHERE run_id = ?", [run_id]).fetchone()[0]
    return -1 if r is None else r


def wait_for_run(db: Path, name: str, engine: Engine | None = None, timeout: float = 90) -> str | None:
    """The id of the run called `name`, once its row exists (None if the process ended first)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if db.exists():
            try:
                conn = connect(db, timeout=5)
                try:
                    row = conn.execute("SELECT id FROM runs WHERE name = ?", [name]).fetchone()
                finally:
                    conn.close()
                if row:
                    return row[0]
            except sqlite3.Error:
                pass
        if engine is not None and not engine.alive():
            return None
        time.sleep(0.02)
    return None


# -- a disk that can be filled ----------------------------------------------------------------
def mount_tmpfs(path: Path, size: str) -> bool:
    """A tmpfs of `size` on `path` (root, and a kernel that lets us); False when not possible."""
    path.mkdir(parents=True, exist_ok=True)
    if os.environ.get("RLA_FAULTS_DISK") == "rlimit":
        return False
    try:
        res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return res.returncode == 0 and os.path.ismount(path)


def umount(path: Path) -> None:
    if os.path.ismount(path):
        if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(folder: Path) -> int:
    """Write a filler file until the filesystem says ENOSPC; return its size."""
    written = 0
    with open(folder / ".filler", "ab", buffering=0) as f:
        for chunk in (1 << 20, 1 << 16, 1 << 12):
            block = bytes(chunk)
            while True:
                try:
                    n = f.write(block)
                except OSError:
                    break
                written += n or 0
                if not n:
                    break
    return written


def fsize_limit(limit: int):
    """A preexec_fn: cap every file this process writes at `limit` bytes (EFBIG, not SIGXFSZ)."""
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


# -- figures --------------------------------------------------------------------------------
def pct(xs, q: float) -> float:
    if not len(xs):
        return float("nan")
    s = sorted(xs)
    return float(s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))])


def slope_per_min(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, value) samples, per minute."""
    if len(samples) < 2:
        return float("nan")
    n = len(samples)
    mt = sum(t for t, _ in samples) / n
    mv = sum(v for _, v in samples) / n
    den = sum((t - mt) ** 2 for t, _ in samples)
    return 60 * sum((t - mt) * (v - mv) for t, v in samples) / den if den else float("nan")


def table(title: str, rows: list[tuple], head: tuple | None = None) -> str:
    rows = [tuple(str(c) for c in r) for r in ([head] if head else []) + rows]
    widths = [max(len(r[i]) for r in rows if i < len(r)) for i in range(max(map(len, rows), default=0))]
    lines = [title]
    for j, r in enumerate(rows):
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        if head and j == 0:
            lines.append("  " + "  ".join("-" * w for w in widths))
    return "\n".join(lines)


UNREADABLE = "database readable and whole"


class Verdict:
    """Violations per guarantee: what a benchmark prints last and turns into its exit code."""

    def __init__(self) -> None:
        self.checked: dict[str, int] = {}
        self.violations: dict[str, list[str]] = {}

    def check(self, guarantee: str, ok: bool, what: str) -> bool:
        self.checked[guarantee] = self.checked.get(guarantee, 0) + 1
        self.violations.setdefault(guarantee, [])
        if not ok:
            self.violations[guarantee].append(what)
        return ok

    @contextlib.contextmanager
    def reading(self, what: str):
        """A database SQLite cannot read is a violation to report, not a harness crash."""
        try:
            yield
        except sqlite3.DatabaseError as e:
            self.check(UNREADABLE, False, f"{what}: {type(e).__name__}: {e}")

    def failed(self, prefix: str = "") -> list[str]:
        return [v for g, vs in self.violations.items() if g.startswith(prefix) for v in vs]

    def summary(self) -> str:
        rows = [(g, self.checked[g], len(vs), (vs[0][:110] if vs else "")) for g, vs in self.violations.items()]
        return table("guarantees", rows, ("guarantee", "checks", "violations", "first violation"))

    def report(self, took: str = "", most: int = 40) -> int:
        """Print the summary and the violations; return the exit code (1 when any)."""
        print(self.summary())
        bad = self.failed()
        print(f"{len(bad)} violation(s){took}" + (":" if bad else ""))
        for line in bad[:most]:
            print("  - " + line)
        return 1 if bad else 0


def run_cases(label: str, title: str, cases: Sequence[Callable[[Path], tuple[bool, str]]], root: Path,
              verdict: Verdict, say=print) -> dict:
    """A class's campaign of one-folder cases (`case(folder) -> (held, what happened)`): each case
    in its own folder under `root`, checked as the guarantee "<label>: <case name>", a table of
    them said; {"tried", "held"}. A case that raises has not held: the harness reports, it does
    not die."""
    rows = []
    for case in cases:
        d = root / case.__name__
        d.mkdir(parents=True)
        try:
            ok, what = case(d)
        except Exception as e:
            ok, what = False, f"{type(e).__name__}: {e}"
        name = case.__name__.replace("_", " ")
        verdict.check(f"{label}: {name}", ok, what)
        rows.append((name, 1, int(ok), what[:90]))
    say(table(f"{label}: {title}", rows, ("attack", "tried", "held", "what happened")))
    return {"tried": len(rows), "held": sum(r[2] for r in rows)}


def run_standalone(campaign: Callable[..., dict], name: str) -> int:
    """A class's module run by itself: its campaign in a temporary folder from the project root;
    the exit code (1 when a guarantee was violated) with how long it took."""
    os.chdir(ROOT)
    verdict, started = Verdict(), time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"rla-{name}-") as tmp:
        campaign(Path(tmp), verdict)
    return verdict.report(took=f" in {time.monotonic() - started:.0f} s")


# -- the console, in a child process ----------------------------------------------------------
def start_console(db: Path, out: Path, seconds: float, run: str | None = None, follow: bool = False,
                  every: float = 2.0) -> subprocess.Popen:
    args = [sys.executable, str(Path(__file__).resolve()), "console", "--db", str(db), "--out", str(out),
            "--seconds", str(seconds), "--every", str(every)]
    args += ["--run", run] if run else (["--follow"] if follow else [])
    return subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONUNBUFFERED": "1"})


def stop_console(proc: subprocess.Popen, out: Path, timeout: float = 60) -> str:
    """Ask the console child to write its last report and leave; return its output."""
    Path(str(out) + ".stop").touch()
    try:
        text, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        text, _ = proc.communicate()
    return text or ""


def read_console(out: Path) -> dict:
    try:
        return json.loads(out.read_text())
    except (OSError, ValueError):
        return {}


def queued_ms_reader() -> Callable[[], float]:
    """A reader of the calling thread's total time waiting for a CPU, in ms (Linux: the second
    field of /proc/thread-self/schedstat); where there is none, a reader that always says 0."""
    try:
        fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
        os.pread(fd, 128, 0)
    except OSError:
        return lambda: 0.0
    return lambda: int(os.pread(fd, 128, 0).split()[1]) / 1e6


def console_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="fault_support.py console")
    ap.add_argument("--db", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--run")
    ap.add_argument("--follow", action="store_true", help="open the newest live run, and the next when it ends")
    ap.add_argument("--every", type=float, default=2.0)
    a = ap.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import asyncio
    import tempfile

    import qasync
    from PySide6 import QtCore, QtWidgets

    from rla_gui.app import build_app
    from rla_gui.main_window import MainWindow

    errors: list[str] = []
    qt_messages: list[str] = []

    def error(text: str) -> None:
        if len(errors) < 200:
            errors.append(text[:500])

    def on_qt(mode, context, text):
        if len(qt_messages) < 50:
            qt_messages.append(text[:300])
        if LOCK_TEXT.search(text) or "Traceback" in text:
            error(f"Qt message: {text}")
    QtCore.qInstallMessageHandler(on_qt)
    sys.excepthook = lambda t, v, tb: error(f"uncaught {t.__name__}: {v}")
    app = build_app([])
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    loop.set_exception_handler(lambda _l, ctx: error(f"asyncio: {ctx.get('message')} {ctx.get('exception')!r}"))
    settings = QtCore.QSettings(str(Path(tempfile.mkdtemp()) / "console.ini"), QtCore.QSettings.Format.IniFormat)
    class DetachingWindow(MainWindow):
        def ask_close_choice(self, run_id: str) -> str:
            return "detach"         # no modal dialog: the harness stops the engine itself

    win = DetachingWindow(Path(a.db), settings=settings)
    win.resize(1400, 900)
    win.show()
    win.controller.engine_failed.connect(
        lambda run_id, message: error(f"error dialog (engine failed) for {run_id}: {last_line(message)}"))

    def on_status(message: str) -> None:
        if message.lower().startswith("error"):
            error(f"status bar: {message}")
    win.statusBar().messageChanged.connect(on_status)

    t0 = time.monotonic()
    late_t, late = array.array("d"), array.array("d")
    # the lateness less the GUI thread's time waiting for a CPU: what the console itself spent
    # (its work, a wait on a lock), whatever else the machine runs
    own_late = array.array("d")
    queued = queued_ms_reader()
    last = [time.perf_counter(), queued()]

    stalls: list[tuple[float, float]] = []     # (wall-clock time, ms) of ticks more than 20 ms late

    def tick():
        now, in_queue = time.perf_counter(), queued()
        late_t.append(time.monotonic() - t0)
        ms = max(0.0, (now - last[0]) * 1000 - 5.0)
        late.append(ms)
        own_late.append(max(0.0, ms - (in_queue - last[1])))
        last[0], last[1] = now, in_queue
        if ms > 20 and len(stalls) < 5000:
            stalls.append((time.time(), ms))
    timer = QtCore.QTimer()
    timer.setTimerType(QtCore.Qt.TimerType.PreciseTimer)
    timer.timeout.connect(tick)
    timer.start(5)

    rss: list[tuple[float, float]] = []
    opened: list[str] = []
    seen_boxes: set[int] = set()
    state: dict[str, float | None] = {"loaded_at": None}

    def stats(since: float = 0.0, of: array.array = late) -> dict:
        # numpy over the arrays' own buffers: a Python list of every sample (200 a second) was
        # built twice per report and grew the very process whose memory the soak measures
        import numpy as np
        ts = np.frombuffer(late_t, dtype=np.float64)
        xs = np.sort(np.frombuffer(of, dtype=np.float64)[:len(ts)][ts >= since][1:])
        del ts      # no view may outlive this call: the arrays grow on the next tick
        n = len(xs)
        at = lambda q: float(xs[min(n - 1, max(0, round(q / 100 * (n - 1))))]) if n else float("nan")  # noqa: E731
        return {"n": n, "p50": at(50), "p99": at(99), "max": float(xs[-1]) if n else float("nan")}

    def report(final: bool = False) -> None:
        points = {k: c.n for k, c in win.controller.session.data.columns.items()}
        doc = {"pid": os.getpid(), "elapsed": time.monotonic() - t0, "final": final, "errors": errors,
               "qt_messages": qt_messages, "opened": opened, "run_id": win.controller.session.run_id, "points": points,
               "rss": rss, "lateness": stats(), "lateness_own": stats(of=own_late), "stalls": stalls,
               "loaded_at": state["loaded_at"],
               "lateness_after_load": stats(state["loaded_at"]) if state["loaded_at"] is not None else None}
        tmp = Path(a.out + ".tmp")
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, a.out)

    async def scenario():
        deadline = t0 + a.seconds
        next_report = 0.0
        while time.monotonic() < deadline and not os.path.exists(a.out + ".stop"):
            s = win.controller.session
            if a.run and s.run_id != a.run:
                win.open_run(a.run)
                opened.append(a.run)
            elif a.follow and (s.run is None or s.run.get("status") not in ("running", "paused")):
                runs = await s.client.list_runs()
                live = [r for r in runs if r["status"] in ("running", "paused")]
                if live and live[0]["id"] != s.run_id:
                    win.open_run(live[0]["id"])
                    opened.append(live[0]["id"])
            task = s._task
            if task is not None and task.done() and not task.cancelled() and task.exception() is not None:
                error(f"run view stopped: {type(task.exception()).__name__}: {task.exception()}")
                s.open(s.run_id)
            for w in QtWidgets.QApplication.topLevelWidgets():
                if isinstance(w, QtWidgets.QMessageBox) and w.isVisible() and id(w) not in seen_boxes:
                    seen_boxes.add(id(w))
                    error(f"dialog {w.windowTitle()!r}: {w.text()} {w.informativeText()}")
            if state["loaded_at"] is None and s.data.columns and s.data.last_iteration() > 0 and a.run:
                state["loaded_at"] = time.monotonic() - t0
            now = time.monotonic() - t0
            if now >= next_report:
                rss.append((now, rss_mb(os.getpid()) or 0.0))
                report()
                next_report = now + a.every
            await asyncio.sleep(0.25)
        report(final=True)

    with loop:
        try:
            loop.run_until_complete(scenario())
        except BaseException as e:   # say it in the report; the parent decides
            error(f"console scenario: {type(e).__name__}: {e}")
            report(final=True)
    os._exit(0)   # as the console's own SIGTERM path: no close dialog, engines run on


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "console":
        sys.exit(console_main(sys.argv[2:]))
    print(__doc__)
