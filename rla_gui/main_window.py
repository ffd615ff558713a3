"""The main window: builds the panels, lays them out in docks and menus, and wires their requests
to the ConsoleController (napari's pattern). It holds no workflow of its own — only what needs a
window: dialogs (file choosers, confirmations, the failure box) and where a comparison opens."""
from __future__ import annotations

import asyncio
import functools
import html
import json
from pathlib import Path
from typing import ClassVar, Protocol, cast

from PySide6 import QtCore, QtGui, QtWidgets

from rla_engine.config import Config
from rla_engine.export import output_paths
from rla_engine.text import as_html, printable
from rla_engine.vocabulary import LIVE, CommandKind, Status

from .controller import ConsoleController
from .panels.comparison import ComparisonPanel
from .panels.group_comparison import GroupComparisonPanel
from .panels.controls import ControlsPanel
from .panels.dashboard import DashboardPanel
from .panels.episode_view import EpisodeViewPanel
from .panels.event_log import EventLogPanel
from .panels.history import HistoryPanel, database_key
from .panels.pool_table import PoolTablePanel
from .panels.run_form import RunFormPanel
from .panels.samples import SamplesPanel
from .theme import apply_plot_theme
from .widgets import file_dialogs
from .widgets.plain_text import action_text, auto_text, message_box
from .widgets.status_line import StatusLine

SHORTCUTS = [("Space", "Pause / resume the open run"), ("Ctrl+N", "New run"), ("Ctrl+F", "Find a run in the history"),
             ("Ctrl+E", "Export the selected runs (HTML, PDF, CSV, JSON)"),
             ("Ctrl+O", "Open a database"), ("Ctrl+W", "Close the comparison tab"), ("Ctrl+Q", "Quit")]


MORE_ITERATIONS = 100       # what "Resume a completed run" proposes to add
FOLLOW_COMPARISONS_MS = 2000    # how often a comparison with a live run fetches its new rows


class KeepsViewState(Protocol):
    """A panel that saves and restores its own view choices (what the user set, not data)."""

    def save_state(self, settings: QtCore.QSettings) -> None:
        """Write the view choices under the panel's own settings group."""

    def restore_state(self, settings: QtCore.QSettings) -> None:
        """Read them back; a missing or hand-mangled value leaves the default."""


class MainWindow(QtWidgets.QMainWindow):
    def __init__(self, db_path: Path, settings: QtCore.QSettings | None = None):
        super().__init__()
        self.settings = settings or QtCore.QSettings()
        apply_plot_theme()
        file_dialogs.guard_pyqtgraph_exports()
        self.controller = ConsoleController(db_path, self)
        session = self.controller.session
        self.dashboard = DashboardPanel(session)
        self.run_form = RunFormPanel()
        self.history = HistoryPanel()
        self.pool = PoolTablePanel(session)
        self.events = EventLogPanel(session)
        self.episode = EpisodeViewPanel(session)
        self.samples = SamplesPanel(session)
        self.controls = ControlsPanel(session)
        self.status_line = StatusLine(self.statusBar(), session)
        self.comparisons: list[ComparisonPanel | GroupComparisonPanel] = []
        self.views = QtWidgets.QTabWidget()
        self.views.setDocumentMode(True)
        self.views.setTabsClosable(True)
        self.views.addTab(self.dashboard, "Run")
        self.views.tabBar().setTabButton(0, QtWidgets.QTabBar.ButtonPosition.RightSide, None)   # always there
        self.views.tabCloseRequested.connect(self._close_view)
        self.setCentralWidget(self.views)
        self._docks()
        self._menus()
        self._wire()
        self.signal_notifier: QtCore.QObject | None = None   # app.py keeps its SIGTERM watcher here
        self._closing = False
        self.finished: asyncio.Future | None = None
        self.open_database(db_path)
        # a comparison holding a live run follows it, as the dashboard follows the open run
        self._follow_timer = QtCore.QTimer(self)
        self._follow_timer.setInterval(FOLLOW_COMPARISONS_MS)
        self._follow_timer.timeout.connect(self._follow_comparisons)
        self._follow_timer.start()
        self._following: set[int] = set()
        self.stateful: list[KeepsViewState] = [self.dashboard, self.run_form, self.history]
        for panel in self.stateful:
            panel.restore_state(self.settings)
        if not self.restoreGeometry(cast(QtCore.QByteArray, self.settings.value("geometry", QtCore.QByteArray()))):
            self.resize(1500, 950)
        if not self.restoreState(cast(QtCore.QByteArray, self.settings.value("state", QtCore.QByteArray()))):
            self.resizeDocks([self.form_dock, self.pool_dock], [360, 330], QtCore.Qt.Orientation.Horizontal)
            self.resizeDocks([self.events_dock], [200], QtCore.Qt.Orientation.Vertical)

    # -- layout ------------------------------------------------------------------------------
    def _dock(self, title: str, widget: QtWidgets.QWidget, area) -> QtWidgets.QDockWidget:
        dock = QtWidgets.QDockWidget(title, self)
        dock.setObjectName(title.replace(" ", "_"))
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _docks(self) -> None:
        area = QtCore.Qt.DockWidgetArea
        left, right, bottom = (area.LeftDockWidgetArea, area.RightDockWidgetArea,
                               QtCore.Qt.DockWidgetArea.BottomDockWidgetArea)
        self.form_dock = self._dock("New run", self.run_form, left)
        self.history_dock = self._dock("History", self.history, left)
        self.tabifyDockWidget(self.form_dock, self.history_dock)
        self.pool_dock = self._dock("Task pool", self.pool, right)
        self.episode_dock = self._dock("Episode", self.episode, right)
        self.samples_dock = self._dock("Samples", self.samples, right)
        self.tabifyDockWidget(self.episode_dock, self.samples_dock)
        self.episode_dock.raise_()
        self.events_dock = self._dock("Events", self.events, bottom)
        self.losses_dock = self._dock("Training health", self.dashboard.health, bottom)
        self.tabifyDockWidget(self.events_dock, self.losses_dock)
        self.events_dock.raise_()
        self.form_dock.raise_()       # a newcomer starts at the form
        bar = QtWidgets.QToolBar("Controls", self)
        bar.setObjectName("Controls")
        bar.addWidget(self.controls)
        self.addToolBar(QtCore.Qt.ToolBarArea.TopToolBarArea, bar)
        self.docks = [self.form_dock, self.history_dock, self.pool_dock, self.episode_dock, self.samples_dock,
                      self.events_dock, self.losses_dock]

    def _show_run(self, _run_id: str) -> None:
        self.views.setCurrentWidget(self.dashboard)
        self.episode_dock.raise_()      # until samples arrive: an embedded run has none

    def _samples_arrived(self) -> None:
        # a language-model run draws no episode: its first samples bring their dock to the front
        if self.episode.payload() is None:
            self.samples_dock.raise_()

    def _action(self, menu: QtWidgets.QMenu, text: str, slot, shortcut: str | None = None) -> QtGui.QAction:
        action = menu.addAction(text)
        if shortcut:
            action.setShortcut(QtGui.QKeySequence(shortcut))
            action.setShortcutContext(QtCore.Qt.ShortcutContext.ApplicationShortcut)
        action.triggered.connect(slot)
        return action

    def _menus(self) -> None:
        m = self.menuBar()
        file = m.addMenu("&File")
        self._action(file, "&New run", self.show_new_run, "Ctrl+N")
        self._action(file, "&Open database…", self.ask_open_database, "Ctrl+O")
        self._action(file, "New &database…", self.ask_new_database)
        self._action(file, "&Export…", self.ask_export, "Ctrl+E")
        file.addSeparator()
        self._action(file, "&Quit", self.close, "Ctrl+Q")
        run = m.addMenu("&Run")
        self.pause_action = self._action(run, "&Pause / resume", self.controls.toggle_pause, "Space")
        self._action(run, "&Stop", lambda: self.controller.command(CommandKind.STOP))
        self._action(run, "&Find run…", self.find_run, "Ctrl+F")
        view = m.addMenu("&View")
        for dock in self.docks:
            view.addAction(dock.toggleViewAction())
        view.addSeparator()
        self._action(view, "&Close comparison", lambda: self._close_view(self.views.currentIndex()), "Ctrl+W")
        help_ = m.addMenu("&Help")
        self._action(help_, "&Shortcuts", self.show_shortcuts)

    def _wire(self) -> None:
        c, h, k = self.controller, self.history, self.controls
        self.run_form.start_requested.connect(self._start_run)
        self.form_dock.visibilityChanged.connect(self.run_form.set_in_front)
        self.run_form.ablation_requested.connect(c.start_ablation)
        h.open_requested.connect(self.open_run)
        h.clone_requested.connect(c.clone)
        h.resume_requested.connect(self.ask_resume)
        h.archive_requested.connect(c.set_archived)
        h.delete_requested.connect(self.ask_delete)
        h.show_archived_changed.connect(c.show_archived)
        h.compare_requested.connect(c.compare)
        h.search_changed.connect(c.search)
        h.notes_edited.connect(c.save_notes)
        c.leaving_database.connect(h.flush_notes)
        k.pause_requested.connect(lambda: c.command(CommandKind.PAUSE))
        k.resume_requested.connect(lambda: c.command(CommandKind.RESUME))
        k.stop_requested.connect(lambda: c.command(CommandKind.STOP))
        k.difficulty_requested.connect(lambda v: c.command(CommandKind.SET_DIFFICULTY, {"value": v}))
        k.resume_run_requested.connect(lambda: self.ask_resume(c.session.run_id))
        c.history_changed.connect(h.set_runs)
        c.search_matched.connect(h.show_matches)
        c.run_opened.connect(h.select)
        c.run_opened.connect(self._show_run)
        self.samples.became_available.connect(self._samples_arrived)
        c.clone_ready.connect(self._clone_into_form)
        c.comparison_ready.connect(self.show_comparison)
        h.columns_changed.connect(c.set_history_columns)
        h.choices_requested.connect(c.column_choices)
        c.column_choices_ready.connect(h.show_chooser)
        h.group_compare_requested.connect(c.compare_groups)
        c.group_comparison_ready.connect(self.show_group_comparison)
        c.message.connect(lambda text, ms: self.statusBar().showMessage(text, ms))
        c.engine_failed.connect(self.show_engine_failure)
        c.unowned_refused.connect(self.ask_unowned_resume)
        c.database_opened.connect(self._on_database)
        c.database_refused.connect(self.show_database_refused)
        self.dashboard.charts_changed.connect(self._save_charts)

    # -- database, runs, comparisons -------------------------------------------------------------
    def open_database(self, path: Path) -> None:
        self.controller.open_database(path)

    def _on_database(self, path: Path) -> None:
        self.setWindowTitle(f"RLAnything console — {printable(str(path))}")
        self.status_line.set_database(path)
        self.settings.setValue("database", str(path))
        for index in reversed(range(1, self.views.count())):     # comparisons of the old database
            self._close_view(index)
        self.history.use_database(self.settings, path)
        self.dashboard.set_charts(self._saved_charts())

    def _charts_key(self) -> str:
        """Added charts are remembered per database: its resolved path, hashed into a setting's name."""
        return database_key(self.controller.db_path) + "/charts"

    def _saved_charts(self) -> list[list[str]]:
        try:
            charts = json.loads(str(self.settings.value(self._charts_key(), "[]")))
        except ValueError:
            return []
        ok = isinstance(charts, list) and all(isinstance(c, list) and c and all(isinstance(k, str) for k in c)
                                              for c in charts)
        return charts if ok else []

    def _save_charts(self) -> None:
        self.settings.setValue(self._charts_key(), json.dumps(self.dashboard.chart_keys()))

    def open_run(self, run_id: str) -> None:
        self.controller.open_run(run_id)

    def _start_run(self, cfg: Config, preset: str, name: str) -> None:
        # Start waits for this launch: a double-click or a second Return would launch another run
        self.run_form.hold_start_until(self.controller.start(cfg, preset, name))

    async def refresh_history(self) -> None:
        await self.controller.refresh_history()

    def _clone_into_form(self, config: dict, preset: str) -> None:
        self.run_form.load_config(config, preset)
        self.show_new_run()

    def show_comparison(self, runs: list) -> ComparisonPanel:
        panel = ComparisonPanel(runs)
        panel.restore_state(self.settings)
        self.comparisons.append(panel)
        self.views.addTab(panel, action_text(panel.title()))     # run names: "&" is no shortcut mark
        self.views.setTabToolTip(self.views.count() - 1, as_html(panel.windowTitle()))   # run names, not markup
        self.views.setCurrentWidget(panel)
        return panel

    def show_group_comparison(self, column: str, groups: list) -> GroupComparisonPanel:
        panel = GroupComparisonPanel(column, groups)
        panel.restore_state(self.settings)
        self.comparisons.append(panel)
        self.views.addTab(panel, action_text(panel.title()))
        self.views.setTabToolTip(self.views.count() - 1, as_html(panel.windowTitle()))
        self.views.setCurrentWidget(panel)
        return panel

    def _follow_comparisons(self) -> None:
        for panel in self.comparisons:
            if id(panel) in self._following or not panel.is_live():
                continue
            self._following.add(id(panel))
            task = self.controller.follow_comparison(panel.runs)
            task.add_done_callback(functools.partial(self._followed, panel))

    def _followed(self, panel: ComparisonPanel | GroupComparisonPanel, task: asyncio.Task) -> None:
        self._following.discard(id(panel))
        if panel in self.comparisons and not task.cancelled() and task.exception() is None and task.result():
            panel.runs_grew()

    def _close_view(self, index: int) -> None:
        panel = self.views.widget(index)
        if isinstance(panel, (ComparisonPanel, GroupComparisonPanel)):
            panel.save_state(self.settings)
            self.views.removeTab(index)
            self.comparisons.remove(panel)
            panel.deleteLater()

    def show_engine_failure(self, run_id: str, message: str) -> None:
        box = message_box(QtWidgets.QMessageBox.Icon.Critical, "Engine failed",    # its log's line: plain
                          f"The engine of run {run_id} failed." if run_id else "The engine failed.", self)
        box.setDetailedText(message)
        box.setInformativeText(message.splitlines()[-1] if message else "")
        box.show()
        self._failure_box = box   # tests read it; a modal exec() would block the event loop

    def ask_unowned_resume(self, run_id: str, iterations: int) -> None:
        """The resume found only checkpoints this database did not sign (an older version's, or
        files someone placed in the folder): the person decides, knowing the risk."""
        box = message_box(QtWidgets.QMessageBox.Icon.Warning, "Unsigned checkpoints",
                          f"Run {run_id} has only checkpoints that this database did not sign: written by an "
                          "older version, or placed in its folder by someone else. Loading one runs whatever it "
                          "holds. Resume from them anyway?", self)
        box.setStandardButtons(QtWidgets.QMessageBox.StandardButton.Yes | QtWidgets.QMessageBox.StandardButton.No)
        box.setDefaultButton(QtWidgets.QMessageBox.StandardButton.No)

        def answered(button: int) -> None:
            if button == QtWidgets.QMessageBox.StandardButton.Yes:
                self.controller.resume(run_id, iterations or None, accept_unowned=True)
        box.finished.connect(answered)
        box.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
        box.show()            # not exec(): a modal loop here would hold up the console's event loop
        self._unowned_box = box

    # -- dialogs -----------------------------------------------------------------------------
    EXPORT_FILTERS: ClassVar[dict[str, str]] = {"HTML report (*.html)": "html", "PDF report (*.pdf)": "pdf",
                      "CSV, long format (*.csv)": "csv", "JSON, re-importable (*.json)": "json",
                      "Parquet, long format, typed (*.parquet)": "parquet"}

    def export_ids(self) -> list[str]:
        """What File ▸ Export… exports: the comparison in view, else the runs selected in History,
        else the open run."""
        view = self.views.currentWidget()
        if isinstance(view, GroupComparisonPanel):
            return view.run_ids()
        if isinstance(view, ComparisonPanel) and view.runs:
            return [row["id"] for row, _ in view.runs]
        session = self.controller.session
        return self.history.selected_ids() or ([session.run_id] if session.run_id else [])

    def export_charts(self) -> list[list[str]]:
        """The added charts a report includes: the comparison's in view, else the dashboard's."""
        view = self.views.currentWidget()
        if isinstance(view, ComparisonPanel):
            return [list(plot.panel.keys) for plot in view.added]
        return self.dashboard.chart_keys()

    def proposed_export_path(self, ids: list[str]) -> Path:
        """The run's id, or "comparison-<first>-and-<n> more" for several; in the folder the
        last export went to (the database's at first), with the format used last."""
        fmt = str(self.settings.value("export/format", "html"))
        fmt = fmt if fmt in self.EXPORT_FILTERS.values() else "html"
        folder = Path(str(self.settings.value("export/folder", "") or self.controller.db_path.parent))
        if not folder.is_dir():
            folder = self.controller.db_path.parent
        stem = ids[0] if len(ids) == 1 else f"comparison-{ids[0]}-and-{len(ids) - 1}-more"
        return folder / f"{stem}.{fmt}"

    def ask_export(self) -> None:
        ids = self.export_ids()
        if not ids:
            self.statusBar().showMessage("select a run (or several) in the history to export", 5000)
            return
        proposed = self.proposed_export_path(ids)
        filters = list(self.EXPORT_FILTERS)
        last = next((f for f, v in self.EXPORT_FILTERS.items() if proposed.suffix == f".{v}"), filters[0])
        path, chosen = file_dialogs.save_file_name(self, "Export", str(proposed), ";;".join(filters), last)
        if path:
            # a typed suffix of a format we write wins over the filter left selected ("x.pdf"
            # under the HTML filter wrote HTML into x.pdf)
            typed = Path(path).suffix.lstrip(".").lower()
            fmt = typed if typed in self.EXPORT_FILTERS.values() else self.EXPORT_FILTERS.get(chosen) or "html"
            if file_dialogs.refused_output(self, self.controller.db_path, output_paths(fmt, path)):
                return      # the database's own file: said in a message box, nothing started
            self.settings.setValue("export/folder", str(Path(path).parent))
            self.settings.setValue("export/format", fmt)
            # the file dialog already asked about overwriting; a link the user picked means its
            # target (the report tool itself refuses links, and anything but a regular file)
            view = self.views.currentWidget()
            self.controller.export(ids, fmt, Path(path).resolve(), force=True, charts=self.export_charts(),
                                   group_by=view.column if isinstance(view, GroupComparisonPanel) else None)

    def _known_run(self, run_id: str | None) -> dict | None:
        """The run as the console last read it (History's row, the open run's fresher one)."""
        row = next((r for r in self.history.model.rows if r["id"] == run_id), None)
        if run_id is not None and self.controller.session.run_id == run_id and self.controller.session.run is not None:
            row = {**(row or {}), **self.controller.session.run}
        return row

    def ask_delete(self, run_id: str) -> None:
        """A live run is refused before anything is asked (the store refuses it again, under the
        run's lock, should it have started meanwhile); any other is deleted once confirmed."""
        status = (self._known_run(run_id) or {}).get("status")
        if status in LIVE:
            self.statusBar().showMessage(f"run {run_id} is still {status}: stop it before deleting it", 8000)
            return
        answer = QtWidgets.QMessageBox.question(
            self, "Delete run", f"Delete run {run_id} with its checkpoints and log? This cannot be undone.")
        if answer == QtWidgets.QMessageBox.StandardButton.Yes:
            self.controller.delete(run_id)

    def show_new_run(self) -> None:
        self.form_dock.show()
        self.form_dock.raise_()

    def find_run(self) -> None:
        self.history_dock.show()
        self.history_dock.raise_()
        self.history.focus_search()

    def ask_open_database(self) -> None:
        path, _ = file_dialogs.open_file_name(self, "Open database", str(self.controller.db_path.parent),
                                              "SQLite databases (*.db *.sqlite);;All files (*)")
        if path:
            self.controller.switch_database(Path(path))

    def ask_new_database(self) -> None:
        path, _ = file_dialogs.save_file_name(self, "New database", str(self.controller.db_path.parent / "new.db"),
                                              "SQLite databases (*.db)")
        if path:
            self.controller.switch_database(Path(path))

    def show_database_refused(self, path: Path, problem: str) -> None:
        """Said in a dialog (not only on stderr); the database that was open stays open."""
        box = message_box(QtWidgets.QMessageBox.Icon.Warning, "Cannot open the database",
                          f"{path} cannot be opened: the console stays on {self.controller.db_path}.", self)
        box.setInformativeText(printable(problem))
        box.show()
        self._refusal_box = box

    def ask_resume(self, run_id: str | None) -> None:
        """Resume from History or the toolbar. A stopped, crashed or failed run goes on to its
        target; a completed one has none left, so the person says how many iterations to add
        (`rla resume --iterations`); a live one is said to be live."""
        row = self._known_run(run_id)
        if run_id is None or row is None:
            return
        status = row.get("status")
        if status in LIVE:
            self.statusBar().showMessage(f"run {run_id} is still {status}: nothing to resume", 5000)
            return
        if status != Status.COMPLETED:
            self.controller.resume(run_id)
            return
        more, ok = QtWidgets.QInputDialog.getInt(
            self, "Resume a completed run",
            auto_text(f"Run {row.get('name') or run_id} completed at iteration {row.get('iteration')}.\n"
                      "Iterations to add:"), MORE_ITERATIONS, 1, 2**31 - 1)
        if ok:
            self.controller.resume(run_id, more)

    def show_shortcuts(self) -> None:
        # a table: keys in one column, what they do in the other, never wrapped into each other
        rows = "".join(f"<tr><td style='padding-right:18px'><b>{html.escape(k)}</b></td><td>{html.escape(v)}</td></tr>"
                       for k, v in SHORTCUTS)
        box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Information, "Shortcuts", "", parent=self)
        box.setTextFormat(QtCore.Qt.TextFormat.RichText)
        box.setText(f"<table cellspacing='4'>{rows}</table>")
        box.show()
        self._shortcuts_box = box

    # -- closing -----------------------------------------------------------------------------
    def save_state(self) -> None:
        for panel in [*self.stateful, *self.comparisons]:
            panel.save_state(self.settings)
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("state", self.saveState())

    def live_run_id(self) -> str | None:
        return self.controller.live_run_id()

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:
        if self._closing:       # closed once already (a second close, e.g. at deletion): nothing left to do
            event.accept()
            return
        run_id = self.live_run_id()
        if run_id and not self._closing:
            choice = self.ask_close_choice(run_id)
            if choice == "cancel":
                event.ignore()
                return
        else:
            choice = "detach"
        self._closing = True
        self.save_state()
        self.finished = self.controller.close(run_id if choice == "stop" else None)
        event.accept()

    def ask_close_choice(self, run_id: str) -> str:
        """'stop', 'detach' or 'cancel' (tests replace this to answer without a modal dialog)."""
        run = self.controller.session.run
        status = run["status"] if run else "live"
        name = printable(str(run["name"])) if run and run.get("name") else run_id
        box = message_box(QtWidgets.QMessageBox.Icon.Question, "A run is live",
                          f"Run {name} ({run_id}) is still {status}.", self)
        stop = box.addButton("Stop it (checkpoint)", QtWidgets.QMessageBox.ButtonRole.DestructiveRole)
        detach = box.addButton("Let it run on", QtWidgets.QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QtWidgets.QMessageBox.StandardButton.Cancel)
        box.exec()
        return "stop" if box.clickedButton() is stop else "detach" if box.clickedButton() is detach else "cancel"
