"""Lines for a person: the progress line, `rla runs`, `rla show`. Their reader may go away
(`rla run … | head -3`, a closed terminal); that must never touch a run, so a closed pipe ends
the output, not the process."""
from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import threading
from collections.abc import Callable


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


def quiet_while_starting(prog: str) -> Callable[[], None]:
    """Until the returned function is called, Ctrl-C prints `<prog>: interrupted` and exits 130
    at once: for a command's imports (a tenth of a second), where a KeyboardInterrupt would end
    in a traceback and nothing has started that needs stopping. A Ctrl-C that the process was
    told to ignore (started in the background) stays ignored. The returned function restores
    Python's own handling the first time it is called, and does nothing after: a program that
    calls the command's main() twice keeps whatever handler it set in between."""
    before = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or before in (signal.SIG_IGN, None):
        return lambda: None

    def stop(_signum, _frame):
        say(f"{prog}: interrupted", err=True)
        os._exit(130)

    signal.signal(signal.SIGINT, stop)
    restored = False

    def restore() -> None:
        nonlocal restored
        if not restored and threading.current_thread() is threading.main_thread():
            restored = True
            signal.signal(signal.SIGINT, before)
    return restore


def _silence(stream) -> None:
    """Point the stream's descriptor at /dev/null: every later write (and the interpreter's
    flush at exit, which would print 'Exception ignored … BrokenPipeError') goes nowhere."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
