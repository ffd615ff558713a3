"""Text world: a small household game in the spirit of ALFWorld, one command per turn (text_base).

The world (rooms joined by doors, containers and surfaces, objects, a sink, the goal "put a clean
mug in the cabinet") is `text_world_rules`; how one is drawn and how hard it is, `text_world_gen`;
the shortest remaining plan of any state, `text_world_planner`.

Every observation (the instruction's first one and each turn's) says where the agent is, what it
sees and holds, and lists the admissible commands, compactly for small models:
"You are in the kitchen. You see: a closed fridge, a countertop (a mug). You hold nothing.
Commands: go to hallway | open fridge | take mug from countertop | look | inventory".
A response is matched to an admissible command leniently: its first non-empty line, case and
surrounding spaces, quotes, backticks and `*` ignored, inner runs of spaces as one, and an
optional trailing period. Anything else is answered "Nothing happens." with the list again.

Oracle label: +1 iff the command shortens the shortest remaining plan (lies on an optimal plan
from the current state); an unknown command, `look`, `inventory` or a detour is −1.
Success: the goal holds (the episode ends at once). Turn budget `turns(task)` = 2 × the optimal
plan length + 2: room for one wasted turn per useful one, no more (validate rejects a world whose
budget would pass `max_turns`).
"""
from __future__ import annotations

import json
from collections import Counter

import numpy as np

from .task import Task, draw_seed
from .text_base import TextEpisode, TextFamily, TurnResult
from .text_support import budget, checked, command_text, half, one_command_turn, sample_near, variant_seed
from .text_world_gen import KNOB_MAX, KNOB_MIN, KNOBS, canonical, difficulty, generate, knobs_near, knobs_of, plan_term
from .text_world_planner import Key, optimal_plan, plan_length, planned, progress
from .text_world_rules import CONTAINERS, MAX_CLOSED, MAX_DOORS, MAX_OBJECTS, MAX_PLACES, MAX_ROOMS, OBJECTS, \
    ROOMS, SURFACES, World, command_list, commands, goal_text, observe, parse

MAX_TURNS = 40
MAX_DELTA = 0.15
VERBS = ("go", "open", "take", "put", "clean", "look", "inventory")
# what a wasted or invalid command of a kind points at, for the critic's focus
FOCUS_OF = {"go": "rooms", "open": "closed", "clean": "clean"}



class WorldEpisode(TextEpisode):
    def __init__(self, w: World, dist: dict[Key, int], turns: int):
        self.w, self.dist, self.turns_left = w, dist, turns
        self.state, self.done, self.success = w.init, False, False

    def _act(self, text: str) -> tuple[int, dict, str]:
        w, s = self.w, self.state
        cmds = commands(w, s)
        cmd = {c.text: c for c in cmds}.get(command_text(text))
        room = w.rooms[s.room]
        if cmd is None:
            verb = command_text(text).split(" ")[0]
            info = {"command": verb if verb in VERBS else "other", "valid": False, "progress": False, "room": room}
            return -1, info, "Nothing happens. " + command_list(cmds)
        good = progress(w, self.dist, s, cmd.next)
        self.state = cmd.next
        self.success = w.done(cmd.next)
        tail = "Task complete." if self.success else observe(w, cmd.next)
        info = {"command": cmd.kind, "valid": True, "progress": good, "room": room}
        return (1 if good else -1), info, f"{cmd.effect} {tail}".strip()

    def respond(self, steps: list[str]) -> TurnResult:
        extra = {"command": "extra", "valid": False, "progress": False, "room": self.w.rooms[self.state.room]}
        if self.done:
            return TurnResult([-1] * len(steps), [dict(extra) for _ in steps], "The episode is over.", True,
                              self.success)
        label, info, obs = self._act(steps[0] if steps else "")
        self.turns_left -= 1
        self.done = self.success or self.turns_left <= 0
        return one_command_turn(label, info, extra, steps, obs, self.done, self.success)


class TextWorldFamily(TextFamily):
    name = "text_world"
    lines_are_steps = False
    max_turns = MAX_TURNS

    def _planned(self, task: Task) -> tuple[World, dict[Key, int]]:
        got = task._cache.get("planned")
        if got is None:
            got = task._cache["planned"] = planned(canonical(parse(task.params)))
        return got

    def difficulty(self, params: dict) -> float:
        return difficulty(parse(params))

    def sample(self, d: float, rng: np.random.Generator, held_out: bool = False) -> Task:
        def draw(d, g):
            params = generate(knobs_near(d, g), float(np.clip(d + g.normal(0, 0.2), 0, 1)), g)
            return params if _problem(params) is None else None
        params, seed = sample_near(d, rng, held_out, 200, draw, difficulty)
        return Task(self.name, params, seed)

    def validate(self, task: Task) -> str | None:
        params, reason = checked(self.name, task, parse)
        return reason if params is None else _problem(params)

    def turns(self, task: Task) -> int:
        w, dist = self._planned(task)
        length = plan_length(w, dist)
        return min(MAX_TURNS, budget(length)) if length else MAX_TURNS

    def instruction(self, task: Task) -> str:
        w, _ = self._planned(task)
        return (f"You are in a house. Your task: {goal_text(w)}. Each turn, reply with one command from the list.\n"
                + observe(w, w.init))

    def start(self, task: Task) -> TextEpisode:
        w, dist = self._planned(task)
        return WorldEpisode(w, dist, self.turns(task))

    def critic(self, task: Task, steps: list[tuple[int, dict]]) -> dict:
        infos = [info for _, info in steps if isinstance(info, dict)]
        invalid = Counter(str(i.get("command")) for i in infos if not i.get("valid"))
        wasted = Counter(str(i.get("command")) for i in infos if i.get("valid") and not i.get("progress"))
        focus = Counter(FOCUS_OF.get(str(i.get("command")), "distractors") for i in infos)
        return {"n": len(steps), "invalid": dict(invalid), "wasted": dict(wasted),
                "rooms": dict(Counter(str(i.get("room")) for i in infos)),
                "focus": max(KNOBS, key=lambda k: (focus[k], k == "rooms")),
                "steps": sorted(int(i) for i, _ in steps)[:16]}

    def mutate(self, task: Task, direction: str, critic: dict, rng: np.random.Generator) -> Task:
        if direction not in ("harder", "easier"):
            raise ValueError(f"direction must be 'harder' or 'easier', not {direction!r}")
        sign = 1 if direction == "harder" else -1
        knobs, d0 = knobs_of(task.params), difficulty(task.params)
        focus = critic.get("focus") if isinstance(critic, dict) else None
        w, dist = self._planned(task)
        spread = plan_term(plan_length(w, dist))
        order = ([focus] if focus in KNOBS else []) + [KNOBS[i] for i in rng.permutation(len(KNOBS))]
        cands = [{**knobs, k: knobs[k] + sign} for k in dict.fromkeys(order)
                 if KNOB_MIN[k] <= knobs[k] + sign <= KNOB_MAX[k]] + [knobs]
        fallback: tuple[float, dict] | None = None
        for cand in cands:
            for _ in range(12):
                params = generate(cand, float(np.clip(spread + sign * 0.1 + rng.normal(0, 0.15), 0, 1)), rng)
                if half(params) or params == task.params or _problem(params) is not None:
                    continue
                delta = difficulty(params) - d0
                if 0 < sign * delta <= MAX_DELTA:
                    return Task(self.name, params, draw_seed(rng))
                if abs(delta) <= MAX_DELTA and (fallback is None or sign * delta > fallback[0]):
                    fallback = (sign * delta, params)
        if fallback is None:           # not one fresh world within 0.15: vanishingly rare, but stay valid
            return self.sample(d0, rng)
        return Task(self.name, fallback[1], draw_seed(rng))

    def variant_schema(self) -> str:
        return (
            f'{{"rooms": list of 1..{MAX_ROOMS} distinct rooms; "doors": list of pairs of rooms (at most {MAX_DOORS}; '
            'default: a line through the rooms in order); "start": a room; "sink": a room or null; "places": object '
            f'mapping 2..{MAX_PLACES} place names to {{"room": room, "closed": bool}} (only containers can be closed, '
            f'at most {MAX_CLOSED} closed); "objects": object mapping 1..{MAX_OBJECTS} object names to {{"at": place, '
            '"dirty": bool}; "goal": {"object": object, "place": place, "clean": bool} (clean needs a sink)}. '
            f"Rooms: {', '.join(ROOMS)}. Containers: {', '.join(CONTAINERS)}. Surfaces: {', '.join(SURFACES)}. "
            f"Objects: {', '.join(OBJECTS)}. The goal must not hold already and must be reachable in at most "
            f"{(MAX_TURNS - 2) // 2} commands. More rooms, distractor objects, closed containers, a dirty goal object "
            "and a longer plan make it harder.")

    def task_json(self, task: Task) -> dict:
        return json.loads(json.dumps(task.params))

    def from_json(self, data: object, root: Task) -> Task:
        params = parse(data)
        return Task(self.name, params, variant_seed(params))

    def describe(self, task: Task) -> dict:
        w, dist = self._planned(task)
        p = task.params
        plan = optimal_plan(w, dist)
        doors = ", ".join(f"{a}–{b}" for a, b in p["doors"]) or "none"
        where = "; ".join(f"{r}: " + ", ".join(f"{q}{' (closed)' if v['closed'] else ''}"
                                               for q, v in p["places"].items() if v["room"] == r) for r in p["rooms"])
        things = ", ".join(f"{'dirty ' if v['dirty'] else ''}{o} {'in' if v['at'] in CONTAINERS else 'on'} {v['at']}"
                           for o, v in p["objects"].items())
        text = (f"Goal: {goal_text(w)}. Rooms and places: {where}. Doors: {doors}. Sink: {p['sink'] or 'none'}. "
                f"Objects: {things}. Start: {p['start']}.")
        return {"text": text, "goal": goal_text(w), "rooms": list(p["rooms"]), "doors": [list(d) for d in p["doors"]],
                "start": p["start"], "sink": p["sink"], "plan": plan, "plan_length": len(plan),
                "turns": self.turns(task), "difficulty": difficulty(p)}


def _problem(params: dict) -> str | None:
    """Why canonical params make no playable task (None if they do)."""
    w, dist = planned(canonical(params))
    length = plan_length(w, dist)
    if length is None:
        return "the goal cannot be reached from the start"
    if length == 0:
        return "the goal already holds at the start"
    if budget(length) > MAX_TURNS:
        return f"the shortest plan ({length} commands) needs more than {MAX_TURNS} turns"
    return None


FAMILY = TextWorldFamily()
