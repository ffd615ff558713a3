"""`rla ablate` end to end: a tiny ablation runs real `rla run` subprocesses under one group,
stops at its step budget, writes its table, and a rerun resumes what an interruption left."""
import json
import os
import signal
import subprocess
import sys

from engine_support import rla, wait_for

from rla_engine import metrics
from rla_engine.store import open_store

ARGS = ["ablate", "--preset", "tiny", "--seeds", "0", "--budget", "1600", "--arms", "outcome,full"]
GROUP = "ablate-tiny-1600"


def test_an_interrupted_ablation_resumes_and_writes_its_group_and_table(tmp_path):
    db, out = tmp_path / "abl.db", tmp_path / "table.md"
    args = [*ARGS, "--db", str(db), "--out", str(out)]
    # interrupt the first arm's run after two iterations: Ctrl-C reaches the whole process group
    proc = subprocess.Popen([sys.executable, "-m", "rla_engine.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    first = f"{GROUP}.outcome.s0"
    wait_for(lambda: db.exists() and _iteration(db, first) >= 2, timeout=120, what="two iterations")
    os.killpg(proc.pid, signal.SIGINT)
    proc.communicate(timeout=120)
    store = open_store(db, create=False)
    assert store.get_run(first)["status"] == "stopped"
    stopped_at = store.get_run(first)["iteration"]

    res = rla(*args[:-4], "--out", str(out), db=db, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    # the other arm starts now, or (two runs at a time, an idle machine) finished before Ctrl-C and is kept
    full = (f"{GROUP}.full.s0: started", f"{GROUP}.full.s0: completed")
    assert f"{first}: resumed" in res.stdout and any(line in res.stdout for line in full), res.stdout
    runs = {r["id"]: r for r in store.list_runs()}
    assert set(runs) == {first, f"{GROUP}.full.s0"}
    for run_id, run in runs.items():
        assert run["status"] == "completed" and run["group_id"] == GROUP
        steps = store.series(run_id, metrics.ENV_STEPS)[1]
        assert steps[-1] >= 1600 > steps[-2]          # stopped at the budget, not before, not after
        assert store.series(run_id, metrics.EVAL_SUCCESS)[0][-1] == run["iteration"]   # evaluated at the end
    assert runs[first]["iteration"] > stopped_at
    events = [e["kind"] for e in store.events(first)]
    assert "resumed_from_checkpoint" in events
    config = store.run_config(f"{GROUP}.full.s0")
    assert config["env"]["strategy"] == "rlanything" and config["judge"]["train"] is True
    assert store.run_config(first)["policy"]["lam"] == 0.0 and store.run_config(first)["env"]["strategy"] == "fixed"

    table = out.read_text()
    assert "| outcome | 1 |" in table and "| full | 1 |" in table and "Not finished" not in table
    for figure in ("curves", "theory"):       # drawn by the console package's renderer
        assert (tmp_path / f"table.{figure}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["budget"] == 1600 and set(data["arms"]) == {"outcome", "full"}
    assert data["arms"]["full"]["runs"]["0"][metrics.ENV_STEPS] >= 1600

    # a rerun skips the finished runs; the same group with other settings is refused
    again = rla(*args[:-4], "--out", str(out), db=db, timeout=120)
    assert again.returncode == 0 and again.stdout.count(": completed") == 2
    assert {r["id"]: r["iteration"] for r in store.list_runs()} == {k: v["iteration"] for k, v in runs.items()}
    other = rla(*args[:-4], "--set", "policy.lr=0.01", "--out", str(out), db=db, timeout=120)
    assert other.returncode == 2 and "policy.lr" in other.stderr


def _iteration(db, run_id):
    try:
        run = open_store(db, create=False).get_run(run_id)
    except Exception:        # the database is being created
        return 0
    return run["iteration"] if run else 0


def test_an_arm_means_the_same_whatever_the_base_says():
    """A base that turns the μ gate on (the arithmetic preset does) or the random critic on must not
    turn the paper's "full" arm into another arm: only the arms that name them get them."""
    from rla_engine.ablation.arms import arm_config
    from rla_engine.config import build
    base = build(preset="arithmetic", sets=["env.critic=random"])
    assert base.policy.mu_gate
    full = arm_config(base, "full", 0, 1000)
    assert (full.policy.mu_gate, full.env.critic, full.policy.lam) == (False, "judge", base.policy.lam)
    assert arm_config(base, "full+gate", 0, 1000).policy.mu_gate
    assert arm_config(base, "full+random-critic", 0, 1000).env.critic == "random"


def test_the_paper_form_stays_an_arm_whatever_the_presets_default():
    """`full (paper form)` is the paper's judge on any base; `full` takes the base's (the presets'
    repaired judge); both keep every other shared setting, and the run id stays a plain word."""
    from rla_engine.ablation.arms import arm_config, parse_arms, run_id_of
    from rla_engine.config import build, profile_of
    base = build(preset="keyrooms", sets=["judge.profile=repaired", "judge.lr=0.002"])
    paper, full = arm_config(base, "full (paper form)", 0, 1000), arm_config(base, "full", 0, 1000)
    assert (profile_of(paper), profile_of(full)) == ("paper", "repaired")
    assert paper.judge.lr == full.judge.lr == 0.002 and paper.env.strategy == full.env.strategy == "rlanything"
    assert parse_arms("outcome+env,full (paper form), full") == ["outcome+env", "full (paper form)", "full"]
    assert run_id_of("g", "full (paper form)", 3) == "g.full_paper_form.s3"
    assert run_id_of("g", "outcome+env", 0) == "g.outcome_env.s0"
    assert run_id_of("g", "full+oracle-judge", 0) == "g.full_oracle-judge.s0"
