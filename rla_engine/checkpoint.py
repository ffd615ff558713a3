"""Checkpoints: written atomically (temporary file, fsync, rename), the last N kept, loaded with
`weights_only=True` so a checkpoint file can never run code."""
from __future__ import annotations

import os
import re
from pathlib import Path

import torch

from .paths import fsync_path

_NAME = re.compile(r"^it-(\d{9})\.pt$")


def save(folder: Path, iteration: int, state: dict, keep: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"it-{iteration:09d}.pt"
    tmp = folder / f".{final.name}.tmp"
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, final)
    fsync_path(folder)
    for old in list_checkpoints(folder)[:-keep]:
        old.unlink(missing_ok=True)
    return final


def list_checkpoints(folder: Path) -> list[Path]:
    """Oldest first."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if _NAME.match(p.name))


def iteration_of(path: Path) -> int:
    return int(_NAME.match(path.name).group(1))


def latest(folder: Path) -> Path | None:
    found = list_checkpoints(folder)
    return found[-1] if found else None


def load(path: Path, device: torch.device | str = "cpu") -> dict:
    return torch.load(path, map_location=device, weights_only=True)
