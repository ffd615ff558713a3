"""A network pulled from under a live remote console: sshd in a network namespace of its own
(tests/sshd.py NamespacedSshServer), its link taken down while the console watches a run. The
console must say the link is lost, reconnect once it is back, and go on with nothing shown twice
or lost; the run on the other side must not notice."""
from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1]))     # tests/sshd.py
from sshd import DEFAULT_RLA
from remote_support import run_async

from rla_engine.metrics import ENV_STEPS
from rla_engine.remote import RemoteClient, parse_location
from rla_engine.store import open_store


def committed(db: Path, run_id: str) -> int:
    store = open_store(db)
    try:
        run = store.get_run(run_id)
        return run["iteration"] if run else 0
    finally:
        store.close()


async def until(condition, timeout: float, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def test_a_pulled_network_is_noticed_survived_and_caught_up(namespaced_sshd, monkeypatch, tmp_path):
    server = namespaced_sshd
    monkeypatch.setenv("RLA_SSH", " ".join(server.ssh_prefix))
    db = tmp_path / "runs.db"
    engine = subprocess.Popen([str(DEFAULT_RLA), "run", "--preset", "tiny", "--iterations", "100000", "--db", str(db),
                               "--name", "far away"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    address = parse_location(server.url(db, rla=str(DEFAULT_RLA)))
    assert not isinstance(address, Path)
    states: list[tuple[str, str]] = []
    seen: list[np.ndarray] = []

    async def journey() -> str:
        client = RemoteClient(dataclasses.replace(address, create=True))    # the engine may not have made it yet
        client.dead_after_s = 3.0
        client.on_state.append(lambda state, text: states.append((state, text)))
        try:
            await client.connect()
            while not (runs := await client.list_runs()):
                await asyncio.sleep(0.1)
            run_id = runs[0]["id"]
            updates = client.watch(run_id)
            pulled_at = None
            async for update in updates:
                if ENV_STEPS in update.metrics:          # a key of every iteration
                    seen.append(update.metrics[ENV_STEPS][0])
                last = int(max(cols[0][-1] for cols in update.metrics.values())) if update.metrics else 0
                if pulled_at is None and last >= 5:
                    server.pull()
                    pulled_at = committed(db, run_id)
                    # the console notices a silent link by itself, and the run goes on meanwhile
                    await until(lambda: any(s == "lost" for s, _ in states), 15, "the lost state")
                    await until(lambda n=pulled_at: committed(db, run_id) >= n + 3, 30, "the run to go on")
                    server.plug()
                if pulled_at is not None and states[-1][0] == "connected" and last >= pulled_at + 10:
                    await client.stop(run_id)
            return run_id
        finally:
            await client.close()

    try:
        run_id = run_async(journey(), 120)
        assert engine.wait(timeout=60) == 0, engine.stderr.read().decode() if engine.stderr else ""
    finally:
        if engine.poll() is None:
            engine.kill()
            engine.wait()
    kinds = [s for s, _ in states]
    assert kinds[:2] == ["connecting", "connected"] and "lost" in kinds and kinds[-1] == "connected", states
    lost = next(text for s, text in states if s == "lost")
    assert "connection lost (no answer for 3 s)" in lost
    iterations = np.concatenate(seen).astype(int)
    final = committed(db, run_id)
    # every iteration exactly once, in order, up to the one the run stopped at
    assert iterations.tolist() == list(range(1, final + 1))
    store = open_store(db)
    assert store.get_run(run_id)["status"] == "stopped"
    store.close()
