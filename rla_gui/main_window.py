"""The main window: docks, menus, toolbar and status bar — composition only, no logic of its own
beyond routing panel requests to the session's EngineClient."""
from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import ClassVar, cast

from PySide6 import QtCore, QtGui, QtWidgets

from rla_engine.config import Config
from rla_engine.client import EngineClient
from rla_engine.summary import SUMMARY_KEYS
from rla_engine.vocabulary import LIVE, CommandKind, EventKind

from .panels.controls import ControlsPanel
from .panels.dashboard import DashboardPanel
from .panels.episode_view import EpisodeViewPanel
from .panels.event_log import EventLogPanel
from .panels.history import HistoryPanel
from .panels.pool_table import PoolTablePanel
from .panels.run_form import RunFormPanel
from .run_data import RunData
from .session import RunSession
from .theme import apply_plot_theme
from .widgets.status import StatusLine

HISTORY_EVERY_S = 2.0
SHORTCUTS = [("Space", "Pause / resume the open run"), ("Ctrl+N", "New run"), ("Ctrl+F", "Find a run in the history"),
             ("Ctrl+E", "Export the selected runs (HTML, PDF, CSV, JSON)"),
             ("Ctrl+O", "Open a database"), ("Ctrl+Q", "Quit")]


class MainWindow(QtWidgets.QMainWindow):
    def __init__(self, db_path: Path, settings: QtCore.QSettings | None = None):
        super().__init__()
        self.settings = settings or QtCore.QSettings()
        apply_plot_theme()
        self.data = RunData()
        self.dashboard = DashboardPanel(self.data)
        self.setCentralWidget(self.dashboard)
        self.run_form = RunFormPanel()
        self.history = HistoryPanel()
        self.pool = PoolTablePanel()
        self.events = EventLogPanel()
        self.episode = EpisodeViewPanel()
        self.controls = ControlsPanel()
        self.status_line = StatusLine(self.statusBar())
        self._docks()
        self._menus()
        self._wire_panels()
        self.session: RunSession          # open_database below sets it; it is never None after
        self.signal_notifier: QtCore.QObject | None = None   # app.py keeps its SIGTERM watcher here
        self._history_task: asyncio.Task | None = None
        self._closing = False
        self.finished: asyncio.Future | None = None
        self.open_database(db_path)
        self._restore_preferences()
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
        self.events_dock = self._dock("Events", self.events, bottom)
        self.losses_dock = self._dock("Losses", self.dashboard.losses, bottom)
        self.tabifyDockWidget(self.events_dock, self.losses_dock)
        self.events_dock.raise_()
        self.form_dock.raise_()       # a newcomer starts at the form
        bar = QtWidgets.QToolBar("Controls", self)
        bar.setObjectName("Controls")
        bar.addWidget(self.controls)
        self.addToolBar(QtCore.Qt.ToolBarArea.TopToolBarArea, bar)
        self.docks = [self.form_dock, self.history_dock, self.pool_dock, self.episode_dock, self.events_dock,
                      self.losses_dock]

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
        self._action(run, "&Stop", lambda: self._command("stop"))
        self._action(run, "&Find run…", self.find_run, "Ctrl+F")
        view = m.addMenu("&View")
        for dock in self.docks:
            view.addAction(dock.toggleViewAction())
        help_ = m.addMenu("&Help")
        self._action(help_, "&Shortcuts", self.show_shortcuts)

    def _wire_panels(self) -> None:
        self.run_form.start_requested.connect(lambda cfg, preset, name: self._spawn(self._start(cfg, preset, name)))
        h = self.history
        h.open_requested.connect(self.open_run)
        h.clone_requested.connect(lambda rid: self._spawn(self._clone(rid)))
        h.resume_requested.connect(lambda rid: self._spawn(self._resume_run(rid)))
        h.archive_requested.connect(lambda rid, a: self._spawn(self.session.client.set_archived(rid, a)))
        h.delete_requested.connect(self.ask_delete)
        h.show_archived.toggled.connect(lambda _: self._spawn(self.refresh_history()))
        h.compare_requested.connect(lambda ids: self._spawn(self.compare(ids)))
        h.search_changed.connect(lambda text: self._spawn(self._search(text)))
        h.notes_edited.connect(lambda rid, notes, tags: self._spawn(self._save_notes(rid, notes, tags)))
        c = self.controls
        c.pause_requested.connect(lambda: self._command(CommandKind.PAUSE))
        c.resume_requested.connect(lambda: self._command(CommandKind.RESUME))
        c.stop_requested.connect(lambda: self._command("stop"))
        c.difficulty_requested.connect(lambda v: self._command(CommandKind.SET_DIFFICULTY, {"value": v}))
        c.resume_run_requested.connect(
            lambda: self.session.run_id and self._spawn(self._resume_run(self.session.run_id)))

    # -- database and session ----------------------------------------------------------------
    def open_database(self, path: Path) -> None:
        old: RunSession | None = getattr(self, "session", None)
        if old is not None:
            self._spawn(old.shutdown())
        self.db_path = Path(path)
        self.session = RunSession(EngineClient(self.db_path), self)
        s = self.session
        s.cleared.connect(self._clear_run_view)
        s.metrics_added.connect(self._on_metrics)
        s.events_added.connect(self._on_events)
        s.run_changed.connect(self._on_run)
        s.pool_changed.connect(self.pool.set_rows)
        s.failed.connect(self._on_engine_failed)
        self.setWindowTitle(f"RLAnything console — {self.db_path}")
        self.status_line.set_database(self.db_path)
        self.settings.setValue("database", str(self.db_path))
        if self._history_task is not None:
            self._history_task.cancel()
        self._history_task = asyncio.ensure_future(self._history_loop())
        s.open(None)

    def open_run(self, run_id: str) -> None:
        self.session.open(run_id)
        self.history.select(run_id)

    def _clear_run_view(self) -> None:
        self.data.clear()
        self.dashboard.reset()
        self.events.clear()
        self.pool.set_rows([])
        self.episode.show_episode(None)
        self.controls.set_run(None)
        self.status_line.set_run(None, None)

    def _on_metrics(self, chunk: dict) -> None:
        self.data.add(chunk)
        self.status_line.set_rate(self.data)

    def _on_events(self, events: list[dict]) -> None:
        self.dashboard.add_events(events)
        self.events.append(events)
        episodes = [e for e in events if e["kind"] == EventKind.EPISODE]
        if episodes:
            self.episode.show_episode(episodes[-1]["payload"])
        for e in events:
            if e["kind"] == EventKind.SET_DIFFICULTY and e["payload"].get("result", "").startswith("applied"):
                self.controls.set_override((e["payload"].get("payload") or {}).get("value"))

    def _on_run(self, run: dict) -> None:
        self.controls.set_run(run)
        self.status_line.set_run(run, self.data)

    def _on_engine_failed(self, run_id: str, message: str) -> None:
        box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Critical, "Engine failed",
                                    f"The engine of run {run_id} failed.", parent=self)
        box.setDetailedText(message)
        box.setInformativeText(message.splitlines()[-1] if message else "")
        box.show()
        self._failure_box = box   # tests read it; a modal exec() would block the event loop

    async def _history_loop(self) -> None:
        while not self._closing:
            with contextlib.suppress(Exception):
                await self.refresh_history()
            await asyncio.sleep(HISTORY_EVERY_S)

    async def refresh_history(self) -> None:
        rows = await self.session.client.run_summaries(list(SUMMARY_KEYS), self.history.show_archived.isChecked())
        self.history.set_runs(rows)

    # -- actions -----------------------------------------------------------------------------
    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        task.add_done_callback(self._report)
        return task

    def _report(self, task: asyncio.Task) -> None:
        if not task.cancelled() and task.exception() is not None:
            self.statusBar().showMessage(f"error: {task.exception()}", 10_000)
            if hasattr(task.exception(), "args") and "\n" in str(task.exception()):
                self._on_engine_failed(self.session.run_id or "", str(task.exception()))

    def _command(self, kind: str, payload: dict | None = None) -> None:
        if self.session.run_id and self.controls.status in LIVE:
            self._spawn(self.session.client.command(self.session.run_id, kind, payload))

    async def _start(self, cfg: Config, preset: str, name: str) -> None:
        self.statusBar().showMessage("starting the engine…")
        run_id = await self.session.client.start(cfg, preset=preset or None, name=name or None)
        self.session.track(run_id)
        self.open_run(run_id)
        await self.refresh_history()
        self.statusBar().showMessage(f"run {run_id} started", 5000)

    async def _resume_run(self, run_id: str) -> None:
        await self.session.client.resume_run(run_id)
        self.session.track(run_id)
        self.open_run(run_id)

    async def _clone(self, run_id: str) -> None:
        run = await self.session.client.run(run_id)
        if run is None:
            return
        import json
        self.run_form.load_config(json.loads(run["config_json"]), run.get("preset") or "")
        self.show_new_run()

    async def compare(self, run_ids: list[str]):
        from .panels.compare import CompareWindow
        win = CompareWindow(self)
        await win.load(self.session.client, run_ids)
        win.show()
        self.compare_windows = [w for w in getattr(self, "compare_windows", []) if w.isVisible()] + [win]
        return win

    async def _search(self, text: str) -> None:
        ids = await self.session.client.search_runs(text) if text.strip() else []
        if self.history.filter.text() == text:      # a later keystroke may have overtaken this one
            self.history.proxy.set_extra_ids(set(ids))

    async def _save_notes(self, run_id: str, notes: str, tags: list[str]) -> None:
        await self.session.client.set_notes(run_id, notes)
        await self.session.client.set_tags(run_id, tags)
        await self.refresh_history()
        self.statusBar().showMessage(f"notes of {run_id} saved", 3000)

    EXPORT_FILTERS: ClassVar[dict[str, str]] = {"HTML report (*.html)": "html", "PDF report (*.pdf)": "pdf",
                      "CSV, long format (*.csv)": "csv", "JSON, re-importable (*.json)": "json"}

    def ask_export(self) -> None:
        ids = self.history.selected_ids() or ([self.session.run_id] if self.session.run_id else [])
        if not ids:
            self.statusBar().showMessage("select a run (or several) in the history to export", 5000)
            return
        path, chosen = QtWidgets.QFileDialog.getSaveFileName(
            self, "Export", str(self.db_path.parent / f"{ids[0]}.html"), ";;".join(self.EXPORT_FILTERS))
        if path:
            fmt = self.EXPORT_FILTERS.get(chosen) or Path(path).suffix.lstrip(".") or "html"
            # the file dialog already asked about overwriting; a link the user picked means its
            # target (the report tool itself refuses links, and anything but a regular file)
            self._spawn(self._export(ids, fmt, Path(path).resolve(), force=True))

    async def _export(self, run_ids: list[str], fmt: str, path: Path, force: bool) -> str:
        self.statusBar().showMessage(f"exporting {len(run_ids)} run(s) to {path}…")
        text = await self.session.client.export(run_ids, fmt, path, force)
        self.statusBar().showMessage(text.splitlines()[-1] if text else f"wrote {path}", 8000)
        return text

    def ask_delete(self, run_id: str) -> None:
        answer = QtWidgets.QMessageBox.question(
            self, "Delete run", f"Delete run {run_id} with its checkpoints and log? This cannot be undone.")
        if answer == QtWidgets.QMessageBox.StandardButton.Yes:
            self._spawn(self._delete(run_id))

    async def _delete(self, run_id: str) -> None:
        await self.session.client.delete_run(run_id)
        if self.session.run_id == run_id:
            self.session.open(None)
        await self.refresh_history()

    def show_new_run(self) -> None:
        self.form_dock.show()
        self.form_dock.raise_()

    def find_run(self) -> None:
        self.history_dock.show()
        self.history_dock.raise_()
        self.history.filter.setFocus()
        self.history.filter.selectAll()

    def ask_open_database(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Open database", str(self.db_path.parent),
                                                        "SQLite databases (*.db *.sqlite);;All files (*)")
        if path:
            self.open_database(Path(path))

    def ask_new_database(self) -> None:
        path, _ = QtWidgets.QFileDialog.getSaveFileName(self, "New database", str(self.db_path.parent / "new.db"),
                                                        "SQLite databases (*.db)")
        if path:
            self.open_database(Path(path))

    def show_shortcuts(self) -> None:
        text = "\n".join(f"{k:<10} {v}" for k, v in SHORTCUTS)
        box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Information, "Shortcuts", text, parent=self)
        box.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
        box.show()
        self._shortcuts_box = box

    # -- preferences -------------------------------------------------------------------------
    def save_state(self) -> None:
        self._save_preferences()
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("state", self.saveState())

    def _restore_preferences(self) -> None:
        d, st = self.dashboard, self.settings
        d.x_axis.setCurrentText(str(st.value("plots/x_axis", d.x_axis.currentText())))
        d.smoothing.setValue(int(str(st.value("plots/smoothing", d.smoothing.value()))))
        d.log_y.setChecked(str(st.value("plots/log_y", "false")) == "true")
        preset = str(st.value("form/preset", "quickstart"))
        if self.run_form.preset_combo.findText(preset) >= 0:
            self.run_form.preset_combo.setCurrentText(preset)

    def _save_preferences(self) -> None:
        d, st = self.dashboard, self.settings
        st.setValue("plots/x_axis", d.x_axis.currentText())
        st.setValue("plots/smoothing", d.smoothing.value())
        st.setValue("plots/log_y", "true" if d.log_y.isChecked() else "false")
        st.setValue("form/preset", self.run_form.preset_combo.currentText())

    # -- closing -----------------------------------------------------------------------------
    def live_run_id(self) -> str | None:
        s = self.session
        return s.run_id if s and s.run and s.run["status"] in LIVE else None

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:
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
        if self._history_task is not None:
            self._history_task.cancel()
        self.finished = asyncio.ensure_future(self._shutdown(run_id if choice == "stop" else None))
        event.accept()

    async def _shutdown(self, stop_run: str | None) -> None:
        """What must happen after the window closed: the stop command lands, the client closes."""
        if stop_run is not None:
            await self.session.client.stop(stop_run)
        await self.session.shutdown()

    def ask_close_choice(self, run_id: str) -> str:
        """'stop', 'detach' or 'cancel' (tests replace this to answer without a modal dialog)."""
        status = self.session.run["status"] if self.session.run else "live"
        box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Question, "A run is live",
                                    f"Run {run_id} is still {status}.", parent=self)
        stop = box.addButton("Stop it (checkpoint)", QtWidgets.QMessageBox.ButtonRole.DestructiveRole)
        detach = box.addButton("Let it run on", QtWidgets.QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QtWidgets.QMessageBox.StandardButton.Cancel)
        box.exec()
        return "stop" if box.clickedButton() is stop else "detach" if box.clickedButton() is detach else "cancel"
