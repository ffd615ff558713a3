"""The console collects cyclic garbage on the GUI thread only: a Qt object freed by a collection on
the store's thread deadlocks the console (see rla_gui/gc_guard.py)."""
import gc
import threading

from rla_gui import gc_guard


def test_cyclic_garbage_is_freed_on_the_gui_thread_never_on_a_worker(qapp, qtbot):
    collector = gc_guard.install(qapp)
    assert gc_guard.install(qapp) is collector and not gc.isenabled()
    freed_in, kept = [], []

    class Cycle:
        def __init__(self):
            self.me = self            # only the cyclic collector can free it

        def __del__(self):
            freed_in.append(threading.current_thread().name)

    def worker():
        Cycle()
        kept.append([[] for _ in range(50_000)])    # live allocations past every threshold

    thread = threading.Thread(target=worker, name="store-like worker")
    thread.start()
    thread.join()
    assert freed_in == []
    qtbot.waitUntil(lambda: bool(freed_in), timeout=5_000)
    assert freed_in == ["MainThread"]
