"""The engine process's load, stored as the `sys/*` keys every few seconds (at the iteration that
follows): CPU % of this process (of one core: 200 = two cores busy), its resident memory and, when
the run's device is CUDA, the memory torch's allocator holds there (allocated, reserved, and the
peak allocated since the process started) and, where the NVIDIA management library (`pynvml`)
loads, the device's utilisation (all processes on it, as `nvidia-smi` shows it). MB = 2**20 bytes.

Torch-free at import: torch is imported only to build the CUDA probes, and only on a CUDA run.
Nothing here may fail a run: a source that is missing when the sampler is built leaves its key
absent, and a probe that raises (or answers with no finite number) is dropped for good, so a
broken source costs one exception, not one per sample.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from . import metrics

MB = float(2 ** 20)
Probe = Callable[[], float]


class SystemSampler:
    """`sample_if_due(now)` -> the sys keys of the probes still working, at most once every
    `every_s` seconds of `now` (a monotonic clock); the first call samples. `every_s = 0`: never."""

    def __init__(self, every_s: float, probes: dict[str, Probe]):
        self.every_s = every_s
        self.probes = dict(probes) if every_s > 0 else {}
        self._last: float | None = None

    @classmethod
    def for_device(cls, every_s: float, device: Any = None) -> SystemSampler:
        """Probes of this process, plus the CUDA ones when `device` is a torch CUDA device (a
        remote run's device is a name: its allocator is in another process, not measured here)."""
        if every_s <= 0:
            return cls(0.0, {})
        probes = process_probes()
        if getattr(device, "type", None) == "cuda":
            probes.update(cuda_memory_probes(device))
            probes.update(gpu_utilisation_probe(device))
        return cls(every_s, probes)

    def sample_if_due(self, now: float) -> dict[str, float]:
        if not self.probes or (self._last is not None and now - self._last < self.every_s):
            return {}
        self._last = now
        out: dict[str, float] = {}
        for key, probe in list(self.probes.items()):
            try:
                value = float(probe())
            except Exception:   # a library's error of any kind: that key is gone, the run goes on
                value = math.nan
            if math.isfinite(value):
                out[key] = value
            else:               # the store refuses non-finite values; such a source is not asked again
                del self.probes[key]
        return out


def process_probes() -> dict[str, Probe]:
    """CPU % and RSS of this process through psutil; none without it. CPU % counts from the
    previous call, so the first (meaningless) one is made here."""
    try:
        import psutil
        proc = psutil.Process()
        proc.cpu_percent(None)
    except Exception:
        return {}
    return {metrics.SYS_CPU_PERCENT: lambda: proc.cpu_percent(None),
            metrics.SYS_RSS_MB: lambda: proc.memory_info().rss / MB}


def cuda_memory_probes(device: Any) -> dict[str, Probe]:
    try:
        import torch
        cuda = torch.cuda
    except Exception:
        return {}
    return {metrics.SYS_GPU_ALLOCATED_MB: lambda: cuda.memory_allocated(device) / MB,
            metrics.SYS_GPU_RESERVED_MB: lambda: cuda.memory_reserved(device) / MB,
            metrics.SYS_GPU_PEAK_MB: lambda: cuda.max_memory_allocated(device) / MB}


def gpu_utilisation_probe(device: Any) -> dict[str, Probe]:
    """Only where pynvml imports and NVML starts. torch.cuda.utilization maps the torch device to
    NVML's numbering (CUDA_VISIBLE_DEVICES, by index or UUID), which NVML alone cannot."""
    try:
        import pynvml
        pynvml.nvmlInit()
        import torch
        cuda = torch.cuda
    except Exception:
        return {}
    return {metrics.SYS_GPU_UTIL_PERCENT: lambda: cuda.utilization(device)}

