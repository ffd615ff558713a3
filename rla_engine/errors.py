"""The engine's one error for invalid input, shared by the `rla` command and the functions it
calls (launching runs, exports, imports): the command prints it as one line and exits 2."""
from __future__ import annotations


class InputError(Exception):
    """Invalid input: printed as one line, exit code 2."""


class ExecutorError(RuntimeError):
    """The Ray cluster failed the run: workers that could not start, or died more often than allowed."""
