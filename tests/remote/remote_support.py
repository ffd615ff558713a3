"""Helpers of the RemoteClient tests (test_remote_client.py, test_remote_faults.py): databases
with finished runs made by the real `rla run`, a RemoteClient over the test sshd, comparisons of
what the local and the remote client answer, and the remote processes found through /proc."""
from __future__ import annotations

import asyncio
import dataclasses
import gc
import math
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from rla_engine.client import Update
from rla_engine.remote import RemoteClient, parse_location

RLA = Path(sys.executable).with_name("rla")
TINY = ["--preset", "tiny"]


def rla_run(db: Path, iterations: int, name: str, *more: str) -> str:
    """A finished tiny run made by the real CLI; its run id (from its last line)."""
    done = subprocess.run([str(RLA), "run", *TINY, "--iterations", str(iterations), "--db", str(db), "--name", name,
                           *more], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]          # "run <id> completed at iteration N"
    assert last.startswith("run ") and "completed" in last, done.stdout
    return last.split()[1]


_FINISHED: dict[str, tuple[Path, list[str]]] = {}


def finished_db(tmp_path_factory) -> tuple[Path, list[str]]:
    """One database per test session with two finished runs made by `rla run` (30 iterations, and
    5 in group g-remote). Shared and read-only: a test that changes a database works on `copy_db` of it."""
    key = str(tmp_path_factory.getbasetemp())
    if key not in _FINISHED:
        db = tmp_path_factory.mktemp("finished") / "runs.db"
        ids = [rla_run(db, 30, "remote long"), rla_run(db, 5, "remote short", "--group", "g-remote")]
        _FINISHED[key] = db, ids
    return _FINISHED[key]


def copy_db(db: Path, into: Path) -> Path:
    """The database's folder (database, logs, checkpoints) copied into a new folder `into`."""
    shutil.copytree(db.parent, into)
    return into / db.name


def remote(sshd, db: Path | str, host: str = "rla-test", rla: str | Path = RLA, create: bool = False,
           **attrs: Any) -> RemoteClient:
    """A RemoteClient of `db` through the test sshd; `create`: of a database not made yet."""
    address = parse_location(sshd.url(db, host=host, rla=str(rla)))
    assert not isinstance(address, Path)
    client = RemoteClient(dataclasses.replace(address, create=create))
    for name, value in attrs.items():
        setattr(client, name, value)
    return client


def run_async(coro: Awaitable[Any], timeout: float = 120.0, collect: bool = True) -> Any:
    """asyncio.run (in a thread) with a limit, failing on any error the loop saw that nobody retrieved."""
    errors: list[dict] = []

    async def main() -> Any:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, context: errors.append(context))
        return await asyncio.wait_for(coro, timeout)
    # a thread of its own: the console's tests mark their Qt loop as running for the whole session
    # (tests/conftest.py, aloop), and asyncio.run refuses to start where a loop runs
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="rla-test-loop") as pool:
        result = pool.submit(asyncio.run, main()).result()
    if collect:
        gc.collect()        # a transport left open is reported now, by the test that left it
    assert not errors, [f"{c.get('message')}: {c.get('exception')!r}" for c in errors]
    return result


async def until(predicate: Callable[[], Any], timeout: float = 60.0, what: str = "a condition") -> Any:
    """Wait for a positive signal: predicate() (sync or async) true, polled every 50 ms."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def same(a: Any, b: Any, where: str = "") -> None:
    """Structural equality where NaN equals NaN, a tuple equals a list (JSON has only lists),
    numpy arrays are compared by value and dtype kind, and dict keys must be of the same type."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), f"{where}: {type(a)} vs {type(b)}"
        assert a.dtype.kind == b.dtype.kind, f"{where}: dtype {a.dtype} vs {b.dtype}"
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, dict):
        assert isinstance(b, dict), f"{where}: dict vs {type(b)}"
        assert list(a) == list(b), f"{where}: keys {list(a)} vs {list(b)}"
        for k in a:
            same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list | tuple):
        assert isinstance(b, list | tuple), f"{where}: {type(a)} vs {type(b)}"
        assert len(a) == len(b), f"{where}: length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert isinstance(b, float) and math.isnan(b), f"{where}: nan vs {b!r}"
    else:
        assert type(a) is type(b) or (isinstance(a, int | float) and isinstance(b, int | float)
                                      and not isinstance(a, bool) and not isinstance(b, bool)), \
            f"{where}: {type(a).__name__} {a!r} vs {type(b).__name__} {b!r}"
        assert a == b, f"{where}: {a!r} vs {b!r}"


def merged(updates: list[Update]) -> dict[str, Any]:
    """A watch's updates as one history: metric columns concatenated by key, every event, the last run row."""
    metrics: dict[str, list[tuple[np.ndarray, ...]]] = {}
    for u in updates:
        for key, cols in u.metrics.items():
            metrics.setdefault(key, []).append(cols)
    return {"run": updates[-1].run if updates else None,
            "metrics": {k: tuple(np.concatenate(parts) for parts in zip(*chunks))
                        for k, chunks in sorted(metrics.items())},
            "events": [e for u in updates for e in u.events]}


async def watch_all(client: Any, run_id: str, on_update: Callable[[Update], Any] | None = None) -> list[Update]:
    updates = []
    async for u in client.watch(run_id):
        updates.append(u)
        if on_update is not None:
            on_update(u)
    return updates


def iterations_of(updates: list[Update], key: str) -> list[int]:
    return [int(i) for u in updates if key in u.metrics for i in u.metrics[key][0]]


# -- remote processes, through /proc -------------------------------------------------------------------
def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def serve_pids(db: Path) -> list[int]:
    """The `rla serve --stdio --db DB` processes (their own argv, not the ssh or shell line that names them)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            argv = cmdline(int(entry.name))
            if "serve" in argv and "--stdio" in argv and str(db) in argv:
                found.append(int(entry.name))
    return found


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = str(fd.readlink())
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    return inodes


def listening_sockets(pid: int) -> list[str]:
    """The process's TCP sockets in LISTEN state and its UDP sockets (any bound UDP socket
    receives), as 'proto local-address' lines; [] when it has none."""
    mine = _socket_inodes(pid)
    found = []
    for proto in ("tcp", "tcp6", "udp", "udp6"):
        try:
            lines = Path(f"/proc/net/{proto}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if inode in mine and (proto.startswith("udp") or state == "0A"):
                found.append(f"{proto} {local}")
    return found
