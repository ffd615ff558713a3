"""Joining a Ray cluster, torch-free: what a Ray run and `rla ablate --executor ray` share.

Joining is bounded in time. Left to itself, ray.init retries an address where no cluster answers
for about ten minutes (20 attempts of ~35 s, each inside Ray's C++ client, where neither a Python
signal handler nor a timeout can reach it). So a join first probes the address in plain Python
(a TCP connect, then the HTTP/2 greeting every Ray cluster's gRPC port answers with), which names
the usual faults at once: nothing listening, no route, an unknown host, a server that is not
Ray. Only an address that answers is handed to ray.init, and that call runs in a daemon thread
that is abandoned once `executor.connect_timeout_s` has passed (a cluster that wants a token, a
gRPC server that is not Ray's). The caller's thread only waits, so SIGTERM keeps its default
action and ends the process at any moment of a join; ray.init would otherwise install a handler
that cannot run while its thread is inside the C++ client.

Errors are InputError (exit code 2): nothing has been started, and the remedy is the user's (the
address, RAY_ADDRESS, or the timeout). Each names the address and where it came from.
"""
from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ray

from .errors import InputError

CONNECT_TIMEOUT_S = 30.0     # executor.connect_timeout_s's default (config.py says why)
# The client's half of the HTTP/2 greeting (RFC 9113 §3.4): the preface and an empty SETTINGS frame.
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
_H2_SETTINGS = 4


def first_line(e: BaseException) -> str:
    """An exception's first line (Ray's carry a long traceback after it), at most 300 characters."""
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:300]


@dataclass(frozen=True)
class Target:
    """An existing cluster to join: its host and port, and where the address came from (for messages)."""
    host: str
    port: int
    source: str
    written: str = ""       # the host as the address wrote it, where Ray looks elsewhere for it


def connect(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> bool:
    """Join the cluster at `address` (empty: RAY_ADDRESS if set, else a cluster `ray start`
    recorded on this machine, else a new cluster on this machine) unless this process already
    has; True when this call connected. Joining an existing cluster fails within about twice
    `timeout_s` (probe, then join) with an InputError naming the address and its source."""
    if ray.is_initialized():
        return False
    target = find_target(address)
    if target is None:
        # A new cluster on this machine: ray.init starts its processes and bounds the wait itself.
        _init(address)
        return True
    problem = probe(target.host, target.port, timeout_s)
    if problem:
        alias = f" (Ray reaches {target.written} at {target.host})" if target.written else ""
        raise InputError(f"{target.source}: cannot join a Ray cluster there: {problem}{alias}")
    done, error = _within(timeout_s, lambda: _init(address, quiet_thread_warning=True))
    if not done:
        raise InputError(f"{target.source}: a server answers there, but joining its Ray cluster did not finish "
                         f"within {timeout_s:g} s (executor.connect_timeout_s); a cluster that uses token "
                         "authentication also needs RAY_AUTH_MODE=token here")
    if error is not None:
        if isinstance(error, ConnectionError | ValueError | RuntimeError):
            raise InputError(f"{target.source}: cannot join the Ray cluster ({first_line(error)})") from None
        raise error
    _exit_on_sigterm()
    return True


def find_target(address: str) -> Target | None:
    """The existing cluster ray.init(address or None) would join, or None when it would start one.

    Ray reads RAY_ADDRESS only when the address is empty or 'auto', and with neither looks for a
    cluster on this machine (the one `ray start` recorded; with 'auto' any running one)."""
    env = os.environ.get("RAY_ADDRESS", "")
    if address and address != "auto":
        return _parse(address, f"invalid config: executor.address = {address!r}")
    if env:
        why = "executor.address is 'auto'" if address else "executor.address is empty"
        return _parse(env, f"invalid environment: RAY_ADDRESS = {env!r} (used because {why})")
    try:
        from ray._private.services import canonicalize_bootstrap_address
        found = canonicalize_bootstrap_address(address or None)
    except ConnectionError:
        raise InputError(f"invalid config: executor.address = {address!r}: no Ray cluster is running on this "
                         "machine (start one with `ray start --head`, or give its host:port)") from None
    except Exception:   # Ray's private discovery changed: ray.init will find (or start) the cluster itself
        return None
    if not found:
        return None
    how = "'auto'" if address else "empty"
    return _parse(found, f"the Ray cluster found on this machine ({found}, used because executor.address is "
                         f"{how} and RAY_ADDRESS is unset; `ray stop` forgets a recorded one)")


def _parse(address: str, source: str) -> Target:
    """host:port (or ray://host:port, Ray's client), as Ray accepts them; InputError otherwise."""
    rest = address.strip()
    if rest.startswith("ray://"):
        rest = rest[len("ray://"):]
    host, sep, port = rest.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host    # [IPv6]:port
    ok = sep and host and port.isdigit() and 0 < int(port) < 65536 and "/" not in host \
        and not any(c.isspace() for c in host)
    if not ok:
        raise InputError(f"{source}: not a Ray cluster address: expected host:port (e.g. 10.0.0.5:6379), "
                         "auto, or ray://host:port")
    seen = _as_ray_sees(host)
    return Target(seen, int(port), source, host if seen != host else "")


def _as_ray_sees(host: str) -> str:
    """Ray joins 'localhost' or 127.0.0.1 at this machine's own address, so that is where to look."""
    try:
        from ray._private.services import resolve_ip_for_localhost
        return resolve_ip_for_localhost(host)
    except Exception:   # Ray's private helper moved or failed: the host as written
        return host


def probe(host: str, port: int, timeout_s: float) -> str | None:
    """None if something at host:port answers as a Ray cluster's gRPC port does, else why not (a
    phrase). Runs in a daemon thread, so a name lookup that the resolver drags out (which socket
    timeouts do not cover) cannot hold the caller past `timeout_s`."""
    # the thread gets a moment past the socket timeouts, so that their more telling answer wins
    done, answer = _within(timeout_s + 0.5, lambda: _greet(host, port, timeout_s))
    if not done:
        return f"no answer from {host}:{port} within {timeout_s:g} s (executor.connect_timeout_s)"
    return answer if isinstance(answer, str) or answer is None else f"{type(answer).__name__}: {answer}"


def _greet(host: str, port: int, timeout_s: float) -> str | None:
    deadline = time.monotonic() + timeout_s
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except socket.gaierror as e:
        return f"the host {host!r} is not known ({e.strerror or e})"
    except ConnectionRefusedError:
        return f"nothing listens at {host}:{port} (connection refused)"
    except TimeoutError:
        return f"no answer from {host}:{port} within {timeout_s:g} s (executor.connect_timeout_s)"
    except OSError as e:
        return f"{host}:{port} cannot be reached ({e.strerror or e})"
    if os.environ.get("RAY_USE_TLS", "").lower() in ("1", "true"):
        sock.close()
        return None     # a TLS cluster's greeting comes after a handshake this probe does not make
    with sock:
        try:
            sock.settimeout(max(0.05, deadline - time.monotonic()))
            sock.sendall(_H2_PREFACE)
            head = b""
            while len(head) < 9:     # the server's first frame header: its SETTINGS
                chunk = sock.recv(9 - len(head))
                if not chunk:
                    break
                head += chunk
        except TimeoutError:
            return (f"{host}:{port} accepts connections but does not answer as a Ray cluster within "
                    f"{timeout_s:g} s (executor.connect_timeout_s)")
        except OSError as e:
            return f"{host}:{port} closed the connection ({e.strerror or e}): not a Ray cluster"
    if len(head) < 9 or head[3] != _H2_SETTINGS:
        return f"{host}:{port} answers, but not as a Ray cluster (it does not speak gRPC)"
    return None


def _within(timeout_s: float, work: Callable[[], Any]) -> tuple[bool, Any]:
    """(finished, its result or the exception it raised) of `work` run in a daemon thread for at most
    `timeout_s`; a thread still running then is abandoned (it dies with the process)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = work()
        except BaseException as e:      # handed to the caller, who decides
            box["result"] = e

    thread = threading.Thread(target=run, name="rla-ray-connect", daemon=True)
    thread.start()
    thread.join(timeout_s)
    return not thread.is_alive(), box.get("result")


class _NoThreadWarning(logging.Filter):
    """Drops Ray's warning that it set no SIGTERM handler from a thread: that is the point here."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "SIGTERM handler is not set" not in record.getMessage()


def _init(address: str, quiet_thread_warning: bool = False) -> None:
    log = logging.getLogger("ray._private.worker")
    quiet = _NoThreadWarning()
    if quiet_thread_warning:
        log.addFilter(quiet)
    try:
        ray.init(address=address or None, include_dashboard=False, logging_level="warning", log_to_driver=False)
    finally:
        log.removeFilter(quiet)


def _exit_on_sigterm() -> None:
    """What ray.init does in the main thread and could not do from the join's thread: SIGTERM exits
    through Python, so that the atexit hooks (ray.shutdown) run."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))
