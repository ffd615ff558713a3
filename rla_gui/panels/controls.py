"""Run controls: pause/resume, stop, the difficulty override, resuming an ended run.

Button states follow the run's status as read back from the database, never the click: a
click only sends a command; the engine's answer (an event, a new status) changes the buttons.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6 import QtCore, QtWidgets

from rla_engine.vocabulary import LIVE, RESUMABLE, CommandOutcome, CommandResult, EventKind, Status

if TYPE_CHECKING:       # the session is only ever passed in
    from ..session import RunSession


RESUME_TIPS = {
    "": "Continue a stopped, crashed or failed run from its last checkpoint",
    Status.COMPLETED: "The run reached its target: resume it with more iterations (you say how many)",
    Status.RUNNING: "The run is running: nothing to resume",
    Status.PAUSED: "The run is paused: Resume (Space) goes on",
    Status.STOPPED: "Continue the stopped run from its last checkpoint",
    Status.CRASHED: "Continue the crashed run from its last checkpoint",
    Status.FAILED: "Continue the failed run from its last checkpoint (see the Events for its cause)",
}


class ControlsPanel(QtWidgets.QWidget):
    pause_requested = QtCore.Signal()
    resume_requested = QtCore.Signal()
    stop_requested = QtCore.Signal()
    difficulty_requested = QtCore.Signal(object)   # float in [0, 1], or None for automatic
    resume_run_requested = QtCore.Signal()

    def __init__(self, session: RunSession | None = None, parent=None):
        super().__init__(parent)
        self.status: str | None = None
        self.pause_button = QtWidgets.QPushButton("Pause")
        self.pause_button.setToolTip("Pause or resume the run (Space)")
        self.stop_button = QtWidgets.QPushButton("Stop")
        self.stop_button.setToolTip("Stop the run with a checkpoint")
        self.slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self.slider.setRange(0, 100)
        self.slider.setValue(50)
        self.slider.setFixedWidth(160)
        self.slider.setToolTip("Difficulty of every pool slot for the manual override")
        self.value_label = QtWidgets.QLabel("0.50")
        self.apply_button = QtWidgets.QPushButton("Apply")
        self.apply_button.setToolTip("Give every slot a fresh task at this difficulty; adaptation pauses")
        self.auto_button = QtWidgets.QPushButton("Auto")
        self.auto_button.setToolTip("Hand the difficulty back to automatic adaptation")
        self.override_label = QtWidgets.QLabel("")
        self.resume_run_button = QtWidgets.QPushButton("Resume run")
        self.slider.valueChanged.connect(lambda v: self.value_label.setText(f"{v / 100:.2f}"))
        self.pause_button.clicked.connect(self.toggle_pause)
        self.stop_button.clicked.connect(self.stop_requested)
        self.apply_button.clicked.connect(lambda: self.difficulty_requested.emit(self.slider.value() / 100))
        self.auto_button.clicked.connect(lambda: self.difficulty_requested.emit(None))
        self.resume_run_button.clicked.connect(self.resume_run_requested)
        row = QtWidgets.QHBoxLayout(self)
        row.setContentsMargins(4, 2, 4, 2)
        for button in (self.pause_button, self.stop_button):
            row.addWidget(button)
        row.addSpacing(20)
        row.addWidget(QtWidgets.QLabel("difficulty"))
        for w in (self.slider, self.value_label, self.apply_button, self.auto_button, self.override_label):
            row.addWidget(w)
        row.addSpacing(20)
        row.addWidget(self.resume_run_button)
        row.addStretch(1)
        self.set_run(None)
        if session is not None:
            session.cleared.connect(self.clear)
            session.run_changed.connect(self.set_run)
            session.events_added.connect(self.follow_override)

    def toggle_pause(self) -> None:
        if self.status == Status.RUNNING:
            self.pause_requested.emit()
        elif self.status == Status.PAUSED:
            self.resume_requested.emit()

    def set_run(self, run: dict | None) -> None:
        self.status = run["status"] if run else None
        live = self.status in LIVE
        self.pause_button.setText("Resume" if self.status == Status.PAUSED else "Pause")
        self.pause_button.setEnabled(live)
        self.stop_button.setEnabled(live)
        for w in (self.slider, self.apply_button, self.auto_button):
            w.setEnabled(live)
        self.resume_run_button.setEnabled(self.status in RESUMABLE or self.status == Status.COMPLETED)
        self.resume_run_button.setToolTip(RESUME_TIPS.get(self.status or "", RESUME_TIPS[""]))

    def clear(self) -> None:
        """Another run (or none) is open: nothing of the last one's state stays on the controls."""
        self.set_run(None)
        self.override_label.setText("")
        self.slider.setValue(50)

    def follow_override(self, events: list[dict]) -> None:
        for e in events:
            payload = e.get("payload")
            if e.get("kind") == EventKind.SET_DIFFICULTY and isinstance(payload, dict):
                result = CommandResult.parse(payload.get("result"))
                if result is not None and result.outcome == CommandOutcome.APPLIED:
                    command = payload.get("payload")
                    self.set_override(command.get("value") if isinstance(command, dict) else None)

    def set_override(self, value: float | None) -> None:
        """Show the override in force, as the engine's events report it; the slider follows."""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self.override_label.setText(f"fixed at {value:.2f}")
            self.slider.setValue(round(100 * value))
        else:
            self.override_label.setText("automatic")
