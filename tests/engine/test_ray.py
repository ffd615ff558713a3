"""The Ray executor on a real two-node Ray cluster on this machine (ray.cluster_utils.Cluster):
determinism against the local executor, order independence, a worker killed mid-iteration, a
stop that cuts an iteration short, the `rla run --executor ray` process with its commands, and
an ablation whose runs the cluster spreads over both nodes."""
from __future__ import annotations

import copy
import os
from pathlib import Path
import random
import signal
import subprocess
import sys
import threading
import time

import pytest
import ray
import torch
from ray import cloudpickle
from ray.cluster_utils import Cluster

from rla_engine import checkpoint, metrics
from rla_engine.config import build
from rla_engine.errors import InputError
from rla_engine.launch import drive
from rla_engine.loop import ray_executor
from rla_engine.loop.trainer import Trainer
from rla_engine.loop.workers import RoleWorker
from rla_engine.paths import checkpoints_dir, games_dir
from rla_engine.store import open_store
from rla_engine.vocabulary import CommandOutcome, EventKind

from engine_support import TINY, beats_while_paused, rla, spawn, wait_for

# the workers below are test code: Ray ships them by value, the cluster's processes cannot import tests/
cloudpickle.register_pickle_by_value(sys.modules[__name__])

SMALL = ["eval.every=3", "eval.tasks_per_tier=4"]
FIXED = "env.strategy=fixed"     # no environment model, one actor fewer to start
# the suite beside a CPU hog, on a slow host, took over a minute (the default bound) to start a
# replacement worker; what these tests check never depends on how long a start takes
PATIENT = "executor.start_timeout_s=600"


@pytest.fixture(scope="module")
def cluster():
    """One node; the ablation's test adds the second (its daemons cost the other tests CPU). Its 8
    CPUs are Ray's logical ones: the module's trainers hold their workers' shares to the end."""
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 8, "object_store_memory": 80 * 2**20,
                                                      "include_dashboard": False})
    ray.init(address=c.address, logging_level="warning", log_to_driver=False)
    yield c
    ray.shutdown()
    c.shutdown()


class Tunable(RoleWorker):
    """A worker the test can slow down (to kill it or stop the run in the middle of a call) or
    make answer after random delays (so that which worker finishes first varies). Once the file
    `stall` names exists, a call in progress, or a later one, takes STALL_S, and says so by making
    the file `stall`.hit."""
    delay, jitter, stall = 0.0, False, None

    def tune(self, delay: float, jitter: bool, stall: str | None = None) -> None:
        self.delay, self.jitter, self.stall = delay, jitter, stall

    def _wait(self) -> None:
        started = time.monotonic()
        delay = self.delay + (random.uniform(0.0, 0.05) if self.jitter else 0.0)
        while time.monotonic() - started < delay:
            if self.stall is not None and delay != STALL_S and os.path.exists(self.stall):
                delay = STALL_S
                Path(f"{self.stall}.hit").touch()
            time.sleep(0.02)

    def collect(self, *args):
        self._wait()
        return super().collect(*args)

    def judge(self, *args):
        if self.jitter:
            self._wait()
        return super().judge(*args)


STALL_S = 300.0


def tune(trainer: Trainer, role: str, delay: float = 0.0, jitter: bool = False, stall: Path | None = None) -> None:
    marker = None if stall is None else str(stall)
    ray.get([w.tune.remote(delay, jitter, marker) for w in trainer.executor.workers[role]])


def config(kind: str, *sets: str):
    return build(preset="tiny", sets=[f"executor.kind={kind}", *SMALL, PATIENT, *sets], seed=3)


def metrics_of(trainer: Trainer, n: int) -> tuple[list[dict], list]:
    values, events = [], []
    for _ in range(n):
        r = trainer.step()
        values.append({k: v for k, v in r.metrics.items() if not metrics.is_machine_key(k)})
        events += r.events
    return values, events


def run_of(preset: str, sets: list[str], n: int, ray_executor: bool = False) -> tuple[list[dict], list]:
    """metrics_of a seed-3 run of the preset, here or (ray_executor) on the cluster, closed after."""
    on_ray = ["executor.kind=ray", PATIENT] if ray_executor else []
    trainer = Trainer(build(preset=preset, sets=[*sets, *on_ray], seed=3), torch.device("cpu"))
    try:
        return metrics_of(trainer, n)
    finally:
        trainer.close()


@pytest.fixture(scope="module")
def one_each(cluster):
    """A Ray trainer with one worker per role (environment model included), built once."""
    ray_executor.RoleWorker = Tunable
    try:
        trainer = Trainer(config("ray"), torch.device("cpu"))
    finally:
        ray_executor.RoleWorker = RoleWorker
    yield trainer
    trainer.close()


@pytest.fixture(scope="module")
def two_each(cluster):
    """A Ray trainer with two rollout and two judge workers, built once."""
    ray_executor.RoleWorker = Tunable
    try:
        trainer = Trainer(config("ray", "executor.rollout_workers=2", "executor.judge_workers=2",
                                 "executor.rollout_cpus=0.5", FIXED), torch.device("cpu"))
    finally:
        ray_executor.RoleWorker = RoleWorker
    yield trainer
    trainer.close()


def test_one_worker_per_role_gives_the_local_runs_metrics(one_each):
    local_trainer = Trainer(config("local"), torch.device("cpu"))
    local, _ = metrics_of(local_trainer, 4)
    remote, events = metrics_of(one_each, 4)
    assert remote == local
    placed = [p for k, p in events if k == EventKind.PLACED]
    assert len(placed) == 1 and {w["role"] for w in placed[0]["workers"]} == {"rollout", "judge", "env"}


def test_a_worker_killed_mid_iteration_is_restarted_and_changes_nothing(one_each):
    trainer = one_each
    pid = ray.get(trainer.executor.workers["rollout"][0].where.remote())["pid"]
    before = copy.deepcopy(trainer.state_dict())
    unharmed, _ = metrics_of(trainer, 1)
    trainer.load_state_dict(copy.deepcopy(before))
    tune(trainer, "rollout", delay=0.6)
    killer = threading.Timer(0.3, os.kill, (pid, signal.SIGKILL))   # inside the roll-out's 0.6 s
    killer.start()
    killed, events = metrics_of(trainer, 1)
    killer.join()
    assert killed == unharmed
    restarted = [p for k, p in events if k == EventKind.WORKER_RESTARTED]
    assert len(restarted) == 1 and restarted[0]["role"] == "rollout" and restarted[0]["pid"] != pid


def test_several_workers_do_not_depend_on_which_finishes_first(two_each):
    trainer = two_each
    tune(trainer, "rollout", jitter=True)
    tune(trainer, "judge", jitter=True)
    metrics_of(trainer, 1)
    before = copy.deepcopy(trainer.state_dict())   # a copy: loading shares tensors that training changes
    first, _ = metrics_of(trainer, 2)            # iteration 3 evaluates: greedy roll-outs split too
    trainer.load_state_dict(copy.deepcopy(before))
    again, _ = metrics_of(trainer, 2)            # the same iterations, the workers finishing in another order
    assert again == first
    local_trainer = Trainer(config("local", FIXED), torch.device("cpu"))
    local_trainer.load_state_dict(copy.deepcopy(before))
    local, _ = metrics_of(local_trainer, 2)
    assert local != first          # split work draws per-chunk seeds: a different, equally valid run


def test_a_stop_during_a_slow_iteration_cancels_it_and_keeps_what_was_committed(two_each, tmp_path, request):
    trainer = two_each
    stall = tmp_path / "stall"
    tune(trainer, "rollout", delay=1.2, stall=stall)
    request.addfinalizer(lambda: stall.unlink(missing_ok=True))     # the module's later tests: no stall
    db = tmp_path / "r.db"
    store = open_store(db)
    folder = checkpoints_dir(db, "r1")
    checkpoint.save(folder, trainer.iteration, trainer.state_dict(), trainer.cfg.run.keep_checkpoints,
                    checkpoint.Owner("r1", store.database_id))
    store.create_run("r1", name="r1", preset="tiny", config=trainer.cfg.to_dict(), device="cpu",
                     first_tasks=trainer.task_rows(live=True))
    start = trainer.iteration
    commands = {}

    def stop_soon() -> None:     # another process's part: its own connection, as the console has
        other = open_store(db)
        wait_for(lambda: other.get_run("r1")["iteration"] >= start + 1, what="an iteration")
        stall.touch()        # a roll-out now takes STALL_S: only a cancel ends it sooner
        # the next iteration's roll-out is under way (and stalled): the stop lands in its middle
        wait_for(lambda: Path(f"{stall}.hit").exists(), what="a roll-out stalled")
        commands.update(pause=other.add_command("r1", "pause"), stop=other.add_command("r1", "stop"))
        other.close()

    stopper = threading.Thread(target=stop_soon)
    stopper.start()
    t0 = time.monotonic()
    assert drive(store, "r1", trainer, start + 50, out=lambda _line: None) == 0
    stopper.join()
    took = time.monotonic() - t0
    run = store.get_run("r1")
    assert run["status"] == "stopped" and run["iteration"] >= start + 1
    stopped = next(e["payload"] for e in store.events("r1") if e["kind"] == EventKind.STOPPED)
    assert stopped["abandoned_iteration"] == run["iteration"] + 1
    # a pause that came with the stop cannot checkpoint a half-done iteration: it is refused
    pause, stop = store.command(commands["pause"]), store.command(commands["stop"])
    assert pause["outcome"] == CommandOutcome.REJECTED
    assert pause["detail"] == "the run stopped in the middle of an iteration"
    assert (stop["outcome"], stop["detail"]) == (CommandOutcome.APPLIED, None)
    # the iteration cut short left no rows and no checkpoint: the newest is the last committed one
    assert checkpoint.iteration_of(checkpoint.latest(checkpoints_dir(db, "r1"))) == run["iteration"]
    assert store.last_iteration("r1") == run["iteration"]
    assert took < STALL_S / 2          # it did not wait for the stalled roll-out: it cancelled it


def test_workers_the_cluster_cannot_place_in_time_are_refused_naming_the_settings(one_each, two_each):
    """The module's two trainers hold 4 of the 8 CPUs: 5 more fit the cluster, not what is free."""
    with pytest.raises(InputError) as refused:
        Trainer(config("ray", FIXED, "executor.rollout_cpus=4.5", "executor.start_timeout_s=1"), torch.device("cpu"))
    message = str(refused.value)
    assert "executor.placement = 'pack'" in message and "within 1 s (executor.start_timeout_s)" in message
    assert "CPU 8" in message
    # the refused placement group was removed: the 4 free CPUs are free again (the cluster's
    # figures follow the removal, so they are waited for)
    wait_for(lambda: abs(ray.available_resources().get("CPU", 0.0) - 4.0) < 1e-9, what="the 4 CPUs free")


def test_rla_run_on_ray_pauses_resumes_and_completes_like_a_local_run(cluster, tmp_path, monkeypatch):
    db = tmp_path / "r.db"
    monkeypatch.setenv("RAY_ADDRESS", cluster.address)      # the run joins this cluster
    # 12 iterations, the pause sent after the 2nd: with 4, a loaded machine could finish the run
    # before the engine read the command, and the test waited for a pause that could not come
    proc = spawn(db, "run", *TINY, "--executor", "ray", "--iterations", "12", "--set", FIXED, "--set", PATIENT,
                 "--name", "on ray")
    store = open_store(db)
    run_id = wait_for(lambda: store.list_runs() and store.list_runs()[0]["id"], timeout=300, what="the run row")
    wait_for(lambda: store.get_run(run_id)["iteration"] >= 2, timeout=300, what="iteration 2")
    store.add_command(run_id, "pause")
    wait_for(lambda: store.get_run(run_id)["status"] == "paused", what="paused")
    held = store.get_run(run_id)["iteration"]
    # the paused engine beats twice more (it is alive, and had time to go on) with no new iteration
    beats_while_paused(store, run_id)
    assert store.get_run(run_id)["iteration"] == held and store.get_run(run_id)["status"] == "paused"
    store.add_command(run_id, "resume")
    assert proc.wait(timeout=300) == 0, proc.stderr.read()
    assert store.get_run(run_id)["status"] == "completed"
    kinds = [e["kind"] for e in store.events(run_id)]
    assert {"placed", "pause", "resume", "completed"} <= set(kinds)
    assert len(store.metrics_by_iteration(run_id)) == 12


def test_an_ablation_on_ray_spreads_its_runs_over_both_nodes(cluster, tmp_path, monkeypatch):
    cluster.add_node(num_cpus=2, object_store_memory=80 * 2**20)
    cluster.wait_for_nodes()
    db = tmp_path / "a.db"
    monkeypatch.setenv("RAY_ADDRESS", cluster.address)
    res = rla("ablate", *TINY, "--seeds", "0", "--arms", "step,full", "--budget", "400", "--executor", "ray",
              "--set", PATIENT, "--out", str(tmp_path / "t.md"), db=db, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2 node(s)" in res.stdout and "run(s) at a time" in res.stdout
    store = open_store(db)
    runs = store.list_runs()
    assert len(runs) == 2 and {r["status"] for r in runs} == {"completed"}
    nodes = {e["payload"]["run"]["node"] for r in runs for e in store.events(r["id"]) if e["kind"] == "placed"}
    assert len(nodes) == 2


def test_a_local_run_never_imports_ray():
    code = ("import sys; import rla_engine.cli, rla_engine.launch, rla_engine.runner; "
            "from rla_engine.config import build; from rla_engine.loop.executor_factory import make_executor; "
            "e = make_executor(build(preset='tiny'), None, None, None); "
            "assert e.kind == 'local' and 'ray' not in sys.modules, 'ray was imported'")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


def test_a_coding_run_on_ray_gives_the_local_runs_metrics(cluster, monkeypatch, tmp_path_factory):
    """The coding setting's rollout and judge workers run programs in their own sandbox pools and
    give what the local run does (scripted programs and tests: a diagnostic whose draws come from
    the run's generator)."""
    monkeypatch.setenv("RLA_MODEL_CACHE", str(tmp_path_factory.getbasetemp() / "models"))
    sets = ["policy.source=scripted", "judge.source=oracle", FIXED, "eval.every=2"]
    local, _ = run_of("llm-code-tiny", sets, 2)
    remote, events = run_of("llm-code-tiny", sets, 2, ray_executor=True)
    assert remote == local
    assert any(k == EventKind.SANDBOX for k, _ in events)


def test_a_textworld_run_on_ray_gives_the_local_runs_metrics(cluster, monkeypatch, tmp_path_factory):
    """Real TextWorld games played by the cluster's workers, which are handed the engine's games
    folder (the games the driver built are the ones they play): what the local run gives. The
    embedded policy plays them (textworld_commands): the games folder is the family's, whichever
    backend plays, and the language models' workers are the llm-tiny test's."""
    # the cluster's processes started with the session's games folder (tests/conftest.py): a worker
    # not handed the engine's would build its games there, or in the user's cache without it
    started_with = Path(os.environ["RLA_GAMES_DIR"])
    games = tmp_path_factory.getbasetemp() / "ray-games"
    monkeypatch.setenv("RLA_GAMES_DIR", str(games))
    # one iteration (the other tests hold Ray's runs to the local ones over several), no evaluation
    sets = [FIXED, "eval.every=100", "eval.tasks_per_tier=1", "rollout.rollouts_per_task=2", "task.pool_size=2",
            "rollout.tasks_per_iter=2"]
    local, _ = run_of("textworld-commands", sets, 1)
    built = sorted(p.name for p in games.iterdir())
    monkeypatch.delenv("RLA_GAMES_DIR")
    elsewhere = [started_with, games_dir()]
    monkeypatch.setenv("RLA_GAMES_DIR", str(games))
    before = [sorted(os.listdir(d)) if d.is_dir() else [] for d in elsewhere]
    remote, _events = run_of("textworld-commands", sets, 1, ray_executor=True)
    assert remote == local
    assert sorted(p.name for p in games.iterdir()) == built      # the workers built nothing of their own
    assert [sorted(os.listdir(d)) if d.is_dir() else [] for d in elsewhere] == before
