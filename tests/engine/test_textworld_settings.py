"""A TextWorld game's generation settings (rla_engine/tasks/textworld_settings.py): what a
proposal may say and the line that names what is wrong, difficulty, and the environment model's
moves. Plain Python: no game is built here (test_textworld_games.py and test_textworld.py do)."""
import itertools
import json

import numpy as np
import pytest

from rla_engine.tasks.textworld_settings import CUSTOM_RANGES, KNOB_ORDER, LEVELS, MAX_DELTA, SettingsError, \
    difficulty, moves, parse, settings_near

CUSTOM = {"challenge": "custom", "quest_length": 3, "world_size": 3, "nb_objects": 4}


@pytest.mark.parametrize("data, named", [
    ([1, 2], "JSON object"),
    ({"challenge": "cooking", "level": 1}, "challenge"),
    ({"challenge": 3}, "challenge"),
    ({"challenge": "custom", "quest_length": 3, "world_size": 3}, "nb_objects: missing"),
    ({**CUSTOM, "quest_length": 0}, "quest_length: 0 is outside 1..8"),
    ({**CUSTOM, "quest_length": 9}, "quest_length: 9 is outside"),
    ({**CUSTOM, "world_size": 2.5}, "world_size: 2.5 is not an integer"),
    ({**CUSTOM, "world_size": True}, "world_size: true is not an integer"),
    ({**CUSTOM, "nb_objects": "4"}, "nb_objects"),
    ({**CUSTOM, "level": 3}, "level: not a setting of the custom challenge"),
    ({"challenge": "coin_collector", "level": 19}, "level: 19 is outside 1..18"),
    ({"challenge": "treasure_hunter", "level": 0}, "level: 0 is outside 1..30"),
    ({"challenge": "treasure_hunter"}, "level: missing"),
    ({"challenge": "coin_collector", "level": 3, "world_size": 2}, "world_size: not a setting"),
])
def test_bad_settings_are_refused_in_one_line_naming_the_key(data, named):
    with pytest.raises(SettingsError) as err:
        parse(data)
    msg = str(err.value)
    assert named in msg and "\n" not in msg and len(msg) < 300, msg


def test_settings_read_back_as_written_and_custom_is_the_default_challenge():
    assert parse(CUSTOM) == CUSTOM
    assert parse({k: v for k, v in CUSTOM.items() if k != "challenge"}) == CUSTOM
    assert parse({"challenge": "coin_collector", "level": 7, "seed": 5}) == {"challenge": "coin_collector", "level": 7}


def test_difficulty_spans_zero_to_one_and_follows_the_quest_length_first():
    lo = {"challenge": "custom", **{k: CUSTOM_RANGES[k][0] for k in KNOB_ORDER}}
    hi = {"challenge": "custom", **{k: CUSTOM_RANGES[k][1] for k in KNOB_ORDER}}
    assert difficulty(lo) == 0.0 and difficulty(hi) == 1.0
    one_more = {k: difficulty({**CUSTOM, k: CUSTOM[k] + 1}) - difficulty(CUSTOM) for k in KNOB_ORDER}
    assert one_more["quest_length"] > one_more["world_size"] > one_more["nb_objects"] > 0
    for challenge, (first, last) in LEVELS.items():
        ds = [difficulty({"challenge": challenge, "level": level}) for level in range(first, last + 1)]
        assert ds[0] == 0.0 and ds[-1] == 1.0 and all(b > a for a, b in itertools.pairwise(ds))


@pytest.mark.parametrize("challenge", ["custom", "coin_collector", "treasure_hunter"])
def test_settings_near_a_difficulty_are_close_to_it(challenge):
    rng = np.random.default_rng(0)
    for d in np.linspace(0, 1, 11):
        got = [difficulty(settings_near(challenge, float(d), rng)) for _ in range(5)]
        step = 1 / (LEVELS[challenge][1] - LEVELS[challenge][0]) if challenge != "custom" else 0.1
        assert max(abs(g - d) for g in got) <= max(0.05, step / 2 + 1e-9), (d, got)


def test_custom_settings_near_a_difficulty_vary_their_shape():
    rng = np.random.default_rng(1)
    shapes = {json.dumps(settings_near("custom", 0.5, rng), sort_keys=True) for _ in range(30)}
    assert len(shapes) >= 4


@pytest.mark.parametrize("params", [CUSTOM, {"challenge": "coin_collector", "level": 9},
                                    {"challenge": "treasure_hunter", "level": 15}])
@pytest.mark.parametrize("direction", ["harder", "easier"])
def test_moves_go_the_asked_way_within_the_step_limit(params, direction):
    sign = 1 if direction == "harder" else -1
    got = moves(params, direction, None, np.random.default_rng(0))
    assert got and all(0 < sign * (difficulty(p) - difficulty(params)) <= MAX_DELTA + 1e-9 for p in got)
    if params["challenge"] == "custom":
        assert got[0] == {**params, "quest_length": params["quest_length"] + sign}      # the quest length first


def test_the_critics_focus_moves_first_and_an_edge_stays_put():
    assert moves(CUSTOM, "harder", "world_size", np.random.default_rng(0))[0] == {**CUSTOM, "world_size": 4}
    top = {"challenge": "custom", **{k: CUSTOM_RANGES[k][1] for k in KNOB_ORDER}}
    assert moves(top, "harder", None, np.random.default_rng(0)) == [top]
    with pytest.raises(ValueError, match="direction"):
        moves(CUSTOM, "sideways", None, np.random.default_rng(0))
