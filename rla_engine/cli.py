"""The `rla` command (DESIGN §5): its arguments, the engine function each command calls, and
what it prints. Exit codes: 0 done, 2 invalid input (one line, no traceback), 1 runtime failure
(the run is marked failed). Torch is imported only by `run` and `resume` (rla_engine.launch), and
the store (sqlite_utils, numpy: about 0.2 s) only by a command that gets as far as its database:
input refused before that is answered without them."""
from __future__ import annotations

from .output import quiet_while_starting

# Ctrl-C from here until main() is inside its `try` (the imports below, ~0.1 s): one line, no
# traceback (a process that only imports this module, a test, keeps that until it calls main())
_started = quiet_while_starting("rla")

import argparse
import json
import math
import sqlite3
import subprocess
import sys
from pathlib import Path

from . import metrics
from .ablation.arms import ARMS, DIAGNOSTIC_ARMS
from .alerts import describe, open_alerts
from .config import ConfigError, build, preset_description, preset_names
from .errors import ExecutorError, InputError, StoreError
from .export import FORMATS, ExportInputError
from .export.command import (PROG, RendererMissing, added_charts, chart_json_option, chart_option, render_command,
                             run_export, run_renderer)
from .export.renderer import renderer_command
from .commandline import UNOWNED_FLAG
from .names import config_label, default_group
from .output import say
from .ablation.arms import check_group
from .paths import RunBusy, UnsafeRunId, check_run_id, default_db_path, lock_group, unlock_run
from .sandbox import command as sandbox_command
from .spread import mean_std
from .text import json_safe, printable, shown
from .vocabulary import LIVE, EventKind, TaskStatus


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
    abl.add_argument("--arms", help=f"comma-separated arms of {', '.join(ARMS)} (default: all but the "
                                    f"diagnostic {', '.join(DIAGNOSTIC_ARMS)})")
    abl.add_argument("--group", help="the group id (default: ablate-<preset>-<budget>); runs are <group>.<arm>.s<seed>")
    abl.add_argument("--jobs", type=int, help="runs at a time (default: 1, each using one core; with --executor ray "
                                              "as many as the cluster holds)")
    abl.add_argument("--executor", choices=("local", "ray"),
                     help="ray: every run's loop is an actor the Ray cluster places (executor.address, "
                          "else a cluster started here); the rows still come to this database")
    abl.add_argument("--out", help="where the table is saved (default: <group>.md, with <group>.json, the "
                                   "figures <group>.curves.png and .theory.png, and the runs' logs in <group>.logs/)")
    abl.add_argument("--force", action="store_true", help="replace existing files that are not this group's own "
                                                          "table (a rerun of the group refreshes its own without it)")

    res = sub.add_parser("resume", help="continue a stopped, crashed or failed run from its last checkpoint")
    res.add_argument("run_id")
    res.add_argument("--iterations", type=int, help="run N more iterations (default: up to the run's target)")
    res.add_argument("--device", choices=("auto", "cpu", "cuda"), help="where to continue (default: the run's own)")
    res.add_argument(UNOWNED_FLAG, action="store_true",
                     help="load a checkpoint that names no owner (an older version's, or one stripped of its "
                          "signature) although this database signs its own: it may come from another run or database")
    sandbox_command.add_parser(sub)
    doc = sub.add_parser("doctor", help="find what deleted runs left (rows of no run, checkpoint folders); "
                                        "--fix removes it")
    doc.add_argument("--fix", action="store_true", help="remove what was found")

    runs = sub.add_parser("runs", help="list runs")
    runs.add_argument("--json", action="store_true")
    runs.add_argument("--all", action="store_true", help="include archived runs")
    show = sub.add_parser("show", help="show one run")
    show.add_argument("run_id")
    show.add_argument("--json", action="store_true")
    sub.add_parser("presets", help="list presets")
    exp = sub.add_parser("export", help="export runs: an HTML/PDF report (several runs: a comparison) "
                                        "or CSV/Parquet/JSON data")
    exp.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    exp.add_argument("--format", required=True, choices=FORMATS)
    exp.add_argument("--out", required=True, help="output file; CSV and Parquet also write the events "
                                                  "beside it (OUT.csv -> OUT.events.csv, "
                                                  "OUT.parquet -> OUT.events.parquet)")
    exp.add_argument("--force", action="store_true", help="overwrite existing files")
    exp.add_argument("--chart", action="append", dest="charts", default=[], metavar="KEY[,KEY…]", type=chart_option,
                     help="HTML/PDF: add a chart of these metric keys (repeat for several), as the console's "
                          "Add chart… does")
    exp.add_argument("--chart-json", action="append", dest="charts", metavar="JSON", type=chart_json_option,
                     help="as --chart, the keys as a JSON list, exactly: '[\"a,b\", \"-x\"]' (commas, spaces, dashes)")
    imp = sub.add_parser("import", help="import runs from a JSON export into this database")
    imp.add_argument("file")
    imp.add_argument("--as", dest="as_id", metavar="RUN_ID", help="store the (single) run under this id")
    srv = sub.add_parser("serve", help="serve this machine's database to a console on another machine, over the "
                                       "SSH connection that console opened (the console starts it: `rla-gui --db "
                                       "ssh://host/path/to/runs.db`)")
    srv.add_argument("--stdio", action="store_true", required=True,
                     help="speak the console's protocol on stdin/stdout (the only way: nothing listens on a port)")
    srv.add_argument("--create", action="store_true",
                     help="make the database if there is none at --db (else a missing one is refused: a mistyped path)")
    for sp in (run, abl, res, runs, show, exp, imp, doc, srv):
        sp.add_argument("--db", help="database file (default: $RLA_DB or the user data dir)")
    return p


def _db_path(db: str | None) -> Path:
    return Path(db) if db else default_db_path()


def _open(db: str | None, create: bool = True):
    from .store import open_store
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
    run_id = _run_id(a.run_id) if a.run_id is not None else None
    group = None if a.group is None else check_group(a.group)     # the rule `rla ablate` applies
    from .launch import start_run
    from .store import new_run_id
    return start_run(_db_path(a.db), run_id or new_run_id(), cfg, name=a.name, preset=a.preset, config_file=a.config,
                     group=group)


def cmd_ablate(a) -> int:
    from .ablation import arms as ablation_arms
    from .ablation import outputs as ablation_outputs
    where = {"ray": ["executor.kind=ray", "executor.distribute=run"], "local": ["executor.kind=local"]}
    base = build(preset=a.preset, config_file=a.config, sets=[*a.set, *where.get(a.executor, [])])
    seeds, arms = ablation_arms.parse_seeds(a.seeds), ablation_arms.parse_arms(a.arms)
    if a.jobs is not None and a.jobs < 1:
        raise InputError(f"--jobs {a.jobs}: must be ≥ 1")
    label = config_label(a.preset, a.config, base.task.family)
    group = ablation_arms.check_group(a.group or default_group(label, a.budget))
    planned = ablation_arms.plan(base, group, arms, seeds, a.budget)
    out = Path(a.out) if a.out else Path(f"{group}.md")
    ablation_outputs.check_outputs_for(out, group, a.force, _db_path(a.db))   # a bad --out creates nothing
    store = _open(a.db)
    try:
        claim = lock_group(store.path, group)
    except RunBusy as e:
        raise InputError(f"group {group} is being run by {e.who} ({e.holder}); nothing was changed") from None
    try:
        # every output is checked before the first run starts: a bad --out costs nothing
        outputs = ablation_outputs.plan_outputs(out, group, a.force, store.path)
        return _ablate(a, store, base, planned, group, label, seeds, arms, outputs)
    finally:
        unlock_run(claim)


def _ablate(a, store, base, planned, group: str, label: str, seeds: list[int], arms: list[str], outputs) -> int:
    from .ablation import execute, results
    from .ablation import outputs as ablation_outputs
    print(f"ablation {group}: {len(arms)} arms × {len(seeds)} seeds, {a.budget:,} environment steps per run, "
          f"database {store.path}", flush=True)
    say = lambda line: print(line, flush=True)   # noqa: E731
    if base.executor.kind == "ray":
        from .ablation import cluster
        with cluster.joined(base, a.jobs, say) as (jobs, env):
            failed = execute.execute(store, planned, group, jobs=jobs, log_dir=outputs.logs,
                                     say=say, preset=a.preset, env=env)
    else:
        failed = execute.execute(store, planned, group, jobs=a.jobs or 1, log_dir=outputs.logs,
                                 say=say, preset=a.preset)
    table = results.collect(store, planned)
    seeds_text = ",".join(map(str, seeds))
    text = results.markdown(table, f"{group}: {label}, {a.budget:,} environment steps per run, seeds {seeds_text}")
    print(text)
    meta = {"group": group, "base": label, "budget": a.budget, "seeds": seeds, "arms": arms,
            "base_config": base.to_dict()}
    ablation_outputs.save(outputs, text, results.as_json(table, meta))
    print(f"saved {outputs.table} and {outputs.data}")
    figures = renderer_command(name="ablation")
    if figures is not None:       # the learning curves and the Theorem-1 check, drawn by the console package
        prefix = str(outputs.table.with_suffix(""))
        subprocess.run([*figures, "--db", str(store.path), "--group", group, "--out", prefix,
                        *(["--force"] if outputs.replace else [])])
    return 1 if failed else 0


def cmd_resume(a) -> int:
    run_id = _run_id(a.run_id)
    from .launch import resume_run
    return resume_run(_db_path(a.db), run_id, iterations=a.iterations, device=a.device,
                      accept_unowned=a.accept_unowned_checkpoints)


def cmd_doctor(a) -> int:
    from .doctor import examine
    store = _open(a.db, create=False)
    print(f"database {store.path}")
    for line in examine(store, fix=a.fix).lines(fixed=a.fix):
        print(printable(line))
    return 0


# -- reading ------------------------------------------------------------------------------
# Every run, task and event row may have been edited by hand: the store reads what it cannot as a
# stand-in and names the column in the row's `damaged`; these commands show such a value as `?`
# (a status as `damaged`), say which columns in `show`, and list the rest of the history as usual.
# Every stored string reaches the terminal through `printable` (a name may hold `\x1b[2J`).
def _summary(store, run: dict) -> dict:
    from .summary import SUMMARY_KEYS, run_duration
    latest = store.latest_metrics(run["id"])
    duration = run_duration(run)
    out = {"id": run["id"], "name": run["name"], "status": run["status"], "preset": run["preset"],
           "iteration": run["iteration"], "started_at": run["started_at"],
           "duration_s": round(duration, 1) if duration is not None else None,
           **{k: latest.get(k) for k in SUMMARY_KEYS}}
    if run.get("damaged"):
        out["damaged"] = run["damaged"]
    return out


def cmd_runs(a) -> int:
    from .summary import figure
    store = _open(a.db, create=False)
    store.refresh_liveness()
    rows = [_summary(store, r) for r in store.list_runs(include_archived=a.all)]
    if a.json:
        print(json.dumps(json_safe(rows), indent=2, allow_nan=False))
        return 0
    head = f"{'id':<22} {'status':<9} {'iter':>6} {'success':>7} {'eval':>5} {'μ':>5} {'diff':>5}  name"
    print(head)
    for r in rows:
        def f(k, r=r):
            v = r[k]
            return "  -  " if v is None else f"{figure(v, 2, grouped=False):>5}" if math.isfinite(v) else "  ?  "
        damaged = f"  [damaged: {', '.join(r['damaged'])}]" if r.get("damaged") else ""
        print(f"{shown(r, 'id'):<22} {shown(r, 'status'):<9} {shown(r, 'iteration'):>6} {f(metrics.SUCCESS):>7} "
              f"{f(metrics.EVAL_SUCCESS)} {f(metrics.MU)} {f(metrics.DIFFICULTY_MEAN)}  {shown(r, 'name')}{damaged}")
    return 0


def _print_finals(latest: dict) -> None:
    from .summary import FINAL
    if latest:
        print(f"  {FINAL.name} values ({FINAL.definition}):")
    for k in sorted(latest):
        if not k.startswith(metrics.TIMING_PREFIX):
            v = latest[k]
            print(f"  {printable(k):<26} " + (f"{v:.4g}" if math.isfinite(v) else "?"))


def cmd_show(a) -> int:
    from .summary import figure
    store = _open(a.db, create=False)
    store.refresh_liveness()
    run = store.get_run(a.run_id)
    if run is None:
        raise InputError(f"no run {a.run_id!r} in {store.path}")
    run_id = run["id"]       # as stored (a.run_id may be the printed form of an odd id)
    try:
        config: dict | None = store.run_config(a.run_id, damaged_ok=True)
        config_error = None
    except StoreError as e:       # show the rest of a damaged run
        config, config_error = None, str(e)
    events = store.events(run_id)
    info = {"run": {k: v for k, v in run.items() if k not in ("config_json", "pid_start")},
            "config": config, "latest": store.latest_metrics(run_id),
            "pool": store.tasks(run_id, statuses=[TaskStatus.ACTIVE, TaskStatus.PENDING]),
            "events": events[-20:], "unreadable_rows": store.damage_counts(run_id),
            # what is active now, or was when the run ended (its end clears every alert)
            "alerts": open_alerts(events, at_end=True)}
    if a.json:
        print(json.dumps(json_safe(info), indent=2, allow_nan=False))
        return 0
    damaged, unreadable = run.get("damaged"), info["unreadable_rows"]
    for line in (
            f"{shown(run, 'id')}  {shown(run, 'name')}",
            f"  status {shown(run, 'status')}  iteration {shown(run, 'iteration')}  "
            f"device {shown(run, 'device', '-')}  preset {shown(run, 'preset') or '-'}",
            damaged and ("  damaged: " + ", ".join(f"{column} (stored {printable(what)})" for column, what in
                                                   damaged.items())
                         + "; shown as ?, and the run is not resumed until its row is repaired"),
            unreadable and "  unreadable rows: " + ", ".join(f"{n} {table}" for table, n in unreadable.items()),
            run["error"] and f"  error: {shown(run, 'error')}",
            config_error and f"  config: {printable(config_error)}"):
        if line:
            print(line)
    ended = "" if run["status"] in LIVE else " (active when the run ended)"
    for alert in info["alerts"].values():
        print(f"  alert{ended}: {printable(describe(alert))}")
    _print_finals(info["latest"])
    active = [t for t in info["pool"] if t["status"] == TaskStatus.ACTIVE]
    pending = len(info["pool"]) - len(active)
    if active:
        diffs = [t["difficulty"] for t in active if t["difficulty"] is not None]
        lost = f", {len(active) - len(diffs)} unreadable" if len(diffs) < len(active) else ""
        mean = mean_std(diffs).mean         # None: no float holds it (hand-edited rows)
        mean_text = "?" if mean is None else figure(mean, 2)
        spread = (f"difficulty {figure(min(diffs), 2)}–{figure(max(diffs), 2)} (mean {mean_text}{lost})"
                  if diffs else "difficulty unreadable")
        print(f"  pool: {len(active)} slots, {spread}, {pending} pending")
    for event in info["events"]:
        if event["kind"] != EventKind.EPISODE:
            payload = json.dumps(json_safe(event["payload"]))[:100]
            print(f"  [{shown(event, 'iteration'):>5}] {shown(event, 'kind')} {printable(payload)}")
    return 0


def cmd_presets(_a) -> int:
    for name in preset_names():
        print(f"{name:<12} {preset_description(name)}")
    return 0


# -- export / import ------------------------------------------------------------------------
def cmd_export(a) -> int:
    """CSV, Parquet and JSON are written here; HTML and PDF by the registered renderer in a
    subprocess (it imports Qt, which this process never does), whose exit code (0 / 2 / 1) is ours."""
    db = Path(a.db).expanduser() if a.db else default_db_path()
    try:
        renderer = render_command(db, a.run_ids, a.format, a.out, a.force, added_charts(a.charts))
    except RendererMissing as e:
        print(f"rla: {e}", file=sys.stderr)
        return 1
    except ExportInputError as e:      # a refused target: checked before any renderer starts
        print(f"{PROG}: {_one_line(e)}", file=sys.stderr)
        return 2
    if renderer is None:
        code, line = run_export(db, a.run_ids, a.format, a.out, force=a.force)
        print(line, file=sys.stdout if code == 0 else sys.stderr)
        return code
    code, out, err = run_renderer(renderer)
    for text, to_stderr in ((out, False), (err, True)):    # the renderer's line(s), or the interrupt's
        if text:
            say(text.rstrip("\n"), err=to_stderr)
    return code


def cmd_serve(a) -> int:
    from .remote.server import main as serve
    return serve(str(_db_path(a.db)), create=a.create)


def cmd_import(a) -> int:
    from .export.bundles import read_bundles
    bundles = read_bundles(a.file)
    if a.as_id is not None and len(bundles) != 1:
        raise InputError(f"--as {a.as_id}: {a.file} holds {len(bundles)} runs; --as needs exactly one")
    store = _open(a.db)
    ids = store.import_runs(bundles, [a.as_id] if a.as_id is not None else None)
    for run_id in ids:
        print(f"imported {run_id}")
    return 0


COMMANDS = {"run": cmd_run, "ablate": cmd_ablate, "resume": cmd_resume, "runs": cmd_runs, "show": cmd_show,
            "presets": cmd_presets, "export": cmd_export, "import": cmd_import, "doctor": cmd_doctor,
            "serve": cmd_serve, "sandbox": sandbox_command.main}


def main(argv: list[str] | None = None) -> int:
    try:
        # Ctrl-C is a KeyboardInterrupt again, answered below: restored here, not at the end of the
        # imports, so that none lands between the two, where it would end in a traceback
        _started()
        a = _parser().parse_args(argv)
        return COMMANDS[a.command](a)
    except StoreError as e:
        hint = f" ({e.hint})" if e.hint else ""
        print(f"rla: {_one_line(e)}{hint}", file=sys.stderr)
        return 2
    except (ConfigError, InputError) as e:
        print(f"rla: {_one_line(e)}", file=sys.stderr)
        return 2
    except ExecutorError as e:                # the cluster could not start the run's workers
        print(f"rla: {_one_line(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:                 # Ctrl-C outside a run (a run stops itself at a boundary)
        say("rla: interrupted", err=True)
        return 130
    except BrokenPipeError:                   # `rla show … | head`: the reader had what it wanted
        say("", err=False)                    # points stdout at /dev/null, so exiting flushes nothing
        return 0
    except (OSError, sqlite3.Error) as e:     # a runtime failure outside a run (a run reports its own)
        print(f"rla: {type(e).__name__}: {_one_line(e)}", file=sys.stderr)
        return 1


def _one_line(e: BaseException) -> str:
    return printable(" ".join(str(e).split()))     # a message may quote stored text (a name, a host)


if __name__ == "__main__":
    sys.exit(main())
