"""Ray addresses where no cluster answers. A real `rla run --executor ray`
given 127.0.0.1:1 or an address that is not one ends within executor.connect_timeout_s (plus
its own start) with exit code 2 and one line naming the address and where it came from
(RAY_ADDRESS or executor.address); a SIGTERM sent while it is connecting ends it at once. Ray's
own ray.init retried such an address for about ten minutes.

The subprocesses start together in one fixture (each mostly waits); a server that accepts and never
answers is a local socket, tried in-process too (benchmarks/fault_ray.py has the full campaign).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from fault_ray import listener

from rla_engine import ray_cluster
from rla_engine.errors import InputError

TIMEOUT_S = 3
# A hang detector, not a speed: a run still going after it is killed and fails the test. Ray's own
# ray.init retried for about 600 s; starting `rla` (torch, Ray) takes seconds even on a loaded machine.
BOUND_S = 240


def spawn(db: Path, ray_address: str | None, *sets: str, timeout_s: float = TIMEOUT_S):
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    if ray_address is not None:
        env["RAY_ADDRESS"] = ray_address
    args = ["run", "--preset", "tiny", "--executor", "ray", "--iterations", "1",
            "--set", f"executor.connect_timeout_s={timeout_s:g}", *[a for s in sets for a in ("--set", s)]]
    proc = subprocess.Popen([sys.executable, "-m", "rla_engine.cli", *args, "--db", str(db)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, errors="replace")
    return proc, time.monotonic()


def outcome(proc: subprocess.Popen, started: float) -> tuple[int | None, str, float]:
    try:
        _, err = proc.communicate(timeout=max(1.0, BOUND_S - (time.monotonic() - started)))
    except subprocess.TimeoutExpired:
        proc.kill()       # the old behaviour: still retrying
        _, err = proc.communicate()
        return None, err, time.monotonic() - started
    return proc.returncode, err, time.monotonic() - started


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("unreachable")
    with listener("silent") as held:
        procs = {
            "refused": spawn(root / "a.db", "127.0.0.1:1"),
            "garbage": spawn(root / "b.db", "garbage"),
            "sigterm": spawn(root / "d.db", held.address, timeout_s=600),
        }
        proc, _ = procs["sigterm"]
        reached = held.accepted.wait(BOUND_S)      # the run is connecting: its probe reached the server
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        rc, err, after_signal = outcome(proc, time.monotonic())
        out = {name: outcome(p, started) for name, (p, started) in procs.items() if name != "sigterm"}
        return {**out, "sigterm": (rc, err, after_signal, reached)}


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err[-2000:]
    return lines[0]


def test_a_refused_ray_address_ends_the_run_in_bounded_time_naming_it(runs):
    rc, err, took = runs["refused"]
    assert rc == 2, (rc, took, err[-2000:])          # it ended by itself (`outcome` kills a hang)
    line = _one_line(err)
    assert "RAY_ADDRESS = '127.0.0.1:1'" in line and "environment" in line and "refused" in line, line


def test_a_garbage_ray_address_is_named_as_the_environment_variable(runs):
    rc, err, _ = runs["garbage"]
    assert rc == 2, err[-2000:]
    line = _one_line(err)
    assert "RAY_ADDRESS = 'garbage'" in line and "host:port" in line, line
    assert "executor.address = ''" not in line


def test_sigterm_ends_a_run_that_is_connecting(runs):
    rc, err, after_signal, reached = runs["sigterm"]
    assert reached, "the run never reached the server"
    # it ended by itself, long before its 600 s connect timeout could have ended it: the signal did
    assert rc is not None and rc != 0, (rc, after_signal, err[-2000:])


# ---------------------------------------------------------------- in-process, no subprocess


def test_the_address_comes_from_the_config_before_the_environment(monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.9:6379")
    assert ray_cluster.find_target("10.0.0.5:6379").source == "invalid config: executor.address = '10.0.0.5:6379'"
    target = ray_cluster.find_target("")
    assert target is not None and (target.host, target.port) == ("10.0.0.9", 6379)
    assert target.source.startswith("invalid environment: RAY_ADDRESS = '10.0.0.9:6379'")
    with pytest.raises(InputError, match=r"RAY_ADDRESS = 'x:y'.*expected host:port"):
        monkeypatch.setenv("RAY_ADDRESS", "x:y")
        ray_cluster.find_target("auto")


def test_connect_gives_up_on_a_silent_server_after_its_timeout():
    with listener("silent") as server:
        start = time.monotonic()
        with pytest.raises(InputError, match=rf"executor.address = '{server.address}'.*does not answer as a Ray "
                                             r"cluster within 1 s"):
            ray_cluster.connect(server.address, 1.0)
        # it waited its timeout (on any machine); the upper bound only tells a hang, at 30× the timeout
        assert 0.9 <= time.monotonic() - start < 30
