"""A person at the console: what they do (click, press a key, type, answer a dialog) and what they
can see (the status line, History's rows, the buttons, the open dialogs, the curves' last points,
the controls' labels). The journeys are written in these terms only, so that they break when
what a person meets breaks — never because an attribute was renamed.
"""
from __future__ import annotations

import asyncio
import warnings
import subprocess
import sys
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtTest import QTest

from rla_gui.main_window import MainWindow

from gui_support import until as gui_until

TINY = ["--preset", "tiny"]          # resources/presets/tiny.toml: seconds per run
Key = QtCore.Qt.Key


def shown() -> str:
    """What the window shows at the moment, for a failing step's message."""
    windows = [w for w in QtWidgets.QApplication.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]
    if not windows:
        return "no console"
    w = windows[-1]
    dialogs = [d.windowTitle() for d in QtWidgets.QApplication.topLevelWidgets()
               if isinstance(d, QtWidgets.QDialog) and d.isVisible()]
    return f"status line {w.status_line.state.text()!r}, message {w.statusBar().currentMessage()!r}, dialogs {dialogs}"


async def until(predicate, timeout: float = 60.0, what: str = "condition"):
    """gui_support.until, whose timeout also says what the window showed then."""
    try:
        return await gui_until(predicate, timeout, what)
    except AssertionError as e:
        raise AssertionError(f"{e}; shown: {shown()}") from None


async def pause(seconds: float) -> None:
    await asyncio.sleep(seconds)


def rla(db: Path, *args: str) -> None:
    """A run made from a terminal, as a person does before opening the console."""
    subprocess.run([sys.executable, "-m", "rla_engine.cli", args[0], "--db", str(db), *args[1:]], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


class Person:
    def __init__(self, window: MainWindow, qtbot):
        self.w, self.qtbot = window, qtbot

    # -- what is shown ---------------------------------------------------------------------
    def state(self) -> str:
        """The status line's run state, e.g. "quickstart — running" or "no run open"."""
        return self.w.status_line.state.text()

    def message(self) -> str:
        return self.w.statusBar().currentMessage()

    def title(self) -> str:
        return self.w.windowTitle()

    def history(self) -> list[dict]:
        """History's rows as shown (the table's text per column), in the table's order."""
        table, model = self.w.history.table, self.w.history.table.model()
        heads = [model.headerData(c, QtCore.Qt.Orientation.Horizontal) for c in range(model.columnCount())]
        return [{heads[c]: model.index(r, c).data() for c in range(model.columnCount())}
                for r in range(model.rowCount()) if not table.isRowHidden(r)]

    def history_row(self, name: str) -> dict | None:
        return next((r for r in self.history() if r.get("name") == name), None)

    def dialogs(self) -> list[QtWidgets.QDialog]:
        """The dialogs on screen (message boxes, file choosers, the ablation dialog)."""
        return [w for w in QtWidgets.QApplication.topLevelWidgets()
                if isinstance(w, QtWidgets.QDialog) and w.isVisible()]

    def dialog_texts(self) -> list[str]:
        return [f"{d.windowTitle()}: {d.text() if isinstance(d, QtWidgets.QMessageBox) else ''}"
                for d in self.dialogs()]

    def failure_boxes(self) -> list[str]:
        return [t for t in self.dialog_texts() if t.startswith("Engine failed")]

    def button(self, text: str) -> QtWidgets.QAbstractButton:
        """The visible button with this text in the window (the first, in layout order)."""
        found = [b for b in self.w.findChildren(QtWidgets.QAbstractButton)
                 if b.text().replace("&", "") == text and b.isVisibleTo(self.w)]
        assert found, f"no button {text!r} on screen"
        return found[0]

    def enabled(self, text: str) -> bool:
        return self.button(text).isEnabled()

    def override_label(self) -> str:
        return self.w.controls.override_label.text()

    def slider_value(self) -> str:
        return self.w.controls.value_label.text()

    def last_point(self, plot) -> tuple[float, float] | None:
        """The newest point drawn on the plot's first curve (x, y), or None if it is empty."""
        curve = next(iter(plot.curves.values())).line
        x, y = curve.getData()
        return None if x is None or len(x) == 0 else (float(x[-1]), float(y[-1]))

    def points(self, plot) -> int:
        x, _ = next(iter(plot.curves.values())).line.getData()
        return 0 if x is None else len(x)

    def band_drawn(self, plot) -> bool:
        """Whether a filled band (the difficulty's min–max) is drawn on the plot."""
        import pyqtgraph as pg
        fills = [i for i in plot.plotItem.items if isinstance(i, pg.FillBetweenItem)]
        return any(f.isVisible() and not f.path().boundingRect().isEmpty() for f in fills)

    def tabs(self) -> list[str]:
        views = self.w.views
        return [views.tabText(i) for i in range(views.count())]

    # -- what is done ----------------------------------------------------------------------
    def click(self, text: str) -> None:
        b = self.button(text)
        assert b.isEnabled(), f"button {text!r} is disabled"
        # from the Qt loop, as a real click comes: a modal dialog it opens runs a nested loop, which
        # must not start inside the journey's own asyncio task
        QtCore.QTimer.singleShot(0, lambda: QTest.mouseClick(b, QtCore.Qt.MouseButton.LeftButton))

    def key(self, key, modifier=QtCore.Qt.KeyboardModifier.NoModifier, widget: QtWidgets.QWidget | None = None):
        # a person's key goes to the window in front; offscreen, no window manager gives the window
        # its activation back after a dialog closed, so the person's click on it is played here
        self.w.activateWindow()
        if QtWidgets.QApplication.activeWindow() is not self.w:
            with warnings.catch_warnings():      # deprecated, yet the one way offscreen
                warnings.simplefilter("ignore", DeprecationWarning)
                QtWidgets.QApplication.setActiveWindow(self.w)
        QTest.keyClick(widget or self.w, key, modifier)

    def type_into(self, widget: QtWidgets.QWidget, text: str) -> None:
        widget.setFocus()
        if isinstance(widget, QtWidgets.QLineEdit):
            widget.selectAll()
        QTest.keyClicks(widget, text)

    def fill(self, key: str, text: str) -> None:
        """Type into the New run form's field for `key` (e.g. "run.iterations")."""
        widget = self.w.run_form.form.editors[key].widget
        widget = widget.lineEdit() if isinstance(widget, QtWidgets.QAbstractSpinBox) else widget
        self.type_into(widget, text)
        QTest.keyClick(widget, Key.Key_Tab)

    def choose_preset(self, name: str) -> None:
        combo = self.w.run_form.preset_combo
        combo.setCurrentIndex(combo.findText(name))

    def new_run(self, name: str, iterations: int, preset: str = "tiny") -> None:
        """New run form: preset, iterations, name; then Start."""
        self.w.show_new_run()
        self.choose_preset(preset)
        self.fill("run.iterations", str(iterations))
        self.type_into(self.w.run_form.name_edit, name)
        self.click("Start")

    def menu(self, path: str) -> None:
        """File ▸ Export…: the action's text, without the mnemonic."""
        text = path.split("▸")[-1].strip()
        action = next(a for a in self.w.findChildren(QtGui.QAction) if a.text().replace("&", "") == text)
        QtCore.QTimer.singleShot(0, action.trigger)       # a modal dialog may follow: leave the loop free

    def select_runs(self, *names: str) -> None:
        """Click the first run's row in History, Ctrl+click the others."""
        table, model = self.w.history.table, self.w.history.table.model()
        col = next(c for c in range(model.columnCount())
                   if model.headerData(c, QtCore.Qt.Orientation.Horizontal) == "name")
        table.clearSelection()
        for i, name in enumerate(names):
            row = next(r for r in range(model.rowCount()) if model.index(r, col).data() == name)
            rect = table.visualRect(model.index(row, col))
            modifier = QtCore.Qt.KeyboardModifier.ControlModifier if i else QtCore.Qt.KeyboardModifier.NoModifier
            table.scrollTo(model.index(row, col))
            rect = table.visualRect(model.index(row, col))
            QTest.mouseClick(table.viewport(), QtCore.Qt.MouseButton.LeftButton, modifier, rect.center())

    def open_run(self, name: str) -> None:
        """Double-click the run in History."""
        self.w.history_dock.raise_()
        self.select_runs(name)
        table = self.w.history.table
        index = table.selectionModel().selectedRows()[0]
        rect = table.visualRect(index)
        QTest.mouseDClick(table.viewport(), QtCore.Qt.MouseButton.LeftButton, QtCore.Qt.KeyboardModifier.NoModifier,
                          rect.center())

    def hover(self, plot, fraction: float = 0.97) -> None:
        """Move the mouse over the plot, at `fraction` of its width and mid-height."""
        view = plot.plotItem.vb.sceneBoundingRect()
        point = QtCore.QPointF(view.left() + fraction * view.width(), view.center().y())
        # the scene's own move signal, as the mouse gives it (QTest.mouseMove would spin the event
        # loop inside the journey's task, and offscreen it reaches no scene anyway)
        plot.scene().sigMouseMoved.emit(point)
        plot.grab()                                # painted, as on a screen (text items place themselves then)

    def leave(self, plot) -> None:
        """Move the mouse off the plot, onto the window's status bar."""
        QtWidgets.QApplication.sendEvent(plot.viewport(), QtCore.QEvent(QtCore.QEvent.Type.Leave))
        QtWidgets.QApplication.sendEvent(plot, QtCore.QEvent(QtCore.QEvent.Type.Leave))

    def answer_file_dialog(self, path: Path | None = None, name_filter: str | None = None) -> dict:
        """Wait for the next file chooser, note what it proposes, type `path` (or keep the proposal)
        and press Save/Open. Returns what was seen: {"proposed": file name, "folder": folder}."""
        seen: dict = {}

        def poll():
            dialog = QtWidgets.QApplication.activeModalWidget()
            if not isinstance(dialog, QtWidgets.QFileDialog):
                QtCore.QTimer.singleShot(50, poll)
                return
            if "looked" not in seen:        # a person looks first; the dialog lists its folder meanwhile
                seen["looked"] = True       # (a name typed before the listing came is not selected)
                QtCore.QTimer.singleShot(700, poll)
                return
            seen["folder"] = dialog.directory().absolutePath()
            edit = dialog.findChild(QtWidgets.QLineEdit, "fileNameEdit")
            seen["proposed"] = edit.text() if edit is not None else ""
            if name_filter:
                dialog.selectNameFilter(name_filter)
            if name_filter is None and "All files (*)" in dialog.nameFilters():
                dialog.selectNameFilter("All files (*)")     # as a person does to see a file of any name
            if path is not None:            # typed into the name field, as a person does
                dialog.findChild(QtWidgets.QLineEdit, "fileNameEdit").setText(str(path))
            seen["dialog"] = True
            dialog.accept()
        QtCore.QTimer.singleShot(50, poll)
        return seen

    def when_modal(self, kind: type, act) -> dict:
        """Wait for the next modal dialog of this kind and do `act(dialog)` with it, as a person
        would fill it in; returns {"dialog": it} once done."""
        seen: dict = {}

        def poll():
            dialog = QtWidgets.QApplication.activeModalWidget()
            if not isinstance(dialog, kind):
                QtCore.QTimer.singleShot(50, poll)
                return
            seen["dialog"] = dialog
            act(dialog)
        QtCore.QTimer.singleShot(50, poll)
        return seen

    def answer_input(self, value: int | None) -> dict:
        """Wait for the next number question (QInputDialog); note its label; type `value` and OK,
        or Cancel when `value` is None."""
        seen: dict = {}

        def poll():
            box = QtWidgets.QApplication.activeModalWidget()
            if not isinstance(box, QtWidgets.QInputDialog):
                QtCore.QTimer.singleShot(50, poll)
                return
            seen["text"] = box.labelText()
            if value is None:
                box.reject()
            else:
                box.setIntValue(value)
                box.accept()
        QtCore.QTimer.singleShot(50, poll)
        return seen

    def answer_message_box(self, button_text: str | None = None) -> dict:
        """Wait for the next modal message box; note its text; press `button_text` (default: its
        default button)."""
        seen: dict = {}

        def poll():
            box = QtWidgets.QApplication.activeModalWidget()
            if not isinstance(box, (QtWidgets.QMessageBox, QtWidgets.QInputDialog)):
                QtCore.QTimer.singleShot(50, poll)
                return
            seen["title"], seen["text"] = box.windowTitle(), getattr(box, "text", lambda: "")() or ""
            if isinstance(box, QtWidgets.QInputDialog):
                seen["text"] = box.labelText()
                box.accept()
                return
            chosen = next((b for b in box.buttons() if b.text().replace("&", "") == button_text), None)
            (chosen or box.defaultButton() or box.buttons()[0]).click()
        QtCore.QTimer.singleShot(50, poll)
        return seen

    def close_boxes(self) -> None:
        for d in self.dialogs():
            if isinstance(d, QtWidgets.QMessageBox):
                d.close()


def open_console(qtbot, folder: Path, db: Path | None = None) -> MainWindow:
    """The console as `rla-gui --db` opens it, with its own preferences file in `folder`."""
    settings = QtCore.QSettings(str(folder / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(db or folder / "h.db", settings=settings)
    win.ask_close_choice = lambda run_id: "stop"
    qtbot.addWidget(win)
    win.resize(1500, 950)
    win.show()
    return win


def close_console(qtbot, win: MainWindow) -> None:
    if not win._closing:
        win.close()
    if win.finished is not None:
        qtbot.waitUntil(win.finished.done, timeout=30_000)


def drag_slider(slider: QtWidgets.QSlider, value: int) -> None:
    """Drag a slider's handle to `value` (the keyboard reaches it exactly: Home, then Right)."""
    slider.setFocus()
    QTest.keyClick(slider, Key.Key_Home)
    for _ in range(value - slider.minimum()):
        QTest.keyClick(slider, Key.Key_Right)
