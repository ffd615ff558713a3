"""A TextWorld game's generation settings: what a task's params hold, their ranges, how hard they
make a game, and the environment model's moves between them. Plain Python: neither TextWorld nor
torch is imported here (the console and the config read these).

A task is `Task("textworld", params, seed)`; `params` names a challenge of TextWorld's own
generator and its settings, and the seed draws the concrete game:
- {"challenge": "custom", "world_size": rooms, "nb_objects": objects, "quest_length": steps}
  (`tw-make custom`);
- {"challenge": "coin_collector", "level": L} (`tw-make tw-coin_collector`: a chain of L rooms to a coin);
- {"challenge": "treasure_hunter", "level": L} (`tw-make tw-treasure_hunter`: find an object among
  distractors, locked doors and containers from level 11 and 21).

Difficulty, in [0, 1], follows the quest length first: custom is 0.6 quest length, 0.25 rooms and
0.15 objects (each from its least to its most); a challenge's is its level over its range. The
levels stop where the walkthrough still fits the turn budget of `text_base`'s one-command turns
(coin_collector: 18 of TextWorld's 300, the quest-length levels without distractor rooms).
"""
from __future__ import annotations

import json
from typing import Any

CHALLENGES = ("custom", "coin_collector", "treasure_hunter")
# TextWorld's names of the two built-in challenges
TW_CHALLENGE = {"coin_collector": "tw-coin_collector", "treasure_hunter": "tw-treasure_hunter"}
CUSTOM_RANGES = {"quest_length": (1, 8), "world_size": (1, 8), "nb_objects": (0, 16)}
CUSTOM_WEIGHTS = {"quest_length": 0.6, "world_size": 0.25, "nb_objects": 0.15}
LEVELS = {"coin_collector": (1, 18), "treasure_hunter": (1, 30)}
KNOB_ORDER = ("quest_length", "world_size", "nb_objects")       # the environment model's first move first
MAX_DELTA = 0.15
SEED_RANGE = (0, 2**31)          # a seed a proposal may name: the training half (task.TRAIN_SEEDS)


class SettingsError(ValueError):
    """Settings TextWorld cannot generate from; the message names the key and what it allows."""


def _int(data: dict, key: str, lo: int, hi: int) -> int:
    if key not in data:
        raise SettingsError(f"{key}: missing (an integer from {lo} to {hi})")
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise SettingsError(f"{key}: {json.dumps(value)[:40]} is not an integer (from {lo} to {hi})")
    if not lo <= value <= hi:
        raise SettingsError(f"{key}: {value} is outside {lo}..{hi}")
    return value


def parse(data: Any) -> dict:
    """Canonical params from a JSON value (a stored task or a proposal); SettingsError names what is wrong.
    Keys other than the challenge's own (and `seed`, which from_json reads) are refused."""
    if not isinstance(data, dict):
        raise SettingsError(f"expected a JSON object of generation settings, not {type(data).__name__}")
    challenge = data.get("challenge", "custom")
    if challenge not in CHALLENGES:
        raise SettingsError(f"challenge: {json.dumps(challenge)[:40]} is not one of {', '.join(CHALLENGES)}")
    if challenge == "custom":
        out: dict = {"challenge": "custom", **{k: _int(data, k, *CUSTOM_RANGES[k]) for k in KNOB_ORDER}}
    else:
        out = {"challenge": challenge, "level": _int(data, "level", *LEVELS[challenge])}
    extra = sorted(set(data) - set(out) - {"seed"})
    if extra:
        raise SettingsError(f"{extra[0]}: not a setting of the {challenge} challenge (it has "
                            f"{', '.join(k for k in out if k != 'challenge')})")
    return out


def difficulty(params: dict) -> float:
    if params["challenge"] == "custom":
        return round(sum(w * (params[k] - CUSTOM_RANGES[k][0]) / (CUSTOM_RANGES[k][1] - CUSTOM_RANGES[k][0])
                         for k, w in CUSTOM_WEIGHTS.items()), 6)
    lo, hi = LEVELS[params["challenge"]]
    return round((params["level"] - lo) / (hi - lo), 6)


def settings_near(challenge: str, d: float, rng) -> dict:
    """Params of `challenge` whose difficulty is close to d: a custom game's knobs spread around d
    (so that a tier holds several shapes of game), a challenge's level rounded from d."""
    if challenge != "custom":
        lo, hi = LEVELS[challenge]
        return {"challenge": challenge, "level": round(lo + min(max(d, 0.0), 1.0) * (hi - lo))}
    best: dict | None = None
    for _ in range(64):
        knobs = {}
        for k in KNOB_ORDER:
            lo, hi = CUSTOM_RANGES[k]
            target = min(max(d + rng.normal(0.0, 0.15), 0.0), 1.0)
            knobs[k] = round(lo + target * (hi - lo))
        params = {"challenge": "custom", **knobs}
        if best is None or abs(difficulty(params) - d) < abs(difficulty(best) - d):
            best = params
        if abs(difficulty(params) - d) <= 0.05:
            return params
    assert best is not None
    return best


def moves(params: dict, direction: str, focus: str | None, rng) -> list[dict]:
    """Candidate variants one step harder or easier, the critic's focus (a custom knob) first,
    then the quest length, then the rest; each within MAX_DELTA of the original."""
    if direction not in ("harder", "easier"):
        raise ValueError(f"direction must be 'harder' or 'easier', not {direction!r}")
    sign = 1 if direction == "harder" else -1
    d0 = difficulty(params)
    if params["challenge"] != "custom":
        lo, hi = LEVELS[params["challenge"]]
        out = [{**params, "level": params["level"] + sign * step} for step in (1, 2)
               if lo <= params["level"] + sign * step <= hi]
    else:
        order = ([focus] if focus in KNOB_ORDER else []) + list(KNOB_ORDER)
        out = []
        for k in dict.fromkeys(order):
            lo, hi = CUSTOM_RANGES[k]
            for step in ((1, 2) if k == "nb_objects" else (1,)):
                if lo <= params[k] + sign * step <= hi:
                    out.append({**params, k: params[k] + sign * step})
    return [p for p in out if abs(difficulty(p) - d0) <= MAX_DELTA + 1e-9] or [dict(params)]


def schema_text(max_walkthrough: int) -> str:
    """The settings as the environment model is told them."""
    q, w, o = (CUSTOM_RANGES[k] for k in KNOB_ORDER)
    return (f'{{"challenge": "custom", "quest_length": {q[0]}..{q[1]}, "world_size": {w[0]}..{w[1]} rooms, '
            f'"nb_objects": {o[0]}..{o[1]}}} or {{"challenge": "coin_collector", "level": '
            f'{LEVELS["coin_collector"][0]}..{LEVELS["coin_collector"][1]}}} or {{"challenge": "treasure_hunter", '
            f'"level": {LEVELS["treasure_hunter"][0]}..{LEVELS["treasure_hunter"][1]}}}, with an optional "seed" '
            f"(0..{SEED_RANGE[1] - 1}) that draws the concrete game. TextWorld's own generator builds it; a game "
            f"whose walkthrough does not win, or is longer than {max_walkthrough} commands, is refused. A longer "
            "quest, more rooms and more objects make a custom game harder; a higher level a challenge's.")
