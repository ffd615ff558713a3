"""The main window: builds the panels, lays them out in docks and menus, and wires their requests
to the ConsoleController (napari's pattern). It holds no workflow of its own — only what needs a
window: dialogs (file choosers, confirmations, the failure box) and where a comparison opens."""
from __future__ import annotations

import asyncio
import functools
import html
from pathlib import Path
from typing import ClassVar, Protocol, cast

from PySide6 import QtCore, QtGui, QtWidgets

from rla_engine.config import Config
from rla_engine.export import output_paths
from rla_engine.remote import SshAddress
from rla_engine.text import as_html, counted, printable
from rla_engine.vocabulary import LIVE, CommandKind, Status

from .controller import ConsoleController
from .model import location as locations
from .model.database_settings import DatabaseSettings
from .model.location import Client, Location, label, local_path, start_folder
from .panels.comparison import ComparisonPanel, ComparisonView
from .panels.group_comparison import GroupComparisonPanel
from .panels.controls import ControlsPanel
from .panels.dashboard import DashboardPanel
from .panels.episode_view import EpisodeViewPanel
from .panels.event_log import EventLogPanel
from .panels.history import HistoryPanel
from .panels.pool_table import PoolTablePanel
from .panels.run_form import RunFormPanel
from .panels.samples import SamplesPanel
from .theme import apply_plot_theme
from .widgets import file_dialogs
from .widgets.menu_keys import MenuKeysFirst
from .widgets.plain_text import action_text, auto_text, message_box, plain_label
from .widgets.remote_dialog import RemoteDatabaseDialog
from .widgets.status_line import StatusLine

SHORTCUTS = [("Space", "Pause / resume the open run"), ("Ctrl+N", "New run"), ("Ctrl+F", "Find a run in the history"),
             ("Ctrl+E", "Export the comparison in view, else the runs selected in History, else the open run "
                        "(HTML, PDF, CSV, JSON; the dialog lists the runs it writes)"),
             ("Ctrl+O", "Open a database"), ("Ctrl+W", "Close the comparison tab"), ("Ctrl+Q", "Quit")]


MORE_ITERATIONS = 100       # what "Resume a completed run" proposes to add
HEALTH_DOCK_HEIGHT = 320    # the Events / Training health docks at first: the health plots readable
LISTED_RUNS = 12            # a dialog lists this many runs by name, then says how many more
FOLLOW_COMPARISONS_MS = 2000    # how often a comparison with a live run fetches its new rows


class KeepsViewState(Protocol):
    """A panel that saves and restores its own view choices (what the user set, not data)."""

    def save_state(self, settings: QtCore.QSettings) -> None:
        """Write the view choices under the panel's own settings group."""

    def restore_state(self, settings: QtCore.QSettings) -> None:
        """Read them back; a missing or hand-mangled value leaves the default."""


class MainWindow(QtWidgets.QMainWindow):
    def __init__(self, db_path: Location, settings: QtCore.QSettings | None = None, client: Client | None = None):
        """`db_path`: a local database file or a remote database's address; `client`: its client
        when already made (app.py connects to a remote one before the window opens)."""
        super().__init__()
        self.settings = settings or QtCore.QSettings()
        apply_plot_theme()
        file_dialogs.guard_pyqtgraph_exports()
        self.controller = ConsoleController(db_path, self, client)
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
        self.comparisons: list[ComparisonView] = []
        self.views = QtWidgets.QTabWidget()
        self.views.setDocumentMode(True)
        self.views.setTabsClosable(True)
        self.views.addTab(self.dashboard, "Run")
        self.views.tabBar().setTabButton(0, QtWidgets.QTabBar.ButtonPosition.RightSide, None)   # always there
        self.views.tabCloseRequested.connect(self._close_view)
        self.setCentralWidget(self.views)
        self._docks()
        self._menus()
        # Ctrl+E (Export…) while the run's name, the filter or the notes has the keyboard
        self._menu_keys = MenuKeysFirst([a.shortcut() for a in self.findChildren(QtGui.QAction)
                                         if a.shortcut().toString().startswith("Ctrl+")], self)
        self._wire()
        self.signal_notifier: QtCore.QObject | None = None   # app.py keeps its SIGTERM watcher here
        self.live_runs_box: LiveRunsBox | None = None
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
            # the form as wide as its buttons in one row; the plots take what the docks leave
            self.resizeDocks([self.form_dock, self.pool_dock], [self.run_form.sizeHint().width(), 330],
                             QtCore.Qt.Orientation.Horizontal)
            self.resizeDocks([self.events_dock], [HEALTH_DOCK_HEIGHT], QtCore.Qt.Orientation.Vertical)

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
        self._action(file, "Open &remote database…", self.ask_open_remote_database)
        self.recent_menu = file.addMenu("Recen&t databases")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
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
        wiring = (
            (self.run_form.start_requested, self._start_run),
            (self.form_dock.visibilityChanged, self.run_form.set_in_front),
            (self.run_form.ablation_requested, c.start_ablation),
            (h.open_requested, self.open_run),
            (h.clone_requested, c.clone),
            (h.resume_requested, self.ask_resume),
            (h.archive_requested, c.set_archived),
            (h.delete_requested, self.ask_delete),
            (h.show_archived_changed, c.show_archived),
            (h.compare_requested, c.compare),
            (h.search_changed, c.search),
            (h.notes_edited, c.save_notes),
            (c.leaving_database, h.flush_notes),
            (k.pause_requested, lambda: c.command(CommandKind.PAUSE)),
            (k.resume_requested, lambda: c.command(CommandKind.RESUME)),
            (k.stop_requested, lambda: c.command(CommandKind.STOP)),
            (k.difficulty_requested, lambda v: c.command(CommandKind.SET_DIFFICULTY, {"value": v})),
            (k.resume_run_requested, lambda: self.ask_resume(c.session.run_id)),
            (c.history_changed, h.set_runs),
            (c.search_matched, h.show_matches),
            (c.run_opened, h.select),
            (c.run_opened, self._show_run),
            (self.samples.became_available, self._samples_arrived),
            (c.clone_ready, self._clone_into_form),
            (c.comparison_ready, self.show_comparison),
            (h.columns_changed, c.set_history_columns),
            (h.choices_requested, c.column_choices),
            (c.column_choices_ready, h.show_chooser),
            (h.group_compare_requested, c.compare_groups),
            (c.group_comparison_ready, self.show_group_comparison),
            (c.message, lambda text, ms: self.statusBar().showMessage(text, ms)),
            (c.engine_failed, self.show_engine_failure),
            (c.unowned_refused, self.ask_unowned_resume),
            (c.database_opened, self._on_database),
            (c.database_refused, self.show_database_refused),
            (c.connection_changed, self.status_line.set_connection),
            (c.live_runs_found, self.show_live_runs),
            (self.dashboard.charts_changed, self._save_charts),
        )
        for signal, slot in wiring:
            signal.connect(slot)

    # -- database, runs, comparisons -------------------------------------------------------------
    def open_database(self, location: Location) -> None:
        self.controller.open_database(location)

    def _on_database(self, location: Location) -> None:
        self.setWindowTitle(f"RLAnything console — {printable(label(location))}")
        self.status_line.set_database(location)
        self.settings.setValue("database", str(location))
        locations.remember(self.settings, location)
        self._fill_recent_menu()
        for index in reversed(range(1, self.views.count())):     # comparisons of the old database
            self._close_view(index)
        self.history.use_database(self.settings, location)
        self.dashboard.set_charts(self._saved_charts())

    def _saved_charts(self) -> list[list[str]]:
        return DatabaseSettings(self.settings, self.controller.location).charts()

    def _save_charts(self) -> None:
        DatabaseSettings(self.settings, self.controller.location).set_charts(self.dashboard.chart_keys())

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

    def _followed(self, panel: ComparisonView, task: asyncio.Task) -> None:
        self._following.discard(id(panel))
        if panel in self.comparisons and not task.cancelled() and task.exception() is None and task.result():
            panel.runs_grew()

    def _close_view(self, index: int) -> None:
        panel = self.views.widget(index)
        if isinstance(panel, ComparisonView):
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
        else the open run (SHORTCUTS says so; the dialog lists them)."""
        return self.export_scope()[1]

    def export_scope(self) -> tuple[str, list[str]]:
        """(where the runs come from, in words; their ids) for File ▸ Export…."""
        view = self.views.currentWidget()
        if isinstance(view, GroupComparisonPanel):
            return "the group comparison in view", view.run_ids()
        if isinstance(view, ComparisonPanel) and view.runs:
            return "the comparison in view", [row["id"] for row, _ in view.runs]
        if selected := self.history.selected_ids():
            return "the runs selected in History", selected
        session = self.controller.session
        return "the open run", [session.run_id] if session.run_id else []

    def _run_name(self, run_id: str) -> str:
        view = self.views.currentWidget()
        rows = [row for row, _ in view.runs] if isinstance(view, ComparisonView) else []
        row = next((r for r in rows if r["id"] == run_id), None) or self._known_run(run_id) or {}
        return printable(str(row.get("name") or ""))

    def runs_text(self, run_ids: list[str], status: dict[str, str] | None = None) -> str:
        """One line per run, "name (id)" (and its status), then how many more: what a dialog says
        it acts on."""
        def line(run_id: str) -> str:
            name, state = self._run_name(run_id), (status or {}).get(run_id)
            text = f"  {name} ({printable(run_id)})" if name else f"  {printable(run_id)}"
            return f"{text} — {printable(state)}" if state else text
        more = len(run_ids) - LISTED_RUNS
        return "\n".join([line(i) for i in run_ids[:LISTED_RUNS]] + ([f"  … and {more} more"] if more > 0 else []))

    def export_charts(self) -> list[list[str]]:
        """The added charts a report includes: the comparison's in view, else the dashboard's."""
        view = self.views.currentWidget()
        if isinstance(view, ComparisonView):
            return [list(plot.panel.keys) for plot in view.added]
        return self.dashboard.chart_keys()

    def proposed_export_path(self, ids: list[str]) -> Path:
        """The run's id, or "comparison-<first>-and-<n> more" for several; in the folder the
        last export went to (the database's at first), with the format used last."""
        fmt = str(self.settings.value("export/format", "html"))
        fmt = fmt if fmt in self.EXPORT_FILTERS.values() else "html"
        here = start_folder(self.controller.location)     # a remote database's folder is not on this disk
        folder = Path(str(self.settings.value("export/folder", "") or here))
        if not folder.is_dir():
            folder = here
        stem = ids[0] if len(ids) == 1 else f"comparison-{ids[0]}-and-{len(ids) - 1}-more"
        return folder / f"{stem}.{fmt}"

    def ask_export(self) -> None:
        where, ids = self.export_scope()
        if not ids:
            self.statusBar().showMessage("select a run (or several) in the history to export", 5000)
            return
        proposed = self.proposed_export_path(ids)
        filters = list(self.EXPORT_FILTERS)
        last = next((f for f, v in self.EXPORT_FILTERS.items() if proposed.suffix == f".{v}"), filters[0])
        path, chosen = file_dialogs.save_file_name(
            self, f"Export {counted(len(ids), 'run')} — {where}", str(proposed), ";;".join(filters), last,
            note=f"Writes {counted(len(ids), 'run')}, {where}:\n{self.runs_text(ids)}")
        if path:
            # a typed suffix of a format we write wins over the filter left selected ("x.pdf"
            # under the HTML filter wrote HTML into x.pdf)
            typed = Path(path).suffix.lstrip(".").lower()
            fmt = typed if typed in self.EXPORT_FILTERS.values() else self.EXPORT_FILTERS.get(chosen) or "html"
            if file_dialogs.refused_output(self, local_path(self.controller.location), output_paths(fmt, path)):
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
        path, _ = file_dialogs.open_file_name(self, "Open database", str(start_folder(self.controller.location)),
                                              "SQLite databases (*.db *.sqlite);;All files (*)")
        if path:
            self.leave_database_for(Path(path))

    def ask_open_remote_database(self) -> RemoteDatabaseDialog:
        """File ▸ Open remote database…: the address asked for (the open remote one's, else the
        last one opened, proposed); not modal to the loop: the console goes on meanwhile."""
        here = self.controller.location
        proposed = here if isinstance(here, SshAddress) else next(
            (r for r in locations.recent(self.settings) if isinstance(r, SshAddress)), None)
        dialog = RemoteDatabaseDialog(self, proposed)
        dialog.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)

        def chosen() -> None:
            address = dialog.address()
            if address is not None:
                self.leave_database_for(address)
        dialog.accepted.connect(chosen)
        dialog.open()
        return dialog

    def _fill_recent_menu(self) -> None:
        """File ▸ Recent databases: the last ones opened, local and remote, most recent first."""
        menu = self.recent_menu
        menu.clear()
        recent = locations.recent(self.settings)
        for location in recent:
            action = menu.addAction(action_text(label(location)))
            action.setToolTip(str(location))
            action.setData(str(location))
            action.triggered.connect(functools.partial(self.open_recent, location))
        menu.setEnabled(bool(recent))

    def open_recent(self, location: Location) -> None:
        """A recent database, opened again; a local file that is gone is refused (and forgotten):
        opening would create an empty database in its place."""
        if isinstance(location, Path) and not location.exists():
            locations.forget(self.settings, location)
            self._fill_recent_menu()
            self.show_database_refused(location, f"{location} no longer exists (moved or deleted)")
            return
        self.leave_database_for(location)

    def ask_new_database(self) -> None:
        path, _ = file_dialogs.save_file_name(self, "New database",
                                              str(start_folder(self.controller.location) / "new.db"),
                                              "SQLite databases (*.db)")
        if path:
            self.leave_database_for(Path(path))

    def leave_database_for(self, location: Location) -> None:
        """Another database: its live and paused runs are left running, or stopped, as the person
        says (as on quit); Cancel stays."""
        live = self.controller.live_runs()
        choice = self.ask_leave_choice(live, "Open another database") if live else "detach"
        if choice != "cancel":
            self.controller.switch_database(location, [r["id"] for r in live] if choice == "stop" else [])

    def show_database_refused(self, location: Location, problem: str) -> None:
        """Said in a dialog (not only on stderr); the database that was open stays open."""
        box = message_box(QtWidgets.QMessageBox.Icon.Warning, "Cannot open the database",
                          f"{location} cannot be opened: the console stays on {label(self.controller.location)}.",
                          self)
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

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:
        if self._closing:       # closed once already (a second close, e.g. at deletion): nothing left to do
            event.accept()
            return
        live = self.controller.live_runs()
        choice = self.ask_close_choice(live[0]["id"]) if live else "detach"
        if choice == "cancel":
            event.ignore()
            return
        self._closing = True
        self.save_state()
        if self.live_runs_box is not None:
            self.live_runs_box.close()
        self.finished = self.controller.close([r["id"] for r in live] if choice == "stop" else [])
        event.accept()

    def ask_close_choice(self, run_id: str) -> str:
        """'stop', 'detach' or 'cancel' for every live or paused run of the database, `run_id`
        first among them (tests replace this to answer without a modal dialog)."""
        live = self.controller.live_runs()
        live.sort(key=lambda r: r["id"] != run_id)
        return self.ask_leave_choice(live or [{"id": run_id, "status": "live"}], "Quit")

    def ask_leave_choice(self, live: list[dict], leaving: str) -> str:
        """A modal question naming each live or paused run (name, id, status): leave them running
        (detached: an engine needs no console), stop them (each checkpoints), or cancel."""
        one = len(live) == 1
        text = (f"{'This run is' if one else f'These {len(live)} runs are'} still live or paused in "
                f"{self.controller.location.name}:\n"
                + self.runs_text([r["id"] for r in live], {r["id"]: str(r.get("status")) for r in live}))
        box = message_box(QtWidgets.QMessageBox.Icon.Question, f"{leaving}: {'a run is' if one else 'runs are'} live",
                          text, self)
        stop = box.addButton("Stop it (checkpoint)" if one else f"Stop all {len(live)} (checkpoint)",
                             QtWidgets.QMessageBox.ButtonRole.DestructiveRole)
        detach = box.addButton("Let it run on" if one else "Let them run on",
                               QtWidgets.QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QtWidgets.QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(detach)
        box.exec()
        return "stop" if box.clickedButton() is stop else "detach" if box.clickedButton() is detach else "cancel"

    # -- runs left live by an earlier console, or a terminal ---------------------------------------
    def show_live_runs(self, live: list[dict]) -> LiveRunsBox | None:
        """The database just opened has runs running or paused, and none is open: each listed,
        to attach to (open it here) or to stop. Not modal: the console goes on meanwhile."""
        if self._closing:
            return self.live_runs_box
        if self.live_runs_box is not None:       # an earlier database's
            self.live_runs_box.close()
            self.live_runs_box.deleteLater()
        box = self.live_runs_box = LiveRunsBox(live, self.controller.location, self)
        box.attach_requested.connect(self.open_run)
        box.stop_requested.connect(lambda run_id: self.controller.stop_runs([run_id]))
        box.show()
        return box


class LiveRunsBox(QtWidgets.QDialog):
    """The runs still live or paused in a database the console opened, each with Attach and Stop it."""
    attach_requested = QtCore.Signal(str)
    stop_requested = QtCore.Signal(str)

    def __init__(self, live: list[dict], db_path: Location, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Runs still live")
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(plain_label(f"{counted(len(live), 'run')} of {db_path.name} "
                                     f"{'is' if len(live) == 1 else 'are'} still running or paused, "
                                     "with no console attached:", self))
        grid = QtWidgets.QGridLayout()
        self.rows: dict[str, tuple[QtWidgets.QLabel, QtWidgets.QPushButton, QtWidgets.QPushButton]] = {}
        for i, run in enumerate(live[:LISTED_RUNS * 2]):
            run_id = str(run["id"])
            label = plain_label(f"{run.get('name') or run_id} ({run_id}) — {run.get('status')}", self)
            attach, stop = QtWidgets.QPushButton("Attach", self), QtWidgets.QPushButton("Stop it", self)
            attach.setToolTip("Open it in the Run tab: its curves, its controls")
            stop.setToolTip("Ask its engine to stop (it checkpoints first; resume it later)")
            attach.clicked.connect(functools.partial(self._attach, run_id))
            stop.clicked.connect(functools.partial(self._stop, run_id))
            for column, widget in enumerate((label, attach, stop)):
                grid.addWidget(widget, i, column)
            self.rows[run_id] = (label, attach, stop)
        layout.addLayout(grid)
        close = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.close)
        layout.addWidget(close)

    def _attach(self, run_id: str) -> None:
        self.attach_requested.emit(run_id)
        self.close()       # the Run tab shows it now; the others stay as they are

    def _stop(self, run_id: str) -> None:
        label, attach, stop = self.rows[run_id]
        stop.setEnabled(False)
        attach.setEnabled(False)
        label.setText(label.text() + ": asked to stop")
        self.stop_requested.emit(run_id)
