"""TextWorld for the embedded networks: the `textworld` family's real games (the same tasks, games
folder, difficulty and environment model: textworld_family), played by a small policy that picks
one of the game's admissible commands each turn, so that the loop can be watched learning on a real
game engine with no language model, on 2 cores.

Observation: SLOTS command slots of FEATURES numbers each (models/networks.py scores every slot
with one small network, so what it learns of a slot holds for any slot). The slots hold the game's
admissible commands in alphabetical order; past SLOTS, `look`, `inventory` and `examine …` give way
first. A slot's features are what a reader of the game's text would note, hashed where they name
words (crc32: the same in every process):
  0      the slot holds a command
  1-10   its verb (go, open, close, take, put, insert, drop, unlock, eat, other)
  11     the share of its words (verb and small words left out) the objective names
  12     the objective names one of its words next after what was already done (the earliest such
         mention among the slots; "done" = the mentions of the commands played so far)
  13     the objective names one of its words later than that
  14     the share of its words in the room's text and the last answer
  15     the share of its words in the inventory
  16     how often it was played this episode (0, ⅓, ⅔, 1 for 3 or more)
  17     it is the command played last
  18     it goes back the way the last `go` came
  19-22  its words, hashed into 4 buckets (each word adds 1/len)
  23     the share of the turn budget used
An empty slot is all zeros; choosing it wastes the turn ("Nothing happens").

Oracle label, success, the turn budget and the critic's facts are the `textworld` family's: +1 iff
the walkthrough from the new state is shorter or the game is won. Info row: INFO_NAMES. A game whose
interpreter fails ends that episode as a failure with `crash` = 1 (the backend makes it an
`episode_crashed` event; the error goes to the engine's log).
"""
from __future__ import annotations

import re
import sys
import zlib
from collections import Counter

import numpy as np
import torch

from .base import BatchEnv, Family, Task
from .textworld_family import VERBS, Environments, TextWorldFamily, _clean, _room, _verb, _why

SLOTS, FEATURES = 16, 24
VERB_FEATURES = ("go", "open", "close", "take", "put", "insert", "drop", "unlock", "eat")   # then "other"
HASH_BUCKETS, HASH_AT = 4, 19
SMALL_WORDS = frozenset({"the", "a", "an", "from", "on", "in", "into", "with", "to", "of", "at"})
GIVE_WAY = ("look", "inventory", "examine")
OPPOSITE = {"north": "south", "south": "north", "east": "west", "west": "east", "up": "down", "down": "up"}
INFO_NAMES = ("verb", "valid", "progress", "room", "wanted", "crash")
ROOMS = 997       # a room's name is kept as its crc32 modulo this (the critic counts rooms, never names them)
_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    return _WORD.findall(str(text).lower())


def content_words(command: str) -> list[str]:
    return [w for w in words(command)[1:] if w not in SMALL_WORDS]


def choices(admissible) -> list[str]:
    """The commands the slots hold, in slot order."""
    commands = sorted(set(admissible or []))
    if len(commands) > SLOTS:
        keep = [c for c in commands if not c.startswith(GIVE_WAY)]
        commands = sorted(keep + [c for c in commands if c.startswith(GIVE_WAY)][:max(0, SLOTS - len(keep))])
    return commands[:SLOTS]


def _crc(text: str) -> int:
    return zlib.crc32(text.encode())


class Objective:
    """Where the objective's text names each word (word positions)."""

    def __init__(self, text: str):
        self.at: dict[str, list[int]] = {}
        for i, w in enumerate(words(text)):
            self.at.setdefault(w, []).append(i)

    def share(self, ws: list[str]) -> float:
        return sum(w in self.at for w in ws) / len(ws) if ws else 0.0

    def next_mention(self, ws: list[str], after: int) -> int | None:
        found = [p for w in ws for p in self.at.get(w, ()) if p > after]
        return min(found) if found else None


class CommandEpisode:
    """One episode of one game: its state, what was played, and its slots' features."""

    def __init__(self, family: TextWorldFamily, task: Task, envs: Environments):
        self.game = family._game(task)
        self.budget = family.turns(task)
        self.objective = Objective(_clean(self.game.objective))
        self.envs, self.turn = envs, 0
        self.done = self.success = False
        self.crashed = False
        self.mentioned, self.last, self.came_from = -1, "", ""
        self.played: Counter[str] = Counter()
        self.text = ""
        self.env = None
        try:
            self.env = envs.take(self.game)
            self.state = self.env.reset()
            self.text = f"{_clean(self.state.description)}"
        except Exception as e:        # the interpreter failed on this game: this episode fails, not the run
            self._crash(e)
        self.commands = [] if self.crashed else choices(self.state.admissible_commands)

    def _crash(self, e: Exception) -> None:
        """The game failed: the episode ends at this step (one that never started: at its first)."""
        print(f"rla: a TextWorld game failed ({self.game.key}): {_why(e)}", file=sys.stderr, flush=True)
        self.crashed = True
        if self.env is not None:
            try:
                self.env.close()
            except Exception:       # already broken: nothing more to free
                pass
            self.env = None

    def features(self) -> np.ndarray:
        out = np.zeros((SLOTS, FEATURES), np.float32)
        if self.done or self.crashed:
            return out
        seen = set(words(self.text))
        held = set(words(self.state.inventory or ""))
        mentions = [self.objective.next_mention(content_words(c), self.mentioned) for c in self.commands]
        first = min((m for m in mentions if m is not None), default=None)
        for k, (command, mention) in enumerate(zip(self.commands, mentions)):
            ws = content_words(command)
            row = out[k]
            row[0] = 1.0
            verb = command.split(" ")[0]
            row[1 + (VERB_FEATURES.index(verb) if verb in VERB_FEATURES else len(VERB_FEATURES))] = 1.0
            row[11] = self.objective.share(ws)
            row[12] = float(mention is not None and mention == first)
            row[13] = float(mention is not None and mention != first)
            row[14] = sum(w in seen for w in ws) / len(ws) if ws else 0.0
            row[15] = sum(w in held for w in ws) / len(ws) if ws else 0.0
            row[16] = min(self.played[command], 3) / 3
            row[17] = float(command == self.last)
            row[18] = float(verb == "go" and bool(ws) and OPPOSITE.get(ws[0]) == self.came_from)
            for w in ws:
                row[HASH_AT + _crc(w) % HASH_BUCKETS] += 1.0 / len(ws)
            row[23] = self.turn / self.budget
        return out

    def wanted(self) -> str | None:
        todo = list(self.state.policy_commands or []) if not (self.done or self.crashed) else []
        return todo[0] if todo else None

    def step(self, index: int) -> tuple[int, list[int]]:
        """Play slot `index`: (oracle label, info row)."""
        if self.crashed:              # the game never started: this first step ends the episode
            self.done = True
            return -1, [len(VERBS), 0, 0, 0, len(VERBS), 1]
        wanted = self.wanted()
        base = [_crc(_room(self.state)) % ROOMS, VERBS.index(_verb(wanted)) if wanted and _verb(wanted) in VERBS else
                len(VERBS)]
        self.turn += 1
        if index >= len(self.commands):
            self._end_if_out_of_turns()
            return -1, [len(VERBS), 0, 0, *base, 0]
        command = self.commands[index]
        verb = VERBS.index(_verb(command)) if _verb(command) in VERBS else len(VERBS)
        before = len(self.state.policy_commands or [])
        try:
            after, _score, _done = self.env.step(command)       # type: ignore[union-attr]
        except Exception as e:        # the interpreter failed inside the game: this episode ends, not the run
            self._crash(e)
            self.done = True
            return -1, [verb, 1, 0, *base, 1]
        self.state = after
        self.played[command] += 1
        self.last = command
        ws = content_words(command)
        if command.startswith("go ") and ws:
            self.came_from = ws[0]
        mention = self.objective.next_mention(ws, self.mentioned)
        if mention is not None:
            self.mentioned = mention
        self.success = bool(after.won)
        progress = self.success or len(after.policy_commands or []) < before
        self.text = f"{_clean(after.description)} {_clean(after.feedback)}"
        if self.success or after.lost:
            self._finish()
        else:
            self._end_if_out_of_turns()
        self.commands = [] if self.done else choices(after.admissible_commands)
        return (1 if progress else -1), [verb, 1, int(progress), *base, 0]

    def _end_if_out_of_turns(self) -> None:
        if self.turn >= self.budget:
            self._finish()

    def _finish(self) -> None:
        self.done = True
        if self.env is not None:
            self.envs.give(self.game, self.env)
            self.env = None


class CommandEnv(BatchEnv):
    def __init__(self, family: TextWorldCommands, tasks: list[Task], rollouts: int, device: torch.device | str):
        self.family, self.tasks, self.rollouts = family, tasks, rollouts
        self.device = torch.device(device)
        self.n = len(tasks) * rollouts
        family.prepare(tasks)
        self.max_steps = max((family.games_family.turns(t) for t in tasks), default=0)
        self.episodes: list[CommandEpisode] = []      # started by reset (each start opens a game)
        self.active = torch.zeros(self.n, dtype=torch.bool, device=self.device)
        self.success = torch.zeros(self.n, dtype=torch.bool, device=self.device)

    def _obs(self) -> torch.Tensor:
        rows = np.stack([e.features().reshape(-1) for e in self.episodes]) if self.episodes else \
            np.zeros((0, SLOTS * FEATURES), np.float32)
        return torch.as_tensor(rows, device=self.device)

    def _flags(self) -> None:
        self.active = torch.tensor([not e.done for e in self.episodes], dtype=torch.bool, device=self.device)
        self.success = torch.tensor([e.success for e in self.episodes], dtype=torch.bool, device=self.device)

    def reset(self) -> torch.Tensor:
        for old in self.episodes:
            old._finish()
        self.episodes = [CommandEpisode(self.family.games_family, self.tasks[b // self.rollouts], self.family.envs)
                         for b in range(self.n)]
        self._flags()
        return self._obs()

    def step(self, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        oracle = np.ones(self.n, np.int8)
        info = np.zeros((self.n, len(INFO_NAMES)), np.int32)
        for b, (episode, action) in enumerate(zip(self.episodes, actions.tolist())):
            if not episode.done:
                oracle[b], info[b] = episode.step(int(action))
        self._flags()
        return self._obs(), torch.as_tensor(oracle, device=self.device), torch.as_tensor(info, device=self.device)

    def oracle_action(self) -> torch.Tensor:
        best = []
        for e in self.episodes:
            wanted = e.wanted()
            best.append(e.commands.index(wanted) if wanted in e.commands else 0)
        return torch.tensor(best, dtype=torch.long, device=self.device)


class TextWorldCommands(Family):
    name = "textworld_commands"
    obs_dim = SLOTS * FEATURES
    n_actions = SLOTS
    slot_features = FEATURES          # the policy scores each slot of FEATURES alike (models/networks.py)
    info_dim = len(INFO_NAMES)
    info_names = INFO_NAMES

    def __init__(self) -> None:
        self.games_family = TextWorldFamily(self.name)     # its tasks carry this family's name
        self.envs = self.games_family._envs

    # -- games: the textworld family's ---------------------------------------------------------
    def use_games(self, *args, **kwargs) -> None:
        self.games_family.use_games(*args, **kwargs)

    def prepare(self, tasks: list[Task]) -> None:
        self.games_family.prepare(tasks)

    # -- tasks and the environment model: the textworld family's ------------------------------
    def difficulty(self, params: dict) -> float:
        return self.games_family.difficulty(params)

    def sample(self, d: float, rng: np.random.Generator, held_out: bool = False) -> Task:
        return self.games_family.sample(d, rng, held_out)

    def sample_many(self, targets: list[float], rng: np.random.Generator, held_out: bool = False) -> list[Task]:
        return self.games_family.sample_many(targets, rng, held_out)

    def eval_sets(self, tiers: list[float], per_tier: int, rng_for):
        return self.games_family.eval_sets(tiers, per_tier, rng_for)

    def validate(self, task: Task) -> str | None:
        return self.games_family.validate(task)

    def critic(self, task: Task, steps: list[tuple[int, list[int]]]) -> dict:
        named = []
        for i, row in steps:
            verb, valid, progress, room, wanted, crash = (list(row) + [0] * len(INFO_NAMES))[:len(INFO_NAMES)]
            info = {"command": VERBS[verb] if 0 <= verb < len(VERBS) else "other", "valid": bool(valid),
                    "progress": bool(progress), "room": f"room {room}",
                    "wanted": VERBS[wanted] if 0 <= wanted < len(VERBS) else "none"}
            named.append((i, {**info, "crash": "the game's interpreter failed"} if crash else info))
        return self.games_family.critic(task, named)

    def mutate(self, task: Task, direction: str, critic: dict, rng: np.random.Generator) -> Task:
        return self.games_family.mutate(task, direction, critic, rng)

    def mutate_many(self, requests: list[tuple[Task, str, dict]], rng: np.random.Generator) -> list[Task]:
        return self.games_family.mutate_many(requests, rng)

    def describe(self, task: Task) -> dict:
        return self.games_family.describe(task)

    # -- episodes ----------------------------------------------------------------------------
    def make_env(self, tasks: list[Task], rollouts: int, device: torch.device | str = "cpu") -> CommandEnv:
        return CommandEnv(self, tasks, rollouts, device)

    def transcript(self, task: Task, actions: list[int]) -> list[dict]:
        """The episode the actions play, replayed (a game is deterministic): per step the command
        played and the game's answer, for the episode viewer."""
        episode = CommandEpisode(self.games_family, task, self.envs)
        out = []
        for action in actions:
            if episode.done:
                break
            empty = action >= len(episode.commands)
            command = "(the game could not be started)" if episode.crashed else "(an empty slot)" if empty else \
                episode.commands[action]
            episode.step(action)
            answer = "The game stopped working." if episode.crashed else "Nothing happens." if empty else \
                "You won." if episode.success else _clean(episode.state.feedback)
            out.append({"command": command, "answer": answer[:400]})
        episode._finish()
        return out


FAMILY = TextWorldCommands()
