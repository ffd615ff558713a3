"""The `rla` command (DESIGN §5). Exit codes: 0 done, 2 invalid input (one line, no traceback),
1 runtime failure (the run is marked failed). Torch is imported only by `run` and `resume`."""
from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

from . import config as C
from . import metrics as K
from .paths import default_db_path
from .store import BUNDLE_FORMAT, FINAL, MULTI_FORMAT, StoreError, new_run_id, open_store

SUMMARY_KEYS = (K.SUCCESS, K.EVAL_SUCCESS, K.MU, K.DIFFICULTY_MEAN)


class InputError(Exception):
    """Invalid input: printed as one line, exit code 2."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rla", description="RLAnything engine: run, resume, inspect, export and import runs.")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="start a run")
    run.add_argument("--preset", help="a preset name (see `rla presets`)")
    run.add_argument("--config", help="a TOML config file (applied over the preset, if both are given)")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one key, e.g. policy.lam=0")
    run.add_argument("--iterations", type=int)
    run.add_argument("--seed", type=int)
    run.add_argument("--device", choices=("auto", "cpu", "cuda"))
    run.add_argument("--name")
    run.add_argument("--run-id", help=argparse.SUPPRESS)     # given by the console
    run.add_argument("--group", help="group id shared by related runs (an ablation)")

    res = sub.add_parser("resume", help="continue a stopped, crashed or failed run from its last checkpoint")
    res.add_argument("run_id")
    res.add_argument("--iterations", type=int, help="run N more iterations (default: up to the run's target)")
    res.add_argument("--device", choices=("auto", "cpu", "cuda"), help="where to continue (default: the run's own)")

    runs = sub.add_parser("runs", help="list runs")
    runs.add_argument("--json", action="store_true")
    runs.add_argument("--all", action="store_true", help="include archived runs")
    show = sub.add_parser("show", help="show one run")
    show.add_argument("run_id")
    show.add_argument("--json", action="store_true")
    sub.add_parser("presets", help="list presets")
    exp = sub.add_parser("export", help="export runs: an HTML/PDF report (several runs: a comparison) "
                                        "or CSV/JSON data")
    exp.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    exp.add_argument("--format", required=True, choices=("html", "pdf", "csv", "json"))
    exp.add_argument("--out", required=True, help="output file; CSV also writes OUT.events.csv "
                                                  "(OUT.csv -> OUT.events.csv)")
    exp.add_argument("--force", action="store_true", help="overwrite existing files")
    imp = sub.add_parser("import", help="import runs from a JSON export into this database")
    imp.add_argument("file")
    imp.add_argument("--as", dest="as_id", metavar="RUN_ID", help="store the (single) run under this id")
    for sp in (run, res, runs, show, exp, imp):
        sp.add_argument("--db", help="database file (default: $RLA_DB or the user data dir)")
    return p


def _open(db: str | None, create: bool = True):
    return open_store(Path(db) if db else default_db_path(), create=create)


# -- run / resume ---------------------------------------------------------------------------
def cmd_run(a) -> int:
    cfg = C.build(preset=a.preset, config_file=a.config, sets=a.set,
                  iterations=a.iterations, seed=a.seed, device=a.device)
    from .loop.trainer import Trainer, resolve_device   # torch from here on
    try:
        device = resolve_device(cfg.run.device)
    except RuntimeError as e:
        raise InputError(f"invalid config: run.device = {cfg.run.device!r}: {e}") from None
    store = _open(a.db)
    run_id = a.run_id or new_run_id()
    if store.run_exists(run_id):
        raise InputError(f"run id {run_id!r} already exists in {store.path}")
    label = a.preset or (Path(a.config).stem if a.config else cfg.task.family)
    name = a.name or f"{label} {time.strftime('%Y-%m-%d %H:%M')}"
    store.create_run(run_id, name=name, preset=a.preset or (Path(a.config).name if a.config else ""),
                     config=cfg.to_dict(), device=str(device), group_id=a.group)
    print(f"run {run_id} ({name}) on {device}, database {store.path}", flush=True)
    try:
        trainer = Trainer(cfg, device)
    except Exception as e:
        store.set_status(run_id, "failed", error=f"could not build the run: {e}")
        raise
    store.commit_iteration(run_id, 0, env_steps=0, wall_s=0.0, metrics={},
                           events=[("started", {"device": str(device), "target": cfg.run.iterations})],
                           tasks=trainer.pool.take_dirty_rows())
    return _drive(store, run_id, trainer, cfg.run.iterations)


def cmd_resume(a) -> int:
    store = _open(a.db, create=False)
    store.refresh_liveness()
    run = store.get_run(a.run_id)
    if run is None:
        raise InputError(f"no run {a.run_id!r} in {store.path}")
    if run["status"] in ("running", "paused"):
        raise InputError(f"run {a.run_id} is still {run['status']} (pid {run['pid']} on {run['host']})")
    if a.iterations is not None and a.iterations < 1:
        raise InputError(f"--iterations = {a.iterations}: must be ≥ 1")
    cfg = C.from_dict(json.loads(run["config_json"]))
    from . import checkpoint
    from .loop.trainer import Trainer, resolve_device
    from .paths import checkpoints_dir, owned_by
    folder = checkpoints_dir(store.path, a.run_id)
    if not owned_by(folder, store.path):
        raise InputError(f"the checkpoints of run {a.run_id} in {folder} belong to another database "
                         "(an imported copy has no checkpoints of its own)")
    path = checkpoint.latest(folder)
    if path is None:
        raise InputError(f"run {a.run_id} has no checkpoint to resume from")
    try:
        device = resolve_device(a.device or cfg.run.device)
    except RuntimeError as e:
        raise InputError(f"cannot resume on {a.device or cfg.run.device}: {e} (try --device cpu)") from None
    if a.device:
        cfg.run.device = a.device
    trainer = Trainer(cfg, device)
    try:
        trainer.load_state_dict(checkpoint.load(path, device))
    except (RuntimeError, KeyError, ValueError) as e:
        raise InputError(f"checkpoint {path} does not fit this run on {device}: {e}") from None
    k = trainer.iteration
    target = k + a.iterations if a.iterations else cfg.run.iterations
    store.claim_run(a.run_id, str(device))
    # commands left for the dead engine (a pause, a stop) are not orders for this one
    store.expire_commands(a.run_id, "rejected: the engine restarted before applying it")
    store.rewind(a.run_id, k)
    store.write_tasks(a.run_id, trainer.pool.live_rows())
    store.add_event(a.run_id, k, "resumed_from_checkpoint", {"checkpoint": path.name, "target": target})
    print(f"run {a.run_id} resumed at iteration {k} from {path.name}, target {target}", flush=True)
    return _drive(store, a.run_id, trainer, max(target, k))


def _drive(store, run_id: str, trainer, target: int) -> int:
    from .runner import Runner
    return Runner(store, run_id, trainer, target, out=lambda s: print(s, flush=True)).run()


# -- reading ------------------------------------------------------------------------------
def _summary(store, run: dict) -> dict:
    latest = store.latest_metrics(run["id"])
    end = run["ended_at"] or (run["heartbeat_at"] if run["status"] not in FINAL else None) or time.time()
    return {"id": run["id"], "name": run["name"], "status": run["status"], "preset": run["preset"],
            "iteration": run["iteration"], "started_at": run["started_at"],
            "duration_s": round(end - run["started_at"], 1) if run["started_at"] else None,
            **{k: latest.get(k) for k in SUMMARY_KEYS}}


def cmd_runs(a) -> int:
    store = _open(a.db, create=False)
    store.refresh_liveness()
    rows = [_summary(store, r) for r in store.list_runs(include_archived=a.all)]
    if a.json:
        print(json.dumps(rows, indent=2))
        return 0
    head = f"{'id':<22} {'status':<9} {'iter':>6} {'success':>7} {'eval':>5} {'μ':>5} {'diff':>5}  name"
    print(head)
    for r in rows:
        f = lambda k: "  -  " if r[k] is None else f"{r[k]:5.2f}"   # noqa: E731
        print(f"{r['id']:<22} {r['status']:<9} {r['iteration']:>6} {f(K.SUCCESS):>7} {f(K.EVAL_SUCCESS)} "
              f"{f(K.MU)} {f(K.DIFFICULTY_MEAN)}  {r['name']}")
    return 0


def cmd_show(a) -> int:
    store = _open(a.db, create=False)
    store.refresh_liveness()
    run = store.get_run(a.run_id)
    if run is None:
        raise InputError(f"no run {a.run_id!r} in {store.path}")
    info = {"run": {k: v for k, v in run.items() if k != "config_json"},
            "config": json.loads(run["config_json"]), "latest": store.latest_metrics(a.run_id),
            "pool": store.tasks(a.run_id, statuses=["active", "pending"]),
            "events": store.events(a.run_id)[-20:]}
    if a.json:
        print(json.dumps(info, indent=2, default=str))
        return 0
    print(f"{run['id']}  {run['name']}\n  status {run['status']}  iteration {run['iteration']}  "
          f"device {run['device']}  preset {run['preset'] or '-'}")
    if run["error"]:
        print(f"  error: {run['error']}")
    for k in sorted(info["latest"]):
        if not k.startswith(K.TIMING_PREFIX):
            print(f"  {k:<26} {info['latest'][k]:.4g}")
    active = [t for t in info["pool"] if t["status"] == "active"]
    pending = len(info["pool"]) - len(active)
    if active:
        diffs = [t["difficulty"] for t in active]
        print(f"  pool: {len(active)} slots, difficulty {min(diffs):.2f}–{max(diffs):.2f} "
              f"(mean {sum(diffs) / len(diffs):.2f}), {pending} pending")
    for e in info["events"]:
        if e["kind"] != "episode":
            print(f"  [{e['iteration']:>5}] {e['kind']} {json.dumps(e['payload'])[:100]}")
    return 0


def cmd_presets(_a) -> int:
    for name in C.preset_names():
        print(f"{name:<12} {C.preset_description(name)}")
    return 0


# -- export / import ------------------------------------------------------------------------
def cmd_export(a) -> int:
    """Rendering lives in the console package (Qt, offscreen): run it as a subprocess so this
    process never imports Qt. Its exit code (0 / 2 invalid input / 1 failure) is ours."""
    if importlib.util.find_spec("rla_gui") is None:
        print("rla: export needs the console package (rla_gui), which is not installed", file=sys.stderr)
        return 1
    db = Path(a.db).expanduser() if a.db else default_db_path()
    cmd = [sys.executable, "-m", "rla_gui.report", "--db", str(db), "--format", a.format, "--out", a.out]
    if a.force:
        cmd.append("--force")
    return subprocess.run(cmd + ["--", *a.run_ids]).returncode


def _read_bundles(file: str) -> list[dict]:
    """The runs of a JSON export: one bundle, or the several-runs form."""
    path = Path(file).expanduser()
    try:
        doc = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path} is a folder, not a JSON export") from None
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{path}: not a JSON export ({e})") from None
    except RecursionError:
        raise InputError(f"{path}: not a JSON export (nested too deeply)") from None
    if isinstance(doc, dict) and doc.get("format") == MULTI_FORMAT:
        if not isinstance(doc.get("runs"), list) or not doc["runs"]:
            raise InputError(f"{path}: 'runs' must be a non-empty list of run bundles")
        return doc["runs"]
    if isinstance(doc, dict) and doc.get("format") == BUNDLE_FORMAT:
        return [doc]
    fmt = doc.get("format") if isinstance(doc, dict) else None
    raise InputError(f"{path}: format {fmt!r} is not an RLAnything export "
                     f"(expected {BUNDLE_FORMAT!r} or {MULTI_FORMAT!r})")


def cmd_import(a) -> int:
    bundles = _read_bundles(a.file)
    if a.as_id is not None and len(bundles) != 1:
        raise InputError(f"--as {a.as_id}: {a.file} holds {len(bundles)} runs; --as needs exactly one")
    store = _open(a.db)
    ids = store.import_runs(bundles, [a.as_id] if a.as_id is not None else None)
    for run_id in ids:
        print(f"imported {run_id}")
    return 0


COMMANDS = {"run": cmd_run, "resume": cmd_resume, "runs": cmd_runs, "show": cmd_show, "presets": cmd_presets,
            "export": cmd_export, "import": cmd_import}


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    try:
        return COMMANDS[a.command](a)
    except (C.ConfigError, InputError, StoreError) as e:
        print(f"rla: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
