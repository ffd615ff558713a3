"""Key-and-door layouts: rooms side by side, each wall between two rooms with one locked door
whose key lies in the room before it (numpy only, in grid_layout's 17×17 frame).

A state is (cell, keys held), keys held a bitmask of at most MAX_DOORS bits; picking a key is
stepping on its cell, and door j opens only with key j. Keys lie in order (key j in room j), so
a solution walks key 0 → door 0 → key 1 → door 1 → … → goal: several sub-goals in one episode.
The shortest solution is a BFS in the state graph, which `solve` returns for every state.

Held-out and training layouts are disjoint like gridworld's: one hash bit of the layout, 0 for
training seeds, 1 for held-out ones.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import grid_layout
from .grid_layout import CELLS, FRAME, OFFSETS

MAX_DOORS = 2
MASKS = 1 << MAX_DOORS          # every task's tables have this many key states
STATES = MASKS * CELLS
UNREACHABLE = grid_layout.UNREACHABLE
_ATTEMPTS = 200           # draws; all but the first ten without interior walls, which always connect:
                          # each then fails only on the hash bit (half the time)
_WALLED = 10


@dataclass(frozen=True)
class KeyLayout:
    size: int
    walls: np.ndarray            # [17, 17] bool: border, interior walls and the room walls (doors excluded)
    doors: tuple[int, ...]       # flat cells, door j between room j and room j + 1
    keys: tuple[int, ...]        # flat cells, key j in room j
    start: int
    goal: int


def cell(x: int, y: int) -> int:
    return (y + 1) * FRAME + x + 1


def room_columns(size: int, doors: int) -> list[int]:
    """x of each room wall: rooms at least two columns wide."""
    return [round((j + 1) * (size + 1) / (doors + 1)) - 1 for j in range(doors)]


def max_doors(size: int) -> int:
    return min(MAX_DOORS, (size - 2) // 3)


def transitions(lay: KeyLayout) -> np.ndarray:
    """[STATES, 4] the state each move leads to (state = mask · CELLS + cell); a wall, a locked
    door or the frame leaves the walker where it is."""
    c = np.arange(CELLS)
    target = np.clip(c[:, None] + np.array(OFFSETS), 0, CELLS - 1)            # [C, 4]
    blocked = lay.walls.ravel()[target]
    out = np.empty((MASKS, CELLS, 4), np.int64)
    for mask in range(MASKS):
        locked = np.zeros(CELLS, bool)
        for j, door in enumerate(lay.doors):
            locked[door] = not mask >> j & 1
        stay = blocked | locked[target]
        new_cell = np.where(stay, c[:, None], target)
        new_mask = np.full(new_cell.shape, mask)
        for j, key in enumerate(lay.keys):
            new_mask = np.where(new_cell == key, new_mask | (1 << j), new_mask)
        out[mask] = new_mask * CELLS + new_cell
    return out.reshape(STATES, 4)


def solve(nxt: np.ndarray, goal: int) -> np.ndarray:
    """[STATES] fewest moves from each state to the goal cell (any keys), UNREACHABLE if none."""
    dist = np.full(STATES, UNREACHABLE, np.int32)
    frontier = np.zeros(STATES, bool)
    frontier[np.arange(MASKS) * CELLS + goal] = True
    dist[frontier] = 0
    level = 0
    while frontier.any():
        level += 1
        reach = frontier[nxt].any(1) & (dist == UNREACHABLE)
        dist[reach] = level
        frontier = reach
    return dist


def make(size: int, doors: int, wall_density: float, rng: np.random.Generator, held_out: bool) -> KeyLayout:
    """Room walls with one door each, random interior walls (never beside a door, so a door is
    never walled in), key j and the start in their rooms, the goal in the last; redrawn until the
    goal is reachable and the hash bit matches; the later attempts drop the interior walls."""
    xs = room_columns(size, doors)
    bounds = [-1, *xs, size]
    want = int(held_out)
    for attempt in range(_ATTEMPTS):
        walls = np.ones((FRAME, FRAME), bool)
        inner = rng.random((size, size)) < (wall_density if attempt < _WALLED else 0.0)
        walls[1:size + 1, 1:size + 1] = inner
        door_cells = []
        for x in xs:
            walls[1:size + 1, x + 1] = True
            y = int(rng.integers(size))
            door_cells.append(cell(x, y))
            walls[y + 1, x + 1] = False
            walls[y + 1, x] = walls[y + 1, x + 2] = False       # the door's two sides stay open
        rooms = [[cell(x, y) for y in range(size) for x in range(bounds[r] + 1, bounds[r + 1])
                  if not walls[y + 1, x + 1]] for r in range(doors + 1)]
        if any(len(r) < 2 for r in rooms):
            continue
        keys = [int(rng.choice(rooms[j])) for j in range(doors)]
        start = int(rng.choice([c for c in rooms[0] if c not in keys]))
        goal = int(rng.choice([c for c in rooms[-1] if c not in keys and c != start]))
        lay = KeyLayout(size, walls, tuple(door_cells), tuple(keys), start, goal)
        bit = grid_layout.stream_bit(grid_layout.wall_hash(walls) ^ hash_points(lay), start, goal)
        if bit != want:
            continue
        if solve(transitions(lay), goal)[start] < UNREACHABLE:
            return lay
    raise RuntimeError(f"no key-and-door layout for size {size}, {doors} doors")


def hash_points(lay: KeyLayout) -> int:
    h = 0
    for i, c in enumerate((*lay.doors, *lay.keys)):
        h ^= (c + 1) * (0x9E3779B1 + 2 * i)
    return h & 0xFFFFFFFF
