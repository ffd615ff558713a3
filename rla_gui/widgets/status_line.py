"""The status bar's permanent read-out: the open run's alerts (a badge), run state,
iteration, it/s, device, a coding run's sandbox, database, and a remote database's link.

The sandbox sits beside the device: like the device it is where the run executes, fixed for the
run, and a person deciding whether to trust a coding run (or to leave it running on this machine)
needs it in view whatever dock or tab is in front — not only as a line deep in the event log."""
from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from rla_engine import metrics
from rla_engine.alerts import ALERTS, describe, open_alerts
from rla_engine.text import counted, printable
from rla_engine.vocabulary import LIVE, EventKind, Status

from ..model import coding
from ..model.location import Location, label
from ..model.run_data import RunData
from ..session import RunSession
from .plain_text import html_text, plain_label, set_tooltip

ACTIVE_STYLE = ("QLabel { background: #e6550d; color: white; font-weight: bold; "
                "border-radius: 3px; padding: 1px 6px; }")
# an ended run's alerts no longer change: told, as `rla show` tells them, but not as a warning
ENDED_STYLE = "QLabel { color: palette(mid); border: 1px solid palette(mid); border-radius: 3px; padding: 1px 6px; }"
ENDED_WORDS = "active when the run ended"          # rla show's words (cli.py, cmd_show)
# the events open_alerts reads: a resume reopens what the run's end had closed
ALERT_KINDS = (EventKind.ALERT, EventKind.RESUMED_FROM_CHECKPOINT)
NAME_CHARS = 40             # about this many characters of a run's name; the state after it stays in view
PATH_CHARS = 50             # the database's path, elided the same way
LINK_CHARS = 90             # a remote database's link: "host:/path: connection lost (why); reconnecting in 2 s"
# a remote database's link while it is down: what is shown may be stale, and commands are not sent
def _badge(background: str, color: str) -> str:
    return (f"QLabel {{ background: {background}; color: {color}; font-weight: bold; "
            "border-radius: 3px; padding: 1px 6px; }")


LOST_STYLE, FAILED_STYLE = _badge("#f0a30a", "black"), _badge("#c0392b", "white")
LINK_STYLES = {"lost": LOST_STYLE, "failed": FAILED_STYLE}


class StatusLine:
    def __init__(self, bar: QtWidgets.QStatusBar, session: RunSession):
        # every label shows stored text (a run's name and device, an alert's name): never as markup
        self.alerts = plain_label()
        self.alerts.hide()
        self.active: dict[str, dict] = {}     # alert name -> its raised payload: active now, or when the run ended
        self._alert_events: list[dict] = []         # the open run's ALERT_KINDS events, in order
        self._status: str | None = None
        bar.addPermanentWidget(self.alerts)
        self.state = plain_label("no run open")
        self.iteration, self.rate, self.device, self.sandbox, self.database, self.connection = (
            plain_label() for _ in range(6))
        self.sandbox.hide()         # only a coding run's programs run in a sandbox
        self.connection.hide()      # only a remote database has a link to show
        self.connection.setObjectName("connection")
        self.link_state = ""        # the remote link's state ("connected", "lost", …); "" for a local database
        self.link_text = ""         # its line in full (the label elides a long one in its middle)
        for w in (self.state, self.iteration, self.rate, self.device, self.sandbox, self.database, self.connection):
            bar.addPermanentWidget(w)
        session.cleared.connect(lambda: self.set_run(None, None))
        session.cleared.connect(self.clear_alerts)
        session.cleared.connect(lambda: self.set_isolation(None))
        session.events_added.connect(self.add_events)
        session.run_changed.connect(lambda run: self.set_run(run, session.data))
        session.metrics_added.connect(lambda _: self.set_rate(session.data))

    def set_run(self, run: dict | None, data: RunData | None) -> None:
        status = run["status"] if run is not None else None
        if status != self._status:
            self._status = status
            self._show_alerts()         # a run that ends turns its active alerts into what was active then
        if run is None:
            self.state.setText("no run open")
            self.state.setToolTip("")
            for w in (self.iteration, self.rate, self.device):
                w.setText("")
            return
        name = printable(run["name"])
        # a long name is cut in its middle, never the state after it: a label as wide as its text
        # pushes the status bar's other permanent widgets out of the window
        self.state.setText(f"{self._elided(name, NAME_CHARS)} — {printable(run['status'])}")
        set_tooltip(self.state, name)
        self.iteration.setText(f"iteration {printable(run['iteration'])}")
        self.device.setText(f"device {printable(run['device'])}")
        if data is not None:
            self.set_rate(data)

    def _elided(self, text: str, chars: int) -> str:
        width = self.state.fontMetrics().averageCharWidth() * chars
        return self.state.fontMetrics().elidedText(text, QtCore.Qt.TextElideMode.ElideMiddle, width)

    # -- alerts --------------------------------------------------------------------------------
    def set_isolation(self, payload: dict | None) -> None:
        """The sandbox level of a coding run (its `sandbox` event); a level weaker than
        bubblewrap in the alerts' warning colours. None: hidden."""
        if payload is None:
            self.sandbox.hide()
            return
        self.sandbox.setText(coding.short_isolation(payload))
        self.sandbox.setStyleSheet(ACTIVE_STYLE if coding.is_weak(payload) else "")
        set_tooltip(self.sandbox, coding.isolation_details(payload))
        self.sandbox.show()

    def add_events(self, events: list[dict]) -> None:
        isolation = coding.latest_isolation(events)
        if isolation is not None:
            self.set_isolation(isolation)
        kept = [e for e in events if e.get("kind") in ALERT_KINDS]
        if kept:
            self._alert_events += kept
            self._show_alerts()

    def clear_alerts(self) -> None:
        self._alert_events.clear()
        self._show_alerts()

    def run_ended(self) -> bool:
        """Whether the open run is over (a status not yet read counts as live: its events come first)."""
        return self._status is not None and self._status not in LIVE

    def _show_alerts(self) -> None:
        # the engine's own reading of the events, as `rla show` reads them: a crashed engine never
        # cleared its alerts, a finished one cleared them because it ended; both were active then
        ended = self.run_ended()
        self.active = open_alerts(self._alert_events, at_end=ended)
        if not self.active:
            self.alerts.hide()
            return
        titles = ", ".join(ALERTS[n].title if n in ALERTS else n for n in self.active)
        count = counted(len(self.active), "alert")
        self.alerts.setText(f"{count} {ENDED_WORDS}: {titles}" if ended else f"⚠ {count}: {titles}")
        self.alerts.setStyleSheet(ENDED_STYLE if ended else ACTIVE_STYLE)
        details = "<br><br>".join(
            f"<b>{html_text(describe(p))}</b><br>{html_text(p.get('message', ''))}<br>"
            f"<i>What to do:</i> {html_text(p.get('advice', ''))}" for p in self.active.values())
        self.alerts.setToolTip(f"<i>The run has ended; these alerts were {ENDED_WORDS}.</i><br><br>{details}"
                               if ended else details)
        self.alerts.show()

    def set_rate(self, data: RunData) -> None:
        """The engine's speed while it runs; a paused or finished run has none (its last one read as
        if it were still going)."""
        seconds = data.last(metrics.ITERATION_S)
        self.rate.setText(f"{1 / seconds:.1f} it/s" if seconds and self._status == Status.RUNNING else "")

    def set_database(self, location: Location) -> None:
        self.database.setText(self._elided(printable(label(location)), PATH_CHARS))
        set_tooltip(self.database, str(location))

    def set_connection(self, state: str, text: str) -> None:
        """A remote database's link (RemoteClient.on_state): its line, amber while lost and red
        when it cannot be opened; hidden for a local database (state "")."""
        self.link_state, self.link_text = state, text if state else ""
        if not state:
            self.connection.hide()
            self.connection.setText("")
            return
        self.connection.setText(self._elided(printable(text), LINK_CHARS))
        set_tooltip(self.connection, text)
        self.connection.setStyleSheet(LINK_STYLES.get(state, ""))
        self.connection.show()
