"""Is a run's engine process still there? (DESIGN §1)

A pid alone proves nothing: after a reboot, or a long time, another process has it. The engine
records its process's start (boot id + start time in clock ticks, from /proc); a reader on the
same host compares it. Where /proc is missing, or an older row has no start recorded, the
heartbeat decides.
"""
from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
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


def engine_gone(pid: int | None, recorded_start: str | None, heartbeat_age_s: float, stale_after_s: float) -> bool:
    """Decide for a run whose engine ran on this host."""
    if not pid or not pid_alive(pid):
        return True
    now_start = process_start(pid) if recorded_start else None
    if now_start is not None:
        return now_start != recorded_start
    return heartbeat_age_s > stale_after_s
