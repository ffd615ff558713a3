"""The console over SSH: a real sshd on 127.0.0.1 (tests/sshd.py) and the relay that slows or
cuts its connections (tests/relay.py)."""
import os
import shlex
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))     # tests/sshd.py
from sshd import DEFAULT_RLA, SshdUnavailable, SshServer


@pytest.fixture(scope="session")
def sshd():
    """One SshServer for the session (hosts rla-test, rla-slow, rla-relay in sshd.config).
    Skipped where sshd cannot start, except under CI, which must run these tests: there it fails."""
    try:
        server = SshServer.start()
    except SshdUnavailable as e:
        if os.environ.get("CI"):
            pytest.fail(f"sshd is required in CI: {e}", pytrace=False)
        pytest.skip(f"no sshd: {e}")
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
