"""The console over SSH: a real sshd on 127.0.0.1 (tests/sshd.py) and the relay that slows or
cuts its connections (tests/relay.py)."""
import os
import shlex
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))     # tests/sshd.py
from sshd import DEFAULT_RLA, NamespacedSshServer, SshdUnavailable, SshServer


def started(kind: type[SshServer]) -> SshServer:
    """A running server of this kind. Skipped where it cannot start, except under CI, which must
    run these tests: there it fails, with the reason."""
    try:
        return kind.start()
    except SshdUnavailable as e:
        if os.environ.get("CI"):
            pytest.fail(f"{kind.__name__} is required in CI: {e}", pytrace=False)
        pytest.skip(f"no {kind.__name__}: {e}")


@pytest.fixture(scope="module")
def sshd():
    """One SshServer per test module (hosts rla-test, rla-slow, rla-relay in sshd.config): stopped
    after it, so that no later test finds sshd among this process's children."""
    server = started(SshServer)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def namespaced_sshd():
    """sshd in a network namespace of its own, whose link a test can pull (NamespacedSshServer)."""
    server = started(NamespacedSshServer)
    yield server
    server.stop()


@pytest.fixture
def ssh_env(sshd, monkeypatch):
    """RLA_SSH set to the ssh command prefix that reads the test hosts' config; yields the server."""
    monkeypatch.setenv("RLA_SSH", shlex.join(sshd.ssh_prefix))
    return sshd


@pytest.fixture(scope="session")
def rla_path() -> Path:
    """The venv's `rla`, what tests pass as ?rla= (the remote PATH does not hold the venv)."""
    return DEFAULT_RLA
