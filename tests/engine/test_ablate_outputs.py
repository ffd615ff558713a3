"""`rla ablate --out` follows export's rules, checked before any run starts:
an existing file that is not the group's own table is replaced only with --force, never through a
link, never a device, a FIFO or a folder; and one `rla ablate` of a group at a time."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rla_engine import cli
from rla_engine.store import open_store

ARGS = ["ablate", "--preset", "tiny", "--seeds", "0", "--budget", "1600", "--arms", "outcome"]
GROUP = "ablate-tiny-1600"


def ablate(capsys, db, *extra) -> tuple[int, list[str]]:
    code = cli.main([*ARGS, "--db", str(db), *map(str, extra)])
    return code, capsys.readouterr().err.strip().splitlines()


def _foreign_table(d):
    (d / "notes.md").write_text("my own notes\n")
    return d / "notes.md"


def _foreign_data(d):
    (d / "notes.json").write_text('{"mine": true}')
    return d / "notes.md"


def _other_groups_table(d):
    (d / "notes.md").write_text("### ablate-other-5: tiny\n")
    (d / "notes.json").write_text('{"group": "ablate-other-5"}')
    return d / "notes.md"


def _link(d):
    (d / "target.md").write_text("precious\n")
    (d / "notes.md").symlink_to(d / "target.md")
    return d / "notes.md"


def _link_to_figure(d):
    (d / "target.png").write_text("precious\n")
    (d / "notes.curves.png").symlink_to(d / "target.png")
    return d / "notes.md"


def _fifo(d):
    os.mkfifo(d / "notes.md")
    return d / "notes.md"


def _folder(d):
    (d / "notes.md").mkdir()
    return d / "notes.md"


def _logs_file(d):
    (d / "notes.logs").write_text("not a folder\n")
    return d / "notes.md"


def _device(_d):
    return "/dev/null"


HOSTILE = [(_foreign_table, "already exists"), (_foreign_data, "already exists"),
           (_other_groups_table, "already exists"), (_link, "symbolic link"), (_link_to_figure, "symbolic link"),
           (_fifo, "named pipe"), (_folder, "is a folder"), (_logs_file, "not a folder"),
           (_device, "character device")]


@pytest.mark.parametrize("make,reason", HOSTILE, ids=[m.__name__.strip("_") for m, _ in HOSTILE])
def test_a_bad_out_is_refused_before_any_run_and_changes_nothing(tmp_path, capsys, make, reason):
    work = tmp_path / "work"
    work.mkdir()
    out = make(work)
    before = {p.name: (p.is_symlink(), p.is_file() and p.read_bytes()) for p in work.iterdir()}
    dev = set(os.listdir("/dev"))
    code, err = ablate(capsys, tmp_path / "a.db", "--out", out)
    assert code == 2 and len(err) == 1 and "--out" in err[0] and reason in err[0], err
    assert {p.name: (p.is_symlink(), p.is_file() and p.read_bytes()) for p in work.iterdir()} == before
    assert set(os.listdir("/dev")) == dev
    assert open_store(tmp_path / "a.db").list_runs() == []


def test_force_replaces_a_file_the_group_did_not_write(tmp_path, capsys):
    (tmp_path / "notes.md").write_text("my own notes\n")
    code, _ = ablate(capsys, tmp_path / "a.db", "--out", tmp_path / "notes.md", "--force", "--budget", "1")
    assert code == 0
    assert (tmp_path / "notes.md").read_text().startswith(f"### {GROUP[:-4]}1: ")
    assert {oct(os.stat(tmp_path / f).st_mode & 0o777) for f in ("notes.md", "notes.json")} == {"0o600"}
    assert oct(os.stat(tmp_path / "notes.logs").st_mode & 0o777) == "0o700"


def test_one_ablation_of_a_group_at_a_time(tmp_path, capsys):
    db = tmp_path / "a.db"
    holder = subprocess.Popen(   # another `rla ablate` of the group, as far as the claim goes
        [sys.executable, "-c", "import sys; from rla_engine.paths import lock_group; "
         f"lock_group({str(db)!r}, {GROUP!r}); print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        code, err = ablate(capsys, db, "--out", tmp_path / "notes.md")
        assert code == 2 and len(err) == 1
        assert f"group {GROUP} is being run by another rla ablate (pid {holder.pid}" in err[0]
        assert not (tmp_path / "notes.md").exists() and open_store(db).list_runs() == []
    finally:
        holder.kill()
        holder.wait()
