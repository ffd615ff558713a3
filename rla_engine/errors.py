"""The engine's errors that the `rla` command turns into its exit codes: invalid input (shared by
the functions it calls: launching runs, exports, imports), a database that cannot be used, and a
cluster that failed a run. Here, not beside what raises them, so that the command can name them
without importing the store (sqlite_utils, numpy) for input it refuses first."""
from __future__ import annotations


class InputError(Exception):
    """Invalid input: printed as one line, exit code 2."""


class ExecutorError(RuntimeError):
    """The Ray cluster failed the run: workers that could not start, or died more often than allowed."""


class StoreError(RuntimeError):
    """A database that cannot be used; the message says which file and why. `hint` is what to do
    about it at the command line ("name a new path with --db"): the CLI adds it, the console,
    which has no --db, does not."""

    def __init__(self, message: str, *, hint: str = ""):
        super().__init__(message)
        self.hint = hint
