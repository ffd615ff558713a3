"""Faults and control on real runs: NaN loss, a killed engine, SIGTERM, pause/resume determinism."""
import asyncio
import math
import os
import signal
import subprocess
import sys

import torch

from rla_engine import checkpoint
from rla_engine.config import build
from rla_engine import metrics
from rla_engine.loop.trainer import Trainer
from rla_engine.paths import checkpoints_dir
from rla_engine.runner import Runner
from rla_engine.store import open_store
from rla_engine.vocabulary import CommandOutcome

from engine_support import TINY, beats_while_paused, only_run, spawn, wait_for


def comparable(store, run_id):
    return {it: {k: v for k, v in m.items() if not metrics.is_machine_key(k)}
            for it, m in store.metrics_by_iteration(run_id).items()}


def test_nan_loss_fails_the_run_and_keeps_history(tmp_path, monkeypatch):
    store = open_store(tmp_path / "h.db")
    cfg = build(preset="tiny", sets=["run.iterations=6"])
    tr = Trainer(cfg, torch.device("cpu"))
    store.create_run("r", name="nan", preset="", config=cfg.to_dict(), device="cpu")
    real = type(tr.backend.policy).scores

    def poisoned(self, obs, actions, temperature=1.0):      # what the update scores samples with
        logp, dist = real(self, obs, actions, temperature)
        return (logp * float("nan"), dist) if tr.iteration == 2 else (logp, dist)

    monkeypatch.setattr(type(tr.backend.policy), "scores", poisoned)
    code = Runner(store, "r", tr, 6, out=lambda s: None).run()
    assert code == 1
    run = store.get_run("r")
    assert run["status"] == "failed" and "iteration 3" in run["error"] and "loss/policy" in run["error"]
    failed = [e for e in store.events("r") if e["kind"] == "failed"]
    assert failed and failed[0]["payload"]["iteration"] == 3 and failed[0]["payload"]["quantity"] == "loss/policy"
    assert [r["iteration"] for r in store.iterations("r")] == [1, 2]
    assert all(math.isfinite(r["value"]) for r in store.metrics("r"))
    last = checkpoint.latest(checkpoints_dir(store.path, "r"))
    state = checkpoint.load(last)
    assert state["iteration"] == 2
    assert all(torch.isfinite(p).all() for p in state["policy"].values())


def test_killed_engine_is_marked_crashed_and_resumes(tmp_path):
    db = tmp_path / "h.db"
    proc = spawn(db, "run", *TINY, "--iterations", "400")
    store = open_store(db)
    run = wait_for(lambda: (r := only_run(store)) and r["iteration"] >= 3 and r, what="3 iterations")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert store.refresh_liveness() == [run["id"]]
    run = store.get_run(run["id"])
    assert run["status"] == "crashed"
    assert run["ended_at"] == run["heartbeat_at"]          # when it died, not when someone looked
    stale = store.add_command(run["id"], "pause")           # left for the dead engine
    committed = store.last_iteration(run["id"])
    assert committed >= 3
    assert set(store.metrics_by_iteration(run["id"])) >= set(range(1, committed + 1))
    res = subprocess.run([sys.executable, "-m", "rla_engine.cli", "resume", run["id"], "--iterations", "2",
                          "--db", str(db)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    after = store.get_run(run["id"])
    assert after["status"] == "completed"
    its = [r["iteration"] for r in store.iterations(run["id"])]
    assert its == list(range(0, its[-1] + 1)) and its[-1] >= committed
    assert any(e["kind"] == "rewound" for e in store.events(run["id"]))
    assert store.command(stale)["outcome"] == CommandOutcome.REJECTED
    assert store.command(stale)["detail"].startswith("the engine restarted")

    async def first_update():
        from rla_engine.client import EngineClient
        client = EngineClient(db)
        async for update in client.watch(run["id"]):
            await client.close()
            return update
    update = asyncio.run(first_update())
    # a run resumed in the past is watched like any other: its history arrives, no rewind loop
    assert not update.rewound and max(update.metrics[metrics.SUCCESS][0]) == its[-1]


def test_an_imported_copy_never_resumes_from_or_deletes_the_originals_checkpoints(tmp_path):
    db = tmp_path / "x.db"
    res = subprocess.run([sys.executable, "-m", "rla_engine.cli", "run", *TINY, "--iterations", "2", "--db", str(db)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    src = open_store(db)
    run_id = src.list_runs()[0]["id"]
    copy = open_store(tmp_path / "y.db")
    copy.import_run(src.export_run(run_id))
    copy.set_status(run_id, "stopped")
    before = sorted(p.name for p in checkpoints_dir(db, run_id).iterdir())
    res = subprocess.run([sys.executable, "-m", "rla_engine.cli", "resume", run_id, "--db", str(tmp_path / "y.db")],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "another database" in res.stderr
    from rla_engine.client import EngineClient

    async def delete():
        client = EngineClient(tmp_path / "y.db")
        await client.delete_run(run_id)
        await client.close()
    asyncio.run(delete())
    assert sorted(p.name for p in checkpoints_dir(db, run_id).iterdir()) == before


def test_sigterm_stops_gracefully_with_a_checkpoint(tmp_path):
    db = tmp_path / "h.db"
    proc = spawn(db, "run", *TINY, "--iterations", "400")
    store = open_store(db)
    run = wait_for(lambda: (r := only_run(store)) and r["iteration"] >= 2 and r, what="2 iterations")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    run = store.get_run(run["id"])
    assert run["status"] == "stopped"
    stopped = [e for e in store.events(run["id"]) if e["kind"] == "stopped"]
    assert stopped and "SIGTERM" in stopped[0]["payload"]["reason"]
    last = checkpoint.latest(checkpoints_dir(db, run["id"]))
    assert checkpoint.iteration_of(last) == run["iteration"]


def test_pause_resume_through_commands_reproduces_the_uninterrupted_run(tmp_path):
    n = 12
    db = tmp_path / "h.db"
    a = spawn(db, "run", *TINY, "--iterations", str(n), "--seed", "7", "--name", "straight")
    assert a.wait(timeout=120) == 0, a.stderr.read()
    store = open_store(db)
    run_a = only_run(store)["id"]

    b = spawn(db, "run", *TINY, "--iterations", str(n), "--seed", "7", "--name", "paused")
    run_b = wait_for(lambda: next((r for r in store.list_runs() if r["name"] == "paused"), None), what="run b")["id"]
    wait_for(lambda: store.get_run(run_b)["iteration"] >= 3, what="iteration 3")
    store.add_command(run_b, "pause")
    wait_for(lambda: store.get_run(run_b)["status"] == "paused", what="paused")
    held = store.get_run(run_b)["iteration"]
    beats_while_paused(store, run_b)      # paused: the heartbeat goes on, no iteration meanwhile
    assert store.get_run(run_b)["iteration"] == held
    assert checkpoint.iteration_of(checkpoint.latest(checkpoints_dir(db, run_b))) == held
    bad = store.add_command(run_b, "set_difficulty", {"value": 3})
    wait_for(lambda: store.command(bad)["applied_at"], what="rejection")
    assert store.command(bad)["outcome"] == CommandOutcome.REJECTED
    store.add_command(run_b, "resume")
    assert b.wait(timeout=120) == 0, b.stderr.read()
    assert store.get_run(run_b)["status"] == "completed"
    kinds = [e["kind"] for e in store.events(run_b)]
    assert "pause" in kinds and "resume" in kinds and "command_rejected" in kinds
    assert comparable(store, run_a) == comparable(store, run_b)
