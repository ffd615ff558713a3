"""Where a database is: a local path, or `ssh://[user@]host[:port]/path/to/db[?rla=COMMAND]`.

A remote database is opened over the user's own SSH (keys, agent, ~/.ssh/config, jump hosts are
all SSH's): `ssh … HOST -- rla serve --stdio --db PATH`. The path after the host is absolute;
`ssh://host/~/runs.db` is in the remote home. `rla=` names the remote command where `rla` is not
on the remote PATH (a virtual environment's `…/bin/rla`).
"""
from __future__ import annotations

import os
import re
import shlex
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

SCHEME = "ssh://"
# what ssh itself accepts as a host or user, and nothing a shell or ssh would read as an option
HOST_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,252}\Z|\[[0-9A-Fa-f:.]+\]\Z")
USER_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}\Z")
SSH_ENV = "RLA_SSH"          # the ssh command and options before the host ("ssh -F ~/.ssh/other")
# no prompt (stdin is the protocol's), ssh's own keep-alive (a link that stops answering is given
# up within ~30 s even mid-message), and a connect that gives up rather than hangs while the
# console reconnects
SSH_OPTIONS = ("-T", "-e", "none", "-o", "BatchMode=yes", "-o", "ServerAliveInterval=10",
               "-o", "ServerAliveCountMax=3", "-o", "ConnectTimeout=20")


class AddressError(ValueError):
    """A database address that names no database (the message says which part is wrong)."""


@dataclass(frozen=True)
class SshAddress:
    host: str
    path: str
    user: str | None = None
    port: int | None = None
    rla: str = "rla"
    # make the database where none is yet (`rla serve --create`); not part of the address: a
    # mistyped path is refused rather than answered by a new, empty database
    create: bool = dataclasses.field(default=False, compare=False)

    def __str__(self) -> str:
        who = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        path = self.path if self.path.startswith("/") else f"/{self.path}"
        query = "" if self.rla == "rla" else f"?rla={quote(self.rla, safe='/._-~')}"
        return f"{SCHEME}{who}{self.host}{port}{quote(path, safe='/._-~')}{query}"

    @property
    def name(self) -> str:
        """The database file's name, as a local Path's `.name`."""
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    @property
    def label(self) -> str:
        """Short, for a status line or a title: host:path."""
        return f"{self.host}:{self.path}"

    def ssh_argv(self) -> list[str]:
        """The ssh command that starts `rla serve` there. ssh hands the remote command to the
        remote shell as one string, so each part is quoted: nothing typed reaches a shell as code."""
        prefix = shlex.split(os.environ.get(SSH_ENV, "")) or ["ssh"]
        where = [*(["-p", str(self.port)] if self.port else []), *(["-l", self.user] if self.user else [])]
        words = ("serve", "--stdio", "--db", self.path, *(["--create"] if self.create else []))
        remote = " ".join([_command_word(self.rla), *map(shlex.quote, words)])
        return [*prefix, *SSH_OPTIONS, *where, "--", self.host.strip("[]"), remote]     # ssh takes [::1] bare


def _command_word(command: str) -> str:
    """The remote command, quoted, but for a leading `~/`, which the remote shell is to expand
    (a virtual environment in the remote home: `?rla=~/venv/bin/rla`)."""
    if command.startswith("~/"):
        return "~/" + shlex.quote(command[2:])
    return shlex.quote(command)


def parse_location(text: str | Path) -> Path | SshAddress:
    """A local path, or an SshAddress for `ssh://…`; AddressError names what is wrong."""
    if isinstance(text, Path) or not str(text).startswith(SCHEME):
        return Path(text).expanduser()
    return parse_ssh(str(text))


def parse_ssh(text: str) -> SshAddress:
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as e:
        raise AddressError(f"{text}: {e}") from None
    host = parts.hostname or ""
    if parts.netloc.rpartition("@")[2].startswith("["):
        host = f"[{host}]"
    if not HOST_RE.match(host):
        raise AddressError(f"{text}: no host, or a host ssh cannot take ({host!r})")
    user = parts.username
    if user is not None and not USER_RE.match(user):
        raise AddressError(f"{text}: user {user!r} is not a user name")
    if parts.password is not None:
        raise AddressError(f"{text}: a password in the address is not used (SSH's keys and agent are)")
    path = _path_of(parts.path)
    if not path:
        raise AddressError(f"{text}: no database path after the host (ssh://host/path/to/runs.db)")
    if "\x00" in path or "\n" in path:
        raise AddressError(f"{text}: the path holds a control character")
    query = parse_qs(parts.query, keep_blank_values=True)
    unknown = sorted(set(query) - {"rla"})
    if unknown:
        raise AddressError(f"{text}: unknown option {unknown[0]!r} (only rla=COMMAND)")
    rla = query.get("rla", ["rla"])[-1]
    if not rla or rla.startswith("-") or any(c in rla for c in "\x00\n"):
        raise AddressError(f"{text}: rla={rla!r} is not a command")
    return SshAddress(host=host, path=path, user=user, port=port, rla=rla)


def _path_of(url_path: str) -> str:
    from urllib.parse import unquote
    path = unquote(url_path)
    if path.startswith("/~"):           # ssh://host/~/runs.db: the remote home
        return path[1:]
    return path if path not in ("", "/") else ""
