"""An export never writes over the database it reads, even with --force: the database, its -wal,
-shm and -journal, its checkpoint folder and anything inside it, and a run's log or configuration in
its logs folder are refused before
any work (no renderer starts, no file changes), compared as real files — a symbolic link, a hard
link or another path to one of them is refused too. `rla ablate --out` follows the same rule, and
checks its --out before it creates the database."""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from rla_engine import cli
from rla_engine.export import FORMATS
from rla_engine.store import open_store

from engine_support import one_line_error, rla

RECORDED = Path(__file__).resolve().parents[1] / "data" / "recorded_arithmetic.json"
# `rla export` in a process that reports every subprocess it starts (an audit hook): a refused
# export must not have started the renderer
WATCHED = ("import sys\n"
           "sys.addaudithook(lambda e, a: e == 'subprocess.Popen' and print('STARTED', a[1], file=sys.stderr))\n"
           "from rla_engine.cli import main\n"
           "sys.exit(main(sys.argv[1:]))\n")


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("imported") / "src.db"
    # in its own process: no connection of this one left open to checkpoint the database later
    assert rla("import", str(RECORDED), "--as", "r", db=db).returncode == 0
    return db


@pytest.fixture
def db(tmp_path, imported):
    db = tmp_path / "src.db"
    shutil.copyfile(imported, db)
    (tmp_path / "checkpoints" / "r").mkdir(parents=True)
    (tmp_path / "checkpoints" / "r" / "it-1.pt").write_bytes(b"a checkpoint")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "r.log").write_text("the run's log\n")
    return db


def snapshot(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() and not p.is_symlink() else None
            for p in sorted(folder.rglob("*"))}


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_database_itself_is_refused_in_every_format_before_any_work(db, tmp_path, fmt):
    before = snapshot(tmp_path)
    res = subprocess.run([sys.executable, "-c", WATCHED, "export", "r", "--db", str(db), "--format", fmt,
                          "--out", str(db), "--force"], capture_output=True, text=True, timeout=120)
    line = one_line_error(res)            # also: no "STARTED" line, so no renderer ran
    assert str(db) in line and "the database" in line and "--force" in line, line
    assert snapshot(tmp_path) == before   # the database byte for byte, and nothing written beside it
    assert [r["id"] for r in open_store(db).list_runs()] == ["r"]


def _wal(d, db):
    return Path(f"{db}-wal")


def _shm(d, db):
    return Path(f"{db}-shm")


def _journal(d, db):
    return Path(f"{db}-journal")


def _symlink(d, db):
    (d / "elsewhere").mkdir()
    (d / "elsewhere" / "copy.json").symlink_to(db)
    return d / "elsewhere" / "copy.json"


def _hard_link(d, db):
    os.link(db, d / "hard.json")
    return d / "hard.json"


def _through_a_linked_folder(d, db):
    (d / "alias").symlink_to(d, target_is_directory=True)
    return d / "alias" / db.name


def _checkpoint_folder(d, db):
    return d / "checkpoints"


def _in_checkpoint_folder(d, db):
    return d / "checkpoints" / "r" / "it-1.pt"


def _new_file_in_checkpoint_folder(d, db):
    return d / "checkpoints" / "r" / "report.json"


def _run_log(d, db):
    return d / "logs" / "r.log"


def _run_config(d, db):
    return d / "logs" / "r.toml"


TARGETS = [(_wal, "write-ahead log"), (_shm, "shared-memory file"), (_journal, "rollback journal"),
           (_symlink, "the database"), (_hard_link, "the database"), (_through_a_linked_folder, "the database"),
           (_checkpoint_folder, "checkpoint folder"), (_in_checkpoint_folder, "inside the database's checkpoint"),
           (_new_file_in_checkpoint_folder, "inside the database's checkpoint"), (_run_log, "logs folder"),
           (_run_config, "logs folder")]


@pytest.mark.parametrize("fmt", ["json", "csv", "html"])
@pytest.mark.parametrize("make,what", TARGETS, ids=[m.__name__.strip("_") for m, _ in TARGETS])
def test_the_databases_own_files_are_refused_even_with_force(db, tmp_path, capsys, make, what, fmt):
    out = make(tmp_path, db)
    before = snapshot(tmp_path)
    assert cli.main(["export", "r", "--db", str(db), "--format", fmt, "--out", str(out), "--force"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and what in err[0] and str(out) in err[0], err
    assert snapshot(tmp_path) == before


def test_other_files_in_the_logs_folder_are_ordinary_outputs(db, tmp_path):
    """The console writes an ablation's summary beside its runs' logs (`logs/<group>.md`)."""
    out = tmp_path / "logs" / "summary.json"
    assert cli.main(["export", "r", "--db", str(db), "--format", "json", "--out", str(out)]) == 0
    assert out.stat().st_size > 0


def test_a_wal_target_beside_a_live_writer_leaves_its_readers_working(db, tmp_path):
    """The engine's connection has its -wal open; replacing that file is what gave readers
    "disk I/O error"."""
    live = sqlite3.connect(db)
    live.execute("PRAGMA journal_mode=WAL")
    live.execute("UPDATE runs SET notes = 'written by the live engine' WHERE id = 'r'")
    live.commit()
    wal = Path(f"{db}-wal")
    assert wal.exists()
    try:
        line = one_line_error(rla("export", "r", "--format", "json", "--out", str(wal), "--force", db=db))
        assert "write-ahead log" in line
        live.execute("UPDATE runs SET notes = 'still writing' WHERE id = 'r'")
        live.commit()
        reader = open_store(db)
        assert reader.get_run("r")["notes"] == "still writing"
        reader.close()
    finally:
        live.close()


ABLATE = ["ablate", "--preset", "tiny", "--seeds", "0", "--budget", "1600", "--arms", "outcome"]


def test_ablate_refuses_a_bad_out_before_it_creates_the_database(tmp_path):
    line = one_line_error(rla(*ABLATE, "--out", "/dev/full", db=tmp_path / "new.db"))
    assert "/dev/full" in line and "character device" in line
    assert list(tmp_path.iterdir()) == []          # no database, no logs folder, nothing


@pytest.mark.parametrize("where", ["database", "checkpoints"])
def test_ablate_refuses_the_databases_own_files_even_with_force(db, tmp_path, where):
    out = db if where == "database" else tmp_path / "checkpoints" / "r" / "table.md"
    before = snapshot(tmp_path)
    line = one_line_error(rla(*ABLATE, "--out", str(out), "--force", db=db))
    assert "--out" in line and str(out) in line and ("the database" in line or "checkpoint" in line), line
    assert snapshot(tmp_path) == before
