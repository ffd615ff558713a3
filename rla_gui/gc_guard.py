"""Python's cyclic garbage collector runs in whichever thread happens to allocate when a
generation's threshold is crossed; in the console that can be the EngineClient's store thread.
When the garbage holds a Qt object, its C++ destructor then runs off the GUI thread: it takes
Qt's locks and waits for the GIL, while the GUI thread holds the GIL and waits for those locks.
The test suite hung exactly so (py-spy: the "rla-store" thread in gc_collect_main →
QObject::~QObject → Shiboken::GilState::acquire, the main thread in a dashboard tick).

So the console turns automatic collection off and collects on the GUI thread from a timer,
generation by generation as the thresholds say (the approach calibre and other PyQt
applications take). Only cyclic garbage waits for it; reference counting frees the rest at once.
"""
from __future__ import annotations

import gc

from PySide6 import QtCore

INTERVAL_MS = 500


class GuiThreadCollector(QtCore.QObject):
    def __init__(self, parent: QtCore.QObject):
        super().__init__(parent)
        self.threshold = gc.get_threshold()
        gc.disable()
        self.timer = QtCore.QTimer(self)
        self.timer.timeout.connect(self.collect_if_due)
        self.timer.start(INTERVAL_MS)

    def collect_if_due(self) -> None:
        """Collect the generations whose allocation counts passed their thresholds, oldest last."""
        counts = gc.get_count()
        due = [g for g in range(3) if counts[g] > self.threshold[g]]
        if due:
            gc.collect(max(due))


def install(app: QtCore.QCoreApplication) -> GuiThreadCollector:
    """Once per application: the collector lives as long as the QApplication."""
    existing = app.findChild(GuiThreadCollector)
    return existing if isinstance(existing, GuiThreadCollector) else GuiThreadCollector(app)
