"""A real sshd on 127.0.0.1 for the console-over-SSH tests (tests/remote/conftest.py).

SshServer.start() makes throwaway host and user keys, runs `sshd -D -e` on a free port and writes
an ssh client config with three hosts, all with host key checking on:
  rla-test   straight to the server
  rla-slow   through tests/relay.py at 20000 B/s each way, 50 ms one-way delay
  rla-relay  through tests/relay.py unthrottled, with a control file: cut() partitions, heal() resumes
"""
from __future__ import annotations

import getpass
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SSHD = Path("/usr/sbin/sshd")
RELAY = Path(__file__).resolve().with_name("relay.py")
DEFAULT_RLA = Path(sys.executable).with_name("rla")
READY_TIMEOUT_S = 10.0
SLOW_RATE = 20000       # bytes/s each way
SLOW_DELAY = 0.05       # seconds, one way


class SshdUnavailable(RuntimeError):
    """sshd could not be started here; the message says why."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _descendants(pid: int) -> list[int]:
    """All processes below pid (Linux /proc); empty where /proc is not readable."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        # the command name may hold spaces and parentheses: the fields after the last ")" are fixed
        ppid = int(text.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _ssh_arg(value: str) -> str:
    # ssh expands %-tokens in ProxyCommand and IdentityFile; the shell runs ProxyCommand
    return shlex.quote(value).replace("%", "%%")


class SshServer:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="rla-sshd-"))
        self.port = 0
        self.user = getpass.getuser()
        self.config = self.dir / "ssh_config"
        self.known_hosts = self.dir / "known_hosts"
        self.user_key = self.dir / "user_key"
        self.host_key = self.dir / "host_key"
        self.control = self.dir / "relay-control"
        self.ssh_prefix = ["ssh", "-F", str(self.config)]
        self._proc: subprocess.Popen | None = None
        self._log_file = self.dir / "sshd.log"
        self._final_log: str | None = None
        self.address = "127.0.0.1"       # where sshd listens (NamespacedSshServer: inside its namespace)
        self.wrap: list[str] = []         # what sshd is started under (`ip netns exec NS`)

    @classmethod
    def start(cls) -> SshServer:
        """A running server, or SshdUnavailable with the reason (everything started is stopped)."""
        server = cls()
        try:
            server._start()
        except BaseException:
            server.stop()
            raise
        return server

    # -- the pieces of start ----------------------------------------------------------------------
    def _start(self) -> None:
        if not SSHD.exists():
            raise SshdUnavailable(f"{SSHD} is not installed (make openssh)")
        for tool in ("ssh", "ssh-keygen"):
            if shutil.which(tool) is None:
                raise SshdUnavailable(f"the ssh client tool {tool!r} is not installed")
        for key in (self.host_key, self.user_key):
            self._run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "rla-test", "-f", str(key)])
        shutil.copy(self.user_key.with_suffix(".pub"), self.dir / "authorized_keys")
        if os.geteuid() == 0:
            # sshd's privilege separation directory, which it refuses to start without
            Path("/run/sshd").mkdir(mode=0o755, parents=True, exist_ok=True)
        # the port is free when picked but may be taken before sshd binds it: try a few
        for _attempt in range(3):
            self.port = _free_port()
            self._write_configs()
            if self._launch():
                return
        raise SshdUnavailable(f"sshd found no free port; its log:\n{self.log()}")

    def _run(self, cmd: list[str]) -> None:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise SshdUnavailable(f"{shlex.join(cmd)} failed: {done.stderr.strip()}")

    def _sshd_config(self) -> str:
        lines = [
            f"Port {self.port}",
            f"ListenAddress {self.address}",
            f"HostKey {self.host_key}",
            f"AuthorizedKeysFile {self.dir / 'authorized_keys'}",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PermitRootLogin prohibit-password",
            "StrictModes no",           # the temporary folder's modes are not sshd's business here
            "UsePAM no",
            f"PidFile {self.dir / 'sshd.pid'}",
            "LoginGraceTime 30",        # connections cut before login do not linger for the default 2 min
        ]
        # OpenSSH ≥ 9.8 penalises sources whose connections fail, and the tests fail some on purpose
        probe = subprocess.run([str(SSHD), "-t", "-f", "/dev/null", "-o", "PerSourcePenalties=no"],
                               capture_output=True, text=True)
        if "PerSourcePenalties" not in probe.stderr:
            lines.append("PerSourcePenalties no")
        return "\n".join(lines) + "\n"

    def _client_config(self) -> str:
        relay = f"{_ssh_arg(sys.executable)} {_ssh_arg(str(RELAY))} %h %p"
        common = [
            f"    HostName {self.address}",
            f"    Port {self.port}",
            f"    User {self.user}",
            f"    IdentityFile {_ssh_arg(str(self.user_key))}",
            "    IdentitiesOnly yes",
            f"    UserKnownHostsFile {_ssh_arg(str(self.known_hosts))}",
            "    GlobalKnownHostsFile /dev/null",
            "    StrictHostKeyChecking yes",
            "    UpdateHostKeys no",
            "    BatchMode yes",
            "    ConnectTimeout 5",
            "    ControlMaster no",
            "    ControlPath none",
        ]
        hosts = {
            "rla-test": [],
            "rla-slow": [f"    ProxyCommand {relay} --rate {SLOW_RATE} --delay {SLOW_DELAY}"],
            "rla-relay": [f"    ProxyCommand {relay} --control {_ssh_arg(str(self.control))}"],
        }
        return "\n".join("\n".join([f"Host {name}", *common, *extra]) + "\n" for name, extra in hosts.items())

    def _write_configs(self) -> None:
        (self.dir / "sshd_config").write_text(self._sshd_config())
        self.config.write_text(self._client_config())
        host_key = self.host_key.with_suffix(".pub").read_text().split()
        self.known_hosts.write_text(f"[{self.address}]:{self.port} {host_key[0]} {host_key[1]}\n")

    def _launch(self) -> bool:
        """True once a real login works; False if the port was taken; SshdUnavailable otherwise."""
        with open(self._log_file, "wb") as log:       # a fresh log per attempt
            # its own session: stop() can signal it without touching pytest's process group
            self._proc = subprocess.Popen([*self.wrap, str(SSHD), "-D", "-e", "-f", str(self.dir / "sshd_config")],
                                          stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                          start_new_session=True)
        deadline = time.monotonic() + READY_TIMEOUT_S
        last = ""
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                if "Address already in use" in self.log():
                    self._proc = None
                    return False
                raise SshdUnavailable(f"sshd exited with {self._proc.returncode}; its log:\n{self.log()}")
            try:
                done = subprocess.run([*self.ssh_prefix, "rla-test", "true"], stdin=subprocess.DEVNULL,
                                      capture_output=True, text=True, timeout=5)
                if done.returncode == 0:
                    return True
                last = done.stderr.strip()
            except subprocess.TimeoutExpired:
                last = "ssh rla-test true did not finish in 5 s"
            time.sleep(0.1)
        raise SshdUnavailable(f"no login to sshd within {READY_TIMEOUT_S:.0f} s ({last}); its log:\n{self.log()}")

    # -- the API ------------------------------------------------------------------------------------
    def url(self, db_path: str | os.PathLike, host: str = "rla-test", rla: str | os.PathLike | None = None) -> str:
        """ssh://HOST/ABSOLUTE/PATH[?rla=PATH]: how the console names a database on a remote machine."""
        url = f"ssh://{host}{os.path.abspath(db_path)}"
        return f"{url}?rla={rla}" if rla is not None else url

    def cut(self) -> None:
        """rla-relay connections, open and new, stop carrying bytes (nothing is closed)."""
        self.control.write_text("cut\n")

    def heal(self) -> None:
        self.control.write_text("ok\n")

    def log(self) -> str:
        if self._final_log is not None:
            return self._final_log
        try:
            return self._log_file.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        """Ends sshd and every session it started (they run in sessions of their own), removes the folder."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            for pid in [*_descendants(proc.pid), proc.pid]:
                try:
                    os.kill(pid, signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._final_log is None and self.dir.exists():
            self._final_log = self.log()
        shutil.rmtree(self.dir, ignore_errors=True)


class NamespacedSshServer(SshServer):
    """sshd in a network namespace of its own, reached over a veth pair: `pull()` takes the link
    down under an open connection (packets vanish, neither end is told, as when a cable or a
    VPN goes), `plug()` brings it back. Needs root (CAP_NET_ADMIN) and `ip`."""

    def __init__(self) -> None:
        super().__init__()
        tag = f"{os.getpid() % 100000}"
        self.namespace, self.outer, self.inner = f"rla-ns-{tag}", f"rla{tag}h", f"rla{tag}n"
        net = 16 + os.getpid() % 200
        self.address, self.gateway = f"10.231.{net}.2", f"10.231.{net}.1"
        self.wrap = ["ip", "netns", "exec", self.namespace]

    def _start(self) -> None:
        if os.geteuid() != 0 or shutil.which("ip") is None:
            raise SshdUnavailable("a network namespace needs root and iproute2's `ip`")
        for cmd in (["ip", "netns", "add", self.namespace],
                    ["ip", "link", "add", self.outer, "type", "veth", "peer", "name", self.inner],
                    ["ip", "link", "set", self.inner, "netns", self.namespace],
                    ["ip", "addr", "add", f"{self.gateway}/30", "dev", self.outer],
                    ["ip", "link", "set", self.outer, "up"],
                    [*self.wrap, "ip", "addr", "add", f"{self.address}/30", "dev", self.inner],
                    [*self.wrap, "ip", "link", "set", self.inner, "up"],
                    [*self.wrap, "ip", "link", "set", "lo", "up"]):
            self._run(cmd)
        super()._start()

    def pull(self) -> None:
        self._run([*self.wrap, "ip", "link", "set", self.inner, "down"])

    def plug(self) -> None:
        self._run([*self.wrap, "ip", "link", "set", self.inner, "up"])

    def stop(self) -> None:
        super().stop()
        for cmd in (["ip", "link", "del", self.outer], ["ip", "netns", "del", self.namespace]):
            subprocess.run(cmd, capture_output=True, timeout=30)
