"""Drawing a `text_world` household from a few knobs, and the difficulty of a household.

Knobs: rooms (1..5), distractors (0..7 objects besides the goal object), closed containers (0..3)
and whether the goal object must be cleaned. `spread` (0..1) biases the layout towards long
plans: rooms chained in a line rather than a star, the goal object far from the start, the goal
place far from it, the sink off the way, the goal object's container and the goal place closed.

Difficulty = 0.25·(rooms−1)/4 + 0.15·distractors/7 + 0.15·min(closed, 3)/3 + 0.1·clean
+ 0.35·clip((plan length − 2)/12), "clean" meaning the goal asks for a clean object that starts
dirty. The plan length (2: take and put in one room, up to ~17) is the planner's, so difficulty
is exact for any world, a proposed one included.
"""
from __future__ import annotations

import json

import numpy as np

from .text_world_planner import plan_length, planned
from .text_world_rules import CONTAINERS, MAX_OBJECTS, MAX_PLACES, OBJECTS, ROOMS, SURFACES

KNOBS = ("rooms", "distractors", "closed", "clean")
KNOB_MAX = {"rooms": 5, "distractors": MAX_OBJECTS - 1, "closed": 3, "clean": 1}
WEIGHTS = {"rooms": 0.25, "distractors": 0.15, "closed": 0.15, "clean": 0.1}
KNOB_MIN = {"rooms": 1, "distractors": 0, "closed": 0, "clean": 0}
W_PLAN, PLAN_SPAN = 0.35, 12


def canonical(params: dict) -> str:
    return json.dumps(params, sort_keys=True)


def knobs_of(params: dict) -> dict[str, int]:
    goal = params["goal"]
    return {"rooms": len(params["rooms"]), "distractors": len(params["objects"]) - 1,
            "closed": sum(bool(p["closed"]) for p in params["places"].values()),
            "clean": int(goal["clean"] and params["objects"][goal["object"]]["dirty"])}


def plan_term(length: int | None) -> float:
    return 1.0 if length is None else float(np.clip((length - 2) / PLAN_SPAN, 0.0, 1.0))


def difficulty(params: dict) -> float:
    w, dist = planned(canonical(params))
    k = knobs_of(params)
    knob = sum(WEIGHTS[n] * (min(k[n], KNOB_MAX[n]) - KNOB_MIN[n]) / (KNOB_MAX[n] - KNOB_MIN[n]) for n in KNOBS)
    return float(np.clip(knob + W_PLAN * plan_term(plan_length(w, dist)), 0.0, 1.0))


def _room_dist(n: int, doors: list[list[int]]) -> np.ndarray:
    d = np.full((n, n), n, int)
    np.fill_diagonal(d, 0)
    for a, b in doors:
        d[a, b] = d[b, a] = 1
    for m in range(n):                                    # Floyd–Warshall over ≤ 5 rooms
        d = np.minimum(d, d[:, m:m + 1] + d[m:m + 1, :])
    return d


def _pick(g: np.random.Generator, cands: list[int], score, spread: float) -> int:
    """The candidate with the highest score with probability `spread`, else a random one."""
    if g.random() < spread:
        best = max(score(c) for c in cands)
        cands = [c for c in cands if score(c) == best]
    return cands[int(g.integers(len(cands)))]


def generate(knobs: dict[str, int], spread: float, g: np.random.Generator) -> dict:
    """Canonical params of a fresh household with these knobs."""
    n_rooms = int(knobs["rooms"])
    rooms = [str(r) for r in g.choice(ROOMS, n_rooms, replace=False)]
    doors = [[int(i - 1 if g.random() < 0.5 + 0.5 * spread else g.integers(i)), i] for i in range(1, n_rooms)]
    dist = _room_dist(n_rooms, doors)
    counts = [2 + int(g.random() < 0.5)] if n_rooms == 1 else [1 + int(g.random() < 0.6) for _ in rooms]
    while sum(counts) > MAX_PLACES:
        counts[int(g.choice([i for i, c in enumerate(counts) if c > 1]))] -= 1
    place_room = [r for r, c in enumerate(counts) for _ in range(c)]
    n_closed = min(int(knobs["closed"]), len(place_room))
    n_cont = min(len(place_room), n_closed + int(g.binomial(len(place_room) - n_closed, 0.4)))
    is_cont = np.zeros(len(place_room), bool)
    is_cont[g.choice(len(place_room), n_cont, replace=False)] = True
    names = iter(g.permutation(CONTAINERS)), iter(g.permutation(SURFACES))
    places = [str(next(names[0] if c else names[1])) for c in is_cont]
    start = int(g.integers(n_rooms))
    every = list(range(len(places)))
    closing = n_closed > 0 and g.random() < spread      # put the goal object in a container to be closed

    def far_from(room):
        return lambda p: (dist[room, place_room[p]], closing and is_cont[p])
    obj_place = _pick(g, every, far_from(start), spread)
    goal_place = _pick(g, [p for p in every if p != obj_place], far_from(place_room[obj_place]), spread)
    sink = None
    if knobs["clean"] or g.random() < 0.5:
        sink = _pick(g, list(range(n_rooms)),
                     lambda r: dist[place_room[obj_place], r] + dist[r, place_room[goal_place]], spread)
    relevant = [p for p in (obj_place, goal_place) if is_cont[p] and g.random() < spread]
    rest = [int(p) for p in g.permutation(np.flatnonzero(is_cont)) if p not in relevant]
    closed = set((relevant + rest)[:n_closed])
    objs = [str(o) for o in g.choice(OBJECTS, int(knobs["distractors"]) + 1, replace=False)]
    at = [obj_place] + [int(g.integers(len(places))) for _ in objs[1:]]
    dirty = [bool(knobs["clean"])] + [bool(g.random() < 0.3) for _ in objs[1:]]
    return {"rooms": rooms, "doors": [[rooms[a], rooms[b]] for a, b in doors], "start": rooms[start],
            "sink": None if sink is None else rooms[sink],
            "places": {q: {"room": rooms[place_room[i]], "closed": i in closed} for i, q in enumerate(places)},
            "objects": {o: {"at": places[at[i]], "dirty": dirty[i]} for i, o in enumerate(objs)},
            "goal": {"object": objs[0], "place": places[goal_place], "clean": bool(knobs["clean"])}}


def knobs_near(d: float, g: np.random.Generator) -> dict[str, int]:
    """Knobs drawn around difficulty d, each its share of the range plus noise."""
    out = {n: int(np.clip(round(KNOB_MIN[n] + (KNOB_MAX[n] - KNOB_MIN[n]) * (d + g.normal(0, 0.12))),
                          KNOB_MIN[n], KNOB_MAX[n])) for n in KNOBS if n != "clean"}
    out["clean"] = int(g.random() < d)
    return out
