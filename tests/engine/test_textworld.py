"""The textworld family (rla_engine/tasks/textworld_family.py) on real TextWorld games: a game
played by its walkthrough is won with every step labelled good, a detour and an unknown command
are labelled bad, the turn budget, held-out seeds, the procedural and the language-model
environment models, a game that crashes mid-episode, and TextWorld missing."""
import json
import subprocess
import sys

import numpy as np
import pytest

from rla_engine.tasks import family_spec
from rla_engine.tasks.task import HELD_OUT_SEEDS, TRAIN_SEEDS, Task
from rla_engine.tasks.textworld_family import MAX_TURNS, TextWorldFamily, budget
from rla_engine.tasks.textworld_settings import MAX_DELTA, difficulty

import text_family_checks as checks

SMALL = {"challenge": "custom", "world_size": 2, "nb_objects": 2, "quest_length": 2}


@pytest.fixture(scope="module")
def fam(tmp_path_factory):
    family = TextWorldFamily()
    family.use_games(tmp_path_factory.mktemp("games"), workers=2)
    return family


def _listed(observation: str) -> list[str]:
    return observation.split("Commands: ")[1].split(" | ")


def test_the_walkthrough_wins_and_every_step_of_it_is_labelled_good(fam):
    task = Task(fam.name, dict(SMALL), 11)
    assert fam.validate(task) is None
    walkthrough = fam.describe(task)["plan"]
    assert fam.turns(task) == budget(len(walkthrough))
    first = fam.instruction(task)
    assert "Commands: " in first and "-=" not in first
    episode = fam.start(task)
    labels = []
    for command in walkthrough:
        result = episode.respond([f"  {command.upper()}."])           # matched leniently
        labels += result.labels
        assert result.infos[0]["valid"] and result.infos[0]["progress"]
    assert labels == [1] * len(walkthrough)
    assert result.done and result.success and result.observation.endswith("You won.")


def test_a_detour_and_an_unknown_command_are_bad_steps_and_cost_their_turns(fam):
    task = Task(fam.name, dict(SMALL), 11)
    walkthrough = fam.describe(task)["plan"]
    episode = fam.start(task)
    unknown = episode.respond(["dance wildly"])
    assert unknown.labels == [-1] and not unknown.infos[0]["valid"]
    assert unknown.observation.startswith("Nothing happens.")
    listed = _listed(unknown.observation)
    detour = next(c for c in listed if c in ("look", "inventory") or c.startswith("examine"))
    bad = episode.respond([detour])
    assert bad.labels == [-1] and bad.infos[0]["valid"] and not bad.infos[0]["progress"]
    assert bad.infos[0]["wanted"] == walkthrough[0].split(" ")[0] or bad.infos[0]["wanted"] == "other"
    two = episode.respond(["a", "b"])                 # one command per turn: a second string is a bad step
    assert two.labels[1] == -1 and two.infos[1]["command"] == "extra"
    turns_left = fam.turns(task) - 3
    for _ in range(turns_left - 1):
        assert not episode.respond(["look"]).done
    last = episode.respond(["look"])
    assert last.done and not last.success and last.observation.endswith("You are out of turns.")


def test_sampled_games_are_near_their_difficulty_and_held_out_seeds_never_train(fam):
    rng = np.random.default_rng(5)
    for d in (0.1, 0.4):
        train, held = fam.sample(d, rng), fam.sample(d, rng, held_out=True)
        for task in (train, held):
            assert abs(fam.difficulty(task.params) - d) <= 0.05 and fam.validate(task) is None
        assert TRAIN_SEEDS[0] <= train.seed < TRAIN_SEEDS[1] and HELD_OUT_SEEDS[0] <= held.seed < HELD_OUT_SEEDS[1]


def test_the_procedural_environment_model_moves_the_critics_knob_within_the_limit(fam):
    task = Task(fam.name, dict(SMALL), 11)
    episode = fam.start(task)
    steps = [(i, episode.respond(["go nowhere"]).infos[0]) for i in range(2)]
    critic = fam.critic(task, steps)
    assert critic["invalid"] == {"go": 2} and critic["focus"] == "world_size"
    rng = np.random.default_rng(0)
    harder = fam.mutate(task, "harder", critic, rng)
    assert harder.params == {**SMALL, "world_size": 3} and harder.seed != task.seed
    assert 0 < difficulty(harder.params) - difficulty(SMALL) <= MAX_DELTA and fam.validate(harder) is None
    easier = fam.mutate(task, "easier", {}, rng)
    assert difficulty(easier.params) < difficulty(SMALL) and fam.validate(easier) is None


def test_a_proposed_json_is_checked_and_a_game_that_cannot_be_made_is_refused(fam, monkeypatch):
    root = Task(fam.name, dict(SMALL), 11)
    proposal = fam.from_json({"challenge": "coin_collector", "level": 2, "seed": 4}, root)
    assert proposal.params == {"challenge": "coin_collector", "level": 2} and proposal.seed == 4
    assert fam.validate(proposal) is None
    back = fam.from_json(json.loads(json.dumps(fam.task_json(root))), root)
    assert back.params == root.params and back.seed == root.seed
    for bad in ({"challenge": "chess"}, {**SMALL, "quest_length": 99}, {**SMALL, "seed": -1},
                {**SMALL, "seed": HELD_OUT_SEEDS[0]}, {**SMALL, "rooms": 3}, "go east"):
        checks.check_rejected(fam, bad, root)
    import textworld.generator

    def fails(game, options):
        raise RuntimeError("Inform 7 said no")
    monkeypatch.setattr(textworld.generator, "compile_game", fails)
    unmade = fam.from_json({**SMALL, "seed": 1234}, root)
    assert fam.validate(unmade) == "TextWorld could not make this game: RuntimeError: Inform 7 said no"
    assert "quest_length" in fam.variant_schema() and "coin_collector" in fam.variant_schema()


def test_a_game_that_crashes_mid_episode_fails_that_episode_saying_why(fam, monkeypatch):
    task = Task(fam.name, dict(SMALL), 11)
    episode = fam.start(task)

    def broken(command):
        raise RuntimeError("the interpreter fell over")
    monkeypatch.setattr(episode.env, "step", broken)
    walkthrough = fam.describe(task)["plan"]
    result = episode.respond([walkthrough[0]])
    assert result.done and not result.success and result.labels == [-1]
    assert result.infos[0]["crash"] == "RuntimeError: the interpreter fell over"
    assert fam.critic(task, [(0, result.infos[0])])["crashed"] == 1
    again = fam.start(task).respond([walkthrough[0]])           # the next episode of that game plays
    assert again.labels == [1]


def test_the_turn_budget_never_passes_the_most_turns(fam):
    task = Task(fam.name, {"challenge": "coin_collector", "level": 18}, 3)
    assert fam.validate(task) is None and fam.turns(task) <= MAX_TURNS


def test_the_family_module_imports_without_torch_or_textworld():
    code = ("import sys; import rla_engine.tasks.textworld_family, rla_engine.tasks.textworld_games; "
            "assert 'torch' not in sys.modules and 'textworld' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


BLOCK_TEXTWORLD = """
import importlib.abc, sys
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "textworld" or name.startswith("textworld."):
            raise ModuleNotFoundError(name)
sys.meta_path.insert(0, Hide())
"""


def test_without_textworld_a_run_is_refused_in_one_line_naming_the_extra(tmp_path):
    code = BLOCK_TEXTWORLD + ("from rla_engine.cli import main\n"
                              f"sys.exit(main(['run', '--preset', 'textworld', '--db', {str(tmp_path / 'r.db')!r}]))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip() == ("rla: invalid config: task.family = 'textworld': needs the Python package "
                                  "'textworld', which is not installed: pip install 'rlanything[textworld]'"), \
        res.stderr
    assert not (tmp_path / "r.db").exists()
    assert family_spec("textworld").missing() is None           # here it is installed
