"""TextWorld games built by TextWorld's own generator, once, and kept in a folder beside the
database (`games/`, as `checkpoints/` is), shared by every run of that database.

A game's folder is named by the hash of what decides its content (this format, TextWorld's
version, the task's params and seed): a task's params rebuild its game exactly, and a game from
another TextWorld version is another folder. Each folder holds the compiled story (game.z8),
TextWorld's description of it (game.json) and a manifest with both files' SHA-256, the
walkthrough and the objective.

Nothing in the folder is trusted: before a game is used its manifest must parse and name this
key, and both files must be plain files (not links) of the recorded size and hash. A game that
fails (truncated, replaced by a link, written by another version, hand-edited) is removed and
built again. A build happens in a private temporary folder that is renamed into place whole, so
two runs building the same game at once both end with one good folder and a killed build leaves
no half game. The folder is kept under a size cap: the games used longest ago go first.

Building runs TextWorld's generator and its Inform 7 compiler (about a second a game), in worker
processes when many are asked for at once (`GameCache.prepare`). A game that TextWorld cannot
generate or compile, or whose walkthrough does not win it, is a `GameError`: the family refuses
that task as it refuses any invalid variant.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from ..errors import InputError
from .textworld_settings import TW_CHALLENGE

FORMAT = 1
STORY, DESCRIPTION, MANIFEST = "game.z8", "game.json", "manifest.json"
EXTRA = "textworld"
INSTALL = f"pip install 'rlanything[{EXTRA}]'"
STALE_BUILD_S = 3600.0          # a build folder this old was left by a killed process
DEFAULT_CAP_BYTES = 512 * 2**20


class MissingTextWorld(InputError):
    """TextWorld is not installed."""


class GameError(Exception):
    """A game TextWorld could not make, or one its own walkthrough does not win."""


@dataclass(frozen=True)
class Game:
    key: str
    story: Path              # the compiled game, as textworld.start takes it
    walkthrough: tuple[str, ...]
    objective: str


def textworld_version() -> str:
    """TextWorld's version; MissingTextWorld naming the extra to install if it is not there."""
    try:
        return metadata.version("textworld")
    except metadata.PackageNotFoundError:
        raise MissingTextWorld(f"the textworld family needs TextWorld, which is not installed: {INSTALL}") from None


def game_key(params: dict, seed: int, version: str) -> str:
    text = json.dumps({"format": FORMAT, "textworld": version, "params": params, "seed": int(seed)},
                      sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# -- building (in this process or a worker) -----------------------------------------------------
def build_into(folder: str, params: dict, seed: int) -> dict:
    """Generate, compile and check one game into an empty folder; returns its manifest (written
    there too). GameError when TextWorld cannot make it or its walkthrough does not win it."""
    import textworld            # an optional extra: imported only to build or play
    from textworld.challenges import CHALLENGES

    out = Path(folder)
    options = textworld.GameOptions()
    options.seeds = int(seed)
    options.path = str(out / STORY)
    options.force_recompile = True
    try:
        if params["challenge"] == "custom":
            options.nb_rooms = params["world_size"]
            options.nb_objects = params["nb_objects"]
            options.quest_length = params["quest_length"]
            game = textworld.generator.make_game(options)
        else:
            game = CHALLENGES[TW_CHALLENGE[params["challenge"]]][1]({"level": params["level"]}, options)
        textworld.generator.compile_game(game, options)
    except Exception as e:        # TextWorld's own errors (no quest of that length, a failed compile…)
        raise GameError(f"TextWorld could not make this game: {type(e).__name__}: {str(e)[:300]}") from None
    (out / "game.ni").unlink(missing_ok=True)        # the Inform 7 source: not needed to play
    walkthrough = [str(c) for c in (game.metadata.get("walkthrough") or [])]
    if not walkthrough:
        raise GameError("TextWorld made a game without a walkthrough")
    won = _replay(out / STORY, walkthrough)
    if not won:
        raise GameError(f"the game's walkthrough ({len(walkthrough)} commands) does not win it")
    manifest = {"format": FORMAT, "textworld": textworld.__version__, "params": params, "seed": int(seed),
                "walkthrough": walkthrough, "objective": str(game.objective),
                "files": {name: {"sha256": _sha256(out / name), "bytes": (out / name).stat().st_size}
                          for name in (STORY, DESCRIPTION)}}
    (out / MANIFEST).write_text(json.dumps(manifest, sort_keys=True))
    return manifest


def start_game(story: Path, **infos: bool):
    """A TextWorld environment on a compiled game, asking for `infos` (textworld.EnvInfos)."""
    import textworld

    with warnings.catch_warnings():
        # jericho knows the commercial games by hash and warns about any other story file: every
        # TextWorld game is one, and TextWorld itself keeps the score and the walkthrough
        warnings.filterwarnings("ignore", message=".*is not fully supported")
        return textworld.start(str(story), textworld.EnvInfos(**infos))


def _replay(story: Path, walkthrough: list[str]) -> bool:
    env = start_game(story, won=True)
    try:
        state = env.reset()
        for command in walkthrough:
            state, _score, done = env.step(command)
            if done:
                break
        return bool(state.won)
    finally:
        env.close()


def _build_job(args: tuple[str, str, dict, int]) -> tuple[str, dict | str]:
    """A worker's job: (key, manifest) or (key, the reason it failed)."""
    key, folder, params, seed = args
    try:
        return key, build_into(folder, params, seed)
    except GameError as e:
        return key, str(e)


class _Queue:
    """The jobs of a batch, handed out one at a time to whichever builder is free, and their results."""

    def __init__(self, jobs: list[tuple[str, str, dict, int]]):
        self.todo = list(enumerate(jobs))
        self.results: dict[int, tuple[str, dict | str]] = {}
        self.lock = threading.Lock()

    def take(self) -> tuple[int, tuple[str, str, dict, int]] | None:
        with self.lock:
            return self.todo.pop(0) if self.todo else None


def _build_here(queue: _Queue) -> None:
    while (taken := queue.take()) is not None:
        k, job = taken
        queue.results[k] = _build_job(job)


def _build_in_a_process(queue: _Queue) -> None:
    proc = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        while (taken := queue.take()) is not None:
            k, job = taken
            try:
                proc.stdin.write(json.dumps(job) + "\n")
                proc.stdin.flush()
                queue.results[k] = (job[0], json.loads(proc.stdout.readline())["result"])
            except (OSError, ValueError, KeyError):    # the worker died (killed, out of memory)
                queue.results[k] = (job[0], f"the process building the game exited ({proc.poll()})")
                return
    finally:
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def build_in_workers(jobs: list[tuple[str, str, dict, int]], workers: int) -> list[tuple[str, dict | str]]:
    """Each job built by one of `workers` builders, each taking the next job as soon as it is done
    with one: this process, and `workers` − 1 fresh `python -m rla_engine.tasks.textworld_games`
    processes (not multiprocessing: a fork would copy the engine's torch threads half-made, and a
    spawned pool leaves a resource tracker behind and re-runs the caller's main script). This
    process builds too because a fresh one spends about a second importing TextWorld first: an
    iteration's four or five new games are then mostly built here, without that wait."""
    queue = _Queue(jobs)
    threads = [threading.Thread(target=_build_here, args=(queue,), daemon=True),
               *(threading.Thread(target=_build_in_a_process, args=(queue,), daemon=True)
                 for _ in range(workers - 1))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for k, job in enumerate(jobs):      # a job left when every worker died: built here
        if k not in queue.results:
            queue.results[k] = _build_job(job)
    return [queue.results[k] for k in range(len(jobs))]


def _serve_builds() -> None:
    """A build worker: a job per line on stdin, its result as one JSON line on stdout. Whatever
    TextWorld prints goes to stderr, never into the answers."""
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout = sys.stderr
    for line in sys.stdin:
        key, folder, params, seed = json.loads(line)
        answers.write(json.dumps({"result": _build_job((key, folder, params, seed))[1]}) + "\n")
        answers.flush()


# -- the cache ----------------------------------------------------------------------------------
class GameCache:
    def __init__(self, root: Path, cap_bytes: int = DEFAULT_CAP_BYTES, workers: int = 0):
        self.root, self.cap_bytes = Path(root), cap_bytes
        self.workers = workers or os.cpu_count() or 1
        self.version = textworld_version()
        self.rebuilt: list[tuple[str, str]] = []     # (key, why) of games found damaged and built again

    def key(self, params: dict, seed: int) -> str:
        return game_key(params, seed, self.version)

    def get(self, params: dict, seed: int) -> Game:
        """The game, verified, else built here (GameError if it cannot be)."""
        got = self.prepare([(params, seed)], parallel=False)
        result = got[self.key(params, seed)]
        if isinstance(result, GameError):
            raise result
        return result

    def prepare(self, wanted: Iterable[tuple[dict, int]], parallel: bool = True) -> dict[str, Game | GameError]:
        """Every asked-for game by key: verified from the folder, or built (in worker processes when
        more than one is missing). A game that cannot be made is its GameError."""
        out: dict[str, Game | GameError] = {}
        missing: dict[str, tuple[dict, int]] = {}
        for params, seed in wanted:
            key = self.key(params, seed)
            if key in out or key in missing:
                continue
            game = self._verified(key)
            if game is None:
                missing[key] = (params, seed)
            else:
                out[key] = game
        if missing:
            self._make_root()
            jobs = [(key, tempfile.mkdtemp(prefix=f".{key}.", dir=self.root), params, seed)
                    for key, (params, seed) in missing.items()]
            try:
                for (key, folder, _p, _s), (_k, result) in zip(jobs, self._build(jobs, parallel)):
                    out[key] = self._place(key, Path(folder), result)
            finally:
                for _key, folder, _p, _s in jobs:
                    shutil.rmtree(folder, ignore_errors=True)
            self.trim()
        return out

    def _build(self, jobs: list[tuple[str, str, dict, int]], parallel: bool) -> list[tuple[str, dict | str]]:
        """The jobs' results, in order: here, or in worker processes made for this batch alone (a
        batch is the initial pool, a held-out tier, an iteration's new games; none outlives it)."""
        workers = min(self.workers, len(jobs))
        if not parallel or workers < 2:
            return [_build_job(job) for job in jobs]
        return build_in_workers(jobs, workers)

    def _make_root(self) -> None:
        if self.root.is_symlink():
            raise InputError(f"the games folder {self.root} is a symbolic link: refused (remove it, or move it)")
        self.root.mkdir(parents=True, exist_ok=True)
        now = time.time()
        for old in self.root.glob(".*.*"):          # build folders left by a killed process
            with contextlib.suppress(OSError):
                if now - old.lstat().st_mtime > STALE_BUILD_S:
                    shutil.rmtree(old, ignore_errors=True)

    def _place(self, key: str, built: Path, result: dict | str) -> Game | GameError:
        if isinstance(result, str):
            return GameError(result)
        final = self.root / key
        try:
            os.rename(built, final)
        except OSError:
            # another run placed the same game first (or a damaged one is in the way: removed, then ours)
            if self._verified(key) is None:
                _remove(final)
                os.rename(built, final)
        game = self._verified(key)
        if game is None:
            return GameError(f"the game built for {key} does not verify")
        return game

    def _verified(self, key: str) -> Game | None:
        """The game in its folder if every check holds; else None, with the damaged folder removed."""
        folder = self.root / key
        if not folder.exists() and not folder.is_symlink():
            return None
        why = _problem(folder, key, self.version)
        if why is None:
            with contextlib.suppress(OSError):
                os.utime(folder / MANIFEST)       # used now: the last to be trimmed
            manifest = json.loads((folder / MANIFEST).read_text())
            return Game(key, folder / STORY, tuple(manifest["walkthrough"]), manifest["objective"])
        self.rebuilt.append((key, why))
        _remove(folder)
        return None

    def size(self) -> int:
        return sum(p.lstat().st_size for p in self.root.rglob("*") if p.is_file() and not p.is_symlink()) \
            if self.root.is_dir() else 0

    def trim(self) -> list[str]:
        """Remove the games used longest ago until the folder is under its cap; returns their keys."""
        if not self.root.is_dir() or self.root.is_symlink():
            return []
        games = []
        for folder in self.root.iterdir():
            if folder.name.startswith(".") or folder.is_symlink() or not folder.is_dir():
                continue
            with contextlib.suppress(OSError):
                used = (folder / MANIFEST).lstat().st_mtime
                games.append((used, folder, sum(p.lstat().st_size for p in folder.iterdir())))
        total = sum(size for _u, _f, size in games)
        removed = []
        for _used, folder, size in sorted(games, key=lambda g: g[0]):
            if total <= self.cap_bytes:
                break
            _remove(folder)
            total -= size
            removed.append(folder.name)
        return removed


def _problem(folder: Path, key: str, version: str) -> str | None:
    """Why a game folder cannot be trusted (None if it can)."""
    if folder.is_symlink() or not folder.is_dir():
        return "not a folder"
    try:
        manifest_stat = (folder / MANIFEST).lstat()
        if not stat.S_ISREG(manifest_stat.st_mode) or manifest_stat.st_size > 1 << 20:
            return "its manifest is not a plain file"
        manifest = json.loads((folder / MANIFEST).read_text())
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            return "its manifest is of another format"
        if manifest.get("textworld") != version:
            return f"built by TextWorld {manifest.get('textworld')!r}, not {version}"
        if game_key(manifest["params"], manifest["seed"], version) != key:
            return "its manifest names another game"
        if not isinstance(manifest.get("walkthrough"), list) or not isinstance(manifest.get("objective"), str):
            return "its manifest has no walkthrough"
        for name in (STORY, DESCRIPTION):
            info = manifest["files"][name]
            st = (folder / name).lstat()
            if not stat.S_ISREG(st.st_mode):
                return f"{name} is not a plain file"
            if st.st_size != info["bytes"] or _sha256(folder / name) != info["sha256"]:
                return f"{name} is not the file that was built"
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"unreadable ({type(e).__name__})"
    return None


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    elif path.is_dir():
        shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    _serve_builds()
