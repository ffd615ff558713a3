"""The planner of `text_world`: the shortest remaining plan from any state, by BFS.

The search runs over an abstraction that keeps exactly what the goal depends on:
(room, hand, closed containers, the goal object's place, whether it is clean), the hand being
empty, the goal object, or "another object". Where the distractors lie does not matter: taking
one never shortens a plan (it must be put down again before the goal object can be carried), and
from a hand holding one the way on (put it down in any reachable place, walk, open) does not
depend on where the others are. So "take another object" is offered wherever the room has a
reachable place; it only adds states that no shortest plan uses, and every distance is exact.

The abstract space has at most 5 rooms × 3 hands × 2^4 closed sets × 9 places × 2 ≈ 4,300
states. `distances` enumerates the states reachable from the start, then walks back from the
goal states once; the table (a dict) is cached per world, so the oracle of a step is two dict
look-ups and a world is planned once (~10 ms for the largest).
"""
from __future__ import annotations

import json
from collections import deque
from functools import lru_cache

from .text_world_rules import State, World, commands, compile_world

Key = tuple[int, int, int, int, bool]       # room, hand (0 empty, 1 goal object, 2 other), closed, goal pos, clean


def key(w: World, s: State) -> Key:
    hand = 0 if s.held < 0 else 1 if s.held == w.goal_obj else 2
    return s.room, hand, s.closed, s.pos[w.goal_obj], not s.dirty[w.goal_obj]


def _successors(w: World, k: Key, others: bool):
    room, hand, closed, gpos, clean = k
    for r in w.adj[room]:
        yield r, hand, closed, gpos, clean
    here = w.room_places[room]
    for p in here:
        if closed >> p & 1:
            yield room, hand, closed & ~(1 << p), gpos, clean
    reach = [p for p in here if not closed >> p & 1]
    if hand == 0:
        if gpos in reach:
            yield room, 1, closed, -1, clean
        if others and reach:
            yield room, 2, closed, gpos, clean
    else:
        for p in reach:
            yield room, 0, closed, p if hand == 1 else gpos, clean
        if hand == 1 and room == w.sink and not clean:
            yield room, 1, closed, -1, True


def _goal(w: World, k: Key) -> bool:
    return k[3] == w.goal_place and (k[4] or not w.goal_clean)


def distances(w: World) -> dict[Key, int]:
    """Shortest remaining plan length of every abstract state reachable from the start (states
    from which the goal cannot be reached are absent)."""
    others = len(w.objects) > 1
    start = key(w, w.init)
    preds: dict[Key, list[Key]] = {start: []}
    todo = deque([start])
    while todo:
        k = todo.popleft()
        for n in _successors(w, k, others):
            if n not in preds:
                preds[n] = []
                todo.append(n)
            preds[n].append(k)
    dist = {k: 0 for k in preds if _goal(w, k)}
    todo = deque(dist)
    while todo:
        k = todo.popleft()
        for p in preds[k]:
            if p not in dist:
                dist[p] = dist[k] + 1
                todo.append(p)
    return dist


@lru_cache(maxsize=512)
def planned(params_json: str) -> tuple[World, dict[Key, int]]:
    """The compiled world of canonical params (as sorted JSON) and its distance table."""
    w = compile_world(json.loads(params_json))
    return w, distances(w)


def plan_length(w: World, dist: dict[Key, int]) -> int | None:
    return dist.get(key(w, w.init))


def progress(w: World, dist: dict[Key, int], before: State, after: State) -> bool:
    """The step lies on a shortest plan: it shortens the remaining plan."""
    d0, d1 = dist.get(key(w, before)), dist.get(key(w, after))
    return d0 is not None and d1 is not None and d1 < d0


def optimal_plan(w: World, dist: dict[Key, int]) -> list[str]:
    """One shortest plan from the start, as the commands to type (empty if none)."""
    s, plan = w.init, []
    while not w.done(s) and key(w, s) in dist:
        cmd = next(c for c in commands(w, s) if progress(w, dist, s, c.next))
        plan.append(cmd.text)
        s = cmd.next
    return plan
