"""The household of `text_world`: its JSON form, the parser, the rules and the observations.

Params (all of it, so that the environment model can rewrite a world as JSON):
    {"rooms": ["kitchen", "hallway"], "doors": [["kitchen", "hallway"]], "start": "hallway",
     "sink": "kitchen" | null,
     "places": {"fridge": {"room": "kitchen", "closed": true}, "table": {"room": "hallway", "closed": false}},
     "objects": {"mug": {"at": "table", "dirty": true}, "apple": {"at": "fridge", "dirty": false}},
     "goal": {"object": "mug", "place": "fridge", "clean": true}}
Names come from fixed vocabularies (a place's name says whether it is a container, which can be
closed, or a surface); "doors" defaults to a line through the rooms in order, "sink" to none,
"closed", "dirty" and "clean" to false. The parser takes any JSON value and raises ValueError
with one line naming what is wrong; whether the goal can be reached is the planner's business.

Rules: the agent holds at most one object. `go to R` moves through a door; `open C` opens a
closed container of the room; `take O from P` needs an empty hand and P open (or a surface);
`put O in/on P` needs P open; `clean O with sink` needs O held in the sink's room; `look` and
`inventory` change nothing. Nothing ever closes again, so an opened container stays open.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple
import itertools

ROOMS = ("kitchen", "hallway", "bathroom", "bedroom", "living room", "study", "garage", "pantry")
CONTAINERS = ("fridge", "cabinet", "drawer", "box", "closet", "microwave", "safe", "chest")
SURFACES = ("countertop", "table", "desk", "shelf", "bed", "sofa", "stool", "dresser")
OBJECTS = ("mug", "apple", "cup", "plate", "bowl", "spoon", "knife", "book", "towel", "soap",
           "sponge", "egg", "tomato", "bread", "key", "pen", "candle", "glass", "potato", "fork")
MAX_ROOMS, MAX_PLACES, MAX_OBJECTS, MAX_CLOSED, MAX_DOORS = 5, 8, 8, 4, 10
_KEYS = ("rooms", "doors", "start", "sink", "places", "objects", "goal")
_REQUIRED = ("rooms", "start", "places", "objects", "goal")


class State(NamedTuple):
    room: int
    held: int                  # object index, −1 for none
    closed: int                # bit p: place p is a closed container
    pos: tuple[int, ...]       # per object: its place, −1 while held
    dirty: tuple[bool, ...]


@dataclass(frozen=True)
class World:
    rooms: tuple[str, ...]
    adj: tuple[tuple[int, ...], ...]
    places: tuple[str, ...]
    place_room: tuple[int, ...]
    container: tuple[bool, ...]
    room_places: tuple[tuple[int, ...], ...]
    objects: tuple[str, ...]
    sink: int                  # the sink's room, −1 for none
    goal_obj: int
    goal_place: int
    goal_clean: bool
    init: State

    def done(self, s: State) -> bool:
        return s.pos[self.goal_obj] == self.goal_place and not (self.goal_clean and s.dirty[self.goal_obj])


class Command(NamedTuple):
    text: str
    kind: str                  # go, open, take, put, clean, look, inventory
    next: State
    effect: str


# -- parsing -------------------------------------------------------------------------------------------

def _short(v: object) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _name(v: object, where: str, allowed) -> str:
    name = " ".join(v.lower().split()) if isinstance(v, str) and len(v) <= 40 else None
    if name is None or name not in allowed:
        raise ValueError(f"{where}: unknown name {_short(v)}; allowed: {', '.join(allowed)}")
    return name


def _flag(entry: dict, key: str, where: str) -> bool:
    v = entry.get(key, False)
    if not isinstance(v, bool):
        raise ValueError(f"{where}.{key} must be true or false, not {_short(v)}")
    return v


def _table(data: dict, key: str, limits: tuple[int, int], allowed, fields: tuple[str, ...]) -> dict[str, dict]:
    raw = data[key]
    if not isinstance(raw, dict) or not limits[0] <= len(raw) <= limits[1]:
        raise ValueError(f"{key} must be an object of {limits[0]} to {limits[1]} entries, not {_short(raw)}")
    out = {}
    for k, entry in raw.items():
        name = _name(k, key, allowed)
        if name in out:
            raise ValueError(f"{key}: {name!r} appears twice")
        if not isinstance(entry, dict) or not set(entry) <= set(fields) or fields[0] not in entry:
            raise ValueError(f"{key}.{name} must be an object with keys {', '.join(fields)}, not {_short(entry)}")
        out[name] = entry
    return out


def _doors(data: dict, rooms: list[str]) -> list[list[str]]:
    raw = data.get("doors")
    if raw is None:
        return [[a, b] for a, b in itertools.pairwise(rooms)]
    if not isinstance(raw, list) or len(raw) > MAX_DOORS:
        raise ValueError(f"doors must be a list of at most {MAX_DOORS} pairs of rooms, not {_short(raw)}")
    doors: list[list[str]] = []
    for i, pair in enumerate(raw):
        if not isinstance(pair, list) or len(pair) != 2:
            raise ValueError(f"doors[{i}] must be a pair of rooms, not {_short(pair)}")
        a, b = (_name(r, f"doors[{i}]", rooms) for r in pair)
        if a == b or sorted([a, b]) in [sorted(d) for d in doors]:
            raise ValueError(f"doors[{i}] {_short(pair)} joins a room to itself or repeats a door")
        doors.append([a, b])
    return doors


def parse(data: object) -> dict:
    """Canonical params from a proposed JSON value (any value; ValueError if malformed).

    The parts are read in the order of the params (rooms, doors, start, sink, places, objects,
    goal): of several faults, the first in that order is the one named."""
    data = _world_object(data)
    rooms = _rooms(data)
    doors = _doors(data, rooms)
    start = _name(data["start"], "start", rooms)
    sink = None if data.get("sink") is None else _name(data["sink"], "sink", rooms)
    places = _places(data, rooms)
    objects = _objects(data, places)
    goal = _goal(data, objects, places)
    if goal["clean"] and sink is None:
        raise ValueError("goal.clean is true but the world has no sink")
    return {"rooms": rooms, "doors": doors, "start": start, "sink": sink, "places": places,
            "objects": objects, "goal": goal}


def _world_object(data: object) -> dict:
    if not isinstance(data, dict):
        raise ValueError(f"the world must be a JSON object with keys {', '.join(_KEYS)}, not {type(data).__name__}")
    unknown = [k for k in data if k not in _KEYS]
    missing = [k for k in _REQUIRED if k not in data]
    if unknown or missing:
        raise ValueError(f"unknown key {_short(unknown[0])}" if unknown else f"missing key {missing[0]!r}")
    return data


def _rooms(data: dict) -> list[str]:
    raw_rooms = data["rooms"]
    if not isinstance(raw_rooms, list) or not 1 <= len(raw_rooms) <= MAX_ROOMS:
        raise ValueError(f"rooms must be a list of 1 to {MAX_ROOMS} rooms, not {_short(raw_rooms)}")
    rooms = [_name(r, "rooms", ROOMS) for r in raw_rooms]
    if len(set(rooms)) < len(rooms):
        raise ValueError("rooms: a room appears twice")
    return rooms


def _places(data: dict, rooms: list[str]) -> dict[str, dict]:
    places = {}
    for name, e in _table(data, "places", (2, MAX_PLACES), CONTAINERS + SURFACES, ("room", "closed")).items():
        closed = _flag(e, "closed", f"places.{name}")
        if closed and name not in CONTAINERS:
            raise ValueError(f"places.{name}: a surface cannot be closed")
        places[name] = {"room": _name(e["room"], f"places.{name}.room", rooms), "closed": closed}
    if sum(p["closed"] is True for p in places.values()) > MAX_CLOSED:
        raise ValueError(f"places: at most {MAX_CLOSED} closed containers")
    return places


def _objects(data: dict, places: dict[str, dict]) -> dict[str, dict]:
    return {name: {"at": _name(e["at"], f"objects.{name}.at", tuple(places)),
                   "dirty": _flag(e, "dirty", f"objects.{name}")}
            for name, e in _table(data, "objects", (1, MAX_OBJECTS), OBJECTS, ("at", "dirty")).items()}


def _goal(data: dict, objects: dict[str, dict], places: dict[str, dict]) -> dict:
    goal = data["goal"]
    if not isinstance(goal, dict) or not set(goal) <= {"object", "place", "clean"} or len(goal) < 2:
        raise ValueError(f"goal must be an object with keys object, place, clean, not {_short(goal)}")
    return {"object": _name(goal.get("object"), "goal.object", tuple(objects)),
            "place": _name(goal.get("place"), "goal.place", tuple(places)), "clean": _flag(goal, "clean", "goal")}


def compile_world(p: dict) -> World:
    """The indexed world of canonical params. Places and objects are indexed (and so seen and
    listed) in name order: the world does not depend on the key order of a stored row."""
    rooms, places, objects = list(p["rooms"]), sorted(p["places"]), sorted(p["objects"])
    adj: list[list[int]] = [[] for _ in rooms]
    for a, b in p["doors"]:
        adj[rooms.index(a)].append(rooms.index(b))
        adj[rooms.index(b)].append(rooms.index(a))
    place_room = tuple(rooms.index(p["places"][q]["room"]) for q in places)
    closed = sum(1 << i for i, q in enumerate(places) if p["places"][q]["closed"])
    init = State(rooms.index(p["start"]), -1, closed, tuple(places.index(p["objects"][o]["at"]) for o in objects),
                 tuple(bool(p["objects"][o]["dirty"]) for o in objects))
    return World(tuple(rooms), tuple(tuple(sorted(a)) for a in adj), tuple(places), place_room,
                 tuple(q in CONTAINERS for q in places),
                 tuple(tuple(i for i, r in enumerate(place_room) if r == room) for room in range(len(rooms))),
                 tuple(objects), -1 if p["sink"] is None else rooms.index(p["sink"]),
                 objects.index(p["goal"]["object"]), places.index(p["goal"]["place"]), bool(p["goal"]["clean"]), init)


# -- rules ------------------------------------------------------------------------------------------

def _prep(w: World, p: int) -> str:
    return "in" if w.container[p] else "on"


def commands(w: World, s: State) -> list[Command]:
    """The admissible commands of a state, in the order the observation lists them."""
    out = [Command(f"go to {w.rooms[r]}", "go", s._replace(room=r), f"You go to the {w.rooms[r]}.")
           for r in w.adj[s.room]]
    here = w.room_places[s.room]
    out += [Command(f"open {w.places[p]}", "open", s._replace(closed=s.closed & ~(1 << p)),
                    f"You open the {w.places[p]}.") for p in here if s.closed >> p & 1]
    reach = [p for p in here if not s.closed >> p & 1]
    if s.held < 0:
        for p in reach:
            for o in (o for o, at in enumerate(s.pos) if at == p):
                pos = (*s.pos[:o], -1, *s.pos[o + 1:])
                out.append(Command(f"take {w.objects[o]} from {w.places[p]}", "take", s._replace(held=o, pos=pos),
                                   f"You take the {w.objects[o]} from the {w.places[p]}."))
    else:
        o = s.held
        for p in reach:
            pos = (*s.pos[:o], p, *s.pos[o + 1:])
            out.append(Command(f"put {w.objects[o]} {_prep(w, p)} {w.places[p]}", "put", s._replace(held=-1, pos=pos),
                               f"You put the {w.objects[o]} {_prep(w, p)} the {w.places[p]}."))
        if w.sink == s.room:
            dirty = (*s.dirty[:o], False, *s.dirty[o + 1:])
            out.append(Command(f"clean {w.objects[o]} with sink", "clean", s._replace(dirty=dirty),
                               f"You clean the {w.objects[o]} with the sink."))
    held = f"the {w.objects[s.held]}" if s.held >= 0 else "nothing"
    return [*out, Command("look", "look", s, ""), Command("inventory", "inventory", s, f"You hold {held}.")]


def _a(words: str) -> str:
    return ("an " if words[0] in "aeiou" else "a ") + words


def _thing(w: World, s: State, o: int) -> str:
    return _a(("dirty " if s.dirty[o] else "") + w.objects[o])


def _place(w: World, s: State, p: int) -> str:
    if s.closed >> p & 1:
        return _a(f"closed {w.places[p]}")
    inside = [_thing(w, s, o) for o, at in enumerate(s.pos) if at == p]
    name = _a(f"open {w.places[p]}") if w.container[p] else _a(w.places[p])
    return f"{name} ({', '.join(inside)})" if inside else (f"{name} (empty)" if w.container[p] else name)


def observe(w: World, s: State, cmds: list[Command] | None = None) -> str:
    """Where the agent is, what it sees and holds, and the admissible commands."""
    seen = (["a sink"] if w.sink == s.room else []) + [_place(w, s, p) for p in w.room_places[s.room]]
    held = _thing(w, s, s.held) if s.held >= 0 else "nothing"
    return (f"You are in the {w.rooms[s.room]}. You see: {', '.join(seen) or 'nothing'}. You hold {held}. "
            + command_list(cmds if cmds is not None else commands(w, s)))


def command_list(cmds: list[Command]) -> str:
    return "Commands: " + " | ".join(c.text for c in cmds)


def goal_text(w: World) -> str:
    p = w.goal_place
    thing = f"a clean {w.objects[w.goal_obj]}" if w.goal_clean else f"the {w.objects[w.goal_obj]}"
    return f"put {thing} {_prep(w, p)} the {w.places[p]}"
