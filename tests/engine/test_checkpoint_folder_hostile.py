"""What a hostile or careless user leaves in a run's checkpoint folder costs room, not the run
(issue 34, finding 8): an older checkpoint the system will not delete (immutable) and a folder
planted under a checkpoint's name are said once, as a `checkpoint_warning` event and a line, and
training goes on; a resume passes over such a folder with its reason, no traceback; thousands of
planted names make one summary event per resume, not one each."""
from __future__ import annotations

import contextlib
import pathlib
import shutil
import subprocess

import pytest

from rla_engine import checkpoint, launch
from rla_engine.paths import checkpoints_dir
from rla_engine.store import open_store

from engine_support import keep_signal_handlers, train  # noqa: F401 (a fixture)


pytestmark = pytest.mark.usefixtures("keep_signal_handlers")


def resume(db, run_id, iterations, lines=None) -> int:
    return launch.resume_run(db, run_id, iterations=iterations, out=(lines.append if lines is not None else print))


def events(db, run_id, kind):
    return [e["payload"] for e in open_store(db).events(run_id, kinds=[kind])]


def _chattr(flag: str, path) -> bool:
    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


@contextlib.contextmanager
def undeletable(path, monkeypatch):
    """`path` immutable: `chattr +i` where the file system and our rights allow it, else the
    deletion refused as the kernel refuses it (EPERM) for that one file."""
    if _chattr("+i", path):
        try:
            yield
        finally:
            _chattr("-i", path)
        return
    real = pathlib.Path.unlink

    def unlink(self, missing_ok=False):
        if self == path:
            raise PermissionError(1, "Operation not permitted", str(self))
        real(self, missing_ok=missing_ok)
    monkeypatch.setattr(pathlib.Path, "unlink", unlink)
    yield


def test_an_undeletable_older_checkpoint_is_said_once_and_training_goes_on(tmp_path, monkeypatch):
    db = tmp_path / "h.db"
    assert train(db, "r", 3) == 0                                 # keeps it-1, it-2, it-3
    oldest = checkpoints_dir(db, "r") / "it-000000001.pt"
    lines: list[str] = []
    with undeletable(oldest, monkeypatch):
        assert resume(db, "r", 3, lines) == 0
    run = open_store(db).get_run("r")
    assert run["status"] == "completed" and run["iteration"] == 6
    (warning,) = events(db, "r", "checkpoint_warning")          # once, though every prune met it
    assert warning["count"] == 1 and warning["examples"][0]["checkpoint"] == oldest.name
    assert "cannot delete it: Operation not permitted" in warning["examples"][0]["reason"]
    assert sum(line.startswith("warning: checkpoint folder") for line in lines) == 1
    assert oldest.exists() and (checkpoints_dir(db, "r") / "it-000000006.pt").is_file()


def test_folders_planted_under_checkpoint_names_are_passed_over_with_their_reasons(tmp_path, capsys):
    db = tmp_path / "h.db"
    assert train(db, "r", 3) == 0
    folder = checkpoints_dir(db, "r")
    for name in ("it-000000001.pt", "it-000000003.pt"):        # the oldest, and the newest
        (folder / name).unlink()
        (folder / name).mkdir()
        (folder / name / "inside").write_text("keep")
    assert resume(db, "r", 3) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    run = open_store(db).get_run("r")
    assert run["status"] == "completed" and run["iteration"] == 5
    (skip,) = events(db, "r", "checkpoint_skipped")
    assert skip["checkpoint"] == "it-000000003.pt" and "Is a directory" in skip["reason"]
    assert events(db, "r", "resumed_from_checkpoint")[-1]["checkpoint"] == "it-000000002.pt"
    said = {e["checkpoint"]: e["reason"] for w in events(db, "r", "checkpoint_warning") for e in w["examples"]}
    assert said == {"it-000000003.pt": "a folder is in the way: this checkpoint was not written",
                    "it-000000001.pt": "a folder, not a checkpoint file: left alone"}
    assert all((folder / name / "inside").read_text() == "keep" for name in said)
    assert checkpoint.iteration_of(checkpoint.latest(folder)) == 5


def test_thousands_of_planted_names_make_one_event_per_resume(tmp_path):
    db = tmp_path / "h.db"
    assert train(db, "r", 2) == 0
    folder = checkpoints_dir(db, "r")
    for i in range(3000):
        (folder / f"it-{100_000 + i:09d}.pt").write_bytes(b"junk")
    for n in (1, 2):
        lines: list[str] = []
        assert resume(db, "r", 1, lines) == 0
        skipped = events(db, "r", "checkpoint_skipped")
        assert len(skipped) == n and skipped[-1]["count"] == 3000
        assert len(skipped[-1]["examples"]) == 3 and "ahead of the database" in skipped[-1]["examples"][0]["reason"]
        assert sum("skipped" in line for line in lines) == 1
    assert open_store(db).get_run("r")["iteration"] == 4
