"""File dialogs that never open the files they list: every file dialog of the console goes here.

Why: Qt's file dialog asks its icon provider for each listed file's type and icon, and the
default provider finds both with QMimeDatabase, which opens a file to sniff its content when the
name does not settle it (`h.db`, `h.db-wal`, `h.db-shm`); a native dialog that runs in this
process (GTK's) sniffs the same way. Closing any descriptor of a file drops every POSIX lock this
process holds on it, the SQLite connection's too (fcntl semantics), so a dialog that merely lists
the database's folder — the Export and Open database dialogs start there — leaves the console's
connection without its locks. The next other process to close a connection to the database (the
report renderer after an HTML/PDF export, an engine starting, `rla runs` in a terminal) then
finds no other holder, takes itself for the last one and deletes the -wal and -shm files; the
console's connection goes on reading the unlinked ones and never sees a new row again (a run it
starts never appears; SQLite's "How To Corrupt" §2.2). So the console uses Qt's own dialog,
with an icon provider that goes by the name alone.

The functions mirror QFileDialog's static ones (same arguments, same results). pyqtgraph's own
right-click Export… makes its dialog from `pyqtgraph.exporters.Exporter.FileDialog`;
`guard_pyqtgraph_exports` points that at `SafeFileDialog`.

A save dialog happily offers the database itself, its -wal, its checkpoint folder: the console's
exports ask `refused_output` before they write, which refuses those (the engine's rule,
rla_engine/export/files.refuse_protected) in a message box that says why, whatever the dialog's
"replace it?" was answered.
"""
from __future__ import annotations

import functools
import importlib
from pathlib import Path
from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from rla_engine.export.files import OutputError, refuse_protected

from ..model.location import local_path
from .plain_text import message_box, plain_label

IconType = QtGui.QAbstractFileIconProvider.IconType


class NameOnlyIconProvider(QtWidgets.QFileIconProvider):
    """Type and icon from the file's name and kind (a stat), never from its content."""

    def icon(self, which):            # both overloads: icon(IconType) and icon(QFileInfo)
        if isinstance(which, QtCore.QFileInfo):
            which = IconType.Folder if which.isDir() else IconType.File
        return super().icon(which)

    def type(self, info: QtCore.QFileInfo) -> str:
        if info.isDir():
            return "Folder"
        suffix = info.suffix()
        return f"{suffix.upper()} File" if suffix else "File"


@functools.cache
def _provider() -> NameOnlyIconProvider:
    # one for the process: a dialog does not own its provider, which must outlive it
    return NameOnlyIconProvider()


class SafeFileDialog(QtWidgets.QFileDialog):
    """A QFileDialog that lists folders by name only (for code that builds its own dialog)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.setOption(QtWidgets.QFileDialog.Option.DontUseNativeDialog)
        self.setIconProvider(_provider())


def guard_pyqtgraph_exports() -> None:
    """A plot's right-click Export… (pyqtgraph's exporters) gets a SafeFileDialog: it opens in the
    last export folder, often the database's."""
    # the module, not its class of the same name (which `import … as` would give)
    module: Any = importlib.import_module("pyqtgraph.exporters.Exporter")
    module.FileDialog = SafeFileDialog


def _dialog(parent: QtWidgets.QWidget | None, caption: str, directory: str, filter: str,
            mode: QtWidgets.QFileDialog.FileMode) -> QtWidgets.QFileDialog:
    dialog = QtWidgets.QFileDialog(parent, caption)
    # the provider is in place before the dialog is given the folder: the default one would
    # look into its files as soon as the listing comes back
    dialog.setOption(QtWidgets.QFileDialog.Option.DontUseNativeDialog)
    dialog.setIconProvider(_provider())
    dialog.setFileMode(mode)
    if filter:
        dialog.setNameFilters(filter.split(";;"))
    if directory:
        path = Path(directory)
        if mode == QtWidgets.QFileDialog.FileMode.Directory or path.is_dir():
            dialog.setDirectory(str(path))
        else:                                     # a file name: open its folder, preselect it
            dialog.setDirectory(str(path.parent))
            dialog.selectFile(path.name)
    return dialog


def _run(dialog: QtWidgets.QFileDialog) -> tuple[str, str]:
    try:
        if dialog.exec() != QtWidgets.QDialog.DialogCode.Accepted or not dialog.selectedFiles():
            return "", ""
        return dialog.selectedFiles()[0], dialog.selectedNameFilter()
    finally:
        # the window that asked takes the keyboard back: without a window manager to do it (Xvfb),
        # Space after an export went to the focused Start button instead of the Pause shortcut
        parent = dialog.parentWidget()
        if parent is not None:
            parent.window().activateWindow()
        dialog.deleteLater()


def save_file_name(parent: QtWidgets.QWidget | None = None, caption: str = "", directory: str = "",
                   filter: str = "", selected_filter: str = "", note: str = "") -> tuple[str, str]:
    """(path, the chosen filter), or ("", "") when cancelled; asks before overwriting. `note`, when
    given, is shown as plain text under the dialog's controls (what it will write)."""
    dialog = _dialog(parent, caption, directory, filter, QtWidgets.QFileDialog.FileMode.AnyFile)
    dialog.setAcceptMode(QtWidgets.QFileDialog.AcceptMode.AcceptSave)
    if selected_filter:
        dialog.selectNameFilter(selected_filter)
        dialog.selectFile(Path(directory).name)      # choosing a filter may have rewritten the name
    if note:
        _add_note(dialog, note)
    return _run(dialog)


def _add_note(dialog: QtWidgets.QFileDialog, note: str) -> None:
    layout = dialog.layout()
    if not isinstance(layout, QtWidgets.QGridLayout):     # a platform's native dialog: nowhere to put it
        return
    label = plain_label(note, dialog)
    label.setObjectName("exportScope")
    label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
    layout.addWidget(label, layout.rowCount(), 0, 1, layout.columnCount())


def open_file_name(parent: QtWidgets.QWidget | None = None, caption: str = "", directory: str = "",
                   filter: str = "") -> tuple[str, str]:
    """(path of an existing file, the chosen filter), or ("", "") when cancelled."""
    return _run(_dialog(parent, caption, directory, filter, QtWidgets.QFileDialog.FileMode.ExistingFile))


def database_of(widget: QtWidgets.QWidget) -> Path | None:
    """The local database file of the console window that holds `widget` (None outside one, or
    for a remote database: none of its files is on this disk). Parents are walked, not
    `window()`: a floating dock is a window of its own, without the controller."""
    w: QtCore.QObject | None = widget
    while w is not None:
        location = getattr(getattr(w, "controller", None), "location", None)
        if location is not None:
            return local_path(location)
        w = w.parent()
    return None


def refused_output(parent: QtWidgets.QWidget | None, db: Path | None, paths: list[Path]) -> bool:
    """True, after a message box that names the path and why, when one of `paths` is the database
    `db` or one of its own files or folders; nothing is written then, "replace" or not. `db` is
    None outside a console, and for a remote database (its files are on another machine)."""
    if db is None:
        return False
    try:
        refuse_protected(paths, db)
    except OutputError as e:
        box = message_box(QtWidgets.QMessageBox.Icon.Warning, "Cannot write there", str(e), parent)
        box.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
        box.show()       # not exec(): a modal loop here would hold up the console's event loop
        return True
    return False


def existing_directory(parent: QtWidgets.QWidget | None = None, caption: str = "", directory: str = "") -> str:
    """The chosen folder, or "" when cancelled."""
    dialog = _dialog(parent, caption, directory, "", QtWidgets.QFileDialog.FileMode.Directory)
    dialog.setOption(QtWidgets.QFileDialog.Option.ShowDirsOnly)
    return _run(dialog)[0]
