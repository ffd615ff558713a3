"""GUI fixtures: one qasync event loop over pytest-qt's QApplication, and a way to drive it.

qasync runs asyncio callbacks from Qt timers, so they also run whenever pytest-qt processes
events between tests. The loop is therefore marked as the running loop for the whole session
(as it is for the whole life of the real app), and a scenario is driven by processing Qt
events until its task is done.
"""
import asyncio
import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(scope="session")
def aloop(qapp):
    import qasync

    from rla_gui import gc_guard
    gc_guard.install(qapp)      # as the app does: no garbage collection on the store's threads
    qapp.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    asyncio.events._set_running_loop(loop)
    yield loop
    asyncio.events._set_running_loop(None)


@pytest.fixture
def drive(aloop, qtbot):
    """drive(coro, timeout): run a scenario on the Qt + asyncio loop until it finishes."""
    def run(coro, timeout=120.0):
        task = aloop.create_task(coro)
        qtbot.waitUntil(task.done, timeout=int(timeout * 1000))
        return task.result()
    return run
