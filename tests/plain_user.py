"""A command run as a plain user, for the tests of permission checks: root passes them all, and
CI runs as root. There the command runs as root with every capability dropped (util-linux's
setpriv), which the kernel checks as the plain user uid 0 — the owner of root's files, "others"
to anyone else's; root's own interpreter, under its 0700 home, still runs, which a user of their
own could not do. Elsewhere the command runs as it is: the user is plain already."""
from __future__ import annotations

import os
import shutil

import pytest

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
SETPRIV = shutil.which("setpriv")
NOBODY = 65534       # the owner of "another user's" files, as root

needs_a_plain_user = pytest.mark.skipif(IS_ROOT and SETPRIV is None,
                                        reason="root without setpriv (util-linux) to drop its capabilities")


def as_plain_user(argv: list[str]) -> list[str]:
    return [str(SETPRIV), "--inh-caps=-all", "--bounding-set=-all", "--", *argv] if IS_ROOT else list(argv)
