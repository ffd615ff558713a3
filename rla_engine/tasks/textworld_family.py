"""TextWorld: real text games made by Microsoft TextWorld's generator (the engine under ALFWorld,
the paper's text-agent setting), one command per turn (text_base).

A task is a game's generation settings and seed (textworld_settings); its game is generated,
compiled and checked once, and kept in the database's games folder (textworld_games). TextWorld
is an optional extra: this module imports without it, and using the family without it is one
line naming what to install.

Every observation (the instruction's first one and each turn's) is the game's own text, its
"-= Room =-" banners, prompts and score lines left out, followed by the admissible commands:
"… Commands: go east | open chest | take key | …". A response is matched to an admissible command
leniently (text_world's rule: the first non-empty line, case, quotes and spaces ignored, an
optional trailing period); anything else is answered "Nothing happens." with the list again, and
costs the turn.

Oracle label (diagnostics only): +1 iff the command brings the game closer to its goal — the
walkthrough TextWorld keeps from the current state got shorter, or the game was won; −1 for
anything else (a detour, `look`, an unknown command). Success: the game is won. The turn budget is
2 × the walkthrough's length + 2. The critic is told what the game knows: which commands were
invalid or wasted by verb, in which rooms, and which verb the walkthrough wanted at each wasted step.

A game that fails while it is played (the interpreter raises) ends that episode as a failure, its
step's info saying why ("crash"): the backend turns it into an `episode_crashed` event, and the
run goes on.
"""
from __future__ import annotations

import contextlib
import json
import re
from collections import Counter, OrderedDict
from pathlib import Path

import numpy as np

from ..paths import games_dir
from .eval_sets import EvalSet
from .task import Task, draw_seed, fresh_seed
from .text_base import TextEpisode, TextFamily, TurnResult
from .text_support import budget, command_text, one_command_turn
from .textworld_games import DEFAULT_CAP_BYTES, Game, GameCache, GameError, start_game
from .textworld_settings import CHALLENGES, KNOB_ORDER, SEED_RANGE, SettingsError, difficulty, moves, parse, \
    schema_text, settings_near

MAX_TURNS = 40
MAX_WALKTHROUGH = (MAX_TURNS - 2) // 2
VERBS = ("go", "open", "close", "take", "put", "insert", "drop", "unlock", "lock", "examine", "eat", "look",
         "inventory")
# the knob a wasted or invalid command of a verb points the environment model's critic at
FOCUS_OF = {"go": "world_size", "examine": "nb_objects", "take": "nb_objects", "drop": "nb_objects"}
_BANNER = re.compile(r"^\s*-=\s*(.*?)\s*=-\s*$", re.M)



def _verb(command: str) -> str:
    word = command.split(" ")[0] if command else ""
    return word if word in VERBS else "other"


def _clean(feedback: str) -> str:
    """The game's text without its banners, prompt and score lines, in one paragraph."""
    keep = []
    for line in str(feedback).splitlines():
        s = line.strip()
        # the prompt line also carries the status bar after it (">      -= Closet =-0/2")
        if not s or s.startswith(">") or _BANNER.match(line) or "*** The End ***" in s:
            continue
        if s.startswith(("Your score has", "You scored", "Would you like to")):
            continue
        keep.append(s)
    return " ".join(keep)


def _room(state) -> str:
    found = _BANNER.search(str(getattr(state, "description", "") or ""))
    return found.group(1) if found else "?"


def _why(e: Exception) -> str:
    return f"{type(e).__name__}: {str(e)[:200]}"


def _commands(state) -> str:
    return "Commands: " + " | ".join(state.admissible_commands or [])


class Environments:
    """Started TextWorld environments kept for reuse: starting one parses the game's description
    (about 0.2 s), resetting a started one takes milliseconds. An episode takes one of its game's
    and gives it back when it ends; at most PER_GAME idle ones a game, MAX_IDLE in all (the games
    used longest ago closed first)."""
    PER_GAME, MAX_IDLE = 8, 128

    def __init__(self) -> None:
        self.idle: OrderedDict[str, list] = OrderedDict()

    def take(self, game: Game):
        kept = self.idle.get(game.key)
        if kept:
            return kept.pop()
        return start_game(game.story, admissible_commands=True, policy_commands=True, won=True, lost=True,
                          description=True, inventory=True, objective=True, feedback=True)

    def give(self, game: Game, env) -> None:
        kept = self.idle.setdefault(game.key, [])
        self.idle.move_to_end(game.key)
        if len(kept) >= self.PER_GAME:
            env.close()
            return
        kept.append(env)
        while sum(len(v) for v in self.idle.values()) > self.MAX_IDLE:
            _key, oldest = next(iter(self.idle.items()))
            if not oldest:
                self.idle.popitem(last=False)
                continue
            oldest.pop(0).close()


class GameEpisode(TextEpisode):
    def __init__(self, game: Game, turns: int, envs: Environments):
        self.game, self.envs, self.turns_left = game, envs, turns
        self.done = self.success = False
        self.crash: str | None = None         # why the game could not even be started
        self.env = None
        try:
            self.env = envs.take(game)
            self.state = self.env.reset()
        except Exception as e:        # the interpreter failed on this game: this episode fails, not the run
            self.crash, self.state = _why(e), None
            self._drop()

    def first_observation(self) -> str:
        s = self.state
        return f"{_clean(s.description)} {_clean(s.inventory)} {_commands(s)}".strip()

    def _finish(self) -> None:
        """Done: the environment goes back for the game's next episode."""
        self.done = True
        if self.env is not None:
            self.envs.give(self.game, self.env)
            self.env = None

    def _drop(self) -> None:
        """An environment that failed is closed, never given back."""
        if self.env is not None:
            with contextlib.suppress(Exception):
                self.env.close()
            self.env = None

    def _act(self, text: str) -> tuple[int, dict, str]:
        s = self.state
        wanted = list(s.policy_commands or [])
        command = {c.lower(): c for c in s.admissible_commands or []}.get(command_text(text))
        base = {"room": _room(s), "wanted": _verb(wanted[0]) if wanted else "none"}
        if command is None:
            return -1, {"command": _verb(command_text(text)), "valid": False, "progress": False, **base}, \
                "Nothing happens. " + _commands(s)
        assert self.env is not None           # a started, unfinished episode holds its environment
        try:
            after, _score, _done = self.env.step(command)
        except Exception as e:        # the interpreter failed inside the game: this episode ends, not the run
            self._drop()
            self.done = True
            return -1, {"command": _verb(command), "valid": True, "progress": False, "crash": _why(e), **base}, \
                "The game stopped working."
        self.state = after
        self.success = bool(after.won)
        progress = self.success or len(after.policy_commands or []) < len(wanted)
        tail = "You won." if self.success else _commands(after)
        info = {"command": _verb(command), "valid": True, "progress": progress, **base}
        return (1 if progress else -1), info, f"{_clean(after.feedback)} {tail}".strip()

    def respond(self, steps: list[str]) -> TurnResult:
        extra = {"command": "extra", "valid": False, "progress": False, "room": _room(self.state), "wanted": "none"}
        if self.crash is not None and not self.done:
            self._finish()
            return TurnResult([-1] * len(steps), [{**extra, "crash": self.crash} for _ in steps],
                              "The game could not be started.", True, False)
        if self.done:
            return TurnResult([-1] * len(steps), [dict(extra) for _ in steps], "The episode is over.", True,
                              self.success)
        label, info, obs = self._act(steps[0] if steps else "")
        self.turns_left -= 1
        if not self.done and (self.success or self.state.lost or self.turns_left <= 0):
            self._finish()
        if "crash" in info:
            return TurnResult([label] + [-1] * (len(steps) - 1), [info] + [dict(extra) for _ in steps[1:]],
                              obs, True, False)
        return one_command_turn(label, info, extra, steps, obs, self.done, self.success)


class TextWorldFamily(TextFamily):
    name = "textworld"
    lines_are_steps = False
    max_turns = MAX_TURNS

    def __init__(self, name: str = "textworld") -> None:
        self.name = name                   # textworld_commands plays the same tasks under its own name
        self._cache: GameCache | None = None
        self._settings: tuple[Path | None, int, int] = (None, DEFAULT_CAP_BYTES, 0)
        self.challenge = "custom"          # which of TextWorld's generators `sample` draws from
        self._envs = Environments()

    # -- games ---------------------------------------------------------------------------------
    def use_games(self, root: Path | None, cap_bytes: int = DEFAULT_CAP_BYTES, workers: int = 0,
                  challenge: str = "custom") -> None:
        """Keep games under `root` (the database's games folder), at most cap_bytes of them, built by
        `workers` processes at once (0: one per core); `sample` draws `challenge`'s games."""
        if challenge not in CHALLENGES:
            raise ValueError(f"challenge must be one of {', '.join(CHALLENGES)}, not {challenge!r}")
        self._cache = None
        self._settings, self.challenge = (root, cap_bytes, workers), challenge

    def games(self) -> GameCache:
        if self._cache is None:
            root, cap, workers = self._settings
            self._cache = GameCache(root or games_dir(), cap, workers)
        return self._cache

    def _game(self, task: Task) -> Game:
        got = task._cache.get("game")
        if got is None:
            got = task._cache["game"] = self.games().get(parse(task.params), task.seed)
        return got

    def prepare(self, tasks: list[Task]) -> None:
        """Build every game these tasks need at once, in parallel (before their episodes start)."""
        todo = [t for t in tasks if "game" not in t._cache]
        if not todo:
            return
        got = self.games().prepare([(parse(t.params), t.seed) for t in todo])
        for t in todo:
            result = got[self.games().key(parse(t.params), t.seed)]
            if isinstance(result, Game):
                t._cache["game"] = result

    # -- tasks ---------------------------------------------------------------------------------
    def difficulty(self, params: dict) -> float:
        return difficulty(parse(params))

    def _draw(self, d: float, rng: np.random.Generator, held_out: bool) -> Task:
        return Task(self.name, settings_near(self.challenge, float(np.clip(d, 0, 1)), rng), draw_seed(rng, held_out))

    def sample(self, d: float, rng: np.random.Generator, held_out: bool = False) -> Task:
        last = None
        for _ in range(8):
            task = self._draw(d, rng, held_out)
            last = self.validate(task)
            if last is None:
                return task
        raise RuntimeError(f"no playable TextWorld game drawn near difficulty {d:g} in 8 tries ({last})")

    def sample_many(self, targets: list[float], rng: np.random.Generator, held_out: bool = False) -> list[Task]:
        """A task near each difficulty, their games built at once in parallel workers (the pool's
        first tasks, a tier's held-out set); a draw that proves unplayable is drawn again alone."""
        drawn = [self._draw(d, rng, held_out) for d in targets]
        self.prepare(drawn)
        return [task if self.validate(task) is None else self.sample(d, rng, held_out)
                for d, task in zip(targets, drawn)]

    def eval_sets(self, tiers: list[float], per_tier: int, rng_for) -> list[EvalSet]:
        sets = [EvalSet(f"{float(d):g}", [self._draw(float(d), rng, True) for rng in [rng_for(d)] for _ in
                                          range(per_tier)], tier=float(d)) for d in tiers]
        self.prepare([t for s in sets for t in s.tasks])
        for s in sets:
            tier, rng = float(s.tier or 0.0), rng_for(s.tier)
            s.tasks = [task if self.validate(task) is None else self.sample(tier, rng, True)
                       for task in s.tasks]
        return sets

    def validate(self, task: Task) -> str | None:
        if task.family != self.name:
            return f"task of family {task.family!r}, not {self.name!r}"
        try:
            parse(task.params)
            game = self._game(task)
        except SettingsError as e:
            return str(e)
        except GameError as e:
            return str(e)
        if len(game.walkthrough) > MAX_WALKTHROUGH:
            return f"the walkthrough ({len(game.walkthrough)} commands) needs more than {MAX_TURNS} turns"
        return None

    def turns(self, task: Task) -> int:
        return min(MAX_TURNS, budget(len(self._game(task).walkthrough)))

    # -- the dialogue --------------------------------------------------------------------------
    def instruction(self, task: Task) -> str:
        game = self._game(task)
        return (f"You are playing a text game. {_clean(game.objective)} Each turn, reply with one command "
                f"from the list.\n{self._opening(task)}")

    def _opening(self, task: Task) -> str:
        """The game's first observation (the same at every start: kept with the task)."""
        if "opening" not in task._cache:
            episode = GameEpisode(self._game(task), 1, self._envs)
            if episode.crash is not None:         # said, not kept: the next start may work
                return "The game could not be started."
            task._cache["opening"] = episode.first_observation()
            episode._finish()
        return task._cache["opening"]

    def start(self, task: Task) -> TextEpisode:
        return GameEpisode(self._game(task), self.turns(task), self._envs)

    # -- the environment model -----------------------------------------------------------------
    def critic(self, task: Task, steps: list[tuple[int, dict]]) -> dict:
        infos = [info for _, info in steps if isinstance(info, dict)]
        invalid = Counter(str(i.get("command")) for i in infos if not i.get("valid"))
        wasted = Counter(str(i.get("command")) for i in infos if i.get("valid") and not i.get("progress"))
        wanted = Counter(str(i.get("wanted")) for i in infos if not i.get("progress"))
        focus = Counter(FOCUS_OF.get(str(i.get("command")), "quest_length") for i in infos if not i.get("progress"))
        return {"n": len(steps), "invalid": dict(invalid), "wasted": dict(wasted), "wanted": dict(wanted),
                "rooms": dict(Counter(str(i.get("room")) for i in infos)),
                "crashed": sum(1 for i in infos if "crash" in i),
                "focus": max(KNOB_ORDER, key=lambda k: (focus[k], k == "quest_length")),
                "steps": sorted(int(i) for i, _ in steps)[:16]}

    def mutate(self, task: Task, direction: str, critic: dict, rng: np.random.Generator) -> Task:
        return self._first_valid(task, self._moves(task, direction, critic, rng), rng)

    def mutate_many(self, requests: list[tuple[Task, str, dict]], rng: np.random.Generator) -> list[Task]:
        """`mutate` for several tasks at once: every first candidate's game is built together, in
        parallel (a game takes about a second to build: the environment model's moves of an
        iteration would otherwise take that many seconds one after another)."""
        plans = [self._moves(task, direction, critic, rng) for task, direction, critic in requests]
        firsts = [Task(self.name, plan[0], fresh_seed(rng, task.seed)) if plan else None
                  for (task, _d, _c), plan in zip(requests, plans)]
        self.prepare([t for t in firsts if t is not None])
        return [first if first is not None and self.validate(first) is None else self._first_valid(task, plan[1:], rng)
                for (task, _d, _c), plan, first in zip(requests, plans, firsts)]

    @staticmethod
    def _moves(task: Task, direction: str, critic: dict, rng: np.random.Generator) -> list[dict]:
        focus = critic.get("focus") if isinstance(critic, dict) else None
        return list(moves(parse(task.params), direction, focus, rng))

    def _first_valid(self, task: Task, candidates: list[dict], rng: np.random.Generator) -> Task:
        for params in candidates:
            variant = Task(self.name, params, fresh_seed(rng, task.seed))
            if self.validate(variant) is None:
                return variant
        return Task(self.name, dict(task.params), fresh_seed(rng, task.seed))   # the same settings, a new game

    def variant_schema(self) -> str:
        return schema_text(MAX_WALKTHROUGH)

    def task_json(self, task: Task) -> dict:
        return {**parse(task.params), "seed": int(task.seed)}

    def from_json(self, data: object, root: Task) -> Task:
        params = parse(data)
        seed = data.get("seed") if isinstance(data, dict) else None
        if seed is None:
            seed = int(root.seed) + 1 if int(root.seed) + 1 < SEED_RANGE[1] else SEED_RANGE[0]
        elif isinstance(seed, bool) or not isinstance(seed, int) or not SEED_RANGE[0] <= seed < SEED_RANGE[1]:
            raise SettingsError(f"seed: {json.dumps(seed)[:40]} is not an integer in {SEED_RANGE[0]}.."
                                f"{SEED_RANGE[1] - 1} (the training half of the seed space)")
        return Task(self.name, params, int(seed))

    def describe(self, task: Task) -> dict:
        params = parse(task.params)
        out = {"difficulty": difficulty(params), "settings": params, "seed": int(task.seed)}
        try:
            game = self._game(task)
        except GameError as e:
            return {**out, "text": f"TextWorld {params['challenge']} game {json.dumps(params)} (seed {task.seed}): "
                                   f"cannot be made ({e})"}
        return {**out, "text": f"{_clean(game.objective)} (TextWorld {params['challenge']}, "
                               f"{', '.join(f'{k} {v}' for k, v in params.items() if k != 'challenge')}, "
                               f"seed {task.seed}; walkthrough: {' > '.join(game.walkthrough)})",
                "goal": _clean(game.objective), "plan": list(game.walkthrough), "plan_length": len(game.walkthrough),
                "turns": self.turns(task)}


FAMILY = TextWorldFamily()
