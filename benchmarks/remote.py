"""The console over SSH, measured beside the local console in one run.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/remote.py [--iterations 100000] [--seconds 60]

SSH goes to a throwaway sshd on localhost (tests/sshd.py, as in the tests), so the link itself is
nearly free: what is measured is what the remote path adds (ssh's encryption, `rla serve`, the
protocol, a second process polling the database), not a network.

1. A stored history of `--iterations` iterations (a real run's, extended as benchmarks/soak.py
   extends it) opened once, as the console opens a run: seconds to the whole history, local and
   remote, and the bytes that crossed the link (whole, and per iteration); then History's refresh
   (every 2 s in the console) three times: what crosses when nothing changed.
2. A live quickstart run watched for `--seconds` at once by a local and a remote RunSession (the
   console's own, which fills the panels' data and signals them): the latency from the engine's
   commit of an iteration (its rows' time) to the session's `metrics_added`, median and p90, and
   the ratio (target: remote median within 1.5× of local); bytes per iteration of the live stream;
   the CPU that `rla serve` used, as a share of one core.
"""
from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import qasync
from PySide6 import QtCore

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from soak import make_history        # noqa: E402
from sshd import DEFAULT_RLA, SshServer   # type: ignore[import-not-found]  # noqa: E402

from rla_engine.client import EngineClient   # noqa: E402
from rla_engine.config import build   # noqa: E402
from rla_engine.remote import RemoteClient, SshAddress, parse_location   # noqa: E402
from rla_engine.remote.address import SSH_ENV   # noqa: E402
from rla_engine.summary import SUMMARY_KEYS   # noqa: E402
from rla_gui.session import RunSession   # noqa: E402


def serve_pids(db: Path) -> list[int]:
    """The `rla serve` processes serving `db` (children of sshd: not ours to know by pid)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"serve" in argv and b"--stdio" in argv and str(db).encode() in argv:
                pids.append(int(entry.name))
    return pids


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def open_whole(session: RunSession, run_id: str) -> float:
    t0 = time.perf_counter()
    session.open(run_id)
    while session.run is None or session.data.last_iteration() < 1:
        await asyncio.sleep(0.01)
    return time.perf_counter() - t0


class Latency:
    """Commit-to-session latency of each newly shown iteration."""

    def __init__(self, session: RunSession):
        self.seconds: list[float] = []
        session.metrics_added.connect(self.added)

    def added(self, columns: dict) -> None:
        now = time.time()
        newest = max(float(cols[2][-1]) for cols in columns.values())
        self.seconds.append(now - newest)


def address(url: str) -> SshAddress:
    where = parse_location(url)
    assert isinstance(where, SshAddress)
    return where


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.array(xs), q)) if xs else float("nan")


async def stored(db: Path, url: str, n: int) -> None:
    run_id = make_history(db, n, print)
    local, remote = EngineClient(db), RemoteClient(address(url))
    await remote.connect()
    before = remote.bytes_received
    rows = []
    for label, client in (("local", local), ("remote", remote)):
        session = RunSession(client)
        seconds = await open_whole(session, run_id)
        rows.append((label, seconds, session.data.last_iteration()))
        session.open(None)
    sent = remote.bytes_received - before
    refreshes = []
    for _ in range(3):                                # History's refresh, as the console makes it every 2 s
        b0 = remote.bytes_received
        await remote.run_summaries(list(SUMMARY_KEYS))
        refreshes.append(remote.bytes_received - b0)
    print(f"\n1. a stored history of {n:,} iterations, opened once")
    for label, seconds, last in rows:
        print(f"   {label:6s}: {seconds:6.2f} s to the whole history (to iteration {last:,})")
    print(f"   ratio remote/local: {rows[1][1] / rows[0][1]:.2f}×; over the link: {sent / 2 ** 20:.1f} MiB, "
          f"{sent / n:.0f} bytes per iteration")
    print(f"   History's refresh: {refreshes[0]:,} bytes the first time, then {refreshes[1]:,} and {refreshes[2]:,} "
          "(nothing changed: only that it did not)")
    await remote.close()
    await local.close()


async def live(db: Path, url: str, seconds: float) -> None:
    local, remote = EngineClient(db), RemoteClient(dataclasses.replace(address(url), create=True))  # a new database
    await remote.connect()
    cfg = build(preset="quickstart", sets=["run.iterations=100000"])
    run_id = await local.start(cfg, preset="quickstart", name="remote benchmark")
    sessions = {"local": RunSession(local), "remote": RunSession(remote)}
    latency = {label: Latency(s) for label, s in sessions.items()}
    for s in sessions.values():
        s.open(run_id)
    await asyncio.sleep(3.0)                          # both have the start and the first iterations
    for lat in latency.values():
        lat.seconds.clear()
    pids = serve_pids(db)
    cpu0 = sum(cpu_seconds(p) for p in pids)
    bytes0, it0, t0 = remote.bytes_received, sessions["remote"].data.last_iteration(), time.perf_counter()
    await asyncio.sleep(seconds)
    wall = time.perf_counter() - t0
    cpu = sum(cpu_seconds(p) for p in pids) - cpu0
    iterations = sessions["remote"].data.last_iteration() - it0
    sent = remote.bytes_received - bytes0
    await local.stop(run_id)
    await local.wait(run_id)
    print(f"\n2. a live quickstart run watched for {wall:.0f} s ({iterations} iterations) by a local and a remote "
          "session at once")
    for label, lat in latency.items():
        print(f"   {label:6s}: commit → session  median {statistics.median(lat.seconds) * 1000:6.0f} ms   "
              f"p90 {pct(lat.seconds, 90) * 1000:6.0f} ms   ({len(lat.seconds)} updates)")
    ratio = statistics.median(latency["remote"].seconds) / statistics.median(latency["local"].seconds)
    print(f"   median ratio remote/local: {ratio:.2f}× (target ≤ 1.5×)")
    print(f"   live stream: {sent / max(iterations, 1):.0f} bytes per iteration ({sent / wall / 1024:.1f} KiB/s)")
    print(f"   rla serve: {cpu:.2f} CPU s in {wall:.0f} s = {100 * cpu / wall:.1f}% of one core "
          f"({len(pids)} process)")
    for s in sessions.values():
        s.open(None)
    await remote.close()
    await local.close()


async def main(a) -> None:
    server = SshServer.start()
    os.environ[SSH_ENV] = " ".join(server.ssh_prefix)
    try:
        with tempfile.TemporaryDirectory(prefix="rla-remote-bench-") as tmp:
            big, small = Path(tmp) / "big" / "runs.db", Path(tmp) / "live" / "runs.db"
            big.parent.mkdir()
            small.parent.mkdir()
            await stored(big, server.url(big, rla=str(DEFAULT_RLA)), a.iterations)
            await live(small, server.url(small, rla=str(DEFAULT_RLA)), a.seconds)
    finally:
        server.stop()


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", type=int, default=100_000)
    p.add_argument("--seconds", type=float, default=60.0)
    args = p.parse_args()
    app = QtCore.QCoreApplication(sys.argv)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with loop:
        loop.run_until_complete(main(args))
