"""`rla run --config` and `rla ablate --config` read only a regular file of bounded size (issue 34,
finding 6): /dev/zero once grew the process to 3.9 GB in 4 s and a FIFO hung it. Each case is a real
`rla` process, limited in memory as a careful user's shell would not be, and must exit 2 within
seconds with one line naming the file and what it is, the database not created."""
from __future__ import annotations

import os
import resource
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ANSWER_WITHIN_S = 30      # a refused file is answered in well under a second; the old code never answered a FIFO


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))   # the old code read /dev/zero until this


def _fifo(p: Path) -> str:
    os.mkfifo(p)
    return str(p)


def _folder(p: Path) -> str:
    p.mkdir()
    return str(p)


def _link_to_zero(p: Path) -> str:
    p.symlink_to("/dev/zero")
    return str(p)


def _fifty_megabytes(p: Path) -> str:
    with p.open("wb") as f:
        f.truncate(50 << 20)          # sparse: no disk used, yet 50 MB to read
    return str(p)


FILES = {"fifo": (_fifo, "FIFO"), "dev-zero": (lambda p: "/dev/zero", "character device"),
         "link-to-dev-zero": (_link_to_zero, "character device"), "folder": (_folder, "folder"),
         "50-MB": (_fifty_megabytes, "52,428,800 bytes")}     # the size, over the cap
COMMANDS = {"run": ["run"], "ablate": ["ablate", "--seeds", "0", "--budget", "100"]}


def _rla(argv: list[str]) -> subprocess.CompletedProcess | str:
    try:
        return subprocess.run([sys.executable, "-m", "rla_engine.cli", *argv], capture_output=True, text=True,
                              timeout=ANSWER_WITHIN_S, preexec_fn=_limited, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"no answer within {ANSWER_WITHIN_S} s"


@pytest.fixture(scope="module")
def answers(tmp_path_factory) -> dict[tuple[str, str], tuple[str, Path, subprocess.CompletedProcess | str]]:
    """Every (command, file) pair, its processes started together so the module costs seconds."""
    jobs = {}
    for command, words in COMMANDS.items():
        for name, (make, _) in FILES.items():
            folder = tmp_path_factory.mktemp(f"{command}-{name}")
            file, db = make(folder / "config.toml"), folder / "fresh.db"
            jobs[command, name] = (file, db, [*words, "--config", file, "--db", str(db)])
    with ThreadPoolExecutor(len(jobs)) as pool:
        done = {key: pool.submit(_rla, argv) for key, (_, _, argv) in jobs.items()}
        return {key: (jobs[key][0], jobs[key][1], done[key].result()) for key in jobs}


@pytest.mark.parametrize("name", list(FILES))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_config_that_is_not_a_small_regular_file_is_refused_at_once(answers, command, name):
    file, db, r = answers[command, name]
    assert not isinstance(r, str), r
    lines = r.stderr.splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr[-2000:]
    assert file in lines[0] and FILES[name][1] in lines[0] and "config" in lines[0], lines[0]
    assert not db.exists()       # nothing was made for a refused file


def test_a_link_to_a_regular_config_file_is_followed(tmp_path):
    real = tmp_path / "real.toml"
    real.write_text("[judge]\nbogus = 1\n", encoding="utf-8")     # read, then refused for its content
    (tmp_path / "link.toml").symlink_to(real)
    r = _rla(["run", "--config", str(tmp_path / "link.toml"), "--db", str(tmp_path / "fresh.db")])
    assert not isinstance(r, str) and r.returncode == 2 and "judge.bogus" in r.stderr, r
