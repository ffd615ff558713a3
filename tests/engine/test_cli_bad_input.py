"""Bad input through the real `rla` command (DESIGN §5): every case must exit 2 with exactly one
line on stderr (naming the field where there is one), nothing on stdout, no traceback, and no
file changed — a database that did not exist is not created, one that did is not touched.

Each case runs in its own folder (with HOME, RLA_DB and XDG_DATA_HOME pointing into it, so the
default database lives there too), snapshotted before and after (names, bytes, mtimes). The
subprocesses start concurrently in one module fixture, so the whole file costs a few seconds;
no case but an unusable --device reaches torch (invalid input is refused before it is imported).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rla_engine.store import open_store

DEEP = "[" * 20_000 + "]" * 20_000
HUGE = "1" + "0" * 5000

# (id, argv, text the one line must contain). {db}: a database path that does not exist;
# {existing}: an empty RLAnything database; {folder}: a folder; the others are files made below.
CASES = [
    # --- `rla run`: the configuration (config.build / config.ConfigError)
    ("unknown-preset", ["run", "--preset", "nope", "--db", "{db}"], "preset"),
    ("unknown-key", ["run", "--set", "policy.nope=1", "--db", "{db}"], "policy.nope"),
    ("unknown-section", ["run", "--set", "nosuch.x=1", "--db", "{db}"], "nosuch.x"),
    ("set-without-equals", ["run", "--set", "wrong", "--db", "{db}"], "wrong"),
    ("set-without-key", ["run", "--set", "=0.5", "--db", "{db}"], "key=value"),
    ("string-for-number", ["run", "--set", "policy.lam=fast", "--db", "{db}"], "policy.lam"),
    ("float-for-int", ["run", "--set", "judge.m=1.5", "--db", "{db}"], "judge.m"),
    ("int-for-bool", ["run", "--set", "judge.train=1", "--db", "{db}"], "judge.train"),
    ("below-min", ["run", "--set", "policy.lam=-0.5", "--db", "{db}"], "policy.lam"),
    ("exclusive-min", ["run", "--set", "policy.lr=0", "--db", "{db}"], "policy.lr"),
    ("above-max", ["run", "--set", "judge.m=65", "--db", "{db}"], "judge.m"),
    ("nan", ["run", "--set", "policy.lam=nan", "--db", "{db}"], "policy.lam"),
    ("inf", ["run", "--set", "rollout.temperature=inf", "--db", "{db}"], "rollout.temperature"),
    ("int-of-5000-digits", ["run", "--set", f"run.seed={HUGE}", "--db", "{db}"], "run.seed"),
    ("int-beyond-float", ["run", "--set", "policy.lam=1" + "0" * 400, "--db", "{db}"], "policy.lam"),
    ("nested-20000-deep", ["run", "--set", f"policy.lam={DEEP}", "--db", "{db}"], "policy.lam"),
    ("inline-table", ["run", "--set", "policy.lam={a = 1}", "--db", "{db}"], "policy.lam"),
    ("empty-tiers", ["run", "--set", "eval.tiers=[]", "--db", "{db}"], "eval.tiers"),
    ("tiers-not-numbers", ["run", "--set", 'eval.tiers=["a"]', "--db", "{db}"], "eval.tiers"),
    ("repeated-tiers", ["run", "--set", "eval.tiers=[0.5, 0.5]", "--db", "{db}"], "eval.tiers"),
    ("unknown-family", ["run", "--set", "task.family=chess", "--db", "{db}"], "task.family"),
    ("set-device-tpu", ["run", "--set", "run.device=tpu", "--db", "{db}"], "run.device"),
    ("empty-judge-band", ["run", "--set", "judge.band_low=0.9", "--db", "{db}"], "judge.band_low"),
    ("judge-ppo-epochs-0", ["run", "--set", "judge.ppo_epochs=0", "--db", "{db}"], "judge.ppo_epochs"),
    ("lm-micro-batch-0", ["run", "--set", "lm.micro_batch_size=0", "--db", "{db}"], "lm.micro_batch_size"),
    ("moved-key-below-min", ["run", "--set", "policy.lora_rank=-1", "--db", "{db}"], "is now lm.lora_rank"),
    ("tasks-above-pool", ["run", "--set", "task.pool_size=8", "--db", "{db}"], "rollout.tasks_per_iter"),
    ("newline-in-value", ["run", "--set", "policy.lam=0.5\nfoo = 1", "--db", "{db}"], "policy.lam"),
    ("newline-in-key", ["run", "--set", "policy.la\nm=1", "--db", "{db}"], "policy.la"),
    ("escape-in-value", ["run", "--set", "run.device=\x1b[31mcpu", "--db", "{db}"], "run.device"),
    ("config-is-a-folder", ["run", "--config", "{folder}", "--db", "{db}"], "config"),
    ("config-empty-path", ["run", "--config", "", "--db", "{db}"], "config"),
    ("config-missing", ["run", "--config", "{missing}", "--db", "{db}"], "config"),
    ("config-binary", ["run", "--config", "{binary}", "--db", "{db}"], "config"),
    ("config-invalid-toml", ["run", "--config", "{invalid}", "--db", "{db}"], "config"),
    ("config-lone-cr", ["run", "--config", "{cr}", "--db", "{db}"], "config"),
    ("config-huge-int", ["run", "--config", "{huge}", "--db", "{db}"], "config"),
    ("config-wrong-type", ["run", "--config", "{wrongtype}", "--db", "{db}"], "policy.lam"),
    ("config-unknown-section", ["run", "--config", "{unknown}", "--db", "{db}"], "nosuch"),
    ("config-section-not-table", ["run", "--config", "{flat}", "--db", "{db}"], "policy"),
    ("preset-and-missing-config", ["run", "--preset", "quickstart", "--config", "{missing}", "--db", "{db}"],
     "config"),
    ("iterations-0", ["run", "--iterations", "0", "--db", "{db}"], "run.iterations"),
    ("iterations-minus-1", ["run", "--iterations", "-1", "--db", "{db}"], "run.iterations"),
    ("seed-minus-1", ["run", "--seed", "-1", "--db", "{db}"], "run.seed"),
    ("seed-2**31", ["run", "--seed", str(2**31), "--db", "{db}"], "run.seed"),
    ("bad-existing-db-untouched", ["run", "--set", "judge.m=0", "--db", "{existing}"], "judge.m"),
    # --- `rla run`: the command line itself (argparse)
    ("iterations-abc", ["run", "--iterations", "abc", "--db", "{db}"], "--iterations"),
    ("iterations-float", ["run", "--iterations", "1e3", "--db", "{db}"], "--iterations"),
    ("seed-abc", ["run", "--seed", "abc", "--db", "{db}"], "--seed"),
    ("device-tpu", ["run", "--device", "tpu", "--db", "{db}"], "--device"),
    ("unknown-option", ["run", "--bogus", "--db", "{db}"], "--bogus"),
    ("set-without-value", ["run", "--db", "{db}", "--set"], "--set"),
    # --- other subcommands
    ("no-subcommand", [], ""),
    ("unknown-subcommand", ["nosuch"], "nosuch"),
    ("show-without-run-id", ["show", "--db", "{db}"], "run_id"),
    ("show-missing-database", ["show", "nosuch", "--db", "{db}"], "h.db"),
    ("show-missing-run", ["show", "nosuch", "--db", "{existing}"], "nosuch"),
    ("resume-missing-run", ["resume", "nosuch", "--db", "{existing}"], "nosuch"),
    ("resume-missing-database", ["resume", "nosuch", "--db", "{db}"], "h.db"),
    ("resume-unsafe-run-id", ["resume", "../../x", "--db", "{existing}"], "../../x"),
    ("runs-database-is-a-folder", ["runs", "--db", "{folder}"], "folder"),
    ("export-unknown-format", ["export", "nosuch", "--format", "xml", "--out", "{folder}/x", "--db", "{db}"],
     "--format"),
    ("export-without-out", ["export", "nosuch", "--format", "csv", "--db", "{db}"], "--out"),
    ("import-missing-file", ["import", "{missing}", "--db", "{db}"], "missing"),
    ("import-folder", ["import", "{folder}", "--db", "{db}"], "folder"),
    ("import-not-json", ["import", "{invalid}", "--db", "{db}"], "invalid"),
    # --- `rla ablate`
    ("ablate-unknown-arm", ["ablate", "--preset", "tiny", "--seeds", "0", "--budget", "100", "--arms", "full,best",
                            "--db", "{db}"], "best"),
    ("ablate-seeds-not-numbers", ["ablate", "--preset", "tiny", "--seeds", "0,x", "--budget", "100", "--db", "{db}"],
     "--seeds"),
    ("ablate-seed-twice", ["ablate", "--preset", "tiny", "--seeds", "1,1", "--budget", "100", "--db", "{db}"],
     "--seeds"),
    ("ablate-budget-0", ["ablate", "--preset", "tiny", "--seeds", "0", "--budget", "0", "--db", "{db}"], "--budget"),
    ("ablate-without-budget", ["ablate", "--preset", "tiny", "--seeds", "0", "--db", "{db}"], "--budget"),
    ("ablate-step-arm-without-lambda", ["ablate", "--preset", "tiny", "--set", "policy.lam=0", "--seeds", "0",
                                        "--budget", "100", "--arms", "outcome,step", "--db", "{db}"], "policy.lam"),
    ("ablate-unsafe-group", ["ablate", "--preset", "tiny", "--seeds", "0", "--budget", "100", "--group", "../x",
                             "--db", "{db}"], "--group"),
    ("ablate-bad-shared-key", ["ablate", "--preset", "tiny", "--set", "judge.m=0", "--seeds", "0", "--budget", "100",
                               "--db", "{db}"], "judge.m"),
    # --- names, groups and database paths that cannot be used: refused before anything is created
    ("name-not-utf8", ["run", "--preset", "tiny", "--name", "\udcff", "--db", "{db}"], "--name"),
    ("run-unsafe-group", ["run", "--preset", "tiny", "--group", "../../escape", "--db", "{db}"], "--group"),
    ("run-group-with-newline", ["run", "--preset", "tiny", "--group", "a\nb", "--db", "{db}"], "--group"),
    ("run-group-5000-chars", ["run", "--preset", "tiny", "--group", "g" * 5000, "--db", "{db}"], "--group"),
    ("db-of-unknown-user", ["run", "--preset", "tiny", "--db", "~nosuchuser-rla/a.db"], "~nosuchuser-rla"),
    ("runs-db-of-unknown-user", ["runs", "--db", "~nosuchuser-rla/a.db"], "~nosuchuser-rla"),
    ("db-5000-chars", ["run", "--preset", "tiny", "--db", "{folder}/" + "a" * 5000], "File name too long"),
    ("runs-db-5000-chars", ["runs", "--db", "{folder}/" + "a" * 5000], "File name too long"),
    ("db-dangling-link", ["run", "--preset", "tiny", "--db", "{dangling}"], "symbolic link"),
    ("runs-db-dangling-link", ["runs", "--db", "{dangling}"], "symbolic link"),
    *([("device-cuda-without-cuda", ["run", "--preset", "tiny", "--device", "cuda", "--db", "{db}"], "cuda")]
      if shutil.which("nvidia-smi") is None else []),
]

# Cases the `rla` command itself (cli.py, store) still gets wrong: (id -> reason). strict, so a
# fix shows up as XPASS and the entry must go.
XFAIL: dict[str, str] = {}

FILES = {
    "binary": ("config.bin", b"\x00\xff\xfe\x89PNG\r\n\x1a\n" + bytes(range(256))),
    "invalid": ("invalid.toml", b"[task\nfamily = \n"),
    "cr": ("cr.toml", b"[policy]\rlam = 0.5\n"),
    "huge": ("huge.toml", f"[run]\nseed = {HUGE}\n".encode()),
    "wrongtype": ("wrongtype.toml", b'[policy]\nlam = "fast"\n'),
    "unknown": ("unknown.toml", b"[nosuch]\nx = 1\n"),
    "flat": ("flat.toml", b"policy = 5\n"),
}


def _prepare(case: Path) -> dict[str, str]:
    case.mkdir()
    (case / "folder").mkdir()
    (case / "home").mkdir()
    where = {"db": str(case / "h.db"), "existing": str(case / "existing.db"), "folder": str(case / "folder"),
             "missing": str(case / "missing.toml")}
    for name, (file, data) in FILES.items():
        (case / file).write_bytes(data)
        where[name] = str(case / file)
    open_store(case / "existing.db").close()
    (case / "dangling.db").symlink_to(case / "nowhere" / "h.db")
    where["dangling"] = str(case / "dangling.db")
    return where


def snapshot(root: Path) -> dict:
    """Every path under root: files with their bytes and mtime, folders by name. (A folder's own
    mtime is left out: SQLite makes and removes its -wal/-shm files while it reads a database.)"""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_dir() and not p.is_symlink():
            out[str(p.relative_to(root))] = "folder"
        else:
            st = p.lstat()
            out[str(p.relative_to(root))] = (st.st_mtime_ns, st.st_size, p.read_bytes() if p.is_file() else None)
    return out


def _run_case(root: Path, case_id: str, argv: list[str]) -> dict:
    case = root / case_id.replace("*", "^")
    where = _prepare(case)
    args = []
    for a in argv:
        for name, path in where.items():
            a = a.replace("{" + name + "}", path)
        args.append(a)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLA_", "XDG_"))}
    env.update(HOME=str(case / "home"), RLA_DB=str(case / "home" / "default.db"),
               XDG_DATA_HOME=str(case / "home" / "data"), PYTHONDONTWRITEBYTECODE="1")
    before = snapshot(case)
    res = subprocess.run([sys.executable, "-m", "rla_engine.cli", *args], capture_output=True, text=True,
                         errors="backslashreplace", cwd=case, env=env, timeout=120)
    after = snapshot(case)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    return {"rc": res.returncode, "stdout": res.stdout, "stderr": res.stderr, "changed": changed,
            "torch": "torch" in res.stderr}


@pytest.fixture(scope="module")
def results(request, tmp_path_factory) -> dict:
    """Run the selected cases concurrently (each refused `rla` is ~0.1 s of CPU, mostly imports)."""
    wanted = {item.callspec.id for item in request.session.items
              if item.originalname == "test_bad_input_exits_2_with_one_line_and_changes_nothing"}
    root = tmp_path_factory.mktemp("cli")
    todo = [(cid, argv) for cid, argv, _ in CASES if cid in wanted]
    with ThreadPoolExecutor(max_workers=max(2, (os.cpu_count() or 2) * 2)) as pool:
        futures = {cid: pool.submit(_run_case, root, cid, argv) for cid, argv in todo}
        return {cid: f.result() for cid, f in futures.items()}


def test_the_cases_are_distinct_and_enough():
    ids = [c[0] for c in CASES]
    assert len(set(ids)) == len(ids) >= 30
    assert len({tuple(c[1]) for c in CASES}) == len(CASES)
    assert set(XFAIL) <= set(ids)


@pytest.mark.parametrize("case_id, named", [
    pytest.param(cid, named, id=cid,
                 marks=[pytest.mark.xfail(strict=True, reason=XFAIL[cid])] if cid in XFAIL else [])
    for cid, _argv, named in CASES])
def test_bad_input_exits_2_with_one_line_and_changes_nothing(results, case_id, named):
    r = results[case_id]
    shown = f"exit {r['rc']}\nstdout: {r['stdout'][-2000:]!r}\nstderr: {r['stderr'][-2000:]!r}"
    assert "Traceback" not in r["stdout"] + r["stderr"], shown
    assert r["rc"] == 2, shown
    lines = r["stderr"].splitlines()
    assert len(lines) == 1 and lines[0].strip() and lines[0].startswith("rla: "), shown
    assert r["stdout"] == "", shown
    assert named in lines[0], f"the line does not name {named!r}\n{shown}"
    assert len(lines[0]) < 1000, shown
    assert not r["changed"], f"changed: {r['changed']}\n{shown}"
