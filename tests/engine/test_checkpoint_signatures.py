"""A database that signs its checkpoints loads no unsigned one for its runs (issue 34, finding 7):
another database's checkpoint with its header stripped, re-signed with a blank owner (`{}`) or
rewritten as format 1 is passed over with its reason, as a file signed by another run is; the
user may still load one (`rla resume --accept-unowned-checkpoints`, a flag that names the risk).
A database that never signed (an older version's) loads its format-1 files as before."""
from __future__ import annotations

import hashlib
import sqlite3

import pytest

from rla_engine import checkpoint, cli, launch
from rla_engine.paths import checkpoints_dir
from rla_engine.store import open_store

from engine_support import keep_signal_handlers, one_line_error, rla, train  # noqa: F401 (a fixture)


pytestmark = pytest.mark.usefixtures("keep_signal_handlers")


def payload(path) -> bytes:
    """The torch.save archive inside a signed (format 2) checkpoint."""
    data = path.read_bytes()
    n = int.from_bytes(data[12:16], "little")
    return data[checkpoint._HEADER.size + n:]


def stripped(p: bytes) -> bytes:
    return p


def format_1(p: bytes) -> bytes:
    return checkpoint._HEADER_V1.pack(checkpoint.MAGIC, 1, len(p), hashlib.sha256(p).digest()) + p


def blank_owner(p: bytes) -> bytes:
    return checkpoint._HEADER.pack(checkpoint.MAGIC, 2, 2, len(p), hashlib.sha256(b"{}" + p).digest()) + b"{}" + p


FORGERIES = [stripped, format_1, blank_owner]
REASONS = {stripped: "no header", format_1: "format 1", blank_owner: "owner is blank"}


def events(db, run_id, kind):
    return [e["payload"] for e in open_store(db).events(run_id, kinds=[kind])]


@pytest.fixture
def planted(tmp_path):
    """Run r of database h.db (3 iterations: it-1..3 kept), and run r of another database beside
    it, whose newest checkpoint's state is what an attacker plants."""
    db, other = tmp_path / "h.db", tmp_path / "other" / "o.db"
    assert train(db, "r", 3) == 0
    assert train(other, "r", 3) == 0
    return db, payload(checkpoints_dir(other, "r") / "it-000000003.pt")


@pytest.mark.parametrize("forge", FORGERIES, ids=lambda f: f.__name__)
def test_an_unsigned_checkpoint_in_a_signing_database_is_passed_over_with_its_reason(planted, forge):
    db, theirs = planted
    (checkpoints_dir(db, "r") / "it-000000003.pt").write_bytes(forge(theirs))
    lines: list[str] = []
    assert launch.resume_run(db, "r", iterations=1, out=lines.append) == 0
    (skip,) = events(db, "r", "checkpoint_skipped")
    assert skip["checkpoint"] == "it-000000003.pt" and REASONS[forge] in skip["reason"]
    assert "--accept-unowned-checkpoints" in skip["reason"]
    assert events(db, "r", "resumed_from_checkpoint")[-1]["checkpoint"] == "it-000000002.pt"
    assert any(line.startswith("skipped checkpoint it-000000003.pt: unsigned") for line in lines)


def test_the_flag_that_names_the_risk_loads_it(planted):
    db, theirs = planted
    (checkpoints_dir(db, "r") / "it-000000003.pt").write_bytes(format_1(theirs))
    assert launch.resume_run(db, "r", iterations=1, accept_unowned=True, out=lambda _line: None) == 0
    assert events(db, "r", "resumed_from_checkpoint")[-1]["checkpoint"] == "it-000000003.pt"
    assert not events(db, "r", "checkpoint_skipped")


def test_with_only_unsigned_checkpoints_the_resume_is_refused_in_one_line_naming_the_flag(planted):
    db, theirs = planted
    for p in checkpoint.list_checkpoints(checkpoints_dir(db, "r")):
        p.write_bytes(stripped(theirs))
    line = one_line_error(rla("resume", "r", "--iterations", "1", db=db))
    assert line.startswith("rla: run r cannot be resumed: no usable checkpoint")
    assert "--accept-unowned-checkpoints" in line
    assert open_store(db).get_run("r")["status"] == "completed"          # nothing changed
    res = rla("resume", "r", "--iterations", "1", "--accept-unowned-checkpoints", db=db)
    assert res.returncode == 0, res.stderr


def test_a_database_that_never_signed_still_loads_its_format_1_checkpoints(tmp_path):
    """An older version's database: no signed checkpoint was ever written for it (emulated: the
    mark cleared, its files rewritten as format 1)."""
    db = tmp_path / "h.db"
    assert train(db, "r", 3) == 0
    with sqlite3.connect(db) as c:
        if "signed_checkpoints_since" in [r[1] for r in c.execute("PRAGMA table_info(_database)")]:
            c.execute("UPDATE _database SET signed_checkpoints_since = NULL")
    for p in checkpoint.list_checkpoints(checkpoints_dir(db, "r")):
        p.write_bytes(format_1(payload(p)))
    assert launch.resume_run(db, "r", iterations=1, out=lambda _line: None) == 0
    assert events(db, "r", "resumed_from_checkpoint")[-1]["checkpoint"] == "it-000000003.pt"
    assert not events(db, "r", "checkpoint_skipped")
    assert open_store(db).signs_checkpoints()        # from this resume on, it signs


def test_the_migration_marks_a_database_whose_runs_a_signing_program_made(tmp_path):
    """Opened by this version for the first time: a database with runs made since migration 004
    (the program that signs) is marked; one whose runs all predate it is not."""
    for name, since_004 in (("new", True), ("old", False)):
        db = tmp_path / name / "h.db"
        assert train(db, "r", 1) == 0
        with sqlite3.connect(db) as c:          # as the previous version left it: schema 5
            c.execute("ALTER TABLE _database DROP COLUMN signed_checkpoints_since")
            c.execute("DELETE FROM _migrations WHERE name = '006_signed_checkpoints'")
            c.execute("PRAGMA user_version = 5")
            if not since_004:
                c.execute("UPDATE _migrations SET applied_at = 4e9 WHERE name = '004_database_id'")
        assert open_store(db).signs_checkpoints() is since_004, name


def test_cli_help_names_the_risk(capsys):
    with pytest.raises(SystemExit):
        cli.main(["resume", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--accept-unowned-checkpoints" in text and "may come from another run or database" in text

