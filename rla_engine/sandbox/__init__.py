"""Run model-written Python programs: one fresh, limited, isolated process per (program, input).
See launch.py for what each isolation level does and `rla sandbox check` for what holds here."""
from __future__ import annotations

from .compare import outputs_match
from .pool import SandboxPool
from .probe import probe, probe_level
from .types import Execution, Isolation, Job, Limits, SandboxUnavailable, Status

__all__ = ["Execution", "Isolation", "Job", "Limits", "SandboxPool", "SandboxUnavailable", "Status",
           "outputs_match", "probe", "probe_level"]
