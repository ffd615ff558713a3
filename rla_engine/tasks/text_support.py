"""What the procedural text families share: the training / held-out halves of a task space, the
seed of a proposed variant, sampling close to a difficulty, and validation through a parser.

Params hold a whole concrete task, so two seeds can draw the same task (a one-step word problem
has a few thousand). A task's half is a hash bit of its params: `sample` keeps drawing until the
bit matches (training 0, held-out 1), and mutations keep training tasks, so the held-out suite
never holds a task the pool was given. A variant proposed by the language model is taken as it is.
"""
from __future__ import annotations

import json
import zlib
from collections.abc import Callable

import numpy as np

from .task import TRAIN_SEEDS, Task, draw_seed
from .text_base import TurnResult

CLOSE_ENOUGH = 0.03        # a sampled task this close to the asked difficulty ends the search


def _hash(params: dict) -> int:
    return zlib.crc32(json.dumps(params, sort_keys=True).encode())


def half(params: dict) -> int:
    """0: a training task, 1: a held-out one."""
    return _hash(params) & 1


def variant_seed(params: dict) -> int:
    """A training seed for a task built from JSON (the seed draws nothing: params are the task)."""
    lo, hi = TRAIN_SEEDS
    return lo + _hash(params) % (hi - lo)


def sample_near(d: float, rng: np.random.Generator, held_out: bool, tries: int,
                draw: Callable[[float, np.random.Generator], dict | None],
                difficulty: Callable[[dict], float]) -> tuple[dict, int]:
    """(params, seed): of `tries` draws from the seed's stream, in the asked half and playable
    (`draw` returns None otherwise), the one closest to difficulty d."""
    d = float(np.clip(d, 0.0, 1.0))
    seed = draw_seed(rng, held_out)
    g = np.random.default_rng(seed)
    best: tuple[float, dict] | None = None
    for _ in range(tries):
        params = draw(d, g)
        if params is None or half(params) != int(held_out):
            continue
        gap = abs(difficulty(params) - d)
        if best is None or gap < best[0]:
            best = (gap, params)
        if gap <= CLOSE_ENOUGH:
            break
    if best is None:
        raise RuntimeError(f"no task drawn near difficulty {d:g} in {tries} tries")
    return best[1], seed


def checked(family: str, task: Task, parse: Callable[[object], dict]) -> tuple[dict | None, str | None]:
    """(canonical params, None), or (None, why the task is malformed)."""
    if task.family != family:
        return None, f"task of family {task.family!r}, not {family!r}"
    try:
        return parse(task.params), None
    except ValueError as e:
        return None, str(e)


def one_command_turn(label: int, info: dict, extra: dict, steps: list[str], observation: str, done: bool,
                     success: bool) -> TurnResult:
    """The turn of a one-command-per-turn family (text_world, textworld): the first string was the
    command; any further string is a bad step with no effect. An episode that ended without success
    says it ran out of turns instead of listing commands."""
    if done and not success:
        observation = observation.split(" Commands: ")[0] + " You are out of turns."
    return TurnResult([label] + [-1] * (len(steps) - 1), [info] + [dict(extra) for _ in steps[1:]],
                      observation, done, success)


def command_text(text: str) -> str:
    """A response as a command of a one-command family, matched leniently: its first non-empty line,
    case, surrounding quotes, backticks and `*` ignored, inner runs of spaces as one, and an
    optional trailing period."""
    lines = [ln for ln in str(text).strip().splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    return " ".join(first.strip().strip("\"'`*").strip().rstrip(".").lower().split())


def budget(length: int) -> int:
    """The turns of a one-command family's episode: room for one wasted turn per useful one, no more."""
    return 2 * length + 2
