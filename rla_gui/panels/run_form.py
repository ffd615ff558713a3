"""New-run panel (DESIGN §6): preset picker, run name, the generated config form, save/load TOML.

The panel only emits `start_requested`; starting the engine is the composition root's business,
so this file needs no store or client and stays testable on its own.
"""
from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from pathlib import Path

from PySide6.QtCore import QSettings, QSignalBlocker, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (QApplication, QComboBox, QFormLayout, QLabel, QLineEdit,
                               QPushButton, QVBoxLayout, QWidget)

from rla_engine.ablation.arms import AblationSpec
from rla_engine.config import (Config, ConfigError, family_kind, load_file, merge, preset_data, preset_description,
                               preset_names)
from rla_engine.config import validate as validate_config
from rla_engine.text import printable

from ..widgets import file_dialogs
from ..widgets.ablation_dialog import FIRST_ABLATION_PRESET, AblationDialog, steps_per_second
from ..widgets.config_form import ConfigForm
from ..widgets.view_controls import FlowLayout, control_group

DEFAULTS_LABEL = "(defaults)"
OPENING_PRESET = "quickstart"       # what the console opens on before a preset was ever chosen
TOML_FILTER = "TOML files (*.toml);;All files (*)"
ERROR_STYLE = "color: #d32f2f;"
NAME_TIP = ("<p>Leave empty for the automatic name, which follows the preset. A name you type stays while "
            "you change presets; cloning a run or loading a file clears it, since it named another run, and so "
            "does starting the run it names.</p>")


READ_POLL_MS = 50      # how often the form looks for the file its reading thread has read


def _read_config(path: str, results: queue.SimpleQueue) -> None:
    """In the reading thread: the file's contents or why not, left for the GUI thread to collect.
    It touches no Qt object: a panel let go (or the application ending) while the file was read
    can never be destroyed, or signalled, from this thread (both crashed: a segmentation fault)."""
    try:
        data, error = load_file(path), ""
    except ConfigError as e:
        data, error = None, str(e)
    except Exception as e:      # whatever it is, it is shown and the button comes back
        data, error = None, f"cannot load {path}: {e}"
    results.put((path, data, error))


def _merged(config_dict: object) -> tuple[Config | None, str]:
    """A nested dict (a past run's config, a TOML file) merged over the defaults, or why not."""
    if not isinstance(config_dict, dict):
        return None, f"invalid config: expected a table of sections, got {type(config_dict).__name__}"
    try:
        return merge(Config(), config_dict), ""
    except ConfigError as e:
        return None, str(e)


class RunFormPanel(QWidget):
    """Emits `start_requested(config, preset name or "", run name)` with a validated Config."""

    start_requested = Signal(object, str, str)
    ablation_requested = Signal(object, str, object)     # config, preset name or "", AblationSpec

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.preset_combo = QComboBox()
        self.preset_combo.setObjectName("preset")
        self.preset_combo.addItem(DEFAULTS_LABEL, "")
        self.preset_combo.setItemData(0, "The defaults in code, no preset.", Qt.ItemDataRole.ToolTipRole)
        for name in preset_names():
            self.preset_combo.addItem(name, name)
            self.preset_combo.setItemData(self.preset_combo.count() - 1, preset_description(name),
                                          Qt.ItemDataRole.ToolTipRole)
        self.name_edit = QLineEdit()
        self.name_edit.setObjectName("run_name")
        self.name_edit.setToolTip(NAME_TIP)
        self.form = ConfigForm()
        self.error_label = QLabel()
        self.error_label.setObjectName("error")
        self.error_label.setTextFormat(Qt.TextFormat.PlainText)    # it quotes values from files and past runs
        self.error_label.setStyleSheet(ERROR_STYLE)
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.load_button = QPushButton("Load TOML…")
        self.save_button = QPushButton("Save TOML…")
        self.start_button = QPushButton("Start")
        self.ablation_button = QPushButton("Ablation…")
        self.ablation_button.setToolTip("Run the arms of an ablation (outcome-only, step rewards, judge training, "
                                        "adaptation, baselines) on this configuration, several seeds each")
        # Return presses Start (the default button, when it has the focus), Enter in the name field
        # and Ctrl+Return too: all only while the form is in front (set_in_front).
        self._in_front = True           # a panel on its own is; the main window says when its dock is not
        self._launch: asyncio.Future | None = None      # the launch of the run Start asked for, until it ends
        self._launched_name = ""        # the typed name that launch was asked with
        # The line under the form says two things, each as it is now: why the form cannot start
        # (its own validation, redone on every change) and why the last action failed (a file that
        # did not load or save), which the next change or action replaces.
        self._form_error = ""
        self._action_error = ""
        self.start_button.setDefault(True)
        self._layout()

        self.preset_combo.currentIndexChanged.connect(self._apply_preset)
        self.form.changed.connect(self._revalidate)
        self.form.changed.connect(self._propose_name)
        self.start_button.clicked.connect(self._start)
        self.ablation_button.clicked.connect(self._start_ablation)
        self.name_edit.returnPressed.connect(self._start_by_key)
        QShortcut(QKeySequence("Ctrl+Return"), self, self._start_by_key,
                  context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.save_button.clicked.connect(self._save_file)
        self.load_button.clicked.connect(self._load_file)
        # The reading thread holds only this queue, never a Qt object: holding the panel, its last
        # reference could go in that thread (Qt then destroyed its widgets and timers off the GUI
        # thread); signalling a child of it, it could emit into a panel being destroyed. Both ended
        # in segmentation faults. The GUI thread collects the result on a timer of its own.
        self._read_results: queue.SimpleQueue = queue.SimpleQueue()
        self._reading = QTimer(self)
        self._reading.setInterval(READ_POLL_MS)
        self._reading.timeout.connect(self._collect_file)
        self._revalidate()
        self._propose_name()

    def _layout(self) -> None:
        top = QFormLayout()
        top.addRow("Preset", self.preset_combo)
        top.addRow("Run name", self.name_edit)
        buttons = FlowLayout()      # one row in a wide dock, two in a narrow one (Start still at the right)
        buttons.addWidget(self.load_button)
        buttons.addWidget(self.save_button)
        buttons.addStretch()
        buttons.addWidget(control_group(self.ablation_button, self.start_button))
        column = QVBoxLayout(self)
        column.addLayout(top)
        column.addWidget(self.form, 1)
        column.addWidget(self.error_label)
        column.addLayout(buttons)

    # ------------------------------------------------------------------ state

    def preset(self) -> str:
        return self.preset_combo.currentData() or ""

    def _show_error(self, message: str) -> None:
        """An action failed: said under the form until the next change or action."""
        self._action_error = message
        self._show_errors()

    def _action_done(self) -> None:
        # an action went through: an older action's failure is no longer the state of things
        self._action_error = ""
        self._show_errors()

    def _show_errors(self) -> None:
        # (a Start refused by the form's own error says it once)
        lines = [self._action_error] + ([self._form_error] if self._form_error != self._action_error else [])
        self.error_label.setText("\n".join(m for m in lines if m))

    def _revalidate(self) -> None:
        error = self.form.validate()
        self._form_error = "" if error is None else str(error)
        self._action_error = ""         # the form changed (or a launch ended): a failure before it is old news
        self._show_errors()
        # Saving is held back too: a saved invalid file would be refused by `rla run --config`.
        for button in (self.start_button, self.save_button, self.ablation_button):
            button.setEnabled(error is None)
            button.setToolTip("" if error is None else "Fix the marked field first.")
        if self._launch is not None:    # a second click or Return would launch a second run of one name
            self.start_button.setEnabled(False)
            self.start_button.setToolTip("Starting the run asked for…")

    def set_in_front(self, shown: bool) -> None:
        """Whether the person sees the form (its dock is not tabbed behind History, nor closed).
        A dock behind another is only moved out of sight, so its widgets keep the focus: the focus
        leaves, and Start stops being the button Return presses."""
        self._in_front = shown
        self.start_button.setDefault(shown)
        focus = QApplication.focusWidget()
        if not shown and focus is not None and self.isAncestorOf(focus):
            focus.clearFocus()

    def hold_start_until(self, launch: asyncio.Future) -> None:
        """Start stays disabled until `launch` is done, succeeded or failed."""
        self._launch = launch
        self._revalidate()
        launch.add_done_callback(self._launch_ended)

    def _launch_ended(self, launch: asyncio.Future) -> None:
        if launch is not self._launch:
            return
        self._launch = None
        with contextlib.suppress(RuntimeError):     # the window was closed while the engine started
            if not launch.cancelled() and launch.exception() is None:
                self._forget_launched_name()
            self._revalidate()

    def _forget_launched_name(self) -> None:
        # The name labels the run just started: left in the field it would label the next Start
        # too. A name typed since (for that next run) stays; a failed launch keeps it for a retry.
        if self.name_edit.text().strip() == self._launched_name:
            self.name_edit.clear()

    def automatic_name(self) -> str:
        """What the engine names a run started with an empty name (client.start): the preset, or
        the family without one, then the start time."""
        family = self.form.editors["task.family"].value()
        return f"{self.preset() or family} + start time"

    def _propose_name(self) -> None:
        # The field holds only what the user typed; the automatic name is a placeholder, so it
        # follows every preset or family change and never stays behind as stale text.
        self.name_edit.setPlaceholderText(f"Automatic: {self.automatic_name()}")

    def _forget_typed_name(self) -> None:
        # A cloned or loaded configuration is another run's: the name typed for the form's
        # previous contents would label it silently, so the automatic name takes over.
        self.name_edit.clear()

    def _select_preset_quietly(self, name: str) -> None:
        # Loading a config shows where it came from without re-applying the preset over it.
        with QSignalBlocker(self.preset_combo):
            self.preset_combo.setCurrentIndex(max(0, self.preset_combo.findData(name)))

    # ------------------------------------------------------------------ actions

    def _apply_preset(self, index: int) -> None:
        """A preset replaces the whole form: defaults merged with the preset, nothing kept but a
        typed run name (typed for this form, often before picking the preset)."""
        name = self.preset_combo.itemData(index) or ""
        cfg = Config()
        try:
            if name:
                merge(cfg, preset_data(name))
        except ConfigError as e:
            self._show_error(str(e))
            return
        self.form.set_config(cfg)

    def save_state(self, settings: QSettings) -> None:
        settings.setValue("form/preset", self.preset_combo.currentText())

    def restore_state(self, settings: QSettings) -> None:
        """The preset chosen last time; the form starts from it (a preset since removed is ignored)."""
        preset = str(settings.value("form/preset", OPENING_PRESET))
        if self.preset_combo.findText(preset) >= 0:
            self.preset_combo.setCurrentText(preset)

    def load_config(self, config_dict: dict, preset: str = "") -> bool:
        """Fill the form from a nested dict (a past run's config, a TOML file) merged over the
        defaults. On an unknown key or bad value the form is left as it was, the error shown."""
        cfg, error = _merged(config_dict)
        if cfg is None:
            self._show_error(error)
            return False
        self._fill(cfg, preset)
        return True

    def _fill(self, cfg: Config, preset: str) -> None:
        # A preset that no longer exists falls back to "(defaults)"; the values are all loaded.
        self._select_preset_quietly(preset)
        self._forget_typed_name()
        self.form.set_config(cfg)

    def _start_by_key(self) -> None:
        # a key reaches the form only through its focus; a form out of sight is not where it was meant
        if self._in_front:
            self._start()

    def _start(self) -> None:
        if not self.start_button.isEnabled():
            return  # Enter/Ctrl+Return on an invalid form, or a launch in flight: the button says why
        cfg = self._valid_config()
        if cfg is None:
            return
        self._launched_name = self.name_edit.text().strip()
        self._action_done()
        self.start_requested.emit(cfg, self.preset(), self._launched_name)

    def _valid_config(self) -> Config | None:
        """The form's config, validated; None (and the error shown) when it is not valid."""
        try:
            return validate_config(self.form.config())
        except ConfigError as e:
            self._show_error(str(e))
            return None

    def ask_ablation(self) -> tuple[AblationSpec, str] | None:
        """The dialog's choices and its base (a preset, or "" for the form's configuration), None
        when cancelled (tests replace this method)."""
        # the estimate's rate follows the kind of family the form runs: text runs are far slower
        rate = steps_per_second(family_kind(self.form.editors["task.family"].value()))
        edited = not self._holds_preset_as_it_comes()
        label = f"{self.preset() or DEFAULTS_LABEL}{', edited' if edited else ''}"
        # a newcomer's form (the preset the console opens on, untouched) gets the ablation that shows the method
        first = not edited and self.preset() in (OPENING_PRESET, FIRST_ABLATION_PRESET)
        dialog = AblationDialog(self, rate=rate, form_label=label, first=first)
        if dialog.exec() != AblationDialog.DialogCode.Accepted:
            return None
        return dialog.spec(), dialog.base_preset()

    def _holds_preset_as_it_comes(self) -> bool:
        try:
            return self.form.config() == merge(Config(), preset_data(self.preset()) if self.preset() else {})
        except ConfigError:         # a field holds what no config can: edited
            return False

    def _start_ablation(self) -> None:
        cfg, preset = self._valid_config(), self.preset()
        if cfg is None:
            return
        choice = self.ask_ablation()
        if choice is None:
            return
        spec, base = choice
        if base:
            cfg, preset = validate_config(merge(Config(), preset_data(base))), base
        self._action_done()
        self.ablation_requested.emit(cfg, preset, spec)

    def _save_file(self) -> None:
        cfg = self._valid_config()
        if cfg is None:
            return
        path, _ = file_dialogs.save_file_name(self, "Save configuration", "", TOML_FILTER)
        if not path:
            return
        target = Path(path)
        if not target.suffix:
            target = target.with_suffix(".toml")  # not every platform dialog adds it
        try:
            target.write_text(cfg.to_toml(), encoding="utf-8")
        except OSError as e:
            self._show_error(f"cannot save {target}: {e.strerror or e}")
            return
        self._action_done()

    def _load_file(self) -> None:
        path, _ = file_dialogs.open_file_name(self, "Load configuration", "", TOML_FILTER)
        if not path:
            return
        # Read in a thread of its own: a file on a slow or hung mount must not freeze the window
        # (load_file already refuses a FIFO, a device or a huge file before reading it).
        self.load_button.setEnabled(False)
        threading.Thread(target=_read_config, args=(path, self._read_results), name="rla-load-toml",
                         daemon=True).start()
        self._reading.start()

    def _collect_file(self) -> None:
        try:
            path, data, error = self._read_results.get_nowait()
        except queue.Empty:
            return
        self._reading.stop()
        self._file_arrived(path, data, error)

    def _file_arrived(self, path: str, data: dict | None, error: str) -> None:
        self.load_button.setEnabled(True)
        cfg, error = _merged(data) if data is not None else (None, error)
        if cfg is None:
            # which file, and that the form still holds what it held: the file was refused, not the form
            self._show_error(f"{printable(Path(path).name)} not loaded, the form is unchanged: {error}")
        else:
            self._fill(cfg, "")
