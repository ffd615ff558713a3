"""The sandbox's rules apart from hostile programs: the answer check, who may claim a
sandbox_error, and refusing to start without isolation when isolation is required."""
from __future__ import annotations

import dataclasses
import os

import pytest

from rla_engine.errors import InputError
from rla_engine.sandbox import Job, Limits, SandboxPool, SandboxUnavailable, Status, outputs_match
from rla_engine.sandbox import pool as pool_module
from rla_engine.sandbox.types import Isolation

ROOT = os.geteuid() == 0


@pytest.mark.parametrize(("actual", "expected", "same"), [
    (b"1 2\n3\n", b"1 2 3", True),             # the reference joins tokens across lines
    (b"  1\r\n2  \n\n\n", b"1\n2", True),
    (b"1 2", b"1 2 3", False),
    (b"12", b"1 2", False),
    (b"\xff\xfe", b"\xff\xfe\n", True),          # invalid UTF-8 compares by its bytes
    (b"\xff", b"\xfe", False),
    (b"a\xc2\xa0b", b"a b", True),               # str.split()'s Unicode whitespace, as the reference
    (b"", b"\n", True),
])
def test_outputs_match_is_the_references_token_rule(actual, expected, same):
    assert outputs_match(actual, expected) is same


def test_require_isolated_refuses_the_process_level(monkeypatch):
    bare = Isolation("process", [("no network", False, "shares the host's network")])
    monkeypatch.setattr(pool_module, "probe", lambda: bare)
    monkeypatch.setattr(pool_module, "probe_level", lambda level: (None, f"{level} missing in this test"))
    with pytest.raises(SandboxUnavailable, match=r"bubblewrap missing in this test.*apt-get install bubblewrap") as e:
        SandboxPool(require="isolated")
    assert isinstance(e.value, InputError)
    with pytest.raises(SandboxUnavailable, match="process level"):
        _forced_process(monkeypatch)


def _forced_process(monkeypatch):
    monkeypatch.setattr(pool_module, "probe_level",
                        lambda level: (Isolation(level, []), "") if level == "process" else (None, "missing"))
    return SandboxPool(require="isolated", force_level="process")


def test_bad_arguments_are_input_errors():
    with pytest.raises(InputError, match="isolated or any"):
        SandboxPool(require="maybe")
    with pytest.raises(InputError, match="must be one of"):
        SandboxPool(require="any", force_level="chroot")


def test_bwrap_failing_before_the_program_is_a_sandbox_error():   # guard: the status fd's child-pid
    with SandboxPool(require="any", workers=1, force_level="bubblewrap") as pool:
        ok = pool.run([Job("print(1)", expected=b"1")])[0]
        # a bwrap that runs and exits 1 without starting anything (as one that cannot make its
        # namespaces does): its exit alone would read as the program's runtime_error
        pool._launcher = dataclasses.replace(pool._launcher, bwrap="/usr/bin/false")
        gone = pool.run([Job("print(1)", expected=b"1")])[0]
    assert ok.status == Status.OK
    assert gone.status == Status.SANDBOX_ERROR and "bubblewrap did not start" in gone.detail


# the command's first exec: as root, the tool that drops to the slot's user
@pytest.mark.parametrize(("level", "field"), [("bubblewrap", "nsenter" if ROOT else "bwrap"),
                                              ("process", "unshare" if ROOT else "python")])
def test_a_spawn_failure_is_a_sandbox_error(level, field):
    with SandboxPool(require="any", workers=1, force_level=level) as pool:
        pool._launcher = dataclasses.replace(pool._launcher, **{field: "/nonexistent/" + field})
        ex = pool.run([Job("print(1)")])[0]
    assert ex.status == Status.SANDBOX_ERROR and "FileNotFoundError" in ex.detail


def test_results_keep_the_order_of_the_jobs():
    jobs = [Job(f"import time\ntime.sleep({0.05 * (i % 3)})\nprint({i})", limits=Limits(time_s=2))
            for i in range(9)]
    with SandboxPool(require="isolated", workers=3) as pool:
        assert pool.isolation.level == "bubblewrap"
        assert [r.stdout for r in pool.run(jobs)] == [b"%d\n" % i for i in range(9)]
    with pytest.raises(RuntimeError, match="closed"):
        pool.run(jobs)
