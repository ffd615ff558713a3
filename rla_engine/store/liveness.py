"""Is a run's engine process still there? (DESIGN §1)

A pid alone proves nothing: after a reboot, or a long time, another process has it. The engine
records its process's start (boot id + start time in clock ticks, from /proc); a reader on the
same host compares it. Where /proc is missing, or an older row has no start recorded, the
heartbeat decides. `LivenessMixin` marks the runs whose engine is gone as crashed.

A row edited by hand may hold anything in these columns. What cannot be interpreted proves
nothing either way, so it never marks a run crashed by itself: a pid that is not a whole number
leaves the decision to the heartbeat; a heartbeat that is not a time (text, a blob, out of
range) leaves it to the pid on this host and to no one elsewhere (the run stays live, shown as
damaged, until its engine writes again or the row is repaired). What can be interpreted still
counts: no pid at all, or a pid no process can have (≤ 0, too large), is an engine that is gone;
no heartbeat at all is one that never beat.
"""
from __future__ import annotations

import json
import os
import socket
from typing import Any

from ..config import STALE_AFTER_S
from ..vocabulary import LIVE, Status
from .base import StoreBase, _finite, _now
from .reads import OPTIONAL_TIME, TEXT, TIME, readable_sql
from .schema import WriteError


def pid_alive(pid: int) -> bool:
    if pid <= 0:      # 0 and -n would ask about a process group, not a process
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, ValueError):   # a pid no process can have
        return False
    # A zombie (exited, not yet reaped by its parent) is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def process_start(pid: int) -> str | None:
    """`<boot id>/<start time>` of a running process, or None where it cannot be known."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip()
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError, UnicodeDecodeError):
        return None
    return f"{boot}/{fields[19]}"    # field 22 of stat; fields[0] is field 3 (the state)


def engine_gone(pid: Any, recorded_start: Any, heartbeat_age_s: float | None, stale_after_s: float) -> bool:
    """Decide for a run whose engine ran on this host. `pid` and `recorded_start` are as stored
    (anything, in a row edited by hand); `heartbeat_age_s` is None where the heartbeat cannot be
    read (see the module: garbage proves nothing)."""
    if pid is None:
        return True
    if type(pid) is int:
        if not pid_alive(pid):
            return True
        now_start = process_start(pid) if isinstance(recorded_start, str) and recorded_start else None
        if now_start is not None:
            return now_start != recorded_start
    return heartbeat_age_s is not None and heartbeat_age_s > stale_after_s


def _marks(values: tuple) -> str:
    """`?, ?, ?` for an IN (…) over these values."""
    return ", ".join("?" * len(values))


class LivenessMixin(StoreBase):
    def refresh_liveness(self, stale_after_s: float | None = None) -> list[str]:
        """Mark live runs whose engine is gone as crashed; return their ids.

        On this host the process settles it (its pid and start time); elsewhere only the
        heartbeat can (DESIGN §1). A reader that cannot write (a full disk, a read-only copy)
        still reads: the mark is left for the next reader."""
        host, now, gone = socket.gethostname(), _now(), []
        for run in self.db.query("SELECT id, pid, pid_start, host, heartbeat_at, config_json FROM runs "
                                 f"WHERE status IN ({_marks(LIVE)})", LIVE):
            limit = stale_after_s or self._stale_after(run["config_json"])
            beat = run["heartbeat_at"]
            age = now if beat is None else now - beat if OPTIONAL_TIME.ok(beat) else None
            if run["host"] == host:
                dead = engine_gone(run["pid"], run["pid_start"], age, limit)
            else:
                dead = age is not None and age > limit
            if dead:
                gone.append(run["id"])      # as stored: a blob id is updated by its blob
        for run_id in gone:
            try:
                with self._write() as conn:
                    # it ended when it last beat, not when a reader noticed (nor at a heartbeat
                    # that is no time, which would carry the damage into ended_at)
                    conn.execute("UPDATE runs SET status = ?, ended_at = CASE WHEN "
                                 f"{readable_sql(TIME, 'heartbeat_at')} THEN heartbeat_at ELSE ? END, "
                                 "error = coalesce(error, 'engine process is gone') "
                                 f"WHERE id IS ? AND status IN ({_marks(LIVE)})", [Status.CRASHED, now, run_id, *LIVE])
            except WriteError:
                self._gone.add(TEXT.salvage(run_id))
        return [TEXT.salvage(run_id) for run_id in gone]

    @staticmethod
    def _stale_after(config_json: str | None) -> float:
        try:
            value = json.loads(config_json or "{}").get("run", {}).get("stale_after_s", STALE_AFTER_S)
        except (ValueError, AttributeError, TypeError, RecursionError):    # TypeError: a number or NULL stored
            return STALE_AFTER_S
        return float(value) if _finite(value) and value > 0 else STALE_AFTER_S
