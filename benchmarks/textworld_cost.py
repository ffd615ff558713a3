"""What TextWorld games cost the textworld family: generating, compiling and checking a game (by
quest length), building a batch of them in parallel workers against one at a time, finding a built
game again in the games folder, and playing: an episode's start and its steps, through the family's
own episode (command matching and observation text included), and a step of textworld_commands'
batched environment (the embedded policy's: the game's step and the command slots' features).

Every game is built in a fresh temporary games folder, so nothing is cached from an earlier run.
Run: .venv/bin/python benchmarks/textworld_cost.py [--per-length N] [--batch N] [--workers N]"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rla_engine.tasks.task import Task
from rla_engine.tasks.textworld_commands import TextWorldCommands
from rla_engine.tasks.textworld_family import TextWorldFamily
from rla_engine.tasks.textworld_games import GameCache, build_into, start_game

LENGTHS = (1, 2, 4, 6, 8)


def settings(quest_length: int) -> dict:
    return {"challenge": "custom", "quest_length": quest_length, "world_size": min(quest_length + 1, 8),
            "nb_objects": min(2 * quest_length, 16)}


def build_costs(per_length: int) -> list[tuple[int, float, float]]:
    """(quest length, median seconds to build one game, its spread as min..max) by quest length."""
    rows = []
    for length in LENGTHS:
        times = []
        for seed in range(per_length):
            with tempfile.TemporaryDirectory() as folder:
                started = time.perf_counter()
                build_into(folder, settings(length), 1000 + seed)
                times.append(time.perf_counter() - started)
        rows.append((length, statistics.median(times), max(times) - min(times)))
    return rows


def batch_costs(n: int, workers: int) -> tuple[float, float]:
    """Seconds to build n games one at a time, then n others by `workers` builders (this process
    and workers − 1 others)."""
    wanted = [(settings(1 + k % 4), 2000 + k) for k in range(n)]
    with tempfile.TemporaryDirectory() as root:
        cache = GameCache(Path(root), workers=1)
        started = time.perf_counter()
        for params, seed in wanted:
            cache.get(params, seed)
        serial = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as root:
        cache = GameCache(Path(root), workers=workers)
        started = time.perf_counter()
        cache.prepare([(params, seed + 10_000) for params, seed in wanted])
        parallel = time.perf_counter() - started
    return serial, parallel


def play_costs(rounds: int) -> dict[str, float]:
    """Milliseconds: finding a built game again, starting an episode, one step of the game's own
    environment, one turn of the family's episode (matching and text included)."""
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as root:
        family = TextWorldFamily()
        family.use_games(Path(root), workers=1)
        task = Task(family.name, settings(4), 77)
        game = family.games().get(task.params, task.seed)
        started = time.perf_counter()
        for _ in range(rounds):
            family.games().get(task.params, task.seed)
        out["find a built game (verified)"] = 1000 * (time.perf_counter() - started) / rounds
        starts, steps, turns = [], [], []
        for _ in range(rounds):
            t0 = time.perf_counter()
            env = start_game(game.story, admissible_commands=True, policy_commands=True, won=True)
            env.reset()
            starts.append(time.perf_counter() - t0)
            for command in game.walkthrough:
                t0 = time.perf_counter()
                env.step(command)
                steps.append(time.perf_counter() - t0)
            env.close()
            episode = family.start(task)
            for command in game.walkthrough:
                t0 = time.perf_counter()
                episode.respond([command])
                turns.append(time.perf_counter() - t0)
        out["start an episode (load + reset)"] = 1000 * statistics.median(starts)
        out["one step of the game"] = 1000 * statistics.median(steps)
        out["one turn of the family's episode"] = 1000 * statistics.median(turns)
        out["one step of textworld_commands"] = commands_step_ms(root, task, rounds)
    return out


def commands_step_ms(root: str, task: Task, rounds: int) -> float:
    """Median milliseconds of one step of textworld_commands' batched environment (8 episodes of the
    game, the walkthrough's command each: the game's step and every slot's features)."""
    family = TextWorldCommands()
    family.use_games(Path(root), workers=1)
    task = Task(family.name, task.params, task.seed)
    steps = []
    for _ in range(rounds):
        env = family.make_env([task], 8)
        env.reset()
        while env.active.any():
            t0 = time.perf_counter()
            env.step(env.oracle_action())
            steps.append((time.perf_counter() - t0) / env.n)
    return 1000 * statistics.median(steps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-length", type=int, default=3, help="games built per quest length")
    ap.add_argument("--batch", type=int, default=8, help="games of the serial/parallel comparison")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--rounds", type=int, default=20, help="episodes played for the play costs")
    a = ap.parse_args()
    print(f"TextWorld games, {os.cpu_count()} cores")
    print("\nbuild one game (generate + compile + replay its walkthrough), by quest length:")
    print("  quest  rooms  objects  median s  spread s")
    for length, median, spread in build_costs(a.per_length):
        s = settings(length)
        print(f"  {length:5d}  {s['world_size']:5d}  {s['nb_objects']:7d}  {median:8.2f}  {spread:8.2f}")
    serial, parallel = batch_costs(a.batch, a.workers)
    print(f"\n{a.batch} games one at a time: {serial:.1f} s; by {a.workers} builders: {parallel:.1f} s "
          f"({serial / parallel:.2f}× faster)")
    print("\nplaying (median ms):")
    for what, ms in play_costs(a.rounds).items():
        print(f"  {what:40s} {ms:8.2f}")


if __name__ == "__main__":
    main()
