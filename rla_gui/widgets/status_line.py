"""The status bar's permanent read-out: run state, iteration, it/s, device, database."""
from __future__ import annotations

from pathlib import Path

from PySide6 import QtWidgets

from rla_engine import metrics
from rla_engine.text import printable

from ..run_data import RunData
from ..session import RunSession


class StatusLine:
    def __init__(self, bar: QtWidgets.QStatusBar, session: RunSession):
        self.state = QtWidgets.QLabel("no run open")
        self.iteration = QtWidgets.QLabel("")
        self.rate = QtWidgets.QLabel("")
        self.device = QtWidgets.QLabel("")
        self.database = QtWidgets.QLabel("")
        for w in (self.state, self.iteration, self.rate, self.device, self.database):
            bar.addPermanentWidget(w)
        session.cleared.connect(lambda: self.set_run(None, None))
        session.run_changed.connect(lambda run: self.set_run(run, session.data))
        session.metrics_added.connect(lambda _: self.set_rate(session.data))

    def set_run(self, run: dict | None, data: RunData | None) -> None:
        if run is None:
            self.state.setText("no run open")
            for w in (self.iteration, self.rate, self.device):
                w.setText("")
            return
        self.state.setText(f"{printable(str(run['name']))} — {run['status']}")
        self.iteration.setText(f"iteration {run['iteration']}")
        self.device.setText(f"device {run['device']}")
        if data is not None:
            self.set_rate(data)

    def set_rate(self, data: RunData) -> None:
        seconds = data.last(metrics.ITERATION_S)
        self.rate.setText(f"{1 / seconds:.1f} it/s" if seconds else "")

    def set_database(self, path: Path) -> None:
        self.database.setText(str(path))
        self.database.setToolTip(str(path))
