"""Gridworld layouts: random walls and a start–goal pair at a target BFS distance (numpy only).

Every grid lives in one fixed 17×17 frame (at most 15×15 cells plus a wall border; the padding
beyond a smaller grid is wall too), row-major with stride 17. The free cells of a layout are
then one 289-bit Python int, and a BFS level is a few big-int shifts and masks (about a
microsecond), so drawing thousands of tasks (pool refreshes, held-out suites) stays cheap
without scipy. A shift by ±1 that wraps into the neighbouring row lands in column 0 or 16,
which is always padding, so the free mask removes it.

Held-out and training instances are disjoint by construction, not by luck: a layout (walls,
start, goal) carries one hash bit, training seeds only ever produce bit 0 and held-out seeds
bit 1. Small grids have few distinct layouts, so disjoint seed streams alone would collide.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

FRAME = 17
CELLS = FRAME * FRAME
MAX_SIZE = FRAME - 2
OFFSETS = (-FRAME, FRAME, -1, 1)          # up, down, left, right in the flat frame
UNREACHABLE = 10_000
_ATTEMPTS = 12                            # wall redraws before the wall-free fallback
_STARTS = 6                               # random start candidates per wall draw
_BYTES = (CELLS + 7) // 8


@dataclass(frozen=True)
class Layout:
    size: int
    walls: np.ndarray        # [17, 17] bool, padding included
    start: int               # flat frame index (y+1)*17 + (x+1)
    goal: int
    distance: int            # BFS distance start → goal


def xy(cell: int) -> tuple[int, int]:
    """Grid coordinates (x, y), 0-based inside the grid, of a flat frame index."""
    return cell % FRAME - 1, cell // FRAME - 1


def target_distance(size: int, distance: float) -> int:
    """The wanted BFS distance: 2 (one corner turn) up to 2·(size−1) (corner to corner)."""
    return round(2 + distance * (2 * (size - 1) - 2))


def mask_to_bits(mask: np.ndarray) -> int:
    return int.from_bytes(np.packbits(mask.ravel(), bitorder="little").tobytes(), "little")


def bits_to_mask(bits: int) -> np.ndarray:
    raw = np.frombuffer(bits.to_bytes(_BYTES, "little"), np.uint8)
    return np.unpackbits(raw, bitorder="little")[:CELLS].astype(bool)


def iter_bits(bits: int):
    while bits:
        low = bits & -bits
        yield low.bit_length() - 1
        bits ^= low


def bfs_levels(free: int, src: int) -> list[int]:
    """Frontiers of a BFS from cell `src` over the free bitboard: levels[d] = cells at distance d."""
    seen = frontier = 1 << src
    levels = [frontier]
    while True:
        nb = ((frontier << 1) | (frontier >> 1) | (frontier << FRAME) | (frontier >> FRAME)) & free & ~seen
        if not nb:
            return levels
        seen |= nb
        levels.append(nb)
        frontier = nb


def distance_map(walls: np.ndarray, src: int) -> np.ndarray:
    """[289] int32 BFS distance to `src` (the graph is undirected); UNREACHABLE for walls/other components."""
    out = np.full(CELLS, UNREACHABLE, np.int32)
    for d, level in enumerate(bfs_levels(mask_to_bits(~walls), src)):
        out[bits_to_mask(level)] = d
    return out


def _mix(h: int) -> int:
    # murmur3 finaliser: spreads every input bit over the output bit we keep
    h &= 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


def stream_bit(wall_hash: int, start: int, goal: int) -> int:
    """The hash bit of a layout: 0 = training instance, 1 = held-out instance."""
    return _mix(wall_hash ^ _mix(start * 0x9E3779B1 + goal * 0x7F4A7C15 + 1)) & 1


def wall_hash(walls: np.ndarray) -> int:
    return zlib.crc32(np.packbits(walls).tobytes())


def make_layout(size: int, wall_density: float, distance: float, rng: np.random.Generator,
                held_out: bool) -> Layout:
    """Random interior walls, then the start–goal pair (in one component) whose BFS distance is
    closest to the target. Always succeeds: after `_ATTEMPTS` wall draws that leave no usable
    pair it falls back to a wall-free grid and tries every start."""
    if not 2 <= size <= MAX_SIZE:
        raise ValueError(f"grid size {size} outside 2..{MAX_SIZE}")
    target = target_distance(size, distance)
    want = int(held_out)
    for attempt in range(_ATTEMPTS + 1):
        walls = np.ones((FRAME, FRAME), bool)
        fallback = attempt == _ATTEMPTS
        if fallback:
            walls[1:size + 1, 1:size + 1] = False
        else:
            walls[1:size + 1, 1:size + 1] = rng.random((size, size)) < wall_density
        cells = np.flatnonzero(~walls.ravel())
        if len(cells) < 2:
            continue
        free, whash = mask_to_bits(~walls), wall_hash(walls)
        if fallback:
            starts = [int(c) for c in rng.permutation(cells)]
        else:
            starts = [int(c) for c in rng.choice(cells, size=min(_STARTS, len(cells)), replace=False)]
            # double sweep: a cell farthest from a random one sits on the rim of its component,
            # which is where the long start–goal distances of hard tasks are found
            far = bfs_levels(free, starts[0])[-1]
            far_cells = list(iter_bits(far))
            starts.append(far_cells[int(rng.integers(len(far_cells)))])
        best = None                        # (error, start, goals, distance)
        for s in starts:
            levels = bfs_levels(free, s)
            for d in sorted(range(1, len(levels)), key=lambda d: (abs(d - target), d)):
                if best is not None and abs(d - target) >= best[0]:
                    break
                goals = [g for g in iter_bits(levels[d]) if stream_bit(whash, s, g) == want]
                if goals:
                    best = (abs(d - target), s, goals, d)
                    break
            if best is not None and best[0] == 0:
                break
        if best is not None:
            _, s, goals, d = best
            return Layout(size, walls, s, goals[int(rng.integers(len(goals)))], d)
    raise RuntimeError(f"no layout for size {size}")   # not for size ≥ 5: an open grid has pairs of both bits
