"""Shared fixtures: kept minimal on purpose."""
import asyncio
import gc
import json
import logging
import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# One intra-op thread for torch here and in every process a test starts (engines, Ray workers):
# `make test` runs more processes than cores, and a second OpenMP thread then spin-waits for CPU
# the other processes need — a language-model run cost 1.7x the CPU beside one busy process
# (2026-12, 2 cores: 9.3 s against 5.4 s). Tiny models gain nothing from a second thread alone.
os.environ.setdefault("OMP_NUM_THREADS", "1")

RECORDED = Path(__file__).parent / "data"     # made by tests/data/make_recorded_runs.py


@pytest.fixture(scope="session", autouse=True)
def games_folder(tmp_path_factory):
    """TextWorld games built by a test without a database go to a folder of the session, never to
    the user's cache (an engine names its database's own folder: paths.keep_games_beside)."""
    os.environ["RLA_GAMES_DIR"] = str(tmp_path_factory.mktemp("games"))


@pytest.fixture
def tmp_db(tmp_path: Path) -> Path:
    """Path of a database file that does not exist yet, in its own temporary folder."""
    return tmp_path / "experiments.db"


@pytest.fixture(scope="session")
def recorded():
    """recorded(name) -> the run bundles of tests/data/<name>.json, a fresh copy each call:
    "recorded_group" (three gridworld runs of one group; exactly judge.m and policy.lam differ)
    or "recorded_arithmetic" (one arithmetic run). See tests/data/make_recorded_runs.py."""
    from rla_engine.store import MULTI_FORMAT

    def load(name: str) -> list[dict]:
        doc = json.loads((RECORDED / f"{name}.json").read_text("utf-8"))
        return doc["runs"] if doc["format"] == MULTI_FORMAT else [doc]
    return load


@pytest.fixture(scope="module")
def recorded_db(tmp_path_factory):
    """recorded_db(*bundles) -> a fresh database (in its own temporary folder) holding these
    runs, imported by the real store as `rla import` does. Imported runs have no checkpoints."""
    from rla_engine.store import open_store

    def make(*bundles: dict) -> Path:
        db = tmp_path_factory.mktemp("recorded") / "runs.db"
        store = open_store(db)
        try:
            store.import_runs(list(bundles))
        finally:
            store.close()
        return db
    return make


# -- the console's loop (tests/gui, tests/journeys) ---------------------------------------------
# qasync runs asyncio callbacks from Qt timers, so they also run whenever pytest-qt processes
# events between tests. The loop is therefore marked as the running loop for the whole session
# (as it is for the whole life of the real app), and a scenario is driven by processing Qt
# events until its task is done.
#
# Every call of the loop's exception handler is kept: "Task exception was never retrieved" is an
# error the console swallowed (the person saw nothing), and it fails the test that made it.
LOOP_ERRORS: list[dict] = []


@pytest.fixture(scope="session")
def aloop(qapp):
    import qasync

    from rla_gui import gc_guard
    gc_guard.install(qapp)      # as the app does: no garbage collection on the store's threads
    qapp.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(qapp)
    loop.set_exception_handler(lambda _loop, context: LOOP_ERRORS.append(context))
    asyncio.set_event_loop(loop)
    asyncio.events._set_running_loop(loop)
    yield loop
    asyncio.events._set_running_loop(None)


@pytest.fixture(autouse=True)
def no_unretrieved_task_exceptions(request):
    """A console test fails if any asyncio task or callback ended with an exception nobody
    retrieved. Such a task is reported when it is garbage: collected here, after the test."""
    LOOP_ERRORS.clear()
    yield
    if "aloop" not in request.fixturenames:
        return
    gc.collect()
    # what outlived its test is set aside from later collections (gc.freeze): each test's
    # collection then walks only what was made since, not the whole session's heap again (0.3-0.45 s
    # a test after ~300 console tests, 780k objects)
    gc.freeze()
    errors, LOOP_ERRORS[:] = list(LOOP_ERRORS), []
    if errors:
        lines = [f"{c.get('message')}: {c.get('exception')!r} ({c.get('task') or c.get('future') or ''})"
                 for c in errors]
        pytest.fail("the console's loop reported errors nobody handled:\n" + "\n".join(lines), pytrace=False)


class _GuardReports(logging.Handler):
    """What rla_gui.guard caught: an exception a model method or slot raised and the console
    swallowed (a user sees a blank cell, or nothing)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.reports: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.reports.append(record.getMessage())


@pytest.fixture(autouse=True)
def no_guarded_exceptions(request):
    """Any test fails when the console's guard caught an exception during it: the guard keeps a
    user's console alive, it must not hide a bug from the tests. A test that drives the guard on
    purpose asks for `guard_reports` and reads them itself."""
    handler = _GuardReports()
    logger = logging.getLogger("rla_gui.guard")
    logger.addHandler(handler)
    guard = sys.modules.get("rla_gui.guard")
    if guard is not None:
        guard._seen.clear()       # each test sees its own first failures
    request.node.guard_reports = handler.reports
    yield
    logger.removeHandler(handler)
    if handler.reports and "guard_reports" not in request.fixturenames:
        pytest.fail("the console's guard caught exceptions:\n" + "\n".join(r[:2000] for r in handler.reports),
                    pytrace=False)


@pytest.fixture
def guard_reports(request):
    """The guard's reports so far in this test (a list that grows), for a test that expects some."""
    return request.node.guard_reports


@pytest.fixture
def drive(aloop, qtbot):
    """drive(coro, timeout): run a scenario on the Qt + asyncio loop until it finishes."""
    def run(coro, timeout=120.0):
        task = aloop.create_task(coro)
        qtbot.waitUntil(task.done, timeout=int(timeout * 1000))
        return task.result()
    return run
