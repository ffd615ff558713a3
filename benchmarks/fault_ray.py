"""Ray addresses where no cluster answers: each is handed to a real `rla run
--executor ray` (or `rla ablate --executor ray`) subprocess, through RAY_ADDRESS or
executor.address, with a short executor.connect_timeout_s. Each must end within that bound (plus
the process's start) with exit code 2 and one line on stderr that names the address and where it
came from; and a SIGTERM sent while a run is still connecting must end it within seconds.

    .venv/bin/python benchmarks/fault_ray.py

The servers that are not Ray are sockets opened here: one that accepts and never says a word, one
that answers like a web server, and one that answers the HTTP/2 greeting as Ray's gRPC port does
and then never answers a call (the probe passes it, so ray.init itself must be abandoned).
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_support import ROOT, Verdict, table, tiny

TIMEOUT_S = 3          # executor.connect_timeout_s in every case
START_S = 45           # what a loaded two-core machine may take to start `rla` (torch, ray) before it connects
SIGTERM_S = 5          # a SIGTERM must end a connecting process within this


class Listener:
    """A local TCP server that is not Ray, on a free port, serving in daemon threads until closed.

    kind: "silent" accepts and never answers; "http1" answers any bytes as a web server would;
    "http2" answers the HTTP/2 greeting with its SETTINGS (and acknowledges the client's), then
    stays silent. `accepted` is set when the first connection arrives."""

    def __init__(self, kind: str):
        self.kind = kind
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # every interface: Ray (and so the probe) joins 127.0.0.1 at this machine's own address
        self.sock.bind(("0.0.0.0", 0))
        self.sock.listen(16)
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self.accepted = threading.Event()
        self.held: list[socket.socket] = []
        self.closed = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            self.accepted.set()
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn: socket.socket) -> None:
        try:
            if self.kind == "http1":
                conn.recv(4096)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                conn.close()
            elif self.kind == "http2":
                conn.recv(4096)
                # SETTINGS (empty), then SETTINGS with the ACK flag for the client's
                conn.sendall(bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]) + bytes([0, 0, 0, 4, 1, 0, 0, 0, 0]))
                while conn.recv(4096):
                    pass
        except OSError:
            pass

    def close(self) -> None:
        self.closed = True
        for s in [self.sock, *self.held]:
            with contextlib.suppress(OSError):
                s.close()


@contextlib.contextmanager
def listener(kind: str) -> Iterator[Listener]:
    server = Listener(kind)
    try:
        yield server
    finally:
        server.close()


def rla_process(db: Path, args: list[str], ray_address: str | None, timeout_s: float = TIMEOUT_S) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    if ray_address is not None:
        env["RAY_ADDRESS"] = ray_address
    env["PYTHONUNBUFFERED"] = "1"
    sets = ["--set", f"executor.connect_timeout_s={timeout_s:g}"]
    return subprocess.Popen([sys.executable, "-m", "rla_engine.cli", *args, *sets, "--db", str(db)], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")


def finish(proc: subprocess.Popen, limit_s: float, start: float) -> tuple[int | None, str, float]:
    """(exit code or None if it outlived limit_s and was killed, stderr, seconds since `start`)."""
    try:
        _, err = proc.communicate(timeout=limit_s)
        return proc.returncode, err, time.monotonic() - start
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        return None, err, time.monotonic() - start


RUN = ["run", *tiny(), "--executor", "ray", "--iterations", "1"]
ABLATE = ["ablate", *tiny(), "--executor", "ray", "--seeds", "0", "--arms", "full", "--budget", "100"]


def refusal_cases(servers: dict[str, Listener]) -> list[tuple[str, list[str], str | None, list[str]]]:
    """(name, rla arguments, RAY_ADDRESS or None, words the one line must hold)."""
    silent, http1, http2 = servers["silent"].address, servers["http1"].address, servers["http2"].address
    return [
        ("RAY_ADDRESS refused", RUN, "127.0.0.1:1", ["RAY_ADDRESS = '127.0.0.1:1'", "refused"]),
        ("RAY_ADDRESS garbage", RUN, "garbage", ["RAY_ADDRESS = 'garbage'", "host:port"]),
        ("executor.address refused", [*RUN, "--set", "executor.address=127.0.0.1:1"], None,
         ["executor.address = '127.0.0.1:1'", "refused"]),
        ("executor.address bad port", [*RUN, "--set", "executor.address=head:port"], None,
         ["executor.address = 'head:port'", "host:port"]),
        ("config wins over RAY_ADDRESS", [*RUN, "--set", "executor.address=127.0.0.1:1"], "garbage",
         ["executor.address = '127.0.0.1:1'"]),
        ("silent listener", RUN, silent, [f"RAY_ADDRESS = '{silent}'", "does not answer"]),
        ("web server", RUN, http1, [f"RAY_ADDRESS = '{http1}'", "not as a Ray cluster"]),
        ("HTTP/2 server, not Ray", RUN, http2, [f"RAY_ADDRESS = '{http2}'", "did not finish within"]),
        ("unknown host", RUN, "no-such-host.invalid:6379", ["no-such-host.invalid"]),
        ("distribute = run", [*RUN, "--set", "executor.distribute=run"], "127.0.0.1:1", ["RAY_ADDRESS", "refused"]),
        ("rla ablate", ABLATE, "127.0.0.1:1", ["RAY_ADDRESS = '127.0.0.1:1'", "refused"]),
    ]


def check_refusal(verdict: Verdict, name: str, rc: int | None, err: str, took: float, words: list[str]) -> bool:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    ok = [
        verdict.check("ends within the bound", rc is not None and took < 2 * TIMEOUT_S + START_S,
                      f"{name}: {'killed after' if rc is None else 'took'} {took:.0f} s"),
        verdict.check("exit code 2", rc == 2, f"{name}: exit {rc}: {err[-300:]}"),
        verdict.check("one line on stderr", len(lines) == 1, f"{name}: {len(lines)} lines: {err[-400:]}"),
        verdict.check("no traceback", "Traceback" not in err, f"{name}: {err[-300:]}"),
        verdict.check("names the address and its source", bool(lines) and all(w in lines[0] for w in words),
                      f"{name}: wanted {words} in {lines[:1]}"),
    ]
    return all(ok)


def sigterm_case(root: Path, verdict: Verdict, name: str, kind: str) -> tuple[tuple, bool]:
    """A run connecting to a server that is not Ray, with a long timeout, gets SIGTERM once the
    server has seen its connection; it must end within SIGTERM_S."""
    with listener(kind) as server:
        proc = rla_process(root / f"{kind}-term.db", RUN, server.address, timeout_s=120)
        reached = server.accepted.wait(START_S + 30)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        rc, err, took = finish(proc, 30, time.monotonic())
    ok = verdict.check("SIGTERM ends a connecting run", reached and rc is not None and took < SIGTERM_S,
                       f"{name}: reached {reached}, exit {rc} {took:.1f} s after SIGTERM: {err[-200:]}")
    return (name, rc, f"{took:.1f} after SIGTERM", "yes" if ok else "NO", ""), ok


def campaign(root: Path, verdict: Verdict, say=print) -> dict:
    root.mkdir(parents=True, exist_ok=True)
    rows: list[tuple] = []
    held = tried = 0
    with listener("silent") as s, listener("http1") as h1, listener("http2") as h2:
        cases = refusal_cases({"silent": s, "http1": h1, "http2": h2})
        # a few at a time: each is mostly waiting, but starting one loads torch and Ray
        for i in range(0, len(cases), 4):
            batch = [(name, rla_process(root / f"c{i + j}.db", args, env), words, time.monotonic())
                     for j, (name, args, env, words) in enumerate(cases[i:i + 4])]
            for name, proc, words, start in batch:
                rc, err, took = finish(proc, 2 * TIMEOUT_S + START_S + 30 - (time.monotonic() - start), start)
                good = check_refusal(verdict, name, rc, err, took, words)
                tried, held = tried + 1, held + good
                line = next((ln for ln in err.splitlines() if ln.strip()), "")
                rows.append((name, rc, f"{took:.1f}", "yes" if good else "NO", line[:120]))
                say(f"  {name}: exit {rc} in {took:.1f} s")
    for name, kind in (("SIGTERM while probing", "silent"), ("SIGTERM inside ray.init", "http2")):
        row, good = sigterm_case(root, verdict, name, kind)
        rows.append(row)
        tried, held = tried + 1, held + good
        say(f"  {name}: exit {row[1]} ({row[2]} s)")
    say(table(f"unreachable Ray addresses (executor.connect_timeout_s = {TIMEOUT_S})", rows,
              ("case", "exit", "s", "held", "stderr")))
    return {"tried": tried, "held": held}


if __name__ == "__main__":
    v = Verdict()
    with tempfile.TemporaryDirectory(prefix="fault-ray-") as tmp:
        result = campaign(Path(tmp), v)
    print(f"tried {result['tried']}, held {result['held']}")
    sys.exit(v.report())
