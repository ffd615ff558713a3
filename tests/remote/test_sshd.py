"""The SSH test infrastructure itself: the real sshd, host key checking, and the relay's slow and
cut connections (tests/sshd.py, tests/relay.py)."""
import os
import select
import shlex
import subprocess
import time

import pytest


def ssh(server, host, *command, timeout=10, **kwargs):
    return subprocess.run([*server.ssh_prefix, host, "--", *command], capture_output=True, timeout=timeout,
                          **kwargs)


def read_for(proc, seconds):
    """What proc wrote to stdout within `seconds` (b"" if nothing)."""
    got, deadline = b"", time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if not select.select([proc.stdout], [], [], left)[0]:
            break
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            break
        got += chunk
    return got


def read_until(proc, wanted, seconds):
    got, deadline = b"", time.monotonic() + seconds
    while wanted not in got and time.monotonic() < deadline:
        got += read_for(proc, min(0.2, deadline - time.monotonic()))
    return got


def test_a_command_runs_and_returns_its_output(sshd):
    done = ssh(sshd, "rla-test", "echo", "hi", "$((6*7))")
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"hi 42\n"


def test_url_names_the_absolute_path(sshd, tmp_path, rla_path):
    db = tmp_path / "x.db"
    assert sshd.url(db) == f"ssh://rla-test{db}"
    assert sshd.url(db, host="rla-slow", rla=rla_path) == f"ssh://rla-slow{db}?rla={rla_path}"
    assert rla_path.exists()
    done = ssh(sshd, "rla-test", shlex.quote(str(rla_path)), "--help")
    assert done.returncode == 0, done.stderr


def test_host_key_checking_is_on(sshd, tmp_path):
    """The same config with a known_hosts that lacks the server's key: BatchMode ssh refuses."""
    stranger = tmp_path / "known_hosts"
    stranger.write_text("")
    config = tmp_path / "ssh_config"
    config.write_text(sshd.config.read_text().replace(str(sshd.known_hosts), str(stranger)))
    done = subprocess.run(["ssh", "-F", str(config), "rla-test", "--", "echo", "hi"], capture_output=True,
                          timeout=10)
    assert done.returncode == 255
    assert b"hi" not in done.stdout
    assert b"Host key verification failed" in done.stderr
    assert stranger.read_text() == ""       # and nothing was learnt


def test_the_relay_passes_bytes_through(sshd):
    sshd.heal()
    data = bytes(range(256)) * 400
    done = ssh(sshd, "rla-relay", "cat", input=data)
    assert done.returncode == 0, done.stderr
    assert done.stdout == data


def test_cut_hangs_a_new_command_and_heal_lets_the_next_one_work(sshd):
    sshd.cut()
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            ssh(sshd, "rla-relay", "sleep 0; echo x", timeout=1.5)
    finally:
        sshd.heal()
    done = ssh(sshd, "rla-relay", "echo", "x")
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"x\n"


def test_cut_stalls_an_open_connection_which_resumes_on_heal(sshd):
    """A partition, not a close: nothing arrives while cut, nobody is told, and the same
    connection carries on afterwards."""
    sshd.heal()
    proc = subprocess.Popen([*sshd.ssh_prefix, "rla-relay", "--", "cat"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        proc.stdin.write(b"one\n")
        proc.stdin.flush()
        assert read_until(proc, b"one\n", 10) == b"one\n"
        sshd.cut()
        time.sleep(0.5)                     # the relay polls its control file a few times a second
        proc.stdin.write(b"two\n")
        proc.stdin.flush()
        assert read_for(proc, 1.0) == b""
        assert proc.poll() is None
        sshd.heal()
        assert read_until(proc, b"two\n", 5) == b"two\n"
    finally:
        sshd.heal()
        proc.kill()
        proc.communicate(timeout=10)


def test_rla_slow_works_but_slowly(sshd):
    """20000 B/s: 30 kB from the server take at least 1.5 s (1 s allows for any burst)."""
    started = time.monotonic()
    done = ssh(sshd, "rla-slow", "head", "-c", "30000", "/dev/zero", timeout=30)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert done.stdout == bytes(30000)
    assert took >= 1.0, took
