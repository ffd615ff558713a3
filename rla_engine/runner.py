"""The engine process's main loop: iterations, commands, heartbeat, checkpoints, signals.

Commands are applied at the iteration boundary (DESIGN §1): that is the one place where the
state is consistent and can be checkpointed, and applying them there keeps a paused-and-resumed
run identical, iteration by iteration, to an uninterrupted one.
"""
from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from collections.abc import Callable

from . import checkpoint
from .checkpoint_writer import CheckpointFailed, CheckpointWriter
from . import metrics
from .alerts import AlertWatcher, open_alerts, unheeded_alerts
from .loop.ppo import NonFiniteError
from .loop.interfaces import Interrupted, IterationResult, RunLoop
from .output import say
from .paths import PRIVATE_FILE, checkpoints_dir, claim
from .store import EVENT_EXCERPT_CHARS, RunGone, Store, open_store
from .system_load import SystemSampler
from .vocabulary import CommandKind, CommandOutcome, CommandResult, EventKind, Status

HEARTBEAT_S = 1.0
PAUSE_POLL_S = 0.1
STOP_PEEK_S = 0.2        # how often a wait on Ray workers looks for a stop command
# A full disk must not swallow the failure it causes: this much room is held back and given up
# to write the run's last words (a few WAL pages, with room to spare).
RESERVE_BYTES = 1 << 20
RESERVE_NAME = "space-reserve"


class Heartbeat(threading.Thread):
    """Stamps `runs.heartbeat_at` every second on its own connection, also while paused or
    inside a long iteration; notices (`row_gone`) when the run's row is no longer there."""

    def __init__(self, db_path: Path, run_id: str):
        super().__init__(daemon=True, name="heartbeat")
        self.db_path, self.run_id = db_path, run_id
        self.done = threading.Event()
        self.row_gone = threading.Event()

    def run(self) -> None:
        store = open_store(self.db_path)
        try:
            while not self.done.wait(HEARTBEAT_S):
                try:
                    if not store.heartbeat(self.run_id):
                        self.row_gone.set()
                except Exception:   # a locked moment must not kill the beat; the next one retries
                    pass
        finally:
            store.close()


class Runner:
    def __init__(self, store: Store, run_id: str, trainer: RunLoop, target: int,
                 out: Callable[[str], None] = say,
                 observe: Callable[[IterationResult], None] | None = None, alert_state: str | None = None):
        self.store, self.run_id, self.trainer, self.target, self.out = store, run_id, trainer, target, out
        self.observe = observe   # benchmarks read each iteration's timings here
        self.cfg = trainer.cfg
        self.ckpt_dir = checkpoints_dir(store.path, run_id)
        # the launcher holds the run's claim (paths.lock_run) before a Runner is made
        self.owner = checkpoint.Owner(run_id, store.database_id)
        claim(self.ckpt_dir, self.owner.database, store.path)
        self.reserve = self.ckpt_dir / RESERVE_NAME
        self._reserved = False
        self.committed = trainer.iteration      # the last iteration whose rows are in the database
        self.phase = f"iteration {trainer.iteration + 1}"   # what a failure message names
        self.paused = False
        self.stop_reason: str | None = None
        self._last_time = time.perf_counter()
        self._last_eval: float | None = None
        self.abandoned: int | None = None    # an iteration a stop cut short: its state is never saved
        # launch wrote the starting state's checkpoint; the periodic ones are written beside the loop
        self.writer = CheckpointWriter(self.ckpt_dir, self.cfg.run.keep_checkpoints, self.owner, trainer.iteration)
        self._last_peek = 0.0
        self._beat: Heartbeat | None = None
        self._warned: set[Path] = set()      # checkpoint warnings already said
        self.alerts = AlertWatcher(self.cfg.alerts.window, self.cfg.alerts.enabled, alert_state,
                                   unheeded_alerts(self.cfg.policy.lam, self.cfg.judge.train))
        self.system = SystemSampler.for_device(self.cfg.run.system_every_s, trainer.device)
        trainer.set_interrupt(self._stop_requested)

    # -- signals ---------------------------------------------------------------------------
    def _on_signal(self, signum, _frame) -> None:
        self.stop_reason = f"signal {signal.Signals(signum).name}"

    def _install_signals(self) -> None:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, self._on_signal)
            signal.signal(signal.SIGTERM, self._on_signal)

    # -- main loop -------------------------------------------------------------------------
    def run(self) -> int:
        """Run to the target iteration; return the process exit code (0 done or stopped, 1 failed)."""
        self._install_signals()
        self._hold_reserve()
        beat = self._beat = Heartbeat(self.store.path, self.run_id)
        beat.start()
        try:
            return self._loop()
        finally:
            beat.done.set()
            beat.join(timeout=5)
            self._release_reserve()

    def _hold_reserve(self) -> None:
        """Never through a link (O_NOFOLLOW): a planted `space-reserve` link must not make the
        engine fill someone else's file with zeros; without the reserve the run goes on."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self.reserve, flags, PRIVATE_FILE)
        except OSError:
            return
        self._reserved = True
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(bytes(RESERVE_BYTES))
        except OSError:
            self._release_reserve()   # no room even for that: the first write will fail and say so

    def _release_reserve(self) -> bool:
        if not self._reserved:
            return False
        try:
            self.reserve.unlink()
            self._reserved = False
            return True
        except OSError:
            return False

    def _loop(self) -> int:
        tr = self.trainer
        try:
            self._carry_over_alerts()
            while tr.iteration < self.target and not tr.budget_spent():
                self._apply_commands()
                while self.paused and self.stop_reason is None:
                    time.sleep(PAUSE_POLL_S)
                    self._check_row()
                    self._apply_commands()
                if self.stop_reason is not None:
                    return self._finish(Status.STOPPED, {"reason": self.stop_reason})
                n = tr.iteration + 1
                self.phase = f"iteration {n}"
                try:
                    result = tr.step(final=n == self.target)
                except Interrupted as e:
                    self.abandoned = n
                    self._record_pending_events()
                    self._apply_commands(stopping=True)   # the stop that cut the iteration short is answered
                    return self._finish(Status.STOPPED, {"reason": self.stop_reason or "stop",
                                                         "abandoned_iteration": n, "detail": str(e)})
                t = time.perf_counter()
                result.metrics.update(self.system.sample_if_due(time.monotonic()))
                result.timings["system"] = time.perf_counter() - t
                t = time.perf_counter()
                # the last checkpoint is on disk before this iteration is stored (it is written while
                # an iteration runs, so this rarely waits): a failed write fails the run before the
                # next commit, and a resume never reruns more than the iterations since that one
                self._wait_for_checkpoint()
                waited = time.perf_counter() - t
                t = time.perf_counter()
                self.phase = f"iteration {n} (storing it)"
                result.events = result.events + self.alerts.observe(result.iteration, result.metrics)
                self.store.commit_iteration(self.run_id, result.iteration, env_steps=result.env_steps,
                                            wall_s=result.wall_s, metrics=result.metrics,
                                            events=result.events, tasks=result.task_rows)
                self.committed = result.iteration
                result.timings["store"] = time.perf_counter() - t
                t = time.perf_counter()
                if result.iteration % self.cfg.run.checkpoint_every == 0:
                    self._checkpoint(wait=False)
                result.timings["checkpoint"] = waited + time.perf_counter() - t
                if self.observe is not None:
                    self.observe(result)
                self.phase = f"iteration {n} (writing the log)"
                self.out(self._progress(result))
            self._apply_commands()   # a stop that came with the last iteration is still answered
            return self._finish(Status.COMPLETED, {"iterations": tr.iteration, "env_steps": tr.env_steps})
        except RunGone as e:
            return self._gone(e)
        except NonFiniteError as e:
            with contextlib.suppress(Exception):    # the failure is recorded below whatever happens here
                self._write_alerts(self.alerts.not_finite(self.committed + 1, e.quantity, e.value))
            return self._fail(f"{self.phase}: {e}", {"iteration": self.committed + 1,
                              "quantity": e.quantity, "value": str(e.value)})
        except Exception as e:   # anything else: say it, keep what was committed, exit 1
            with contextlib.suppress(OSError):
                traceback.print_exc(file=sys.stderr)
            return self._fail(f"{self.phase}: {type(e).__name__}: {e}",
                              {"iteration": self.committed + 1, "error": f"{type(e).__name__}: {e}"})

    def _finish(self, status: str, payload: dict) -> int:
        if self.abandoned is None:    # else the last checkpoint stands: a half-done iteration is no state
            self._checkpoint()
        else:
            self._wait_for_checkpoint()
        self._write_alerts(self.alerts.end(self.committed))
        self.store.end_run(self.run_id, self.committed, status, payload)
        self.out(f"run {self.run_id} {status} at iteration {self.committed}")
        return 0

    def _record_pending_events(self) -> None:
        """What the executor saw during an iteration that never committed (a worker restarted),
        kept at the last committed iteration."""
        with contextlib.suppress(Exception):
            for kind, event in self.trainer.pending_events():
                self.store.add_event(self.run_id, self.committed, kind, event)

    def _fail(self, message: str, payload: dict) -> int:
        """Record the failure at the last committed iteration (a resume's rewind keeps it). When
        the disk is full the reserve is given up first, so that this last write has room."""
        with contextlib.suppress(Exception):    # a write under way ends (or fails) before the run does
            self.writer.wait()
        self._record_pending_events()
        with contextlib.suppress(Exception):    # the failure's own record comes first (a full disk)
            self._write_alerts(self.alerts.end(self.committed))
        payload = {**payload, "last_committed_iteration": self.committed}
        for attempt in (1, 2):
            try:
                self.store.end_run(self.run_id, self.committed, Status.FAILED, payload, error=message)
                break
            except Exception as e:
                if attempt == 1 and self._release_reserve():
                    continue
                self._say(f"rla: could not record the failure in {self.store.path}: {e}")
        self._say(f"rla: run {self.run_id} failed: {message} (last committed iteration {self.committed})")
        return 1

    def _check_row(self) -> None:
        """A paused engine writes nothing that would find its row gone: its heartbeat tells."""
        if self._beat is not None and self._beat.row_gone.is_set():
            raise RunGone(self.run_id, self.store.path)

    def _gone(self, e: RunGone) -> int:
        """The run's row was deleted under this engine: it stops writing to the database (every row
        would belong to no run), lets the checkpoint under way finish, and says so; `rla doctor
        --fix` removes what it left (its checkpoint folder)."""
        with contextlib.suppress(Exception):
            self.writer.wait()
        self._say(f"rla: run {self.run_id} stopped: {e}; nothing more was written "
                  f"(`rla doctor --fix --db {self.store.path}` removes its checkpoints)")
        return 1

    @staticmethod
    def _say(line: str) -> None:
        with contextlib.suppress(OSError, ValueError):   # the log may be on the full disk too
            print(line, file=sys.stderr, flush=True)

    def _checkpoint(self, wait: bool = True) -> Path:
        """Checkpoint the state of the last iteration. `wait`: return once it is on disk (a pause,
        a command, the end of the run); else it is written while the next iteration runs."""
        self._wait_for_checkpoint()      # one write at a time; an earlier failure is raised here
        path = self.writer.submit(self.trainer.iteration,
                                  {**self.trainer.state_dict(), "alerts": self.alerts.state_json()})
        if wait:
            self._wait_for_checkpoint()
        return path

    def _wait_for_checkpoint(self) -> None:
        """Until no checkpoint write is under way. A failed one fails the run as a failed checkpoint
        did when the loop wrote it: the message names its iteration and the error (ENOSPC)."""
        try:
            self.writer.wait()
        except CheckpointFailed as failed:
            self.phase = f"checkpoint of iteration {failed.iteration}"
            raise failed.error from None
        self._say_warnings(self.writer.take_warnings())

    def _say_warnings(self, found: dict[Path, str]) -> None:
        """A checkpoint a planted folder kept from being written, older ones pruning had to leave:
        they cost room or one checkpoint, not the run. One event and one line whenever new ones
        turn up (not one per file, nor again at every checkpoint)."""
        new = {p: why for p, why in found.items() if p not in self._warned}
        if not new:
            return
        self._warned.update(new)
        examples = [{"checkpoint": p.name, "reason": why} for p, why in list(new.items())[:3]]
        self.store.add_event(self.run_id, self.committed, EventKind.CHECKPOINT_WARNING,
                             {"count": len(new), "examples": examples})
        shown = "; ".join(f"{e['checkpoint']}: {e['reason']}" for e in examples)
        more = f" and {len(new) - 3} more" if len(new) > 3 else ""
        self.out(f"warning: checkpoint folder {self.ckpt_dir}: {shown}{more}; training goes on")

    def _stop_requested(self) -> bool:
        """Asked while an executor waits on its workers: a signal, or a stop command waiting in the
        database (looked for every STOP_PEEK_S; applied, as every command, at the boundary). Only
        when the last committed iteration is checkpointed: cutting an iteration short must not
        cost the iterations committed since the newest checkpoint (run.checkpoint_every > 1)."""
        if self.writer.durable != self.committed:
            return False
        if self.stop_reason is not None:
            return True
        now = time.monotonic()
        if now - self._last_peek < STOP_PEEK_S:
            return False
        self._last_peek = now
        try:
            return any(c["kind"] == CommandKind.STOP and c["problem"] is None
                       for c in self.store.pending_commands(self.run_id))
        except Exception:   # a locked moment: the next look, or the boundary, finds it
            return False

    # -- alerts ----------------------------------------------------------------------------
    def _write_alerts(self, events: list[tuple[str, dict]]) -> None:
        """At the last committed iteration: a resume's rewind keeps them with what they speak of."""
        for kind, event in events:
            self.store.add_event(self.run_id, self.committed, kind, event)

    def _carry_over_alerts(self) -> None:
        """A resumed run's active alerts that the database shows cleared (its end cleared them) are
        raised again, with their first iteration; one still open there is not raised twice."""
        if self.alerts.active:
            shown = open_alerts(self.store.events(self.run_id, kinds=[EventKind.ALERT]))
            self._write_alerts(self.alerts.carried_over(shown))

    # -- commands --------------------------------------------------------------------------
    def _apply_commands(self, stopping: bool = False) -> None:
        """Any process can write a command row, so nothing in one may stop the run: a bad one is
        rejected with its reason, and its event keeps only an excerpt of a big payload. `stopping`:
        an iteration was cut short, its state is half-done, and only a stop can be carried out."""
        for cmd in self.store.pending_commands(self.run_id):
            self.phase = f"command {cmd['id']} ({cmd['kind']})"
            result = CommandResult(CommandOutcome.REJECTED, cmd["problem"]) if cmd["problem"] else None
            if result is None and stopping and cmd["kind"] != CommandKind.STOP:
                result = CommandResult(CommandOutcome.REJECTED, "the run stopped in the middle of an iteration")
            if result is None:
                try:
                    result = self._apply(cmd["kind"], cmd["payload"])
                except (ValueError, TypeError, OverflowError) as e:
                    result = CommandResult(CommandOutcome.REJECTED, str(e))
            small = cmd["problem"] is None and len(cmd["excerpt"]) <= EVENT_EXCERPT_CHARS
            event = {"command": cmd["id"], "kind": cmd["kind"],
                     "payload": cmd["payload"] if small else cmd["excerpt"], "result": str(result)}
            kind = EventKind.COMMAND_REJECTED if result.outcome == CommandOutcome.REJECTED else cmd["kind"]
            self.store.finish_command(cmd["id"], result, self.run_id, self.committed, (kind, event))

    def _apply(self, kind: str, payload) -> CommandResult:
        if not isinstance(payload, dict):
            raise ValueError("payload is not a JSON object")
        if kind == CommandKind.PAUSE:
            if self.paused:
                return CommandResult(CommandOutcome.IGNORED, "already paused")
            self.paused = True
            self._checkpoint()
            self.store.set_status(self.run_id, Status.PAUSED)
            return CommandResult(CommandOutcome.APPLIED)
        if kind == CommandKind.RESUME:
            if not self.paused:
                return CommandResult(CommandOutcome.IGNORED, "not paused")
            self.paused = False
            self.store.set_status(self.run_id, Status.RUNNING)
            return CommandResult(CommandOutcome.APPLIED)
        if kind == CommandKind.STOP:
            self.stop_reason = "stop command"
            return CommandResult(CommandOutcome.APPLIED)
        if kind == CommandKind.CHECKPOINT:
            return CommandResult(CommandOutcome.APPLIED, self._checkpoint().name)
        if kind == CommandKind.SET_DIFFICULTY:
            if "value" not in payload:
                raise ValueError('set_difficulty needs {"value": d} with 0 ≤ d ≤ 1, or {"value": null}')
            d = payload["value"]
            if d is not None and (isinstance(d, bool) or not isinstance(d, (int, float))
                                  or not math.isfinite(d) or not 0.0 <= d <= 1.0):
                raise ValueError(f"difficulty {d!r} is not a number in [0, 1] (or null for automatic)")
            rows = self.trainer.set_override(None if d is None else float(d))
            self.store.write_tasks(self.run_id, rows)
            self._checkpoint()   # the override belongs to the state a resume starts from
            return CommandResult(CommandOutcome.APPLIED,
                                 "automatic adaptation" if d is None else f"difficulty {float(d):g}")
        raise ValueError(f"unknown command {kind!r}; commands are {', '.join(CommandKind)}")

    # -- output ----------------------------------------------------------------------------
    def _progress(self, r: IterationResult) -> str:
        now = time.perf_counter()
        rate = 1.0 / max(now - self._last_time, 1e-9)
        self._last_time = now
        m = r.metrics
        self._last_eval = ev = m.get(metrics.EVAL_SUCCESS, self._last_eval)

        def fmt(key, value=None):
            v = m.get(key) if value is None else value
            return "  -  " if v is None else f"{v:5.2f}"
        return (f"it {r.iteration:>5}/{self.target}  success {fmt(metrics.SUCCESS)}  "
                f"eval {fmt(metrics.EVAL_SUCCESS, ev)}  "
                f"μ {fmt(metrics.MU)}  difficulty {fmt(metrics.DIFFICULTY_MEAN)}  {rate:5.1f} it/s")
