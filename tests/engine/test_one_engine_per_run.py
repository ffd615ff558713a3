"""One engine per run, and only its own files: a second engine of a run
exits 2 having changed nothing; a run never deletes or resumes from checkpoints it did not write
(links, other runs' files, planted copies, files of an older version); a resume that finds the
database behind its checkpoints says what is missing; a moved database still owns its runs; a
closed pipe never fails a run. Runs are the tiny preset, in-process where one engine is enough,
real `rla` processes where two must race."""
from __future__ import annotations

import os
import shutil
import sqlite3
import sys

import pytest

from rla_engine import checkpoint, cli, launch
from rla_engine.paths import checkpoints_dir
from rla_engine.store import Store, open_store

from engine_support import TINY, keep_signal_handlers, only_run, spawn, train, wait_for  # noqa: F401 (a fixture)


pytestmark = pytest.mark.usefixtures("keep_signal_handlers")


def resume(db, run_id, iterations=1, lines=None) -> int:
    return launch.resume_run(db, run_id, iterations=iterations, out=_sink(lines))


def _sink(lines):
    return (lambda _line: None) if lines is None else lines.append


def refused(capsys, *argv) -> str:
    code = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, (code, err)
    return err[0]


def events(db, run_id, kind):
    return [e["payload"] for e in open_store(db).events(run_id, kinds=[kind])]


def files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name != "engine.lock"}


# -- 2. one engine per run -------------------------------------------------------------------
def test_a_second_start_of_a_running_run_exits_2_and_leaves_the_first_engine_alone(tmp_path, capsys,
                                                                                   monkeypatch):
    db = tmp_path / "h.db"
    winner = spawn(db, "run", *TINY, "--iterations", "400", "--run-id", "twin", "--seed", "0")
    try:
        store = open_store(db)
        wait_for(lambda: (r := only_run(store)) and r["iteration"] >= 4, what="4 iterations")
        # both engines looked before either had written its row: the race the claim settles
        monkeypatch.setattr(Store, "run_exists", lambda self, run_id: False)
        line = refused(capsys, "run", *TINY, "--run-id", "twin", "--seed", "1", "--db", db)
        assert "twin is in use" in line and "nothing was changed" in line
        # the loser wrote no starting checkpoint of its own over the winner's folder
        assert not (checkpoints_dir(db, "twin") / "it-000000000.pt").exists()
        store.add_command("twin", "stop")
        assert winner.wait(timeout=60) == 0, winner.stderr.read()
    finally:
        winner.kill()
    run = store.get_run("twin")
    assert run["status"] == "stopped" and not run["error"]
    assert store.run_config("twin")["run"]["seed"] == 0
    newest = checkpoint.latest(checkpoints_dir(db, "twin"))
    assert checkpoint.owner_of(newest) == checkpoint.Owner("twin", store.database_id)
    assert checkpoint.iteration_of(newest) == run["iteration"]


def test_a_second_resume_of_a_run_exits_2_while_the_first_goes_on(tmp_path, capsys, monkeypatch):
    db = tmp_path / "h.db"
    assert train(db, "r", 2) == 0
    first = spawn(db, "resume", "r", "--iterations", "400")
    try:
        store = open_store(db)
        wait_for(lambda: store.get_run("r")["iteration"] >= 4, what="the first resume's iterations")
        before = len(store.events("r"))
        # as if the second had looked while the run was still crashed
        monkeypatch.setattr(launch, "LIVE", ())
        line = refused(capsys, "resume", "r", "--db", db)
        assert "r is in use" in line and "another engine holds it (pid" in line
        assert not [e for e in store.events("r")[before:] if e["kind"] in ("failed", "resumed_from_checkpoint")]
        store.add_command("r", "stop")
        assert first.wait(timeout=60) == 0, first.stderr.read()
    finally:
        first.kill()
    assert open_store(db).get_run("r")["status"] == "stopped"
    assert not events(db, "r", "failed")


# -- 3. a new run deletes nothing it did not write ---------------------------------------------
def test_a_checkpoint_folder_that_is_a_link_is_refused_and_its_target_kept(tmp_path, capsys):
    db = tmp_path / "h.db"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "it-000000004.pt").write_bytes(b"someone's checkpoint")
    checkpoints_dir(db, "x").parent.mkdir(parents=True)
    checkpoints_dir(db, "x").symlink_to(elsewhere)
    line = refused(capsys, "run", *TINY, "--run-id", "x", "--db", db)
    assert "is a symbolic link" in line
    assert sorted(p.name for p in elsewhere.iterdir()) == ["it-000000004.pt"]
    assert (elsewhere / "it-000000004.pt").read_bytes() == b"someone's checkpoint"


def test_a_folder_of_an_older_version_is_refused_not_emptied(tmp_path, capsys):
    db = tmp_path / "h.db"
    folder = checkpoints_dir(db, "old")
    folder.mkdir(parents=True)
    (folder / "it-000000009.pt").write_bytes(b"an older version's checkpoint")
    line = refused(capsys, "run", *TINY, "--run-id", "old", "--db", db)
    assert "holds files run old did not write (it-000000009.pt)" in line
    assert (folder / "it-000000009.pt").read_bytes() == b"an older version's checkpoint"
    assert open_store(db).get_run("old") is None


def test_what_a_killed_start_of_the_same_run_left_is_cleared(tmp_path):
    db = tmp_path / "h.db"
    store = open_store(db)
    folder = checkpoints_dir(db, "again")
    checkpoint.save(folder, 5, {"iteration": 5}, 3, checkpoint.Owner("again", store.database_id))
    assert train(db, "again", 1) == 0
    assert [checkpoint.iteration_of(p) for p in checkpoint.list_checkpoints(folder)] == [0, 1]
    assert all(checkpoint.owner_of(p) == checkpoint.Owner("again", store.database_id)
               for p in checkpoint.list_checkpoints(folder))


# -- 4. resume trusts only the run's own checkpoints -------------------------------------------
def test_resume_passes_over_links_other_runs_files_and_planted_copies(tmp_path):
    db = tmp_path / "h.db"
    assert train(db, "a", 4) == 0
    assert train(db, "b", 10) == 0
    a, b = checkpoints_dir(db, "a"), checkpoints_dir(db, "b")
    (b / "it-000000010.pt").unlink()
    (b / "it-000000010.pt").symlink_to(a / "it-000000004.pt")     # the newest: a link to another run's
    shutil.copy(a / "it-000000004.pt", b / "it-000000009.pt")      # the next: a copy of another run's
    shutil.copy(b / "it-000000008.pt", b / "it-000000999.pt")      # a copy of its own under a newer name
    lines: list[str] = []
    assert resume(db, "b", 1, lines) == 0
    skipped = {e["checkpoint"]: e["reason"] for e in events(db, "b", "checkpoint_skipped")}
    assert "symbolic link" in skipped["it-000000010.pt"]
    assert "written by run 'a' of database" in skipped["it-000000009.pt"]
    assert "ahead of the database" in skipped["it-000000999.pt"]
    assert events(db, "b", "resumed_from_checkpoint")[-1]["checkpoint"] == "it-000000008.pt"
    rewound = events(db, "b", "rewound")[-1]
    assert rewound["to"] == 8 and rewound["from"] == 10 and rewound["rows"] > 0
    assert any(line.startswith("rewound run b to iteration 8: deleted") and "iterations 9–10" in line
               for line in lines)
    assert (a / "it-000000004.pt").is_file()                       # the other run's file is untouched
    assert open_store(db).get_run("b")["iteration"] == 9


def test_links_planted_beside_the_checkpoints_are_never_written_through(tmp_path, capsys):
    db = tmp_path / "h.db"
    assert train(db, "r", 2) == 0
    folder = checkpoints_dir(db, "r")
    precious = tmp_path / "precious"
    precious.write_text("keep me")
    (folder / "space-reserve").symlink_to(precious)
    assert resume(db, "r", 1) == 0
    assert precious.read_text() == "keep me" and (folder / "space-reserve").is_symlink()
    (folder / "engine.lock").unlink()
    (folder / "engine.lock").symlink_to(precious)
    assert "cannot take run r's lock" in refused(capsys, "resume", "r", "--db", db)
    assert precious.read_text() == "keep me"


def test_a_copy_of_its_own_checkpoint_under_another_name_is_refused(tmp_path):
    db = tmp_path / "h.db"
    assert train(db, "r", 3) == 0
    folder = checkpoints_dir(db, "r")
    shutil.copy(folder / "it-000000001.pt", tmp_path / "one.pt")
    (folder / "it-000000003.pt").unlink()
    shutil.copy(tmp_path / "one.pt", folder / "it-000000003.pt")
    owner = checkpoint.Owner("r", open_store(db).database_id)
    with pytest.raises(checkpoint.CheckpointError, match="holds iteration 1, not the 3 its name says"):
        checkpoint.load(folder / "it-000000003.pt", owner=owner)


# -- 6. the database behind its checkpoints ----------------------------------------------------
def lose_iterations_after(db, run_id, k):
    """What a kill and a deleted -wal leave: the database's history ends at k."""
    with sqlite3.connect(db) as c:
        for table in ("metrics", "iterations"):
            c.execute(f"DELETE FROM {table} WHERE run_id = ? AND iteration > ?", [run_id, k])
        c.execute("UPDATE runs SET iteration = ?, status = 'crashed' WHERE id = ?", [k, run_id])


def test_resume_goes_back_to_the_database_when_a_checkpoint_there_is_kept(tmp_path):
    db = tmp_path / "h.db"
    assert train(db, "r", 6, "run.keep_checkpoints=10") == 0
    lose_iterations_after(db, "r", 3)
    assert resume(db, "r", 1) == 0
    assert events(db, "r", "resumed_from_checkpoint")[-1]["checkpoint"] == "it-000000003.pt"
    ahead = {e["checkpoint"] for e in events(db, "r", "checkpoint_skipped") if "ahead of the database" in e["reason"]}
    assert ahead == {"it-000000004.pt", "it-000000005.pt", "it-000000006.pt"}
    assert [r["iteration"] for r in open_store(db).iterations("r")][-2:] == [3, 4]
    assert not events(db, "r", "history_gap")


def test_resume_says_which_iterations_the_database_lost(tmp_path):
    db = tmp_path / "h.db"
    assert train(db, "r", 6) == 0          # keeps it-4, it-5, it-6
    lose_iterations_after(db, "r", 2)
    lines: list[str] = []
    assert resume(db, "r", 1, lines) == 0
    (gap,) = events(db, "r", "history_gap")
    assert gap == {"database_iteration": 2, "checkpoint": "it-000000006.pt", "missing": [3, 6]}
    assert any("iterations 3–6 are missing from the history" in line for line in lines)
    assert [r["iteration"] for r in open_store(db).iterations("r")][-2:] == [2, 7]


def test_a_newest_checkpoint_that_does_not_fit_falls_back_to_the_previous_one(tmp_path):
    db = tmp_path / "h.db"
    assert train(db, "r", 3) == 0
    folder = checkpoints_dir(db, "r")
    owner = checkpoint.Owner("r", open_store(db).database_id)
    state = checkpoint.load(folder / "it-000000003.pt")
    del state["iteration"]
    (folder / "it-000000003.pt").unlink()
    checkpoint.save(folder, 3, state, 10, owner)
    assert resume(db, "r", 1) == 0
    (skip,) = events(db, "r", "checkpoint_skipped")
    assert skip["checkpoint"] == "it-000000003.pt" and "does not fit this run" in skip["reason"]
    assert events(db, "r", "resumed_from_checkpoint")[-1]["checkpoint"] == "it-000000002.pt"


# -- 7. a moved or copied database still owns its runs -----------------------------------------
def test_a_moved_database_folder_resumes_and_the_original_is_untouched(tmp_path):
    home = tmp_path / "home"
    assert train(home / "h.db", "r", 2) == 0
    before = files(checkpoints_dir(home / "h.db", "r"))
    moved = tmp_path / "moved"
    shutil.copytree(home, moved)
    assert resume(moved / "h.db", "r", 2) == 0
    assert open_store(moved / "h.db").get_run("r")["iteration"] == 4
    assert files(checkpoints_dir(home / "h.db", "r")) == before


def test_an_imported_copy_in_the_same_folder_still_cannot_resume_the_original(tmp_path, capsys):
    db = tmp_path / "h.db"
    assert train(db, "r", 2) == 0
    assert cli.main(["export", "r", "--format", "json", "--out", str(tmp_path / "r.json"), "--db", str(db)]) == 0
    assert cli.main(["import", str(tmp_path / "r.json"), "--db", str(tmp_path / "other.db")]) == 0
    capsys.readouterr()
    line = refused(capsys, "resume", "r", "--db", tmp_path / "other.db")
    assert "belongs to another database" in line


def test_a_run_killed_while_its_folder_was_claimed_still_resumes(tmp_path):
    """A SIGKILL between creating the folder's owner marker and writing it (possible before the
    marker was written whole, by a rename) leaves it empty: that is no other database's."""
    from rla_engine.paths import OWNER
    db = tmp_path / "h.db"
    assert train(db, "r", 2) == 0
    folder = checkpoints_dir(db, "r")
    (folder / OWNER).write_text("")
    (folder / (OWNER + ".tmp")).write_text("half")       # killed before the rename
    assert resume(db, "r", 1) == 0
    assert open_store(db).get_run("r")["iteration"] == 3
    assert (folder / OWNER).read_text() == open_store(db).database_id
    assert not (folder / (OWNER + ".tmp")).exists()


# -- 5. a closed pipe is not a failure ---------------------------------------------------------
def test_a_reader_that_goes_away_does_not_fail_the_run(tmp_path, monkeypatch):
    db = tmp_path / "h.db"
    proc = spawn(db, "run", *TINY, "--iterations", "4", "--run-id", "p")
    proc.stdout.readline()               # `rla run … | head -1`
    proc.stdout.close()
    assert proc.wait(timeout=120) == 0, proc.stderr.read()
    assert "BrokenPipe" not in proc.stderr.read()
    assert open_store(db).get_run("p")["status"] == "completed"
    # a resume whose reader is gone before it starts, in this process
    read, write = os.pipe()
    os.close(read)
    monkeypatch.setattr(sys, "stdout", os.fdopen(write, "w"))
    assert launch.resume_run(db, "p", iterations=2) == 0
    run = open_store(db).get_run("p")
    assert run["status"] == "completed" and not run["error"] and run["iteration"] == 6
