"""Starting and resuming a run in this process: claim the checkpoint folder, write or reclaim
the run row, then drive the Runner to the target (what `rla run` and `rla resume` do).

Torch is imported only inside these functions, so importing this module stays cheap for the
commands that never train. Invalid input raises InputError (exit 2) before the run row changes.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from .config import Config, from_dict
from .errors import ExecutorError, InputError
from .names import config_label, default_run_name, recorded_preset
from .output import say
from .paths import keep_games_beside
from .store import Store, open_store
from .vocabulary import LIVE, CommandOutcome, CommandResult, EventKind

from .commandline import UNOWNED_FLAG

if TYPE_CHECKING:
    from .loop.interfaces import RunLoop

# The engine waits this long for another process's write lock before its commit fails the run:
# long enough for any reader's write or a backup, bounded so that a hung writer is reported.
ENGINE_LOCK_WAIT_S = 300.0


def _say(line: str) -> None:
    say(line)


def _open_for_engine(db_path: Path, create: bool) -> Store:
    store = open_store(db_path, create=create)
    store.lock_wait_s = ENGINE_LOCK_WAIT_S
    return store


@contextlib.contextmanager
def claimed(store: Store, run_id: str, new: bool) -> Iterator[Path]:
    """Hold the run's one engine claim (an OS lock in its checkpoint folder) for the block; yield
    the folder. Taken before anything in the folder is touched, so that a second engine of the
    same run (twin starts, twin resumes) exits 2 having changed nothing. The folder is never a
    symbolic link, and never another database's."""
    from .paths import LOCK, RunBusy, checkpoints_dir, lock_run, make_private_dir, owned_by, unlock_run
    folder = checkpoints_dir(store.path, run_id)
    if folder.is_symlink():
        raise InputError(f"checkpoint folder {folder} is a symbolic link: a run's checkpoints are never written "
                         "or read through one (remove the link, or choose another run id)")
    if not new and not folder.is_dir():
        raise InputError(f"run {run_id} cannot be resumed: no checkpoint folder {folder}")
    try:
        if folder.exists() and not owned_by(folder, store.database_id, store.path):
            raise InputError(f"checkpoint folder {folder} belongs to another database"
                             + ("; choose another run id" if new else
                                " (an imported copy has no checkpoints of its own)"))
        if new:      # a resume never makes the folder again: a delete may have just removed it
            make_private_dir(folder)
    except OSError as e:
        raise InputError(f"cannot create the checkpoint folder {folder}: {e.strerror}"
                         f"{' (a file is in the way)' if isinstance(e, FileExistsError | NotADirectoryError) else ''}"
                         ) from None
    try:
        fd = lock_run(folder)
    except RunBusy as e:
        raise InputError(f"run {run_id} is in use: {e}; nothing was changed") from None
    except OSError as e:       # e.g. engine.lock replaced by a link (never followed)
        raise InputError(f"cannot take run {run_id}'s lock {folder / LOCK}: {e.strerror}") from None
    try:
        yield folder
    finally:
        unlock_run(fd)


def _clear_own_leftovers(folder: Path, owner, run_id: str) -> None:
    """A new run's folder may hold what an attempt of this same run killed before its run row was
    written left behind: those files (signed by this run of this database) are removed. Anything
    else is not this run's to delete: the start is refused, naming it."""
    from . import checkpoint
    from .paths import LOCK, OWNER
    from .runner import RESERVE_NAME
    foreign, ours = [], []
    for p in sorted(folder.iterdir()):
        if p.name in (OWNER, OWNER + ".tmp", LOCK, RESERVE_NAME) and not p.is_symlink():
            continue
        if checkpoint.is_tmp_name(p.name) and not p.is_symlink():
            ours.append(p)
        elif checkpoint.is_checkpoint_name(p.name) and not p.is_symlink() and checkpoint.owner_of(p) == owner:
            ours.append(p)
        else:
            foreign.append(p.name)
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise InputError(f"checkpoint folder {folder} holds files run {run_id} did not write ({shown}); "
                         "move them away, or choose another run id")
    for p in ours:
        p.unlink(missing_ok=True)


def check_models(cfg: Config) -> None:
    """A language-model run's model paths exist and are readable, checked before anything is
    created (exit code 2, naming the field); an embedded run has none."""
    from .tasks import family_kind
    if family_kind(cfg.task.family) != "text":
        return
    from .llm.sources import check_headers, check_source
    roles = [("policy.model_path", cfg.policy.model_path), ("judge.model_path", cfg.judge.model_path)]
    if cfg.env.strategy == "rlanything" and cfg.env.proposer != "procedural":
        roles.append(("env.model_path", cfg.env.model_path))
    roles = [(key, path) for key, path in roles if path]
    # every role's cheap check first: a missing judge folder is named at once, not after the
    # policy's screening has imported transformers (~3 s)
    for check in (check_source, check_headers):
        for key, path in roles:
            # headers and shapes only: a model a Ray actor would load is refused here, before any file
            reason = check(path)
            if reason is not None:
                raise InputError(f"invalid config: {key} = {path!r}: {reason}")


def start_run(db_path: Path, run_id: str, cfg: Config, *, name: str | None = None, preset: str | None = None,
              config_file: str | None = None, group: str | None = None,
              out: Callable[[str], None] = _say) -> int:
    """Create run `run_id` from `cfg` and train it to `cfg.run.iterations`; return the exit code.
    The preset or config file names the run when `name` is not given, and is recorded with it.

    Everything that can be refused is checked before a file is created: the name, the models,
    the device, an id already taken in an existing database."""
    name = check_text("--name", name or default_run_name(config_label(preset, config_file, cfg.task.family)))
    check_models(cfg)
    check_executor(cfg)
    if _exists(db_path):
        _refuse_taken(_open_for_engine(db_path, create=False), run_id)
    keep_games_beside(db_path)          # a path _exists refused never gets here
    from . import checkpoint            # torch (~1.5 s): only once nothing above refused the run
    trainer = make_run_loop(cfg, cfg.run.device, lambda e: f"invalid config: run.device = {cfg.run.device!r}: {e}")
    device = trainer.device
    try:
        store = _open_for_engine(db_path, create=True)
        with claimed(store, run_id, new=True) as folder:
            _refuse_taken(store, run_id)       # another engine may have made it since the first look
            owner = checkpoint.Owner(run_id, store.database_id)
            _clear_own_leftovers(folder, owner, run_id)
            store.mark_signed_checkpoints()
            # The starting state is checkpointed before the run row exists, so that every run a user
            # can see can be resumed, even one killed before its first iteration.
            checkpoint.save(folder, 0, trainer.state_dict(), cfg.run.keep_checkpoints, owner)
            store.create_run(run_id, name=name, preset=recorded_preset(run_id, preset, config_file),
                             config=cfg.to_dict(), device=str(device), group_id=group,
                             first_events=[(EventKind.STARTED, {"device": str(device),
                                                                "target": cfg.run.iterations,
                                                                "budget": cfg.run.env_step_budget})],
                             first_tasks=trainer.task_rows(live=False))
            out(f"run {run_id} ({name}) on {device}, database {store.path}")
            return drive(store, run_id, trainer, cfg.run.iterations, out)
    finally:
        trainer.close()      # a Ray executor's workers (and a cluster started for the run) go with it


def _exists(db_path: Path) -> bool:
    from .store.schema import expand, shorten
    path = expand(db_path)
    try:
        if path.is_symlink() and not path.exists():
            raise InputError(f"database path {path} is a symbolic link to {os.readlink(path)}, which does not exist")
        return path.exists()
    except OSError as e:       # a name too long for the file system, a folder we may not look in
        raise InputError(f"database path {shorten(str(db_path))}: {e.strerror}") from None


def _refuse_taken(store: Store, run_id: str) -> None:
    if store.run_exists(run_id):
        raise InputError(f"run id {run_id!r} already exists in {store.path}")


def check_text(field: str, text: str) -> str:
    """Text stored in the database must be UTF-8: a name given as undecodable bytes (which
    Python keeps as lone surrogates) is refused here, not by the database mid-start."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{field}: not valid UTF-8 text ({text.encode('utf-8', 'backslashreplace')[:80]!r})"
                         ) from None
    return text


def _resumable(store: Store, run_id: str, iterations: int | None) -> Config:
    """The config of a run that may be resumed here (it exists, its engine is gone)."""
    store.refresh_liveness()
    run = store.get_run(run_id)
    if run is None:
        raise InputError(f"no run {run_id!r} in {store.path}")
    if run["status"] in LIVE:
        raise InputError(f"run {run_id} is still {run['status']} (pid {run['pid']} on {run['host']})")
    if iterations is not None and iterations < 1:
        raise InputError(f"--iterations = {iterations}: must be ≥ 1")
    return from_dict(store.run_config(run_id))


def resume_run(db_path: Path, run_id: str, *, iterations: int | None = None, device: str | None = None,
               accept_unowned: bool = False, out: Callable[[str], None] = _say) -> int:
    """Continue a stopped, crashed or failed run from its newest usable checkpoint, `iterations`
    more (default: up to the run's own target), on `device` (default: the run's own); return
    the exit code. A database that signs its checkpoints loads no unsigned one for its runs
    unless `accept_unowned` (`rla resume` with UNOWNED_FLAG)."""
    store = _open_for_engine(db_path, create=False)
    cfg = _resumable(store, run_id, iterations)
    check_models(cfg)
    check_executor(cfg)
    keep_games_beside(store.path)
    from . import checkpoint            # torch (~1.5 s): only once nothing above refused the resume
    with claimed(store, run_id, new=False) as folder:
        cfg = _resumable(store, run_id, iterations)    # again under the claim: a twin may have resumed it
        checkpoint.clean_tmp(folder)
        wanted = device or cfg.run.device
        if device:
            cfg.run.device = device      # before the trainer: a Ray executor's workers are built from cfg
        committed = store.last_iteration(run_id)
        found = resume_point(folder, checkpoint.Owner(run_id, store.database_id), committed,
                             lambda: make_run_loop(cfg, wanted,
                                                  lambda e: f"cannot resume on {wanted}: {e} (try --device cpu)"),
                             unowned_ok=accept_unowned or not store.signs_checkpoints())
        trainer = found.trainer
        try:
            store.mark_signed_checkpoints()      # this engine's checkpoints are signed from here on
            k = trainer.iteration
            target = k + iterations if iterations else cfg.run.iterations
            store.claim_run(run_id, str(trainer.device))
            # commands left for the dead engine (a pause, a stop) are not orders for this one
            store.expire_commands(run_id, CommandResult(CommandOutcome.REJECTED,
                                                        "the engine restarted before applying it"))
            _record_resume_point(store, run_id, found, committed, out)
            store.write_tasks(run_id, trainer.task_rows(live=True))
            store.add_event(run_id, k, EventKind.RESUMED_FROM_CHECKPOINT,
                            {"checkpoint": found.path.name, "target": target})
            out(f"run {run_id} resumed at iteration {k} from {found.path.name}, target {target}")
            return drive(store, run_id, trainer, max(target, k), out, alert_state=found.alerts)
        finally:
            trainer.close()


def _record_resume_point(store: Store, run_id: str, found, committed: int, out: Callable[[str], None]) -> None:
    """Say, in one line and an event each, every checkpoint passed over, a history the database
    lost (it is behind the checkpoint) and the rows a rewind deletes."""
    k = found.trainer.iteration
    _record_skipped(store, run_id, min(k, committed), found.skipped, out)
    if k > committed:
        store.add_event(run_id, committed, EventKind.HISTORY_GAP,
                        {"database_iteration": committed, "checkpoint": found.path.name,
                         "missing": [committed + 1, k]})
        out(f"the database ends at iteration {committed} but the newest usable checkpoint is {found.path.name}: "
            f"iterations {committed + 1}–{k} are missing from the history (recorded as an event)")
        return
    gone = store.rewind(run_id, k, committed)
    if gone:
        what = f"iterations {k + 1}–{committed}" if committed > k else f"what came after iteration {k}"
        out(f"rewound run {run_id} to iteration {k}: deleted {gone} rows of {what} (recorded as an event)")


SKIPPED_ONE_BY_ONE = 5     # more files passed over than this are said in one event (names planted by the thousand)


def _record_skipped(store: Store, run_id: str, iteration: int, skipped: list[tuple[Path, str]],
                    out: Callable[[str], None]) -> None:
    """An event and a line per checkpoint passed over; beyond a few, one of each for them all,
    with how many and the first few as examples (the rest alike or worse: a folder full of
    planted names must not write thousands of rows on every resume)."""
    if len(skipped) <= SKIPPED_ONE_BY_ONE:
        for bad, reason in skipped:
            store.add_event(run_id, iteration, EventKind.CHECKPOINT_SKIPPED, {"checkpoint": bad.name, "reason": reason})
            out(f"skipped checkpoint {bad.name}: {reason}")
        return
    shown = "; ".join(f"{bad.name}: {reason}" for bad, reason in skipped[:3])
    store.add_event(run_id, iteration, EventKind.CHECKPOINT_SKIPPED,
                    {"checkpoint": f"{len(skipped)} files", "count": len(skipped), "reason": f"among them {shown}",
                     "examples": [{"checkpoint": bad.name, "reason": reason} for bad, reason in skipped[:3]]})
    out(f"skipped {len(skipped)} checkpoint files, among them {shown}")


class ResumePoint(NamedTuple):
    trainer: RunLoop
    path: Path
    skipped: list[tuple[Path, str]]
    alerts: str | None = None     # the runner's AlertWatcher state (absent before alerts existed)


def resume_point(folder: Path, owner, committed: int, make: Callable[[], RunLoop],
                 unowned_ok: bool = True) -> ResumePoint:
    """The checkpoint a resume continues from, loaded into a trainer `make` builds: the newest
    one that loads, is this run's, and fits the trainer, among those the database has reached
    (iteration ≤ `committed`: resuming there keeps the history whole); only if there is none,
    the newest usable one beyond (the database lost those iterations: a gap, said by the caller).
    Every file passed over is returned with its reason. `unowned_ok`: see checkpoint.load."""
    from . import checkpoint
    names = list(reversed(checkpoint.list_checkpoints(folder)))
    behind = [p for p in names if checkpoint.iteration_of(p) <= committed]
    ahead = [p for p in names if checkpoint.iteration_of(p) > committed]
    skipped: list[tuple[Path, str]] = []
    trainer: RunLoop | None = None
    try:
        for group in (behind, ahead):
            for path in group:
                try:
                    state = checkpoint.load(path, "cpu", owner, unowned_ok)
                except checkpoint.CheckpointError as e:
                    hint = f" ({UNOWNED_FLAG} loads it anyway)" if isinstance(e, checkpoint.Unsigned) else ""
                    skipped.append((path, e.reason + hint))
                    continue
                trainer = trainer or make()
                try:
                    trainer.load_state_dict(state)
                    if group is behind:     # never tried: the database had not reached them
                        skipped += [(p, _ahead(committed)) for p in ahead]
                    return ResumePoint(trainer, path, skipped, state.get("alerts"))
                except ExecutorError:
                    raise
                except (RuntimeError, KeyError, ValueError, TypeError) as e:
                    skipped.append((path, f"does not fit this run on {trainer.device}: {e}"))
                    trainer.close()       # a half-loaded trainer is no state to go on from
                    trainer = None
    except BaseException:
        if trainer is not None:
            trainer.close()
        raise
    if not skipped:
        raise InputError(f"run {folder.name} cannot be resumed: no checkpoint in {folder}")
    tried = "; ".join(f"{p.name}: {r}" for p, r in skipped)
    raise InputError(f"run {folder.name} cannot be resumed: no usable checkpoint in {folder}: {tried}")


def _ahead(committed: int) -> str:
    return f"ahead of the database, whose last committed iteration is {committed}"


def drive(store: Store, run_id: str, trainer: RunLoop, target: int, out: Callable[[str], None] = _say,
          alert_state: str | None = None) -> int:
    """Run the trainer to `target` under a Runner (commands, heartbeat, checkpoints); its exit code.
    `alert_state`: a resume's, from its checkpoint. The caller closes the trainer."""
    from .runner import Runner
    return Runner(store, run_id, trainer, target, out=out, alert_state=alert_state).run()


def check_executor(cfg: Config) -> None:
    """A Ray run needs Ray installed: said before anything is created (exit code 2)."""
    import importlib.util
    if cfg.executor.kind == "ray" and importlib.util.find_spec("ray") is None:
        raise InputError("invalid config: executor.kind = 'ray': Ray is not installed "
                         "(pip install 'rlanything[ray]')")


def make_run_loop(cfg: Config, device: str, unusable: Callable[[Exception], str]) -> RunLoop:
    """The run's loop: a Trainer in this process on `device`, or, with executor.distribute = run
    on Ray, a handle on one the cluster places (its device is chosen there). `unusable` words a
    device this process cannot use as the one line the command prints."""
    if cfg.executor.kind == "ray" and cfg.executor.distribute == "run":
        from .loop.remote_run import RemoteTrainer
        cfg.run.device = device
        return RemoteTrainer(cfg)
    from .loop.device import resolve_device   # torch from here on
    from .loop.trainer import Trainer
    try:
        where = resolve_device(device)
    except InputError as e:
        raise InputError(unusable(e)) from None
    return Trainer(cfg, where)
