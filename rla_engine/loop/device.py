"""Where a run computes: the torch device a configured name means, and how many CPU threads the
embedded networks use. One resolver for the run, its workers and every language-model role."""
from __future__ import annotations

import re

import torch

from ..errors import InputError

DEVICES_RULE = "'auto', 'cpu', 'cuda' or 'cuda:N'"
_DEVICE_RE = re.compile(r"(auto|cpu|cuda(:\d+)?)\Z")


def resolve_device(name: str) -> torch.device:
    """"auto" is CUDA when torch sees one, else the CPU; "cpu", "cuda" and "cuda:N" as written.
    InputError (one line) for anything else or a CUDA device torch does not see."""
    if not isinstance(name, str) or not _DEVICE_RE.match(name):
        raise InputError(f"device must be {DEVICES_RULE}, got {name!r}")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise InputError(f"device {name!r} was asked for, but torch sees no CUDA device")
        index = int(name.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise InputError(f"device {name!r}: torch sees only {torch.cuda.device_count()} CUDA device(s)")
    return torch.device(name)


def limit_threads(family, device: torch.device) -> None:
    """The embedded networks are small: one intra-op thread is ~2.5x faster than two on a 2-core
    machine (no spin-waiting) and keeps float reductions in a fixed order."""
    if device.type == "cpu" and family.kind == "tensor":
        torch.set_num_threads(1)
