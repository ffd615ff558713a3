"""Where an export may write (review findings): only regular files, never through a symbolic
link, never into a device, pipe, socket or folder — refused with exit 2 and one line naming the
path and what it is, with or without --force, changing nothing; an --out that cannot be created
is invalid input (exit 2), not a failure; every file written is mode 0600 whatever the umask;
and a database that can only be read still exports.

The command is driven for real (`python -m rla_gui.report`, and `rla export` where the exit code
passes through) on a small real database made with the store API. Races (a pipe appearing while
rendering) are injected in-process. Read-only and full filesystems are real mounts in a private
mount namespace (`unshare -m`, root only; skipped elsewhere).
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from rla_engine.store import open_store
from rla_engine.export import ExportInputError, files, output_paths
from rla_gui import report

from plain_user import IS_ROOT, NOBODY, as_plain_user, needs_a_plain_user

RUN = "files-test-run"
DEV_FULL = Path("/dev/full")
DEV_NULL = Path("/dev/null")


# ----------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    """A database holding one completed 3-iteration run (synthetic metrics and events); tests
    must not change it."""
    path = tmp_path_factory.mktemp("db") / "runs.db"
    s = open_store(path)
    try:
        s.create_run(RUN, name="files test", preset=None, config={"run": {}}, device="cpu")
        for it in range(1, 4):
            s.commit_iteration(RUN, it, env_steps=10 * it, wall_s=0.1,
                               metrics={"reward/mean": 0.5 * it, "loss": 1.0 / it},
                               events=[("note", {"iteration": it})], tasks=[])
        s.set_status(RUN, "completed")
    finally:
        s.close()
    return path


def export_cmd(db: Path, fmt: str, out, *extra: str) -> list[str]:
    return [sys.executable, "-m", "rla_gui.report", "--db", str(db), "--format", fmt, "--out", str(out),
            *extra, "--", RUN]


def export(db: Path, fmt: str, out, *extra: str, **kw) -> subprocess.CompletedProcess:
    """`python -m rla_gui.report` (what `rla export` runs). A timeout, not a hang, if it ever
    opens a pipe for writing."""
    return subprocess.run(export_cmd(db, fmt, out, *extra), capture_output=True, text=True, timeout=120,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen"}, **kw)


def rla_export(db: Path, fmt: str, out, *extra: str) -> subprocess.CompletedProcess:
    """`rla export`, which runs the above as a subprocess and returns its exit code."""
    return subprocess.run([sys.executable, "-m", "rla_engine.cli", "export", RUN, "--format", fmt,
                           "--out", str(out), "--db", str(db), *extra],
                          capture_output=True, text=True, timeout=120)


def refused(r: subprocess.CompletedProcess, *words: str) -> str:
    """Exit 2, exactly one line on stderr, no traceback, holding every one of `words`."""
    lines = r.stderr.splitlines()
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def state(p: Path) -> tuple:
    """What is at `p` — kind, inode, device, size, mtime, link text, content of a small regular
    file — without following a link."""
    st = os.lstat(p)
    link = os.readlink(p) if stat.S_ISLNK(st.st_mode) else None
    content = p.read_bytes() if stat.S_ISREG(st.st_mode) and st.st_size < 1 << 20 else None
    return (stat.S_IFMT(st.st_mode), st.st_ino, st.st_rdev, st.st_size, st.st_mtime_ns, link, content)


def listing(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


# ----------------------------------------------------------------------------- devices


@pytest.mark.skipif(not DEV_FULL.exists(), reason="no /dev/full here")
@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_dev_full_is_refused_even_with_force(db, fmt):
    before = state(DEV_FULL)
    r = export(db, fmt, DEV_FULL, "--force")
    refused(r, str(DEV_FULL), "character device")
    assert stat.S_ISCHR(os.lstat(DEV_FULL).st_mode) and state(DEV_FULL)[:3] == before[:3]
    assert not os.path.lexists("/dev/full.events.csv")
    assert not [n for n in os.listdir("/dev") if n.startswith(".full.")]   # no temporary left


@pytest.mark.skipif(not DEV_FULL.exists(), reason="no /dev/full here")
def test_rla_export_passes_the_refusal_through(db):
    r = rla_export(db, "json", DEV_FULL, "--force")
    refused(r, str(DEV_FULL), "character device")
    assert stat.S_ISCHR(os.lstat(DEV_FULL).st_mode)


# ----------------------------------------------------------------------------- pipes, sockets, folders


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_a_fifo_is_refused_with_or_without_force(db, tmp_path, fmt, force):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    before, names = state(fifo), listing(tmp_path)
    r = export(db, fmt, fifo, *(["--force"] if force else []))
    refused(r, str(fifo), "named pipe")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and state(fifo) == before
    assert listing(tmp_path) == names


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
def test_the_csv_companion_being_a_fifo_is_refused(db, tmp_path, force):
    out, events = tmp_path / "run.csv", tmp_path / "run.events.csv"
    if force:   # with --force, an existing metrics file beside it stays as it was too
        out.write_text("old metrics")
    os.mkfifo(events)
    before, names = state(events), listing(tmp_path)
    old_out = state(out) if force else None
    r = export(db, "csv", out, *(["--force"] if force else []))
    refused(r, str(events), "named pipe")
    assert state(events) == before and stat.S_ISFIFO(os.lstat(events).st_mode)
    assert (state(out) if force else None) == old_out and listing(tmp_path) == names


def test_a_socket_is_refused(db, tmp_path):
    # AF_UNIX paths are short (108 bytes): bind in a short folder
    folder = Path(tempfile.mkdtemp(prefix="rla-sock-"))
    try:
        sock_path = folder / "s"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.bind(str(sock_path))
            r = export(db, "json", sock_path, "--force")
            refused(r, str(sock_path), "socket")
            assert stat.S_ISSOCK(os.lstat(sock_path).st_mode) and listing(folder) == ["s"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
def test_a_folder_is_refused(db, tmp_path, force):
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "inside.txt").write_text("x")
    r = export(db, "json", folder, *(["--force"] if force else []))
    refused(r, str(folder), "is a folder")
    assert folder.is_dir() and listing(folder) == ["inside.txt"] and listing(tmp_path) == ["reports"]


# ----------------------------------------------------------------------------- symbolic links
# The rule chosen (files._check_target): a symbolic link is refused whatever it points to —
# "is a symbolic link; give the real path" — with or without --force.


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
def test_a_symlink_to_a_regular_file_is_refused_and_both_stay(db, tmp_path, force):
    target, link = tmp_path / "real.json", tmp_path / "link.json"
    target.write_text("keep me")
    link.symlink_to(target)
    before = (state(target), state(link))
    r = export(db, "json", link, *(["--force"] if force else []))
    refused(r, str(link), "symbolic link", "give the real path")
    assert (state(target), state(link)) == before and os.readlink(link) == str(target)
    assert listing(tmp_path) == ["link.json", "real.json"]
    # the real path works
    assert export(db, "json", target, "--force").returncode == 0
    assert json.loads(target.read_text())["run"]["id"] == RUN and link.is_symlink()


def test_a_symlink_to_dev_null_is_refused(db, tmp_path):
    link = tmp_path / "null.json"
    link.symlink_to(DEV_NULL)
    before_null, before_link = state(DEV_NULL), state(link)
    r = export(db, "json", link, "--force")
    refused(r, str(link), "symbolic link")
    assert state(link) == before_link and os.readlink(link) == str(DEV_NULL)
    assert stat.S_ISCHR(os.lstat(DEV_NULL).st_mode) and state(DEV_NULL)[:3] == before_null[:3]


def test_a_dangling_symlink_and_a_linked_companion_are_refused(db, tmp_path):
    dangling = tmp_path / "gone.json"
    dangling.symlink_to(tmp_path / "nowhere")
    refused(export(db, "json", dangling, "--force"), str(dangling), "symbolic link")
    assert not (tmp_path / "nowhere").exists() and dangling.is_symlink()
    # CSV: the events file beside it is a link to a file elsewhere
    elsewhere = tmp_path / "elsewhere.csv"
    elsewhere.write_text("theirs")
    (tmp_path / "run.events.csv").symlink_to(elsewhere)
    refused(export(db, "csv", tmp_path / "run.csv", "--force"), "run.events.csv", "symbolic link")
    assert elsewhere.read_text() == "theirs" and not (tmp_path / "run.csv").exists()


# ----------------------------------------------------------------------------- unwritable places


def test_a_missing_folder_is_exit_2(db, tmp_path):
    out = tmp_path / "no" / "such" / "x.json"
    line = refused(export(db, "json", out), str(out), "does not exist")
    assert str(tmp_path / "no") in line
    assert listing(tmp_path) == []


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_a_path_under_a_regular_file_is_exit_2(db, tmp_path, fmt):
    f = tmp_path / "afile"
    f.write_text("x")
    out = f / "x.json"
    refused(export(db, fmt, out, "--force"), str(out), "not a folder")
    assert f.read_text() == "x" and listing(tmp_path) == ["afile"]


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="no /proc here")
def test_proc_is_not_writable_exit_2(db):
    refused(export(db, "json", "/proc/rla-export-test.json", "--force"), "/proc/rla-export-test.json")
    refused(export(db, "json", "/proc/self/rla-export-test.json"), "/proc/self/rla-export-test.json")


def export_as_plain_user(db: Path, fmt: str, out, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(as_plain_user(export_cmd(db, fmt, out, *extra)), capture_output=True, text=True,
                          timeout=120, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})


def someone_elses_folder(prefix: str, mode: int = 0o755) -> Path:
    """A folder the exporter may read but not write: `nobody`'s (as root), else the user's own, 0555."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    if IS_ROOT:
        os.chown(folder, NOBODY, NOBODY)
        folder.chmod(mode)
    else:
        folder.chmod(0o555)
    return folder


@needs_a_plain_user
def test_a_read_only_folder_is_exit_2(db, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        refused(export_as_plain_user(db, "json", folder / "x.json"), str(folder / "x.json"), "Permission denied")
        assert listing(folder) == []
    finally:
        folder.chmod(0o755)


@needs_a_plain_user
def test_the_plain_user_is_refused_what_root_may_do(db, tmp_path):
    """The guard of the tests around it: root itself writes where the plain user may not."""
    folder = someone_elses_folder("rla-export-guard-")
    try:
        out = folder / "x.json"
        if IS_ROOT:
            assert export(db, "json", out).returncode == 0 and listing(folder) == ["x.json"]
            out.unlink()
        assert export_as_plain_user(db, "json", out).returncode == 2 and listing(folder) == []
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder, ignore_errors=True)


@needs_a_plain_user
def test_a_folder_another_user_cannot_write_is_exit_2(db):
    folder = someone_elses_folder("rla-export-ro-")
    try:
        out = folder / "x.json"
        refused(export_as_plain_user(db, "json", out), str(out), "Permission denied")
        assert listing(folder) == []
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder, ignore_errors=True)


def test_a_line_break_in_the_path_still_gives_one_line(db, tmp_path):
    out = tmp_path / "a\nb" / "x.json"
    refused(export(db, "json", out), "does not exist")


# ----------------------------------------------------------------------------- mode and atomicity


@pytest.mark.parametrize("fmt", ["json", "csv", "html", "pdf"])
def test_files_are_0600_whatever_the_umask(db, tmp_path, fmt):
    out = tmp_path / f"run.{fmt}"
    r = export(db, fmt, out, umask=0)
    assert r.returncode == 0, r.stderr
    written = output_paths(fmt, out)
    for p in written:
        assert stat.S_ISREG(os.lstat(p).st_mode) and stat.S_IMODE(os.lstat(p).st_mode) == 0o600, p
    assert listing(tmp_path) == sorted(p.name for p in written)   # no temporary left


def test_force_replaces_a_regular_file_with_a_new_0600_one(db, tmp_path):
    out = tmp_path / "run.json"
    out.write_text("old")
    out.chmod(0o644)
    old_inode = os.lstat(out).st_ino
    r = export(db, "json", out, "--force", umask=0o002)
    assert r.returncode == 0, r.stderr
    st = os.lstat(out)
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_ino != old_inode   # renamed into place
    assert json.loads(out.read_text())["run"]["id"] == RUN and listing(tmp_path) == ["run.json"]


def test_write_atomic_makes_0600_files(tmp_path):
    old = os.umask(0)
    try:
        files.write_atomic(tmp_path / "a.txt", "x", force=False)
        files.write_atomic_many({tmp_path / "b.csv": "1", tmp_path / "b.events.csv": b"2"}, force=False)
    finally:
        os.umask(old)
    for name in ("a.txt", "b.csv", "b.events.csv"):
        assert stat.S_IMODE(os.lstat(tmp_path / name).st_mode) == 0o600


# ----------------------------------------------------------------------------- races (in-process)


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
def test_a_fifo_appearing_while_rendering_is_refused_and_kept(tmp_path, force):
    target = tmp_path / "report.pdf"
    with pytest.raises(files.OutputError, match="named pipe"):
        with files.atomic_path(target, force=force) as tmp:
            tmp.write_bytes(b"%PDF-1.4 whole")
            os.mkfifo(target)
    assert stat.S_ISFIFO(os.lstat(target).st_mode) and listing(tmp_path) == ["report.pdf"]


def test_a_link_appearing_in_a_group_changes_nothing(tmp_path):
    a, b, victim = tmp_path / "run.csv", tmp_path / "run.events.csv", tmp_path / "victim"
    victim.write_text("theirs")
    with pytest.raises(files.OutputError, match="symbolic link"):
        with files.atomic_paths([a, b], force=True) as (ta, tb):
            ta.write_text("m")
            tb.write_text("e")
            b.symlink_to(victim)
    assert not a.exists() and b.is_symlink() and victim.read_text() == "theirs"
    assert listing(tmp_path) == ["run.events.csv", "victim"]


def test_export_reports_a_race_as_invalid_input(db, tmp_path, monkeypatch):
    from rla_engine.export import tabular
    out = tmp_path / "run.json"
    real = tabular.to_json

    def to_json(bundles):
        os.mkfifo(out)               # appears after the up-front check
        return real(bundles)
    monkeypatch.setattr(tabular, "to_json", to_json)
    with pytest.raises(ExportInputError, match="named pipe"):
        report.export(db, [RUN], "json", out, force=True)
    assert stat.S_ISFIFO(os.lstat(out).st_mode) and listing(tmp_path) == ["run.json"]


# ----------------------------------------------------------------------------- mounts (root, unshare)


def _can_mount() -> bool:
    if not IS_ROOT or not shutil.which("unshare"):
        return False
    d = tempfile.mkdtemp(prefix="rla-mnt-")
    try:
        r = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {shlex.quote(d)}"],
                           capture_output=True, timeout=30)
        return r.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        shutil.rmtree(d, ignore_errors=True)


needs_mount = pytest.mark.skipif(not _can_mount(), reason="needs root and `unshare -m` to mount filesystems")


def in_mount_namespace(setup: str, argv: list[str]) -> subprocess.CompletedProcess:
    """Run `argv` after the shell `setup` in a private mount namespace (its mounts vanish with it)."""
    script = f"set -e; {setup}; exec {' '.join(shlex.quote(a) for a in argv)}"
    return subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})


def ro_bind(folder: Path) -> str:
    q = shlex.quote(str(folder))
    return f"mount --bind {q} {q}; mount -o remount,bind,ro {q}"


@needs_mount
def test_a_read_only_filesystem_as_out_is_exit_2(db, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    out = folder / "x.json"
    r = in_mount_namespace(ro_bind(folder), export_cmd(db, "json", out, "--force"))
    refused(r, str(out), "Read-only file system")
    assert listing(folder) == []


# An export only reads, so a database it can only read must still export: the report
# opens it with rla_engine.store.open_store(path, create=False), which falls back to a read-only
# open when the normal one fails (a read-only folder or filesystem, a full disk where SQLite
# cannot size the WAL index) and no write-ahead log holds commits outside the main file.


@pytest.fixture
def reference_json(db, tmp_path) -> bytes:
    out = tmp_path / "reference.json"
    r = export(db, "json", out)
    assert r.returncode == 0, r.stderr
    data = out.read_bytes()
    out.unlink()
    return data


@needs_mount
def test_a_database_on_a_read_only_filesystem_exports(db, tmp_path, reference_json):
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy2(db, src / "runs.db")
    before = (src / "runs.db").read_bytes()
    out = tmp_path / "out.json"
    r = in_mount_namespace(ro_bind(src), export_cmd(src / "runs.db", "json", out))
    assert (src / "runs.db").read_bytes() == before and listing(src) == ["runs.db"]
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == reference_json


@needs_mount
def test_a_database_on_a_full_disk_exports(db, tmp_path, reference_json):
    src = tmp_path / "full"
    src.mkdir()
    q = shlex.quote(str(src))
    setup = (f"mount -t tmpfs -o size=512k tmpfs {q}; cp {shlex.quote(str(db))} {q}/runs.db; "
             f"dd if=/dev/zero of={q}/fill bs=4k 2>/dev/null || true")
    out = tmp_path / "out.json"
    r = in_mount_namespace(setup, export_cmd(src / "runs.db", "json", out))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == reference_json


@needs_a_plain_user
def test_a_database_in_a_folder_the_user_cannot_write_exports(db, reference_json, tmp_path):
    """A colleague's database, readable but in a folder the exporting user cannot write."""
    src = Path(tempfile.mkdtemp(prefix="rla-export-db-"))
    try:
        shutil.copy2(db, src / "runs.db")
        (src / "runs.db").chmod(0o644)
        if IS_ROOT:
            os.chown(src / "runs.db", NOBODY, NOBODY)
            os.chown(src, NOBODY, NOBODY)
        src.chmod(0o755 if IS_ROOT else 0o555)
        out = tmp_path / "out.json"
        r = export_as_plain_user(src / "runs.db", "json", out)
        assert listing(src) == ["runs.db"]
        assert r.returncode == 0, r.stderr
        assert out.read_bytes() == reference_json
    finally:
        src.chmod(0o755)
        shutil.rmtree(src, ignore_errors=True)
