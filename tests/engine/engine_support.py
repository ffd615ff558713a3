"""Helpers shared by the engine tests that drive the real `rla` command, or an engine in this process."""
import os
import signal
import subprocess
import sys
import time

import pytest

TINY = ["--preset", "tiny"]          # resources/presets/tiny.toml: seconds per run


def play(env, policy):
    """Step a family's batched environment max_steps times; per step (active before the step, obs
    after it, oracle, info)."""
    log = []
    for _ in range(env.max_steps):
        active = env.active.clone()
        obs, oracle, info = env.step(policy(env))
        log.append((active, obs, oracle, info))
    return log


def crash_the_second_game_start(monkeypatch) -> None:
    """The second TextWorld game started in this test raises inside the interpreter: a crash."""
    from rla_engine.tasks import textworld_family
    real_start = textworld_family.start_game
    calls = {"n": 0}

    def second_start_crashes(story, **infos):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("the interpreter fell over")
        return real_start(story, **infos)
    monkeypatch.setattr(textworld_family, "start_game", second_start_crashes)


def cheap_families(kind: str) -> list[str]:
    """The families of a kind whose tasks are drawn in microseconds: the generic tests draw
    thousands. textworld's and textworld_commands' are compiled games (about a second each): their
    own test files hold them to the same contract at a size real games allow."""
    from rla_engine.tasks import family_names, family_spec
    return [n for n in family_names(kind) if family_spec(n).cheap_tasks]


def spawn(db, *args):
    return subprocess.Popen([sys.executable, "-m", "rla_engine.cli", *args, "--db", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def rla(*args, db=None, timeout=120):
    cmd = [sys.executable, "-m", "rla_engine.cli", *args] + (["--db", str(db)] if db else [])
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})


def wait_for(predicate, timeout=60.0, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def killed_then_resumed(db, *run_args, timeout=300):
    """`rla run *run_args` into a new database, SIGKILLed once its first iteration is stored, then
    `rla resume`d to its end: the run's metrics by iteration (the caller compares them with an
    uninterrupted run's)."""
    from rla_engine.store import open_store
    proc = spawn(db, "run", *run_args)
    store = open_store(db)
    wait_for(lambda: (r := only_run(store)) and r["iteration"] >= 1, timeout=180, what="an iteration")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    resumed = rla("resume", only_run(store)["id"], db=db, timeout=timeout)
    assert resumed.returncode == 0, resumed.stderr
    return store.metrics_by_iteration(only_run(store)["id"])


def only_run(store):
    runs = store.list_runs()
    return runs[0] if runs else None


def beats_while_paused(store, run_id: str, beats: int = 2) -> None:
    """Wait for the run's heartbeat to beat `beats` times: the engine is alive and had time to go
    on (the positive sign before checking that a paused run made no iteration)."""
    for _ in range(beats):
        beat = store.get_run(run_id)["heartbeat_at"]
        wait_for(lambda beat=beat: store.get_run(run_id)["heartbeat_at"] != beat, what="a heartbeat while paused")


def one_line_error(res) -> str:
    """The single stderr line of a refused command (exit 2, no traceback)."""
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr + res.stdout, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    return lines[0]


@pytest.fixture
def keep_signal_handlers():
    """An in-process engine installs its own SIGINT/SIGTERM handlers; pytest's come back after
    (a module that runs engines in this process: `pytestmark = pytest.mark.usefixtures(...)`)."""
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for s, handler in before.items():
        signal.signal(s, handler)


def train(db, run_id, iterations, *sets, lines=None) -> int:
    """Start run `run_id` of the tiny preset in this process; its exit code. `lines` collects
    what it prints."""
    from rla_engine import launch
    from rla_engine.config import build
    cfg = build(preset="tiny", sets=list(sets), iterations=iterations)
    return launch.start_run(db, run_id, cfg, preset="tiny", out=(lambda _line: None) if lines is None else lines.append)
