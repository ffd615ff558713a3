"""The engine process's main loop: iterations, commands, heartbeat, checkpoints, signals.

Commands are applied at the iteration boundary (DESIGN §1): that is the one place where the
state is consistent and can be checkpointed, and applying them there keeps a paused-and-resumed
run identical, iteration by iteration, to an uninterrupted one.
"""
from __future__ import annotations

import math
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Callable

from . import checkpoint
from . import metrics as K
from .loop.ppo import NonFiniteError
from .loop.trainer import IterationResult, Trainer
from .paths import checkpoints_dir, claim
from .store import Store, open_store

HEARTBEAT_S = 1.0
PAUSE_POLL_S = 0.1


class Heartbeat(threading.Thread):
    """Stamps `runs.heartbeat_at` every second on its own connection, also while paused or
    inside a long iteration."""

    def __init__(self, db_path: Path, run_id: str):
        super().__init__(daemon=True, name="heartbeat")
        self.db_path, self.run_id = db_path, run_id
        self.done = threading.Event()

    def run(self) -> None:
        store = open_store(self.db_path)
        try:
            while not self.done.wait(HEARTBEAT_S):
                try:
                    store.heartbeat(self.run_id)
                except Exception:   # a locked moment must not kill the beat; the next one retries
                    pass
        finally:
            store.close()


class Runner:
    def __init__(self, store: Store, run_id: str, trainer: Trainer, target: int,
                 out: Callable[[str], None] = print,
                 observe: Callable[[IterationResult], None] | None = None):
        self.store, self.run_id, self.trainer, self.target, self.out = store, run_id, trainer, target, out
        self.observe = observe   # benchmarks read each iteration's timings here
        self.cfg = trainer.cfg
        self.ckpt_dir = checkpoints_dir(store.path, run_id)
        claim(self.ckpt_dir, store.path)
        self.paused = False
        self.stop_reason: str | None = None
        self._last_time = time.perf_counter()
        self._last_eval: float | None = None

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
        beat = Heartbeat(self.store.path, self.run_id)
        beat.start()
        try:
            return self._loop()
        finally:
            beat.done.set()
            beat.join(timeout=5)

    def _loop(self) -> int:
        tr = self.trainer
        try:
            while tr.iteration < self.target:
                self._apply_commands()
                while self.paused and self.stop_reason is None:
                    time.sleep(PAUSE_POLL_S)
                    self._apply_commands()
                if self.stop_reason is not None:
                    return self._finish("stopped", {"reason": self.stop_reason})
                result = tr.step(final=tr.iteration + 1 == self.target)
                t = time.perf_counter()
                self.store.commit_iteration(self.run_id, result.iteration, env_steps=result.env_steps,
                                            wall_s=result.wall_s, metrics=result.metrics,
                                            events=result.events, tasks=result.task_rows)
                result.timings["store"] = time.perf_counter() - t
                t = time.perf_counter()
                if result.iteration % self.cfg.run.checkpoint_every == 0:
                    self._checkpoint()
                result.timings["checkpoint"] = time.perf_counter() - t
                if self.observe is not None:
                    self.observe(result)
                self.out(self._progress(result))
            self._apply_commands()   # a stop that came with the last iteration is still answered
            return self._finish("completed", {"iterations": tr.iteration})
        except NonFiniteError as e:
            return self._fail(f"iteration {tr.iteration + 1}: {e}", {"iteration": tr.iteration + 1,
                              "quantity": e.quantity, "value": str(e.value)})
        except Exception as e:   # anything else: say it, keep what was committed, exit 1
            traceback.print_exc(file=sys.stderr)
            return self._fail(f"iteration {tr.iteration + 1}: {type(e).__name__}: {e}",
                              {"iteration": tr.iteration + 1, "error": f"{type(e).__name__}: {e}"})

    def _finish(self, status: str, payload: dict) -> int:
        self._checkpoint()
        self.store.add_event(self.run_id, self.trainer.iteration, status, payload)
        self.store.set_status(self.run_id, status)
        self.out(f"run {self.run_id} {status} at iteration {self.trainer.iteration}")
        return 0

    def _fail(self, message: str, payload: dict) -> int:
        self.store.add_event(self.run_id, self.trainer.iteration, "failed", payload)
        self.store.set_status(self.run_id, "failed", error=message)
        print(f"rla: run {self.run_id} failed: {message}", file=sys.stderr)
        return 1

    def _checkpoint(self) -> Path:
        return checkpoint.save(self.ckpt_dir, self.trainer.iteration, self.trainer.state_dict(),
                               self.cfg.run.keep_checkpoints)

    # -- commands --------------------------------------------------------------------------
    def _apply_commands(self) -> None:
        for cmd in self.store.pending_commands(self.run_id):
            try:
                result = self._apply(cmd["kind"], cmd["payload"])
            except ValueError as e:
                result = f"rejected: {e}"
            self.store.finish_command(cmd["id"], result)
            self.store.add_event(self.run_id, self.trainer.iteration,
                                 "command_rejected" if result.startswith("rejected") else cmd["kind"],
                                 {"command": cmd["id"], "kind": cmd["kind"], "payload": cmd["payload"],
                                  "result": result})

    def _apply(self, kind: str, payload) -> str:
        if not isinstance(payload, dict):
            raise ValueError("payload is not a JSON object")
        if kind == "pause":
            if self.paused:
                return "ignored: already paused"
            self.paused = True
            self._checkpoint()
            self.store.set_status(self.run_id, "paused")
            return "applied"
        if kind == "resume":
            if not self.paused:
                return "ignored: not paused"
            self.paused = False
            self.store.set_status(self.run_id, "running")
            return "applied"
        if kind == "stop":
            self.stop_reason = "stop command"
            return "applied"
        if kind == "checkpoint":
            return f"applied: {self._checkpoint().name}"
        if kind == "set_difficulty":
            if "value" not in payload:
                raise ValueError('set_difficulty needs {"value": d} with 0 ≤ d ≤ 1, or {"value": null}')
            d = payload["value"]
            if d is not None and (isinstance(d, bool) or not isinstance(d, (int, float))
                                  or not math.isfinite(d) or not 0.0 <= d <= 1.0):
                raise ValueError(f"difficulty {d!r} is not a number in [0, 1] (or null for automatic)")
            rows = self.trainer.set_override(None if d is None else float(d))
            self.store.write_tasks(self.run_id, rows)
            self._checkpoint()   # the override belongs to the state a resume starts from
            return "applied: automatic adaptation" if d is None else f"applied: difficulty {float(d):g}"
        raise ValueError(f"unknown command {kind!r}; commands are pause, resume, stop, set_difficulty, checkpoint")

    # -- output ----------------------------------------------------------------------------
    def _progress(self, r: IterationResult) -> str:
        now = time.perf_counter()
        rate = 1.0 / max(now - self._last_time, 1e-9)
        self._last_time = now
        m = r.metrics
        self._last_eval = ev = m.get(K.EVAL_SUCCESS, self._last_eval)

        def fmt(key, value=None):
            v = m.get(key) if value is None else value
            return "  -  " if v is None else f"{v:5.2f}"
        return (f"it {r.iteration:>5}/{self.target}  success {fmt(K.SUCCESS)}  eval {fmt(K.EVAL_SUCCESS, ev)}  "
                f"μ {fmt(K.MU)}  difficulty {fmt(K.DIFFICULTY_MEAN)}  {rate:5.1f} it/s")
