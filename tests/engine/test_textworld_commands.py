"""textworld_commands: the textworld family's real games played by the embedded networks, which
pick one of the game's admissible commands per turn from each command's features
(rla_engine/tasks/textworld_commands.py). The tensor families' contract at a size real games allow
(test_families.py draws thousands of tasks), the slots and their features, the policy that scores
every slot alike, and a crash (test_textworld_loop.py: `rla run`, its transcripts, a kill and a resume)."""
import numpy as np
import pytest
import torch

from rla_engine.models.networks import PolicyNet
from rla_engine.tasks import load_family
from rla_engine.tasks import textworld_commands as tc
from rla_engine.vocabulary import EventKind

from engine_support import crash_the_second_game_start, play

FAMILY = load_family("textworld_commands")


@pytest.fixture(scope="module")
def tasks():
    return FAMILY.sample_many([0.0, 0.2, 0.4], np.random.default_rng(5))


def test_the_walkthrough_wins_every_game_and_each_of_its_steps_is_labelled_good(tasks):
    env = FAMILY.make_env(tasks, 2)
    obs = env.reset()
    assert obs.shape == (6, tc.SLOTS * tc.FEATURES) and obs.dtype == torch.float32 and env.active.all()
    for active, _obs, oracle, info in play(env, lambda e: e.oracle_action()):
        assert (oracle[active] == 1).all() and (info[active, tc.INFO_NAMES.index("progress")] == 1).all()
        # an ended episode ignores its action: label +1, zero info
        assert (oracle[~active] == 1).all() and (info[~active] == 0).all()
    assert env.success.all() and not env.active.any()


def test_the_same_actions_replay_the_same_episode_and_its_transcript(tasks):
    def episode_log():
        env = FAMILY.make_env(tasks, 2)
        first = env.reset()
        gen = torch.Generator().manual_seed(3)
        chosen = []

        def random(e):
            chosen.append(torch.randint(0, tc.SLOTS, (e.n,), generator=gen))
            return chosen[-1]
        log = play(env, random)
        return [first, *(x for step in log for x in step[1:]), env.success], chosen, log
    a, chosen, log = episode_log()
    b, _, _ = episode_log()
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    steps = int(sum(int(active[0]) for active, *_ in log))
    transcript = FAMILY.transcript(tasks[0], [int(c[0]) for c in chosen[:steps]])
    assert len(transcript) == steps and all(t["command"] and t["answer"] for t in transcript)
    assert not any(">" in t["answer"] or "-=" in t["answer"] for t in transcript)   # no prompt, no status bar


def test_an_empty_slot_wastes_the_turn(tasks):
    env = FAMILY.make_env(tasks[:1], 1)
    env.reset()
    held = len(env.episodes[0].commands)
    assert held < tc.SLOTS and not env.reset()[0].view(tc.SLOTS, tc.FEATURES)[held:].any()
    _obs, oracle, info = env.step(torch.tensor([tc.SLOTS - 1]))
    assert int(oracle[0]) == -1 and int(info[0, tc.INFO_NAMES.index("valid")]) == 0
    assert env.episodes[0].turn == 1


def test_look_inventory_and_examine_give_way_when_the_slots_are_full():
    many = [f"take thing {i:02d}" for i in range(14)] + ["look", "inventory", "examine thing 01", "go east"]
    held = tc.choices(many)
    assert len(held) == tc.SLOTS and held == sorted(held)
    assert "go east" in held and all(f"take thing {i:02d}" in held for i in range(14))
    assert tc.choices(["look", "go west"]) == ["go west", "look"]     # room enough: nothing gives way


def test_a_commands_features_follow_what_was_played(tasks):
    env = FAMILY.make_env(tasks[1:2], 1)
    env.reset()
    episode = env.episodes[0]
    k = episode.commands.index("inventory")          # changes nothing in the game: it stays on the list
    env.step(torch.tensor([k]))
    row = episode.features()[episode.commands.index("inventory")]
    assert row[0] == 1 and row[16] == pytest.approx(1 / 3) and row[17] == 1
    assert row[23] == pytest.approx(1 / episode.budget)
    assert row[1:11].tolist() == [0.0] * 9 + [1.0]    # its verb: other


def test_the_policy_scores_every_slot_with_the_same_network_and_never_picks_an_empty_one():
    torch.manual_seed(0)
    net = PolicyNet(tc.SLOTS * tc.FEATURES, tc.SLOTS, 16, slot_features=tc.FEATURES)
    obs = torch.rand(5, tc.SLOTS, tc.FEATURES)
    obs[..., 0] = 1.0
    obs[:, 10:, :] = 0.0                  # six empty slots
    perm = torch.randperm(10)
    shuffled = obs.clone()
    shuffled[:, :10] = obs[:, perm]
    logits, moved = net(obs.flatten(1)), net(shuffled.flatten(1))
    assert torch.allclose(moved[:, :10], logits[:, perm])
    logp = torch.log_softmax(logits, -1)
    assert (logp[:, 10:].exp() == 0).all() and torch.isfinite(net.entropy(obs.flatten(1))).all()


def test_the_critic_reads_the_info_rows_as_the_textworld_family_does(tasks):
    env = FAMILY.make_env(tasks[2:], 1)
    env.reset()
    rows = [(i, info[0].tolist()) for i, (active, _o, _l, info) in
            enumerate(play(env, lambda e: torch.full((e.n,), tc.SLOTS - 1))) if active[0]]
    critic = FAMILY.critic(tasks[2], rows)
    assert critic["n"] == len(rows) == env.max_steps and critic["invalid"] == {"other": len(rows)}
    assert critic["focus"] in ("quest_length", "world_size", "nb_objects") and critic["crashed"] == 0


def test_a_game_that_crashes_ends_its_episode_with_an_event_and_the_run_goes_on(monkeypatch):
    from rla_engine.config import build
    from rla_engine.loop.trainer import Trainer

    crash_the_second_game_start(monkeypatch)
    sets = ["task.pool_size=2", "rollout.tasks_per_iter=2", "rollout.rollouts_per_task=2", "eval.every=100",
            "env.strategy=fixed", "task.dataset_high=0.1", "eval.tasks_per_tier=1"]
    trainer = Trainer(build(preset="textworld-commands", sets=sets, seed=3), torch.device("cpu"))
    first = trainer.step()
    crashed = [p for k, p in first.events if k == EventKind.EPISODE_CRASHED]
    assert len(crashed) == 1 and crashed[0]["step"] == 0 and "interpreter" in crashed[0]["error"]
    second = trainer.step()
    assert second.iteration == 2 and not [k for k, _ in second.events if k == EventKind.EPISODE_CRASHED]
