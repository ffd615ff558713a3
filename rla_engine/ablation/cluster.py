"""`rla ablate --executor ray`: the cluster the runs share. This process joins it (or starts one
on this machine when executor.address is empty and RAY_ADDRESS unset) for the whole ablation,
hands its address to every `rla run` through RAY_ADDRESS, and runs as many at a time as the
cluster holds run actors (executor.run_cpus / run_gpus each)."""
from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator

from ..config import Config
from ..errors import InputError


@contextlib.contextmanager
def joined(base: Config, jobs: int | None, say: Callable[[str], None]) -> Iterator[tuple[int, dict]]:
    try:
        import ray

        from ..ray_cluster import connect
    except ImportError:
        raise InputError("--executor ray: Ray is not installed (pip install 'rlanything[ray]')") from None
    ex = base.executor
    connect(ex.address, ex.connect_timeout_s)
    try:
        have = ray.cluster_resources()
        fits = [have.get("CPU", 0.0) / ex.run_cpus] + ([have.get("GPU", 0.0) / ex.run_gpus] if ex.run_gpus else [])
        capacity = math.floor(min(fits) + 1e-9)
        if capacity < 1:
            raise InputError(f"invalid config: executor.run_cpus = {ex.run_cpus!r}: the cluster (CPU "
                             f"{have.get('CPU', 0):g}, GPU {have.get('GPU', 0):g}) cannot hold one run")
        address = ray.get_runtime_context().gcs_address
        nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
        say(f"Ray cluster {address}: {nodes} node(s), CPU {have.get('CPU', 0):g}, GPU {have.get('GPU', 0):g}; "
            f"{jobs or capacity} run(s) at a time")
        yield jobs or capacity, {"RAY_ADDRESS": address}
    finally:
        ray.shutdown()
