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
from dataclasses import dataclass

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


@dataclass
class _Layout:
    """The rooms and places of a household being drawn, by index (named only in `_params`)."""
    rooms: list[str]
    doors: list[list[int]]     # pairs of room indices
    dist: np.ndarray           # [room, room]: doors between them
    place_room: list[int]      # per place: its room
    is_cont: np.ndarray        # per place: a container (else a surface)
    places: list[str]          # per place: its name
    n_closed: int              # containers to close: the knob, at most one per place


@dataclass
class _Goal:
    obj_place: int             # where the goal object starts
    goal_place: int            # where it must go
    sink: int | None           # the sink's room


def generate(knobs: dict[str, int], spread: float, g: np.random.Generator) -> dict:
    """Canonical params of a fresh household with these knobs.

    The draws happen in one fixed order (rooms, places, start, goal, closed containers, objects):
    a seed's household must stay the same, so a new draw goes after the others, never between."""
    layout = _draw_layout(int(knobs["rooms"]), int(knobs["closed"]), spread, g)
    start = int(g.integers(len(layout.rooms)))
    goal = _draw_goal(layout, start, bool(knobs["clean"]), spread, g)
    closed = _draw_closed(layout, goal, spread, g)
    objs, at, dirty = _draw_objects(int(knobs["distractors"]), goal.obj_place, len(layout.places),
                                    bool(knobs["clean"]), g)
    return _params(layout, start, goal, closed, objs, at, dirty, bool(knobs["clean"]))


def _draw_layout(n_rooms: int, closed: int, spread: float, g: np.random.Generator) -> _Layout:
    rooms = [str(r) for r in g.choice(ROOMS, n_rooms, replace=False)]
    # each room's door leads to the room before it (a line: long walks) with a chance that grows with spread,
    # else to any earlier room (a star)
    doors = [[int(i - 1 if g.random() < 0.5 + 0.5 * spread else g.integers(i)), i] for i in range(1, n_rooms)]
    place_room = _draw_place_rooms(n_rooms, g)
    n_closed = min(closed, len(place_room))
    is_cont = _draw_containers(len(place_room), n_closed, g)
    names = iter(g.permutation(CONTAINERS)), iter(g.permutation(SURFACES))
    places = [str(next(names[0] if c else names[1])) for c in is_cont]
    return _Layout(rooms, doors, _room_dist(n_rooms, doors), place_room, is_cont, places, n_closed)


def _draw_place_rooms(n_rooms: int, g: np.random.Generator) -> list[int]:
    """Each place's room: one or two places a room (two or three in a lone room), MAX_PLACES in all at most."""
    counts = [2 + int(g.random() < 0.5)] if n_rooms == 1 else [1 + int(g.random() < 0.6) for _ in range(n_rooms)]
    while sum(counts) > MAX_PLACES:
        counts[int(g.choice([i for i, c in enumerate(counts) if c > 1]))] -= 1
    return [r for r, c in enumerate(counts) for _ in range(c)]


def _draw_containers(n_places: int, n_closed: int, g: np.random.Generator) -> np.ndarray:
    """Which places are containers: enough for the closed ones, each other place with chance 0.4."""
    n_cont = min(n_places, n_closed + int(g.binomial(n_places - n_closed, 0.4)))
    is_cont = np.zeros(n_places, bool)
    is_cont[g.choice(n_places, n_cont, replace=False)] = True
    return is_cont


def _draw_goal(layout: _Layout, start: int, clean: bool, spread: float, g: np.random.Generator) -> _Goal:
    """With spread: the goal object far from the start, the goal place far from it, the sink off the
    way between them, and (when there is one to close) the goal object in a container."""
    dist, place_room = layout.dist, layout.place_room
    every = list(range(len(layout.places)))
    closing = layout.n_closed > 0 and g.random() < spread

    def far_from(room):
        return lambda p: (dist[room, place_room[p]], closing and layout.is_cont[p])
    obj_place = _pick(g, every, far_from(start), spread)
    goal_place = _pick(g, [p for p in every if p != obj_place], far_from(place_room[obj_place]), spread)
    sink = None
    if clean or g.random() < 0.5:
        sink = _pick(g, list(range(len(layout.rooms))),
                     lambda r: dist[place_room[obj_place], r] + dist[r, place_room[goal_place]], spread)
    return _Goal(obj_place, goal_place, sink)


def _draw_closed(layout: _Layout, goal: _Goal, spread: float, g: np.random.Generator) -> set[int]:
    """The closed containers: with spread, the goal object's and the goal place's first."""
    is_cont = layout.is_cont
    relevant = [p for p in (goal.obj_place, goal.goal_place) if is_cont[p] and g.random() < spread]
    rest = [int(p) for p in g.permutation(np.flatnonzero(is_cont)) if p not in relevant]
    return set((relevant + rest)[:layout.n_closed])


def _draw_objects(n_distractors: int, obj_place: int, n_places: int, clean: bool,
                  g: np.random.Generator) -> tuple[list[str], list[int], list[bool]]:
    """The objects (the goal object first), their places and whether each is dirty."""
    objs = [str(o) for o in g.choice(OBJECTS, n_distractors + 1, replace=False)]
    at = [obj_place] + [int(g.integers(n_places)) for _ in objs[1:]]
    dirty = [clean] + [bool(g.random() < 0.3) for _ in objs[1:]]
    return objs, at, dirty


def _params(layout: _Layout, start: int, goal: _Goal, closed: set[int], objs: list[str], at: list[int],
            dirty: list[bool], clean: bool) -> dict:
    rooms, places = layout.rooms, layout.places
    return {"rooms": rooms, "doors": [[rooms[a], rooms[b]] for a, b in layout.doors], "start": rooms[start],
            "sink": None if goal.sink is None else rooms[goal.sink],
            "places": {q: {"room": rooms[layout.place_room[i]], "closed": i in closed} for i, q in enumerate(places)},
            "objects": {o: {"at": places[at[i]], "dirty": dirty[i]} for i, o in enumerate(objs)},
            "goal": {"object": objs[0], "place": places[goal.goal_place], "clean": clean}}


def knobs_near(d: float, g: np.random.Generator) -> dict[str, int]:
    """Knobs drawn around difficulty d, each its share of the range plus noise."""
    out = {n: int(np.clip(round(KNOB_MIN[n] + (KNOB_MAX[n] - KNOB_MIN[n]) * (d + g.normal(0, 0.12))),
                          KNOB_MIN[n], KNOB_MAX[n])) for n in KNOBS if n != "clean"}
    out["clean"] = int(g.random() < d)
    return out
