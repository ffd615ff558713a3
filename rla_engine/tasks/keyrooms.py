"""Keyrooms: rooms in a row, a locked door between each two, its key in the room before it; walk
key 0 → door 0 → key 1 → door 1 → goal (a long horizon with sub-goals, where an outcome
says little about which step went wrong). Layouts: `keyroom_layout`.

Params {"size": 5..15, "doors": 0..2 (at most (size − 2) // 3), "wall_density": 0..0.2};
difficulty is the mean of size, doors and walls, each normalised to [0, 1].
Step budget: ceil(1.5 · shortest solution) + 4, as in gridworld.

Observation (89 float32): a 5×5 egocentric crop without the centre in three channels — wall,
locked door, key not yet held — (72); the goal's offset (dx/size, dy/size, sign dx, sign dy) (4);
the offsets of the key and of the door of the first locked door, 0 when none (4), whether that
key is still needed (1), keys held / 2 (1); whether each neighbour was visited (4); the number of
doors / 2 (1); manhattan distance to the goal / (2·size) (1); and (1) whether the walker stands in
the goal's room. Directions, as gridworld's goal offset, but no distances: the sub-goals are
named, finding the way around walls is the walker's job.
Oracle: the move shortens the shortest solution from the state (never shown to a learner).
Info row: [x, y, action, blocked, away, keys held] (away: manhattan distance to the current
sub-goal — the needed key, its door, or the goal — grew).
"""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import torch

from . import keyroom_layout as kl
from .base import HELD_OUT_SEEDS, Family, Task, draw_seed, fresh_seed
from .grid_layout import CELLS, FRAME
from .walk_env import WalkEnv, budget_for

SIZE_MIN, SIZE_MAX = 5, 15
WALL_MAX = 0.2
PARAMS = ("size", "doors", "wall_density")
FOCUS_PARAM = {"walls": "wall_density", "doors": "doors", "size": "size"}
_R = 2
OBS_DIM = 3 * 24 + 17       # three channels of the 24-cell crop, then compass, keys, kind, visited


def _norm(p: dict) -> dict[str, float]:
    return {"size": (p["size"] - SIZE_MIN) / (SIZE_MAX - SIZE_MIN), "doors": p["doors"] / kl.MAX_DOORS,
            "wall_density": p["wall_density"] / WALL_MAX}


def _difficulty(p: dict) -> float:
    return float(np.clip(np.mean(list(_norm(p).values())), 0.0, 1.0))


def layout(task: Task) -> kl.KeyLayout:
    lay = task._cache.get("layout")
    if lay is None:
        p = task.params
        lay = kl.make(int(p["size"]), int(p["doors"]), float(p["wall_density"]),
                      np.random.default_rng(task.seed), held_out=task.seed >= HELD_OUT_SEEDS[0])
        task._cache["layout"] = lay
    return lay


def _xy(c):
    return c % FRAME - 1, c // FRAME - 1


def _room_of(lay: kl.KeyLayout, x: np.ndarray) -> np.ndarray:
    """Room index of each x; a door's own column counts to the room before it."""
    cols = np.array(kl.room_columns(lay.size, len(lay.doors)))
    return (x[:, None] > cols[None, :]).sum(1) if len(cols) else np.zeros_like(x)


def _subgoal(lay: kl.KeyLayout, c: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The walker's current sub-goal cell and its kind (0 key, 1 door, 2 goal): in room r before
    the last, key r until it is held, then door r; in the last room, the goal."""
    room = _room_of(lay, _xy(c)[0])
    last = len(lay.doors)
    keys, doors = np.array([*lay.keys, lay.goal]), np.array([*lay.doors, lay.goal])
    held = (mask >> np.minimum(room, max(last - 1, 0))) & 1 == 1
    kind = np.where(room >= last, 2, np.where(held, 1, 0))
    return np.where(kind == 0, keys[room], doors[room]), kind


def _crop_offsets(stride: int) -> np.ndarray:
    return np.array([dy * stride + dx for dy in range(-_R, _R + 1) for dx in range(-_R, _R + 1) if (dy, dx) != (0, 0)])


def _crop(lay: kl.KeyLayout, x: np.ndarray, y: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """[S, 72]: the 5×5 crop around each state in three channels: wall, locked door, key not held."""
    stride = FRAME + 2 * _R
    maps = np.zeros((3, kl.MASKS, stride, stride), bool)
    maps[0] = True
    maps[0, :, _R:-_R, _R:-_R] = lay.walls
    for j, (door, key) in enumerate(zip(lay.doors, lay.keys)):
        for channel, where in ((1, door), (2, key)):
            wx, wy = _xy(where)
            maps[channel, [m for m in range(kl.MASKS) if not m >> j & 1], wy + 1 + _R, wx + 1 + _R] = True
    idx = ((y + 1 + _R) * stride + x + 1 + _R)[:, None] + _crop_offsets(stride)
    flat = maps.reshape(3, kl.MASKS, -1)
    return np.concatenate([flat[ch][mask[:, None], idx] for ch in range(3)], 1)


def _tables(task: Task) -> dict[str, np.ndarray]:
    """Everything static per (cell, keys held) state of one task, cached on it. Column STAY (4) of
    the action axis is the stay action of finished episodes (no move, label +1, zero info)."""
    tab = task._cache.get("tables")
    if tab is not None:
        return tab
    lay = layout(task)
    nxt = kl.transitions(lay)                                   # [S, 4]
    dist = kl.solve(nxt, lay.goal)
    s = np.arange(kl.STATES)
    c, mask = s % CELLS, s // CELLS
    x, y = _xy(c)
    n = lay.size
    sub, kind = _subgoal(lay, c, mask)
    sx, sy = _xy(sub)
    moved = nxt % CELLS
    mx, my = _xy(moved)
    blocked = moved == c[:, None]
    away = np.abs(mx - sx[:, None]) + np.abs(my - sy[:, None]) > (np.abs(x - sx) + np.abs(y - sy))[:, None]
    held = np.array([bin(m).count("1") for m in range(kl.MASKS)])[mask]
    info = np.zeros((kl.STATES, 5, 6), np.int16)
    info[:, :4] = np.stack([np.broadcast_to(x[:, None], blocked.shape), np.broadcast_to(y[:, None], blocked.shape),
                            np.broadcast_to(np.arange(4), blocked.shape), blocked, away,
                            np.broadcast_to(held[:, None], blocked.shape)], -1)
    oracle = np.ones((kl.STATES, 5), np.int8)
    oracle[:, :4] = np.where(dist[nxt] < dist[:, None], 1, -1)
    gx, gy = _xy(lay.goal)
    sdx, sdy, gdx, gdy = sx - x, sy - y, gx - x, gy - y
    static = np.concatenate([
        _crop(lay, x, y, mask),
        np.stack([sdx / n, sdy / n, np.sign(sdx), np.sign(sdy), gdx / n, gdy / n, np.sign(gdx), np.sign(gdy),
                  held / kl.MAX_DOORS, np.full(kl.STATES, len(lay.doors) / kl.MAX_DOORS)], 1),
        np.eye(3)[kind]], 1).astype(np.float32)
    tab = {"next": np.concatenate([nxt, s[:, None]], 1), "oracle": oracle, "info": info, "static": static,
           "best": dist[nxt].argmin(1), "dist": dist, "goal": c == lay.goal}
    task._cache["tables"] = tab
    return tab


def keyrooms_env(tasks: list[Task], rollouts: int, device: torch.device | str = "cpu") -> WalkEnv:
    tabs = [_tables(t) for t in tasks]
    lays = [layout(t) for t in tasks]
    budget = np.array([budget_for(int(tab["dist"][lay.start])) for tab, lay in zip(tabs, lays)])
    return WalkEnv(tabs, kl.STATES, np.array([lay.start for lay in lays], np.int64), budget, rollouts, device)


def _valid_params(p) -> str | None:
    if not isinstance(p, dict) or set(p) != set(PARAMS):
        return f"params must have exactly the keys {', '.join(PARAMS)}"
    size, doors, wd = p["size"], p["doors"], p["wall_density"]
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not SIZE_MIN <= size <= SIZE_MAX:
        return f"size must be an integer in {SIZE_MIN}..{SIZE_MAX}"
    if isinstance(doors, bool) or not isinstance(doors, (int, np.integer)) or not 0 <= doors <= kl.max_doors(int(size)):
        return f"doors must be an integer in 0..{kl.max_doors(int(size))} for size {size}"
    if isinstance(wd, bool) or not isinstance(wd, (int, float)) or not math.isfinite(wd) or not 0 <= wd <= WALL_MAX:
        return f"wall_density must be in [0, {WALL_MAX}]"
    return None


class KeyroomsFamily(Family):
    name = "keyrooms"
    obs_dim = OBS_DIM
    n_actions = 4
    info_dim = 6
    info_names = ("x", "y", "action", "blocked", "away", "keys")

    def difficulty(self, params: dict) -> float:
        return _difficulty(params)

    def sample(self, d: float, rng: np.random.Generator, held_out: bool = False) -> Task:
        d = float(np.clip(d, 0.0, 1.0))
        # size and doors scatter around d; the wall density takes up the rest so the mean is d
        for scale in (0.1, 0.1, 0.1, 0.05, 0.05, 0.0):
            size = round(SIZE_MIN + 10 * np.clip(d + rng.normal(0, scale), 0, 1))
            doors = min(round(kl.MAX_DOORS * float(np.clip(d + rng.normal(0, scale), 0, 1))), kl.max_doors(size))
            walls = 3 * d - (size - SIZE_MIN) / 10 - doors / kl.MAX_DOORS
            if 0.0 <= walls <= 1.0:
                break
        params = {"size": size, "doors": doors, "wall_density": round(WALL_MAX * float(np.clip(walls, 0, 1)), 4)}
        return Task(self.name, params, draw_seed(rng, held_out))

    def validate(self, task: Task) -> str | None:
        if task.family != self.name:
            return f"task of family {task.family!r}, not {self.name!r}"
        problem = _valid_params(task.params)
        if problem:
            return problem
        if not 0 <= task.seed < HELD_OUT_SEEDS[1]:
            return "seed outside the seed space"
        try:
            lay = layout(task)
        except RuntimeError as e:      # no layout found: a reason, not a crash of the run
            return str(e)
        if _tables(task)["dist"][lay.start] >= kl.UNREACHABLE:
            return "goal not reachable from the start"
        return None

    def critic(self, task: Task, steps: list[tuple[int, list[int]]]) -> dict:
        rows = [[int(v) for v in row] for _, row in steps]
        blocked, away = sum(r[3] for r in rows), sum(r[4] for r in rows)
        before_last_door = sum(r[5] < task.params["doors"] for r in rows)
        focus = ("walls" if blocked and blocked >= away else "doors" if before_last_door > len(rows) / 2
                 else "size" if rows else "doors")
        cells = Counter((r[0], r[1]) for r in rows).most_common(5)
        return {"n": len(rows), "blocked": blocked, "away": away, "before_last_door": before_last_door,
                "focus": focus, "cells": [[cx, cy] for (cx, cy), _ in cells]}

    def mutate(self, task: Task, direction: str, critic: dict, rng: np.random.Generator) -> Task:
        if direction not in ("harder", "easier"):
            raise ValueError(f"direction must be 'harder' or 'easier', not {direction!r}")
        sign = 1 if direction == "harder" else -1
        p, d0 = task.params, _difficulty(task.params)
        focus = FOCUS_PARAM.get(str((critic or {}).get("focus")), "size")
        step = float(rng.uniform(0.15, 0.3))

        def walls(delta: float) -> float:
            return round(float(np.clip(p["wall_density"] + delta * WALL_MAX, 0, WALL_MAX)), 4)
        edits = {
            "wall_density": [{"wall_density": walls(sign * step)}],
            # a door moves d by 1/6; fewer walls or a smaller grid give some back so that |Δd| ≤ 0.15
            "doors": [{"doors": p["doors"] + sign, "wall_density": walls(-sign * w)} for w in (0.1, 0.2, 0.3)]
            + [{"doors": p["doors"] + sign, "size": p["size"] - sign * k} for k in (1, 2)],
            "size": [{"size": p["size"] + sign * k} for k in (2, 1, 3)],
        }
        order = [focus] + [k for k in ("size", "wall_density", "doors") if k != focus]
        for key in order:
            for edit in edits[key]:
                cand = {**p, **edit}
                if _valid_params(cand) is None and 0 < sign * (_difficulty(cand) - d0) <= 0.15:
                    return Task(self.name, cand, fresh_seed(rng, task.seed))
        return Task(self.name, dict(p), fresh_seed(rng, task.seed))

    def make_env(self, tasks: list[Task], rollouts: int, device: torch.device | str = "cpu") -> WalkEnv:
        return keyrooms_env(tasks, rollouts, device)

    def describe(self, task: Task) -> dict:
        """gridworld's drawing (walls, start, goal) plus 'D' door and 'k' key cells."""
        lay = layout(task)
        marks = {c: "D" for c in lay.doors} | {c: "k" for c in lay.keys}
        rows = ["".join(marks.get((y + 1) * FRAME + x + 1, "#" if lay.walls[y + 1, x + 1] else ".")
                        for x in range(lay.size)) for y in range(lay.size)]
        return {"size": lay.size, "walls": rows, "start": list(_xy(lay.start)), "goal": list(_xy(lay.goal)),
                "doors": [list(_xy(c)) for c in lay.doors], "keys": [list(_xy(c)) for c in lay.keys],
                "budget": budget_for(int(_tables(task)["dist"][lay.start])), "difficulty": self.difficulty(task.params)}


FAMILY = KeyroomsFamily()
