"""Starting and resuming a run in this process: claim the checkpoint folder, write or reclaim
the run row, then drive the Runner to the target (what `rla run` and `rla resume` do).

Torch is imported only inside these functions, so importing this module stays cheap for the
commands that never train. Invalid input raises InputError (exit 2) before the run row changes.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from .config import Config, from_dict
from .errors import ExecutorError, InputError
from .store import Store, open_store
from .vocabulary import LIVE, EventKind

# The engine waits this long for another process's write lock before its commit fails the run:
# long enough for any reader's write or a backup, bounded so that a hung writer is reported.
ENGINE_LOCK_WAIT_S = 300.0


def _say(line: str) -> None:
    print(line, flush=True)


def _open_for_engine(db_path: Path, create: bool) -> Store:
    store = open_store(db_path, create=create)
    store.lock_wait_s = ENGINE_LOCK_WAIT_S
    return store


def checkpoint_folder(store: Store, run_id: str) -> Path:
    """The run's checkpoint folder, made (for this user only) and claimed for this database. A
    leftover from an attempt killed before its run row was written is emptied; a folder of
    another database's run with this id is refused."""
    from . import checkpoint
    from .paths import checkpoints_dir, claim, owned_by
    folder = checkpoints_dir(store.path, run_id)
    try:
        if folder.exists() and not owned_by(folder, store.path):
            raise InputError(f"checkpoint folder {folder} belongs to another database; choose another run id")
        for old in checkpoint.list_checkpoints(folder):
            old.unlink()
        claim(folder, store.path)
    except OSError as e:
        raise InputError(f"cannot create the checkpoint folder {folder}: {e.strerror}"
                         f"{' (a file is in the way)' if isinstance(e, FileExistsError | NotADirectoryError) else ''}"
                         ) from None
    return folder


def check_models(cfg: Config) -> None:
    """A language-model run's model paths exist and are readable, checked before anything is
    created (exit code 2, naming the field); an embedded run has none."""
    from .tasks import family_kind
    if family_kind(cfg.task.family) != "text":
        return
    from .llm.sources import check_source
    roles = [("policy.model_path", cfg.policy.model_path), ("judge.model_path", cfg.judge.model_path)]
    if cfg.env.strategy == "rlanything" and cfg.env.proposer != "procedural":
        roles.append(("env.model_path", cfg.env.model_path))
    for key, path in roles:
        reason = check_source(path) if path else None
        if reason is not None:
            raise InputError(f"invalid config: {key} = {path!r}: {reason}")


def start_run(db_path: Path, run_id: str, cfg: Config, *, name: str | None = None, preset: str | None = None,
              config_file: str | None = None, group: str | None = None,
              out: Callable[[str], None] = _say) -> int:
    """Create run `run_id` from `cfg` and train it to `cfg.run.iterations`; return the exit code.
    The preset or config file names the run when `name` is not given, and is recorded with it."""
    from . import checkpoint
    check_models(cfg)
    check_executor(cfg)
    store = _open_for_engine(db_path, create=True)
    if store.run_exists(run_id):
        raise InputError(f"run id {run_id!r} already exists in {store.path}")
    folder = checkpoint_folder(store, run_id)
    label = preset or (Path(config_file).stem if config_file else cfg.task.family)
    name = name or f"{label} {time.strftime('%Y-%m-%d %H:%M')}"
    trainer = make_trainer(cfg, cfg.run.device, lambda e: f"invalid config: run.device = {cfg.run.device!r}: {e}")
    device = trainer.device
    try:
        # The starting state is checkpointed before the run row exists, so that every run a user
        # can see can be resumed, even one killed before its first iteration.
        checkpoint.save(folder, 0, trainer.state_dict(), cfg.run.keep_checkpoints)
        store.create_run(run_id, name=name, preset=preset or (Path(config_file).name if config_file else ""),
                         config=cfg.to_dict(), device=str(device), group_id=group,
                         first_events=[(EventKind.STARTED, {"device": str(device), "target": cfg.run.iterations})],
                         first_tasks=trainer.task_rows(live=False))
    except BaseException:
        trainer.close()      # a Ray executor's workers (and a cluster started for the run) go with it
        raise
    out(f"run {run_id} ({name}) on {device}, database {store.path}")
    return drive(store, run_id, trainer, cfg.run.iterations, out)


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
               out: Callable[[str], None] = _say) -> int:
    """Continue a stopped, crashed or failed run from its newest good checkpoint, `iterations`
    more (default: up to the run's own target), on `device` (default: the run's own); return
    the exit code."""
    store = _open_for_engine(db_path, create=False)
    cfg = _resumable(store, run_id, iterations)
    from . import checkpoint
    from .paths import checkpoints_dir, owned_by
    check_models(cfg)
    check_executor(cfg)
    folder = checkpoints_dir(store.path, run_id)
    if not owned_by(folder, store.path):
        raise InputError(f"the checkpoints of run {run_id} in {folder} belong to another database "
                         "(an imported copy has no checkpoints of its own)")
    checkpoint.clean_tmp(folder)
    try:
        path, state, skipped = checkpoint.newest_good(folder, "cpu")
    except checkpoint.CheckpointError as e:
        raise InputError(f"run {run_id} cannot be resumed: {e}") from None
    wanted = device or cfg.run.device
    if device:
        cfg.run.device = device      # before the trainer: a Ray executor's workers are built from cfg
    trainer = make_trainer(cfg, wanted, lambda e: f"cannot resume on {wanted}: {e} (try --device cpu)")
    where = trainer.device
    try:
        trainer.load_state_dict(state)
    except ExecutorError:
        trainer.close()
        raise
    except (RuntimeError, KeyError, ValueError, TypeError) as e:
        trainer.close()
        raise InputError(f"checkpoint {path} does not fit this run on {where}: {e}") from None
    k = trainer.iteration
    target = k + iterations if iterations else cfg.run.iterations
    store.claim_run(run_id, str(where))
    # commands left for the dead engine (a pause, a stop) are not orders for this one
    store.expire_commands(run_id, "rejected: the engine restarted before applying it")
    store.rewind(run_id, k)
    store.write_tasks(run_id, trainer.task_rows(live=True))
    for bad, reason in skipped:
        store.add_event(run_id, k, EventKind.CHECKPOINT_SKIPPED, {"checkpoint": bad.name, "reason": reason})
        out(f"skipped damaged checkpoint {bad.name}: {reason}")
    store.add_event(run_id, k, EventKind.RESUMED_FROM_CHECKPOINT, {"checkpoint": path.name, "target": target})
    out(f"run {run_id} resumed at iteration {k} from {path.name}, target {target}")
    return drive(store, run_id, trainer, max(target, k), out)


def drive(store: Store, run_id: str, trainer, target: int, out: Callable[[str], None] = _say) -> int:
    """Run the trainer to `target` under a Runner (commands, heartbeat, checkpoints); its exit code."""
    from .runner import Runner
    try:
        return Runner(store, run_id, trainer, target, out=out).run()
    finally:
        trainer.close()


def check_executor(cfg: Config) -> None:
    """A Ray run needs Ray installed: said before anything is created (exit code 2)."""
    import importlib.util
    if cfg.executor.kind == "ray" and importlib.util.find_spec("ray") is None:
        raise InputError("invalid config: executor.kind = 'ray': Ray is not installed "
                         "(pip install 'rlanything[ray]')")


def make_trainer(cfg: Config, device: str, unusable: Callable[[Exception], str]):
    """The run's loop: a Trainer in this process on `device`, or, with executor.distribute = run
    on Ray, a handle on one the cluster places (its device is chosen there)."""
    if cfg.executor.kind == "ray" and cfg.executor.distribute == "run":
        from .loop.remote_run import RemoteTrainer
        cfg.run.device = device
        return RemoteTrainer(cfg)
    from .loop.trainer import Trainer, resolve_device   # torch from here on
    try:
        where = resolve_device(device)
    except RuntimeError as e:
        raise InputError(unusable(e)) from None
    return Trainer(cfg, where)
