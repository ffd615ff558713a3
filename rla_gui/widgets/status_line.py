"""The status bar's permanent read-out: the open run's active alerts (a badge), run state,
iteration, it/s, device, database."""
from __future__ import annotations

from pathlib import Path

from PySide6 import QtWidgets

from rla_engine import metrics
from rla_engine.alerts import ALERTS, CLEARED, RAISED, describe
from rla_engine.text import counted, printable
from rla_engine.vocabulary import EventKind, Status

from ..model.run_data import RunData
from ..session import RunSession
from .plain_text import html_text, plain_label, set_tooltip


class StatusLine:
    def __init__(self, bar: QtWidgets.QStatusBar, session: RunSession):
        # every label shows stored text (a run's name and device, an alert's name): never as markup
        self.alerts = plain_label()
        self.alerts.setStyleSheet("QLabel { background: #e6550d; color: white; font-weight: bold; "
                                  "border-radius: 3px; padding: 1px 6px; }")
        self.alerts.hide()
        self.active: dict[str, dict] = {}         # alert name -> its raised payload
        self._status: str | None = None
        bar.addPermanentWidget(self.alerts)
        self.state = plain_label("no run open")
        self.iteration, self.rate, self.device, self.database = (plain_label() for _ in range(4))
        for w in (self.state, self.iteration, self.rate, self.device, self.database):
            bar.addPermanentWidget(w)
        session.cleared.connect(lambda: self.set_run(None, None))
        session.cleared.connect(self.clear_alerts)
        session.events_added.connect(self.add_events)
        session.run_changed.connect(lambda run: self.set_run(run, session.data))
        session.metrics_added.connect(lambda _: self.set_rate(session.data))

    def set_run(self, run: dict | None, data: RunData | None) -> None:
        self._status = run["status"] if run is not None else None
        if run is None:
            self.state.setText("no run open")
            for w in (self.iteration, self.rate, self.device):
                w.setText("")
            return
        self.state.setText(f"{printable(run['name'])} — {printable(run['status'])}")
        self.iteration.setText(f"iteration {printable(run['iteration'])}")
        self.device.setText(f"device {printable(run['device'])}")
        if data is not None:
            self.set_rate(data)

    # -- alerts --------------------------------------------------------------------------------
    def add_events(self, events: list[dict]) -> None:
        changed = False
        for e in events:
            p = e.get("payload")
            if e.get("kind") != EventKind.ALERT or not isinstance(p, dict) or not isinstance(p.get("alert"), str):
                continue
            if p.get("state") == RAISED:
                self.active[p["alert"]] = p
            elif p.get("state") == CLEARED:
                self.active.pop(p["alert"], None)
            changed = True
        if changed:
            self._show_alerts()

    def clear_alerts(self) -> None:
        self.active.clear()
        self._show_alerts()

    def _show_alerts(self) -> None:
        if not self.active:
            self.alerts.hide()
            return
        titles = [ALERTS[n].title if n in ALERTS else n for n in self.active]
        self.alerts.setText(f"⚠ {counted(len(titles), 'alert')}: {', '.join(titles)}")
        self.alerts.setToolTip("<br><br>".join(
            f"<b>{html_text(describe(p))}</b><br>{html_text(p.get('message', ''))}<br>"
            f"<i>What to do:</i> {html_text(p.get('advice', ''))}" for p in self.active.values()))
        self.alerts.show()

    def set_rate(self, data: RunData) -> None:
        """The engine's speed while it runs; a paused or finished run has none (its last one read as
        if it were still going)."""
        seconds = data.last(metrics.ITERATION_S)
        self.rate.setText(f"{1 / seconds:.1f} it/s" if seconds and self._status == Status.RUNNING else "")

    def set_database(self, path: Path) -> None:
        self.database.setText(printable(str(path)))
        set_tooltip(self.database, str(path))
