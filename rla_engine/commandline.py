"""The command lines of the engine processes that the console and `rla ablate` start as children:
`rla run`, `rla resume` and `rla ablate`, each on a given database. They run `python -m
rla_engine.cli` with the caller's interpreter, so the engine is the one of the caller's environment."""
from __future__ import annotations

from pathlib import Path


def rla(python: str, db: str | Path, *args: str) -> list[str]:
    """`rla <args> --db <db>`."""
    return [python, "-m", "rla_engine.cli", *args, "--db", str(db)]


def run_command(python: str, db: str | Path, *, config: Path, run_id: str, name: str,
                preset: str | None = None, group: str | None = None) -> list[str]:
    """Start run `run_id` from a config file that holds its whole configuration; the preset is
    named for the record only."""
    return rla(python, db, "run", "--config", str(config), "--run-id", run_id, "--name", name,
               *(["--preset", preset] if preset else []), *(["--group", group] if group else []))


# what a user says to load a checkpoint that names no owner in a database that signs its own
UNOWNED_FLAG = "--accept-unowned-checkpoints"


def resume_command(python: str, db: str | Path, run_id: str, iterations: int | None = None,
                   accept_unowned: bool = False) -> list[str]:
    """Continue a run from its last checkpoint, `iterations` more (default: up to its target);
    `accept_unowned`: also from checkpoints this database did not sign (UNOWNED_FLAG)."""
    return rla(python, db, "resume", run_id, *(["--iterations", str(iterations)] if iterations else []),
               *([UNOWNED_FLAG] if accept_unowned else []))
