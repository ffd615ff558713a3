"""Lines for a person: the progress line, `rla runs`, `rla show`. Their reader may go away
(`rla run … | head -3`, a closed terminal); that must never touch a run, so a closed pipe ends
the output, not the process."""
from __future__ import annotations

import contextlib
import errno
import os
import sys


def say(line: str, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    try:
        print(line, file=stream, flush=True)
    except BrokenPipeError:
        _silence(stream)
    except OSError as e:
        if e.errno != errno.EPIPE:
            raise
        _silence(stream)
    except ValueError:      # the stream was closed under us
        pass


def _silence(stream) -> None:
    """Point the stream's descriptor at /dev/null: every later write (and the interpreter's
    flush at exit, which would print 'Exception ignored … BrokenPipeError') goes nowhere."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
