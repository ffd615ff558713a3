"""Reading a file the user named (`rla run --config`, `rla ablate --config`, the console's
Load TOML…, `rla import`): a regular file of bounded size, or a one-line refusal. Stdlib only, so
the console's forms can use it too.

A FIFO would block the read until a writer comes, /dev/zero never ends, a folder is no file: each
is refused before a byte is read. The path is stat'ed before it is opened (opening a device can
itself act), then opened without blocking and checked again through the descriptor, so a file
swapped in between is caught too. A link to a regular file is followed: that is an ordinary way to
name a file.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import InputError

_KINDS = ((stat.S_ISREG, "regular file"), (stat.S_ISDIR, "folder"), (stat.S_ISLNK, "symbolic link"),
          (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
          (stat.S_ISFIFO, "named pipe (FIFO)"), (stat.S_ISSOCK, "socket"))


class UnreadableFile(InputError):
    """A named file that is refused; `reason` says why without the path (`str()` has both)."""

    def __init__(self, path: Path, reason: str):
        self.path, self.reason = path, reason
        super().__init__(f"{path}: {reason}")


def kind_of(mode: int) -> str:
    """What a stat mode is, in words (every name takes "a")."""
    return next((name for test, name in _KINDS if test(mode)), "special file")


def _check(path: Path, st: os.stat_result, cap: int, what: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise UnreadableFile(path, f"a {kind_of(st.st_mode)}, not {what} (only a regular file is read)")
    if st.st_size > cap:
        raise UnreadableFile(path, f"{st.st_size:,} bytes; {what} is read up to {cap:,} bytes")


def read_user_file(file: str | Path, cap: int, what: str) -> bytes:
    """The bytes of the regular file `file`, at most `cap` of them. Raises UnreadableFile naming
    the file and the problem (missing, not a regular file, over `cap`, unreadable); `what` says
    what the file should have been ("a TOML file"). Never blocks on a FIFO, never reads more
    than cap + 1 bytes."""
    path = Path(file)
    try:
        _check(path, path.stat(), cap, what)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise UnreadableFile(path, "no such file") from None
    except (OSError, ValueError) as e:      # permission denied, a NUL in the path, a name too long, …
        raise UnreadableFile(path, f"cannot read it ({getattr(e, 'strerror', None) or e})") from None
    with os.fdopen(fd, "rb") as f:
        _check(path, os.fstat(fd), cap, what)
        try:
            data = f.read(cap + 1)      # the file may have grown since it was stat'ed
        except OSError as e:
            raise UnreadableFile(path, f"cannot read it ({e.strerror or e})") from None
    if len(data) > cap:
        raise UnreadableFile(path, f"more than {cap:,} bytes; {what} is read up to that size")
    return data
