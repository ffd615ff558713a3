"""`rla run` end to end on real TextWorld games: the games are built once into the database's games
folder and shared by its runs; a language model's trajectories are real games' transcripts with the
games' own oracle labels; the embedded policy's episodes are stored with their transcripts; and a
run killed after an iteration and resumed stores exactly what an uninterrupted one does."""
import json

from rla_engine import metrics
from rla_engine.store import open_store
from rla_engine.tasks.textworld_games import MANIFEST
from rla_engine.vocabulary import EventKind

from engine_support import crash_the_second_game_start, killed_then_resumed, only_run, rla

SETS = ["eval.every=2", "eval.tasks_per_tier=1", "rollout.rollouts_per_task=2", "rollout.tasks_per_iter=1",
        "task.pool_size=2"]
ARGS = ["--preset", "textworld-commands", "--iterations", "2", "--seed", "3",
        *(a for s in [*SETS, "rollout.tasks_per_iter=2"] for a in ("--set", s))]


def comparable(by_iteration):
    return {it: {k: v for k, v in m.items() if not metrics.is_machine_key(k)} for it, m in by_iteration.items()}


def test_a_language_model_plays_real_games_through_rla_run(tmp_path):
    res = rla("run", "--preset", "textworld", "--iterations", "1", "--seed", "3",
              *(a for s in [*SETS, "eval.tiers=[0.1]"] for a in ("--set", s)), db=tmp_path / "a.db", timeout=300)
    assert res.returncode == 0, res.stderr
    store = open_store(tmp_path / "a.db")
    run = only_run(store)
    assert run["status"] == "completed"
    events = store.events(run["id"])
    assert not [e for e in events if e["kind"] == EventKind.EPISODE_CRASHED]
    trajectories = [t for e in events if e["kind"] == EventKind.SAMPLES for t in e["payload"]["trajectories"]]
    assert trajectories
    for t in trajectories:
        assert t["task"].startswith("You are playing a text game.") and "Commands: " in t["task"]
        steps = [s for turn in t["turns"] for s in turn["steps"]]
        assert steps and all(s["oracle"] in (1, -1) for s in steps)
        assert t["success"] == t["turns"][-1]["observation"].endswith("You won.")
    tasks = store.tasks(run["id"])
    assert tasks and all(json.loads(r["params_json"])["params"]["challenge"] == "custom" for r in tasks)
    assert any((g / MANIFEST).is_file() for g in (tmp_path / "games").iterdir())


def test_a_textworld_run_stores_its_transcripts_and_resumes_exactly_after_a_kill(tmp_path):
    straight = rla("run", *ARGS, db=tmp_path / "a.db", timeout=300)
    assert straight.returncode == 0, straight.stderr
    store = open_store(tmp_path / "a.db")
    run = only_run(store)
    by_it = store.metrics_by_iteration(run["id"])
    assert sorted(by_it) == [1, 2]
    games = sorted(p for p in (tmp_path / "games").iterdir())
    assert games and all((g / MANIFEST).is_file() for g in games)
    episodes = [e["payload"] for e in store.events(run["id"]) if e["kind"] == EventKind.EPISODE]
    assert len(episodes) == 2
    for ep in episodes:
        assert ep["family"] == "textworld_commands" and ep["task"]["plan"]
        assert len(ep["transcript"]) == len(ep["verdicts"]) == len(ep["oracle"]) >= 1
        assert ep["success"] == (ep["transcript"][-1]["answer"] == "You won.")

    db = tmp_path / "b.db"             # beside a.db: the same games folder, nothing built again
    before = {g.name: (g / MANIFEST).stat().st_mtime_ns for g in games}
    assert comparable(killed_then_resumed(db, *ARGS)) == comparable(by_it)
    assert {g.name for g in (tmp_path / "games").iterdir()} == set(before)


def test_a_game_that_crashes_ends_its_episode_with_an_event_and_the_run_goes_on(monkeypatch):
    import torch

    from rla_engine.config import build
    from rla_engine.loop.trainer import Trainer

    # the first start reads the game's opening for the instruction; the second is an episode's
    crash_the_second_game_start(monkeypatch)
    trainer = Trainer(build(preset="textworld", sets=[*SETS, "env.strategy=fixed"], seed=3), torch.device("cpu"))
    first = trainer.step()
    crashed = [p for k, p in first.events if k == EventKind.EPISODE_CRASHED]
    assert len(crashed) == 1 and crashed[0]["error"] == "RuntimeError: the interpreter fell over"
    assert crashed[0]["task"]["params"]["challenge"] == "custom" and crashed[0]["step"] == 0
    second = trainer.step()             # the run goes on, its games playing again
    assert second.iteration == 2 and not [k for k, _ in second.events if k == EventKind.EPISODE_CRASHED]
