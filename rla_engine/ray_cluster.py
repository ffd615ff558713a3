"""Joining a Ray cluster, torch-free: what a Ray run and `rla ablate --executor ray` share."""
from __future__ import annotations

import ray

from .errors import InputError


def first_line(e: BaseException) -> str:
    """An exception's first line (Ray's carry a long traceback after it), at most 300 characters."""
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:300]


def connect(address: str) -> bool:
    """Join the cluster at `address` (empty: RAY_ADDRESS if set, else a new cluster on this
    machine) unless this process already has; True when this call connected."""
    if ray.is_initialized():
        return False
    try:
        ray.init(address=address or None, include_dashboard=False, logging_level="warning", log_to_driver=False)
    except (ConnectionError, ValueError, RuntimeError) as e:
        raise InputError(f"invalid config: executor.address = {address!r}: cannot join the Ray cluster "
                         f"({first_line(e)})") from None
    return True
