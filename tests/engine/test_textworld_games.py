"""TextWorld games in the database's games folder (rla_engine/tasks/textworld_games.py): built
once by TextWorld's own generator, rebuilt exactly from their settings, never trusted when the
folder was tampered with, safe when two processes build the same game, kept under a size cap.
Real TextWorld, real compiles (about a second a game): the games here are the smallest."""
import json
import multiprocessing
import os
import shutil
import time
from pathlib import Path

import pytest

from rla_engine.errors import InputError
from rla_engine.tasks import textworld_games as tg

SMALL = {"challenge": "custom", "world_size": 2, "nb_objects": 2, "quest_length": 2}
COINS = {"challenge": "coin_collector", "level": 3}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One cache holding SMALL (seed 1) and COINS (seed 2), built in parallel workers."""
    cache = tg.GameCache(tmp_path_factory.mktemp("games"), workers=2)
    got = cache.prepare([(SMALL, 1), (COINS, 2)])
    return cache, got


def fresh_copy(cache: tg.GameCache, tmp_path: Path) -> tg.GameCache:
    shutil.copytree(cache.root, tmp_path / "games")
    return tg.GameCache(tmp_path / "games", workers=1)


def test_a_built_game_is_kept_with_its_walkthrough_and_found_again_without_a_build(built):
    cache, got = built
    small, coins = got[cache.key(SMALL, 1)], got[cache.key(COINS, 2)]
    assert isinstance(small, tg.Game) and isinstance(coins, tg.Game)
    assert len(coins.walkthrough) == 3 and coins.walkthrough[-1] == "take coin"     # level 3: three rooms to a coin
    assert small.story.read_bytes()[:1] == b"\x08"                                  # a Z-machine version 8 story
    started = time.perf_counter()
    again = cache.get(SMALL, 1)
    assert again == small and time.perf_counter() - started < 0.5
    assert sorted(p.name for p in (cache.root / small.key).iterdir()) == ["game.json", "game.z8", "manifest.json"]


def test_the_same_settings_and_seed_rebuild_the_same_game_and_another_seed_another(built, tmp_path):
    cache, got = built
    elsewhere = tg.GameCache(tmp_path / "other", workers=1)
    again = elsewhere.get(SMALL, 1)
    first = got[cache.key(SMALL, 1)]
    assert again.key == first.key and again.walkthrough == first.walkthrough
    assert json.loads((again.story.parent / "game.json").read_text()) == \
        json.loads((first.story.parent / "game.json").read_text())
    other = elsewhere.get(SMALL, 99)
    assert other.key != first.key
    assert json.loads((other.story.parent / "game.json").read_text()) != \
        json.loads((first.story.parent / "game.json").read_text())


def _truncate(folder: Path) -> None:
    story = folder / "game.z8"
    story.write_bytes(story.read_bytes()[:1000])


def _link(folder: Path) -> None:
    target = folder.parent.parent / "elsewhere.z8"
    shutil.copy(folder / "game.z8", target)
    (folder / "game.z8").unlink()
    (folder / "game.z8").symlink_to(target)      # the same bytes, through a link: still refused


def _other_version(folder: Path) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["textworld"] = "0.9.9"
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _other_game(folder: Path) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["seed"] = 12345                      # a manifest that names another game than its folder's
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _garbage_manifest(folder: Path) -> None:
    (folder / "manifest.json").write_bytes(b"\x00\xff{not json")


def _folder_is_a_link(folder: Path) -> None:
    moved = folder.parent.parent / "moved"
    folder.rename(moved)
    folder.symlink_to(moved)


def _flipped_byte(folder: Path) -> None:
    story = bytearray((folder / "game.z8").read_bytes())
    story[len(story) // 2] ^= 0xFF
    (folder / "game.z8").write_bytes(bytes(story))


@pytest.mark.parametrize("damage, why", [
    (_truncate, "game.z8 is not the file that was built"),
    (_flipped_byte, "game.z8 is not the file that was built"),
    (_link, "game.z8 is not a plain file"),
    (_other_version, "built by TextWorld '0.9.9'"),
    (_other_game, "names another game"),
    (_garbage_manifest, "unreadable"),
    (_folder_is_a_link, "not a folder"),
])
def test_a_damaged_or_foreign_game_is_rebuilt_never_trusted(built, tmp_path, damage, why):
    cache = fresh_copy(built[0], tmp_path)
    key = cache.key(SMALL, 1)
    damage(cache.root / key)
    game = cache.get(SMALL, 1)
    assert [k for k, _ in cache.rebuilt] == [key] and why in cache.rebuilt[0][1], cache.rebuilt
    folder = cache.root / key
    assert not folder.is_symlink() and not (folder / "game.z8").is_symlink()
    assert tg._problem(folder, key, cache.version) is None
    assert game.walkthrough == built[1][key].walkthrough


def test_a_games_folder_that_is_a_link_is_refused(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "games").symlink_to(tmp_path / "real")
    with pytest.raises(InputError, match="symbolic link"):
        tg.GameCache(tmp_path / "games", workers=1).get(SMALL, 1)
    assert list((tmp_path / "real").iterdir()) == []


def _build_in_another_process(root: str, seed: int, out) -> None:
    game = tg.GameCache(Path(root), workers=1).get(SMALL, seed)
    out.put(str(game.story))


def test_two_processes_building_the_same_game_at_once_leave_one_good_folder(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_build_in_another_process, args=(str(tmp_path / "games"), 7, out)) for _ in range(2)]
    for p in procs:
        p.start()
    stories = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert stories[0] == stories[1]
    entries = os.listdir(tmp_path / "games")
    assert len(entries) == 1, entries             # one game, no build folder left behind
    cache = tg.GameCache(tmp_path / "games", workers=1)
    assert tg._problem(tmp_path / "games" / entries[0], entries[0], cache.version) is None


def test_a_game_textworld_cannot_compile_is_a_game_error_and_leaves_nothing(tmp_path, monkeypatch):
    import textworld.generator

    def fails(game, options):
        raise RuntimeError("Inform 7 said no")
    monkeypatch.setattr(textworld.generator, "compile_game", fails)
    cache = tg.GameCache(tmp_path / "games", workers=1)
    with pytest.raises(tg.GameError, match="TextWorld could not make this game: RuntimeError: Inform 7 said no"):
        cache.get(SMALL, 3)
    assert os.listdir(tmp_path / "games") == []


def test_a_game_its_walkthrough_does_not_win_is_a_game_error(tmp_path, monkeypatch):
    import textworld.generator

    made = textworld.generator.make_game

    def short_walkthrough(options):
        game = made(options)
        game.metadata["walkthrough"] = game.metadata["walkthrough"][:-1]     # the real game, one command short
        return game
    monkeypatch.setattr(textworld.generator, "make_game", short_walkthrough)
    cache = tg.GameCache(tmp_path / "games", workers=1)
    with pytest.raises(tg.GameError, match=r"walkthrough \(1 commands\) does not win it"):
        cache.get(SMALL, 3)
    assert os.listdir(tmp_path / "games") == []


def test_the_folder_is_kept_under_its_cap_the_least_recently_used_going_first(built, tmp_path):
    cache = fresh_copy(built[0], tmp_path)
    small, coins = cache.key(SMALL, 1), cache.key(COINS, 2)
    os.utime(cache.root / small / "manifest.json", (1, 1))              # used long ago
    cache.cap_bytes = cache.size() - 1
    assert cache.trim() == [small]
    assert sorted(os.listdir(cache.root)) == [coins]


def test_stale_build_folders_of_a_killed_process_are_removed(tmp_path):
    root = tmp_path / "games"
    stale = root / ".abc.tmp1"
    stale.mkdir(parents=True)
    (stale / "game.z8").write_bytes(b"half")
    os.utime(stale, (1, 1))
    fresh = root / ".def.tmp2"
    fresh.mkdir()
    tg.GameCache(root, workers=1).get(SMALL, 1)
    assert not stale.exists() and fresh.exists()        # a build in progress elsewhere is left alone
