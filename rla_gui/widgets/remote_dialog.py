"""File ▸ Open remote database…: a database on another machine, by its ssh:// address.

The console reaches it over the person's own ssh (keys, agent, ~/.ssh/config: SSH's), running
`rla serve` there; where `rla` is not on the remote PATH (a virtual environment), the second
field names its command, which becomes the address's `?rla=`. The address is checked as it is
typed (rla_engine.remote.parse_location, whose message names the wrong part); OK waits for a
valid one. Connecting is the console's (File ▸ Open's refusal box says why it could not)."""
from __future__ import annotations

import dataclasses

from PySide6 import QtCore, QtWidgets

from rla_engine.remote import AddressError, SshAddress, parse_location

from .plain_text import plain_label

PLACEHOLDER = "ssh://[user@]host[:port]/path/to/runs.db"
HINT = ("The database stays on that machine; the console talks to it over your own ssh (keys, agent, "
        "~/.ssh/config). A path after the host is absolute; ssh://host/~/runs.db is in the remote home.")
ERROR_STYLE = "QLabel { color: #c0392b; }"


def address_of(text: str, rla: str) -> SshAddress:
    """The address typed, with the remote command of the second field when one is given there
    (else the address's own ?rla=, else `rla`); AddressError says what is wrong."""
    text = text.strip()
    if not text:
        raise AddressError(f"type an address: {PLACEHOLDER}")
    if not text.startswith("ssh://"):
        raise AddressError(f"{text}: a remote database's address starts with ssh:// ({PLACEHOLDER})")
    location = parse_location(text)
    assert isinstance(location, SshAddress)
    rla = rla.strip()
    if rla and rla != "rla":
        # the command is checked as the address's own ?rla= is: through the address it becomes
        again = parse_location(str(dataclasses.replace(location, rla=rla)))
        assert isinstance(again, SshAddress)
        location = again
    return location


class RemoteDatabaseDialog(QtWidgets.QDialog):
    """Two fields (the address, the remote rla command), the address's error under them, OK
    enabled only while they make an address. `address()` is the chosen one."""

    def __init__(self, parent: QtWidgets.QWidget | None = None, proposed: SshAddress | None = None):
        super().__init__(parent)
        self.setWindowTitle("Open remote database")
        self.setObjectName("openRemoteDatabase")
        layout = QtWidgets.QVBoxLayout(self)
        form = QtWidgets.QFormLayout()
        self.address_edit = QtWidgets.QLineEdit(self)
        self.address_edit.setObjectName("remoteAddress")
        self.address_edit.setPlaceholderText(PLACEHOLDER)
        self.address_edit.setMinimumWidth(self.fontMetrics().averageCharWidth() * 60)
        self.rla_edit = QtWidgets.QLineEdit(self)
        self.rla_edit.setObjectName("remoteRla")
        self.rla_edit.setPlaceholderText("rla")
        self.rla_edit.setToolTip("Where rla is not on the remote PATH: its full path there, e.g. "
                                 "/home/me/venv/bin/rla (it becomes the address's ?rla=)")
        if proposed is not None:
            self.address_edit.setText(str(dataclasses.replace(proposed, rla="rla")))
        self.rla_edit.setText(proposed.rla if proposed is not None else "rla")
        form.addRow("Address:", self.address_edit)
        form.addRow("Remote rla command:", self.rla_edit)      # rla is a command name: never capitalised
        self.create_box = QtWidgets.QCheckBox("Create it if it is missing", self)
        self.create_box.setObjectName("remoteCreate")
        self.create_box.setToolTip("Without this a path with no database is refused (a mistyped path "
                                   "would otherwise give a new, empty database)")
        form.addRow("", self.create_box)
        layout.addLayout(form)
        hint = plain_label(HINT, self)
        hint.setWordWrap(True)
        layout.addWidget(hint)
        self.error = plain_label("", self)
        self.error.setObjectName("remoteAddressError")
        self.error.setWordWrap(True)
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.error)
        self.buttons = QtWidgets.QDialogButtonBox(
            QtWidgets.QDialogButtonBox.StandardButton.Ok | QtWidgets.QDialogButtonBox.StandardButton.Cancel, self)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self.ok = self.buttons.button(QtWidgets.QDialogButtonBox.StandardButton.Ok)
        self.ok.setText("Open")
        self.address_edit.textChanged.connect(self._check)
        self.rla_edit.textChanged.connect(self._check)
        self._chosen: SshAddress | None = None
        self._check()

    def _check(self) -> None:
        try:
            self._chosen = address_of(self.address_edit.text(), self.rla_edit.text())
        except AddressError as e:
            self._chosen = None
            # an empty field is not yet wrong: its grey hint text shows the form of an address
            self.error.setText(str(e) if self.address_edit.text().strip() else "")
        else:
            self.error.setText("")
        self.ok.setEnabled(self._chosen is not None)

    def accept(self) -> None:
        if self._chosen is not None:      # Return in a field with an invalid address does nothing
            super().accept()

    def address(self) -> SshAddress | None:
        """The address chosen (None while what is typed is none), with the choice to create it."""
        if self._chosen is None:
            return None
        return dataclasses.replace(self._chosen, create=self.create_box.isChecked())
