"""No exception escapes a Qt model method or a slot.

Qt calls a model's `data`, `headerData`, `rowCount`, `sort`… and a connected slot from C++. An
exception raised there is printed and swallowed by PySide6, and the C++ caller goes on with
whatever it gets: a view asks again on every paint (the same traceback five times a second), and
an exception between `beginResetModel` and `endResetModel` leaves the view holding indexes into
rows that are gone (a segmentation fault in `endResetModel`). So:

- `guarded(default)` wraps a model method or a slot (plain or `async`): an exception is logged
  once per place and kind (the first traceback, not one per repaint) and the call returns
  `default` — what Qt takes for "nothing here" (None for `data`, 0 for `rowCount`, a null index
  for `index`/`parent`).
- `resetting(model)` brackets a model reset: `endResetModel` runs even when computing the new
  rows raised. Compute the new state first, then assign it inside the bracket, so a failure
  leaves the old rows (or none) — never half of each.

Use it on every Qt model of the console and on the slots that compute what a model shows.
"""
from __future__ import annotations

import functools
import inspect
import logging
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from PySide6 import QtCore

log = logging.getLogger("rla_gui.guard")
F = TypeVar("F", bound=Callable[..., Any])
_seen: set[tuple[str, str, str, int]] = set()     # (function, exception type, file, line) already logged


def report(where: str, error: BaseException) -> None:
    """Log `error` raised in `where`, with its traceback, the first time this place fails so."""
    frames = traceback.extract_tb(error.__traceback__)
    last = frames[-1] if frames else None
    key = (where, type(error).__name__, last.filename if last else "", (last.lineno or 0) if last else 0)
    if key in _seen:
        return
    _seen.add(key)
    log.error("%s failed (shown once; the console goes on): %s: %s\n%s", where, type(error).__name__, error,
              "".join(traceback.format_exception(error)).rstrip())


def guarded(default: Any = None) -> Callable[[F], F]:
    """A model method or slot that returns `default` instead of raising (see the module's doc)."""

    def wrap(fn: F) -> F:
        where = fn.__qualname__
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                try:
                    return await fn(*args, **kwargs)
                except Exception as e:     # the whole point: nothing reaches Qt
                    report(where, e)
                    return default
            return run_async  # type: ignore[return-value]

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except Exception as e:     # the whole point: nothing reaches Qt
                report(where, e)
                return default
        return run  # type: ignore[return-value]

    return wrap


@contextmanager
def resetting(model: QtCore.QAbstractItemModel) -> Iterator[None]:
    """`beginResetModel` … `endResetModel`, the end guaranteed (a view left inside a reset crashes)."""
    model.beginResetModel()
    try:
        yield
    finally:
        model.endResetModel()
