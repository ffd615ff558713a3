"""The sys/* keys: what a real run stores, the sampling interval, and that no source's
failure ever reaches the run."""
import itertools
import math
import os
import sqlite3
import subprocess
import sys
import textwrap
import types

import pytest

from rla_engine import metrics
from rla_engine.system_load import SystemSampler

from engine_support import TINY, rla

EVERY_S = 0.25     # a tiny iteration takes 60-150 ms here: a few samples in 15 iterations


def sys_rows(db):
    """{iteration: {key: (value, t)}} of the sys keys, and the t of each iteration's other rows."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT iteration, key, value, t FROM metrics").fetchall()
    finally:
        con.close()
    system: dict[int, dict[str, tuple[float, float]]] = {}
    others: dict[int, set[float]] = {}
    for it, key, value, t in rows:
        if key.startswith(metrics.SYSTEM_PREFIX):
            system.setdefault(it, {})[key] = (value, t)
        else:
            others.setdefault(it, set()).add(t)
    return system, others


def test_a_run_stores_its_cpu_and_memory_every_interval(tmp_path):
    db = tmp_path / "sys.db"
    res = rla("run", *TINY, "--device", "cpu", "--iterations", "15", "--set", f"run.system_every_s={EVERY_S}",
              db=db)
    assert res.returncode == 0, res.stderr
    system, others = sys_rows(db)
    assert 1 in system                     # the first iteration samples: a short run has one too
    assert len(system) >= 2, sorted(system)          # 15 iterations take well over EVERY_S
    for it, keys in system.items():
        assert set(keys) == {metrics.SYS_CPU_PERCENT, metrics.SYS_RSS_MB}, keys   # no CUDA keys on a CPU
        assert {t for _, t in keys.values()} == others[it]    # stored with the iteration, at its commit time
        assert 0.0 <= keys[metrics.SYS_CPU_PERCENT][0] <= 100.0 * (os.cpu_count() or 1) * 1.5
        assert 50.0 < keys[metrics.SYS_RSS_MB][0] < 64_000.0     # torch alone is over 50 MB
    # the process trains all the time: its CPU % over an interval cannot be nil
    assert max(keys[metrics.SYS_CPU_PERCENT][0] for keys in system.values()) > 1.0
    times = [system[it][metrics.SYS_RSS_MB][1] for it in sorted(system)]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # commit times trail the sampling clock by a few ms either way, never by a tenth of a second
    assert all(g > EVERY_S - 0.1 for g in gaps), gaps


BROKEN_PSUTIL = textwrap.dedent("""
    import sys
    import psutil

    class Broken(psutil.Process):
        '''Starts as the real one, then every question fails.'''
        asked = 0

        def cpu_percent(self, interval=None):
            Broken.asked += 1
            if Broken.asked > 1:
                raise psutil.AccessDenied(self.pid)
            return 0.0

        def memory_info(self):
            raise OSError("no /proc here")

    psutil.Process = Broken
    from rla_engine.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def test_a_run_whose_every_source_fails_completes_without_sys_keys(tmp_path):
    db = tmp_path / "broken.db"
    script = tmp_path / "broken_psutil.py"
    script.write_text(BROKEN_PSUTIL)
    res = subprocess.run([sys.executable, str(script), "run", *TINY, "--device", "cpu", "--iterations", "4",
                          "--set", "run.system_every_s=0.001", "--db", str(db)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "completed at iteration 4" in res.stdout
    system, others = sys_rows(db)
    assert system == {}
    assert sorted(others) == [1, 2, 3, 4]


def counting(values):
    """A probe answering `values` in turn (an exception instance is raised), and its call count."""
    calls = []

    def probe():
        calls.append(1)
        v = values[min(len(calls), len(values)) - 1]
        if isinstance(v, BaseException):
            raise v
        return v
    return probe, calls


def test_no_sample_comes_sooner_than_every_s_and_a_call_between_asks_nothing():
    probe, calls = counting([1.0])
    s = SystemSampler(1.0, {metrics.SYS_RSS_MB: probe})
    got = [bool(s.sample_if_due(now)) for now in (0.0, 0.5, 0.999, 1.0, 1.5, 2.2, 3.1, 3.2)]
    assert got == [True, False, False, True, False, True, False, True]
    assert len(calls) == 4


def test_zero_turns_sampling_off():
    probe, calls = counting([1.0])
    assert SystemSampler(0.0, {metrics.SYS_RSS_MB: probe}).sample_if_due(0.0) == {}
    assert SystemSampler.for_device(0.0, None).probes == {} and not calls


def test_a_failing_or_non_finite_probe_is_dropped_for_good_and_the_others_go_on():
    raising, raised = counting([RuntimeError("driver gone")])
    nan, nans = counting([math.nan])
    fine, _ = counting([3.0, 4.0])
    s = SystemSampler(1.0, {metrics.SYS_GPU_UTIL_PERCENT: raising, metrics.SYS_GPU_PEAK_MB: nan,
                            metrics.SYS_RSS_MB: fine})
    assert s.sample_if_due(0.0) == {metrics.SYS_RSS_MB: 3.0}
    assert s.sample_if_due(5.0) == {metrics.SYS_RSS_MB: 4.0}
    assert len(raised) == len(nans) == 1


def test_without_psutil_the_process_keys_are_absent(monkeypatch):
    monkeypatch.setitem(sys.modules, "psutil", None)      # `import psutil` raises ImportError
    assert SystemSampler.for_device(1.0, None).sample_if_due(0.0) == {}


def test_only_a_cuda_device_gets_gpu_keys_and_nvml_only_where_it_starts(monkeypatch):
    torch = pytest.importorskip("torch")
    process = {metrics.SYS_CPU_PERCENT, metrics.SYS_RSS_MB}
    assert set(SystemSampler.for_device(1.0, torch.device("cpu")).probes) == process
    memory = {metrics.SYS_GPU_ALLOCATED_MB, metrics.SYS_GPU_RESERVED_MB, metrics.SYS_GPU_PEAK_MB}
    cuda = types.SimpleNamespace(type="cuda", index=0)    # torch.device("cuda") needs no GPU, but say so plainly

    def nvml(init):
        monkeypatch.setitem(sys.modules, "pynvml", types.SimpleNamespace(nvmlInit=init))

    def refuse():
        raise RuntimeError("NVML Shared Library Not Found")
    nvml(refuse)
    assert set(SystemSampler.for_device(1.0, cuda).probes) == process | memory
    nvml(lambda: None)
    s = SystemSampler.for_device(1.0, cuda)
    assert set(s.probes) == process | memory | {metrics.SYS_GPU_UTIL_PERCENT}
    if not torch.cuda.is_available():     # a sample without a GPU drops what cannot answer, and says nothing
        assert metrics.SYS_GPU_UTIL_PERCENT not in s.sample_if_due(0.0)
        assert metrics.SYS_GPU_UTIL_PERCENT not in s.probes


def test_the_module_imports_no_torch_and_samples_a_cpu_run_without_it():
    code = ("import sys; from rla_engine.system_load import SystemSampler; "
            "s = SystemSampler.for_device(1.0, None); s.sample_if_due(0.0); "
            "assert 'torch' not in sys.modules, 'torch imported'")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
