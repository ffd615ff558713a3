"""Default names of what a user starts without naming it: a run (`rla run`, the console's Start)
and an ablation group (`rla ablate`, the console's Ablation…)."""
from __future__ import annotations

import time
from pathlib import Path

from .paths import run_config_name


def config_label(preset: str | None, config_file: str | None, family: str) -> str:
    """What a run or a group is named after: its preset, else its config file, else its task family."""
    return preset or (Path(config_file).stem if config_file else family)


def recorded_preset(run_id: str, preset: str | None, config_file: str | None) -> str:
    """What the run's preset column says: the preset, else the config file the user named; not
    the file the console or `rla ablate` wrote for the run (paths.run_config_name): History
    grouped by preset would give each such run a group of its own."""
    if preset or not config_file:
        return preset or ""
    return "" if Path(config_file).name == run_config_name(run_id) else Path(config_file).name


def default_run_name(label: str) -> str:
    """`<label> <date> <time>`, to the minute."""
    return f"{label} {time.strftime('%Y-%m-%d %H:%M')}"


def default_group(label: str, budget: int | None = None) -> str:
    """`ablate-<label>-<budget>`: `rla ablate` run again with the same arguments finds its group
    and resumes it. Without a budget the time stands in its place (the console's: each ablation
    started there is a new group)."""
    return f"ablate-{label}-{time.strftime('%Y%m%d-%H%M%S') if budget is None else budget}"
