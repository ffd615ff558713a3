"""The `rla` command (DESIGN §5): its arguments, the engine function each command calls, and
what it prints. Exit codes: 0 done, 2 invalid input (one line, no traceback), 1 runtime failure
(the run is marked failed). Torch is imported only by `run` and `resume` (rla_engine.launch)."""
from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from . import metrics
from .ablation.arms import ARMS
from .config import ConfigError, build, preset_description, preset_names
from .errors import ExecutorError, InputError
from .export import DATA_FORMATS
from .export.bundles import read_bundles
from .export.command import run_export
from .export.renderer import MISSING, renderer_command
from .launch import resume_run, start_run
from .paths import UnsafeRunId, check_run_id, default_db_path
from .store import StoreError, new_run_id, open_store
from .summary import SUMMARY_KEYS, run_duration
from .vocabulary import EventKind, TaskStatus


class _Parser(argparse.ArgumentParser):
    """Usage mistakes are invalid input like any other: one line, exit 2 (no usage block)."""

    def error(self, message: str):
        raise InputError(f"{self.prog}: {message} (see `{self.prog} --help`)")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="rla", description="RLAnything engine: run, resume, inspect, export and import runs.")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="start a run")
    run.add_argument("--preset", help="a preset name (see `rla presets`)")
    run.add_argument("--config", help="a TOML config file (applied over the preset, if both are given)")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="override one key, e.g. policy.lam=0")
    run.add_argument("--iterations", type=int)
    run.add_argument("--seed", type=int)
    run.add_argument("--device", choices=("auto", "cpu", "cuda"))
    run.add_argument("--name")
    run.add_argument("--run-id", help=argparse.SUPPRESS)     # given by the console
    run.add_argument("--group", help="group id shared by related runs (an ablation)")
    run.add_argument("--executor", choices=("local", "ray"), help="where the work runs (executor.kind)")

    abl = sub.add_parser("ablate", help="run the arms of an ablation at an equal environment-step budget under one "
                                        "group (a rerun resumes it) and print its results table")
    abl.add_argument("--preset", help="the base configuration every arm shares (see `rla presets`)")
    abl.add_argument("--config", help="a TOML base configuration (applied over the preset, if both are given)")
    abl.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one shared key")
    abl.add_argument("--seeds", required=True, help="seeds, e.g. 0,1,2 (every arm runs every seed)")
    abl.add_argument("--budget", required=True, type=int, metavar="ENV_STEPS",
                     help="environment steps per run; a run stops once it has taken them")
    abl.add_argument("--arms", help=f"comma-separated arms (default: all of {', '.join(ARMS)})")
    abl.add_argument("--group", help="the group id (default: ablate-<preset>-<budget>); runs are <group>.<arm>.s<seed>")
    abl.add_argument("--jobs", type=int, help="runs at a time (default: 1, each using one core; with --executor ray "
                                              "as many as the cluster holds)")
    abl.add_argument("--executor", choices=("local", "ray"),
                     help="ray: every run's loop is an actor the Ray cluster places (executor.address, "
                          "else a cluster started here); the rows still come to this database")
    abl.add_argument("--out", help="where the table is saved (default: <group>.md, with <group>.json and "
                                   "the runs' logs in <group>.logs/)")

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
    for sp in (run, abl, res, runs, show, exp, imp):
        sp.add_argument("--db", help="database file (default: $RLA_DB or the user data dir)")
    return p


def _db_path(db: str | None) -> Path:
    return Path(db) if db else default_db_path()


def _open(db: str | None, create: bool = True):
    return open_store(_db_path(db), create=create)


def _run_id(text: str) -> str:
    try:
        return check_run_id(text)
    except UnsafeRunId as e:
        raise InputError(str(e)) from None


# -- run / resume ---------------------------------------------------------------------------
def cmd_run(a) -> int:
    sets = [*a.set, *([f"executor.kind={a.executor}"] if a.executor else [])]
    cfg = build(preset=a.preset, config_file=a.config, sets=sets,
                iterations=a.iterations, seed=a.seed, device=a.device)
    run_id = _run_id(a.run_id) if a.run_id is not None else new_run_id()
    return start_run(_db_path(a.db), run_id, cfg, name=a.name, preset=a.preset, config_file=a.config,
                     group=a.group)


def cmd_ablate(a) -> int:
    from .ablation import arms as ablation_arms
    from .ablation import execute, results
    where = {"ray": ["executor.kind=ray", "executor.distribute=run"], "local": ["executor.kind=local"]}
    base = build(preset=a.preset, config_file=a.config, sets=[*a.set, *where.get(a.executor, [])])
    seeds, arms = ablation_arms.parse_seeds(a.seeds), ablation_arms.parse_arms(a.arms)
    if a.jobs is not None and a.jobs < 1:
        raise InputError(f"--jobs {a.jobs}: must be ≥ 1")
    label = a.preset or (Path(a.config).stem if a.config else base.task.family)
    group = ablation_arms.check_group(a.group or f"ablate-{label}-{a.budget}")
    planned = ablation_arms.plan(base, group, arms, seeds, a.budget)
    store = _open(a.db)
    out = Path(a.out) if a.out else Path(f"{group}.md")
    print(f"ablation {group}: {len(arms)} arms × {len(seeds)} seeds, {a.budget:,} environment steps per run, "
          f"database {store.path}", flush=True)
    say = lambda line: print(line, flush=True)   # noqa: E731
    if base.executor.kind == "ray":
        from .ablation import cluster
        with cluster.joined(base, a.jobs, say) as (jobs, env):
            failed = execute.execute(store, planned, group, jobs=jobs, log_dir=out.with_suffix(".logs"),
                                     say=say, preset=a.preset, env=env)
    else:
        failed = execute.execute(store, planned, group, jobs=a.jobs or 1, log_dir=out.with_suffix(".logs"),
                                 say=say, preset=a.preset)
    table = results.collect(store, planned)
    seeds_text = ",".join(map(str, seeds))
    text = results.markdown(table, f"{group}: {label}, {a.budget:,} environment steps per run, seeds {seeds_text}")
    print(text)
    out.write_text(text, encoding="utf-8")
    meta = {"group": group, "base": label, "budget": a.budget, "seeds": seeds, "arms": arms,
            "base_config": base.to_dict()}
    out.with_suffix(".json").write_text(results.as_json(table, meta), encoding="utf-8")
    print(f"saved {out} and {out.with_suffix('.json')}")
    figures = renderer_command(name="ablation")
    if figures is not None:       # the learning curves and the Theorem-1 check, drawn by the console package
        subprocess.run([*figures, "--db", str(store.path), "--group", group, "--out", str(out.with_suffix(""))])
    return 1 if failed else 0


def cmd_resume(a) -> int:
    return resume_run(_db_path(a.db), _run_id(a.run_id), iterations=a.iterations, device=a.device)


# -- reading ------------------------------------------------------------------------------
def _summary(store, run: dict) -> dict:
    latest = store.latest_metrics(run["id"])
    duration = run_duration(run)
    return {"id": run["id"], "name": run["name"], "status": run["status"], "preset": run["preset"],
            "iteration": run["iteration"], "started_at": run["started_at"],
            "duration_s": round(duration, 1) if duration is not None else None,
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
        f = lambda k, r=r: "  -  " if r[k] is None else f"{r[k]:5.2f}"   # noqa: E731
        print(f"{r['id']:<22} {r['status']:<9} {r['iteration']:>6} {f(metrics.SUCCESS):>7} {f(metrics.EVAL_SUCCESS)} "
              f"{f(metrics.MU)} {f(metrics.DIFFICULTY_MEAN)}  {r['name']}")
    return 0


def cmd_show(a) -> int:
    store = _open(a.db, create=False)
    store.refresh_liveness()
    run = store.get_run(a.run_id)
    if run is None:
        raise InputError(f"no run {a.run_id!r} in {store.path}")
    try:
        config: dict | None = store.run_config(a.run_id)
        config_error = None
    except StoreError as e:       # show the rest of a damaged run
        config, config_error = None, str(e)
    info = {"run": {k: v for k, v in run.items() if k not in ("config_json", "pid_start")},
            "config": config, "latest": store.latest_metrics(a.run_id),
            "pool": store.tasks(a.run_id, statuses=[TaskStatus.ACTIVE, TaskStatus.PENDING]),
            "events": store.events(a.run_id)[-20:]}
    if a.json:
        print(json.dumps(info, indent=2, default=str))
        return 0
    print(f"{run['id']}  {run['name']}\n  status {run['status']}  iteration {run['iteration']}  "
          f"device {run['device']}  preset {run['preset'] or '-'}")
    if run["error"]:
        print(f"  error: {run['error']}")
    if config_error:
        print(f"  config: {config_error}")
    for k in sorted(info["latest"]):
        if not k.startswith(metrics.TIMING_PREFIX):
            print(f"  {k:<26} {info['latest'][k]:.4g}")
    active = [t for t in info["pool"] if t["status"] == TaskStatus.ACTIVE]
    pending = len(info["pool"]) - len(active)
    if active:
        diffs = [t["difficulty"] for t in active]
        print(f"  pool: {len(active)} slots, difficulty {min(diffs):.2f}–{max(diffs):.2f} "
              f"(mean {sum(diffs) / len(diffs):.2f}), {pending} pending")
    for event in info["events"]:
        if event["kind"] != EventKind.EPISODE:
            print(f"  [{event['iteration']:>5}] {event['kind']} {json.dumps(event['payload'])[:100]}")
    return 0


def cmd_presets(_a) -> int:
    for name in preset_names():
        print(f"{name:<12} {preset_description(name)}")
    return 0


# -- export / import ------------------------------------------------------------------------
def cmd_export(a) -> int:
    """CSV and JSON are written here; HTML and PDF by the registered renderer in a subprocess (it
    imports Qt, which this process never does), whose exit code (0 / 2 / 1) is ours."""
    db = Path(a.db).expanduser() if a.db else default_db_path()
    if a.format in DATA_FORMATS:
        code, line = run_export(db, a.run_ids, a.format, a.out, force=a.force)
        print(line, file=sys.stdout if code == 0 else sys.stderr)
        return code
    renderer = renderer_command()
    if renderer is None:
        print(f"rla: {MISSING}", file=sys.stderr)
        return 1
    cmd = [*renderer, "--db", str(db), "--format", a.format, "--out", a.out]
    if a.force:
        cmd.append("--force")
    return subprocess.run([*cmd, "--", *a.run_ids]).returncode


def cmd_import(a) -> int:
    bundles = read_bundles(a.file)
    if a.as_id is not None and len(bundles) != 1:
        raise InputError(f"--as {a.as_id}: {a.file} holds {len(bundles)} runs; --as needs exactly one")
    store = _open(a.db)
    ids = store.import_runs(bundles, [a.as_id] if a.as_id is not None else None)
    for run_id in ids:
        print(f"imported {run_id}")
    return 0


COMMANDS = {"run": cmd_run, "ablate": cmd_ablate, "resume": cmd_resume, "runs": cmd_runs, "show": cmd_show,
            "presets": cmd_presets, "export": cmd_export, "import": cmd_import}


def main(argv: list[str] | None = None) -> int:
    try:
        a = _parser().parse_args(argv)
        return COMMANDS[a.command](a)
    except (ConfigError, InputError, StoreError) as e:
        print(f"rla: {_one_line(e)}", file=sys.stderr)
        return 2
    except ExecutorError as e:                # the cluster could not start the run's workers
        print(f"rla: {_one_line(e)}", file=sys.stderr)
        return 1
    except (OSError, sqlite3.Error) as e:     # a runtime failure outside a run (a run reports its own)
        print(f"rla: {type(e).__name__}: {_one_line(e)}", file=sys.stderr)
        return 1


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())


if __name__ == "__main__":
    sys.exit(main())
