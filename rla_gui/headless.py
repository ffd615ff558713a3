"""Qt needs a display unless told otherwise. Where there is none (CI, a server, an ssh session)
the report renders on the offscreen platform; an explicit QT_QPA_PLATFORM always wins. Qt-free:
it must run before the first Qt import."""
from __future__ import annotations

import os
import sys


def ensure_offscreen() -> None:
    if sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")) \
            and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
