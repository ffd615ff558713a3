"""RemoteClient when things go wrong, with real processes: the ssh client or the remote `rla serve`
killed mid-watch, a network partition (tests/relay.py), a slow link, a remote end that is not
this protocol's `rla serve`, a missing `rla`, a file that is not a database; and what must never
happen: a listening socket, or a shell running a word of a hostile path."""
import asyncio
import os
import signal
import socket
import time

import pytest
from remote_support import (RLA, cmdline, copy_db, finished_db, iterations_of, listening_sockets, merged, remote,
                            run_async, same, serve_pids, until, watch_all)

from rla_engine import metrics
from rla_engine.client import EngineClient, EngineError
from rla_engine.config import build
from rla_engine.paths import log_path
from rla_engine.remote import RemoteClient, RemoteError, SshAddress, parse_location
from rla_engine.remote.protocol import PROTOCOL

ITERATIONS = 200        # a tiny run of ~6 s: long enough to be cut in the middle of


@pytest.fixture
def shared(tmp_path_factory):
    return finished_db(tmp_path_factory)


def test_a_watch_survives_killed_links_the_run_finishes_and_nothing_listens(ssh_env, tmp_path):
    """While the run is live, neither the `rla serve` nor the engine it started listens on a port.
    SIGKILL to the console's ssh, then (on the new link) to the remote `rla serve`: each time
    the client says "lost", then "connected" again, the watch goes on where it was (every
    iteration once), and the engine, which runs in its own session there, finishes its run untouched.
    (One run for both: each costs a few seconds of the suite.)"""
    db = tmp_path / "live" / "runs.db"

    async def scenario():
        there = remote(ssh_env, db, create=True)
        states: list[str] = []
        there.on_state.append(lambda state, _text: states.append(state))
        try:
            run_id = await there.start(build(preset="tiny", sets=[f"run.iterations={ITERATIONS}"]), preset="tiny")
            updates: list = []
            watcher = asyncio.ensure_future(watch_all(there, run_id, updates.append))
            await until(lambda: len(iterations_of(updates, metrics.SUCCESS)) >= 3, what="live metrics")
            run = await there.run(run_id)
            assert run["status"] == "running"
            served = serve_pids(db)
            assert len(served) == 1, served
            for pid in (*served, run["pid"]):
                assert listening_sockets(pid) == [], (pid, cmdline(pid))
            for victim, after in (("ssh", 10), ("serve", 40)):
                await until(lambda n=after: len(iterations_of(updates, metrics.SUCCESS)) >= n, what="live metrics")
                served = serve_pids(db)
                assert len(served) == 1, served
                link = there._link
                os.kill(link.proc.pid if victim == "ssh" else served[0], signal.SIGKILL)
                killed_at = len(states)
                await until(lambda k=killed_at: "connected" in states[k:], what="the link to come back")
                assert states[killed_at] == "lost", states
                assert there._link is not link
                assert victim == "ssh" or served[0] not in serve_pids(db)
            await asyncio.wait_for(watcher, 90)
            final = await there.run(run_id)
            return final, updates, states
        finally:
            await there.close()

    final, updates, _states = run_async(scenario(), timeout=150)
    assert final["status"] == "completed" and final["iteration"] == ITERATIONS, final
    assert not final["error"]
    # the engine's own last word, in the log the server started it with: it ended by itself
    assert f"completed at iteration {ITERATIONS}" in log_path(db, final["id"]).read_text()
    for key in (metrics.SUCCESS, "perf/env_steps"):
        assert iterations_of(updates, key) == list(range(1, ITERATIONS + 1)), key       # none twice, none lost
    events = [e["id"] for u in updates for e in u.events]
    assert events == sorted(set(events))
    kinds = [e["kind"] for u in updates for e in u.events]
    assert kinds.count("started") == 1 and kinds[-1] == "completed"
    # and the local view of the same database agrees with what came over the broken link
    async def local():
        here = EngineClient(db)
        try:
            return merged(await watch_all(here, final["id"]))
        finally:
            await here.close()
    mine = run_async(local())
    same(mine["metrics"], merged(updates)["metrics"])
    same([e["id"] for e in mine["events"]], events)


def test_a_partition_is_noticed_and_healed(ssh_env, shared, tmp_path):
    """rla-relay stops carrying bytes: within dead_after_s the client says "lost"; a change asked
    then fails at once, saying nothing was sent; a read waits, and is answered once the network
    heals, over a new connection."""
    db = copy_db(shared[0], tmp_path / "copy")
    run_id = shared[1][0]
    sshd = ssh_env
    sshd.heal()

    async def scenario():
        # a reconnect attempt into the partition hangs until its first line's timeout: 4 s, not 30, so
        # that the attempt is seen failing soon (the behaviour is the same, only the wait shorter)
        there = remote(sshd, db, host="rla-relay", dead_after_s=3.0, connect_timeout_s=4.0)
        here = EngineClient(db)
        states: list[tuple[str, float, str]] = []
        there.on_state.append(lambda state, text: states.append((state, time.monotonic(), text)))
        try:
            await there.connect()
            expected = await here.list_runs()
            same(await there.list_runs(), expected)
            cut_at = time.monotonic()
            sshd.cut()
            # a change on its way when the link dies may or may not have happened, and says so (the
            # relay reads its control file a few times a second: changes go through until then)
            with pytest.raises(EngineError, match="may or may not have been carried out"):
                while True:
                    await there.set_notes(run_id, "sent into the partition")
            lost = await until(lambda: [s for s in states if s[0] == "lost"], timeout=15, what="lost")
            noticed = lost[0][1] - cut_at
            assert noticed < there.dead_after_s + 5, (noticed, states)     # slack for a loaded machine
            assert "no answer for 3 s" in lost[0][2]

            asked = time.monotonic()
            with pytest.raises(EngineError, match=r"not connected .*nothing was sent"):
                await there.command(run_id, "pause")
            assert time.monotonic() - asked < 1.0

            read = asyncio.ensure_future(there.list_runs())
            # the read is waiting for the link (not failed, not answered) once the next reconnect
            # attempt has been said: by then it has had every chance to do otherwise
            said = len(states)
            await until(lambda: len(states) > said, timeout=30, what="a reconnect attempt")
            assert not read.done()
            sshd.heal()
            same(await asyncio.wait_for(read, 30), await here.list_runs())
            assert there.state == "connected"
            assert await there.metric_names() == await here.metric_names()
        finally:
            sshd.heal()
            await there.close()
            await here.close()
    run_async(scenario())


def test_a_slow_link_connects_lists_and_watches(ssh_env, shared):
    db, (long_id, _short_id) = shared

    async def scenario():
        here, there = EngineClient(db), remote(ssh_env, db, host="rla-slow")
        try:
            started = time.monotonic()
            await there.connect()
            same(await there.list_runs(), await here.list_runs())
            mine, theirs = await watch_all(here, long_id), await watch_all(there, long_id)
            same(merged(mine), merged(theirs))
            assert len(merged(theirs)["metrics"][metrics.SUCCESS][0]) == 30
            return time.monotonic() - started
        finally:
            await there.close()
            await here.close()
    took = run_async(scenario())
    assert took > 0.2          # it did go through the slow relay (a few round trips of 100 ms)


# -- a remote end that cannot serve ---------------------------------------------------------------
def connect_error(sshd, db, **kw) -> RemoteError:
    async def scenario():
        there = remote(sshd, db, **kw)
        states: list[str] = []
        there.on_state.append(lambda state, _text: states.append(state))
        try:
            with pytest.raises(RemoteError) as failed:
                await there.connect()
            assert states == ["connecting", "failed"]
            # and a call made anyway says the same
            with pytest.raises(RemoteError):
                await there.list_runs()
            return failed.value
        finally:
            await there.close()
    return run_async(scenario(), timeout=60)


def test_another_protocol_version_is_refused_naming_both(ssh_env, tmp_path):
    fake = tmp_path / "fake rla"
    fake.write_text('#!/bin/sh\necho \'{"rla": "serve", "protocol": 99, "version": "9.9.9", "db": "x"}\'\n'
                    "exec cat >/dev/null\n")
    fake.chmod(0o755)
    error = str(connect_error(ssh_env, tmp_path / "runs.db", rla=fake))
    assert "protocol 99" in error and f"protocol {PROTOCOL}" in error and "9.9.9" in error
    assert "\n" not in error
    assert not (tmp_path / "runs.db").exists()


def test_a_missing_rla_says_how_to_name_it(ssh_env, tmp_path):
    error = str(connect_error(ssh_env, tmp_path / "runs.db", rla="/nonexistent/rla"))
    assert "`/nonexistent/rla` was not found" in error
    assert "?rla=/path/to/venv/bin/rla" in error and str(tmp_path / "runs.db") in error


def test_an_rla_without_serve_is_told_to_update(ssh_env, tmp_path):
    old = tmp_path / "old-rla"
    old.write_text("#!/bin/sh\necho \"rla: error: argument command: invalid choice: '$1'\" >&2\nexit 2\n")
    old.chmod(0o755)
    assert "no `serve` command" in str(connect_error(ssh_env, tmp_path / "runs.db", rla=old))


def test_a_file_that_is_not_a_database_is_named(ssh_env, tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 100)
    error = str(connect_error(ssh_env, text))
    assert str(text) in error and "not an SQLite database" in error
    assert text.read_text() == "not a database\n" * 100


def test_a_mistyped_path_is_refused_not_made(ssh_env, tmp_path):
    """No database at the path: refused, naming it and how to make one; nothing is created (a typo
    must not look like a database with no runs). With `create` it is made."""
    missing = tmp_path / "tpyo" / "runs.db"
    error = str(connect_error(ssh_env, missing))
    assert f"there is no database at {missing}" in error and "Create it if it is missing" in error
    assert not missing.parent.exists()

    async def scenario():
        there = remote(ssh_env, missing, create=True)
        try:
            assert await there.list_runs() == []
            # made once: a reconnect would not make it again (its disk unmounted meanwhile)
            assert "--create" not in there.location.ssh_argv()[-1]
        finally:
            await there.close()
    run_async(scenario())
    assert missing.is_file()


def test_an_unknown_host_is_an_ssh_failure(ssh_env, tmp_path):
    error = str(connect_error(ssh_env, tmp_path / "runs.db", host="rla-no-such-host.invalid"))
    assert "ssh to rla-no-such-host.invalid failed" in error


# -- what must never happen ---------------------------------------------------------------------------
def test_the_helper_sees_a_listening_socket():
    with socket.socket() as tcp, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        tcp.bind(("127.0.0.1", 0))
        assert listening_sockets(os.getpid()) == []
        tcp.listen()
        udp.bind(("127.0.0.1", 0))
        found = listening_sockets(os.getpid())
        assert {line.split()[0] for line in found} == {"tcp", "udp"}, found


def test_a_hostile_path_is_a_path_to_the_remote_shell(ssh_env, tmp_path):
    """Spaces, `;`, `$( )`, backquotes and quotes in the database path and in rla=: the remote
    shell receives them quoted, so it runs none of them; the database is made at that very path."""
    t = tmp_path
    db = t / f"a b;touch {t}/pwned;$(touch {t}/pwned2)" / f"`touch {t}/pwned3`'\"&|>x" / "runs.db"
    address = SshAddress(host="rla-test", path=str(db), rla=str(RLA), create=True)
    assert parse_location(str(address)) == address

    async def scenario():
        there = RemoteClient(address)
        try:
            await there.connect()
            assert await there.list_runs() == []
        finally:
            await there.close()
        hostile_rla = SshAddress(host="rla-test", path=str(t / "x.db"), rla=f"{RLA};touch {t}/pwned4")
        there = RemoteClient(hostile_rla)
        try:
            with pytest.raises(RemoteError, match="was not found"):
                await there.connect()
        finally:
            await there.close()
    run_async(scenario())
    assert db.is_file()
    assert sorted(p.name for p in t.glob("pwned*")) == []
    assert not (t / "x.db").exists()
