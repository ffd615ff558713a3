"""The console on a database on another machine, through a real sshd (tests/sshd.py): opened at
start-up by its ssh:// address, a run started, watched, paused, steered, exported and annotated
from here; the ssh link killed mid-run and come back with nothing shown twice and nothing lost;
then a local database again. And addresses that cannot be served (no rla there, another
protocol version), refused with the console left where it was."""
import dataclasses
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6 import QtCore, QtWidgets

sys.path[:0] = [str(Path(__file__).parents[1] / "journeys"), str(Path(__file__).parents[1] / "gui")]
from person import TINY, Key, Person, close_console, drag_slider, open_console, until  # noqa: E402

from rla_engine import metrics  # noqa: E402
from rla_engine.remote import RemoteClient, SshAddress, parse_location  # noqa: E402
from rla_engine.store import open_store  # noqa: E402
from rla_gui.main_window import MainWindow  # noqa: E402
from rla_gui.widgets.remote_dialog import RemoteDatabaseDialog  # noqa: E402

PER_ITERATION = metrics.ITERATION_S     # written every iteration: a gap or a repeat shows in it


def open_remote_console(qtbot, drive, folder: Path, address: SshAddress) -> MainWindow:
    """The console as `rla-gui --db ssh://…` opens it: connected first, that client handed to the window."""
    client = RemoteClient(address)
    drive(client.connect(), timeout=30)
    settings = QtCore.QSettings(str(folder / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(address, settings=settings, client=client)
    win.ask_close_choice = lambda run_id: "stop"
    qtbot.addWidget(win)
    win.resize(1500, 950)
    win.show()
    return win


def link(win) -> tuple[str, str]:
    """The status bar's connection widget: (its text in full, "" when hidden; its style)."""
    line = win.status_line
    return (line.link_text if line.connection.isVisible() else "", line.connection.styleSheet())


def iterations(win) -> np.ndarray:
    its, _ = win.controller.session.data.xy(PER_ITERATION)
    return its.astype(int)


def stored_iterations(db: Path, run_id: str, up_to: int) -> list[int]:
    store = open_store(db)
    try:
        its, _ = store.series(run_id, PER_ITERATION)
    finally:
        store.close()
    return [i for i in its if i <= up_to]


def test_a_remote_database_watched_steered_and_its_link_cut(qtbot, tmp_path, drive, ssh_env, rla_path):
    remote_db = tmp_path / "there" / "runs.db"
    remote_db.parent.mkdir()
    local_db = tmp_path / "here.db"
    # a local database with a run, for the way back (made meanwhile)
    local_run = subprocess.Popen([sys.executable, "-m", "rla_engine.cli", "run", "--db", str(local_db), *TINY,
                                  "--iterations", "2", "--name", "local one"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    address = parse_location(ssh_env.url(remote_db, rla=rla_path))
    assert isinstance(address, SshAddress)
    address = dataclasses.replace(address, create=True)      # a new database there: its first run is started here
    reports = tmp_path / "reports"
    reports.mkdir()
    win = open_remote_console(qtbot, drive, tmp_path, address)
    me = Person(win, qtbot)
    states: list[tuple[str, str, str]] = []     # each link change as the status widget showed it
    win.controller.connection_changed.connect(lambda state, text: states.append((state, *link(win))))
    html = next(f for f, v in win.EXPORT_FILTERS.items() if v == "html")

    async def journey():
        # 1. connected: the status widget says so, the title names host:path
        await until(lambda: "connected over ssh (rla " in link(win)[0], 30, "connected")
        assert link(win)[0].startswith("connected over ssh")
        assert f"rla-test:{remote_db}" in me.title()
        # 2. a short run from the New run form, started there and seen live here
        me.new_run("far run", 4000)
        await until(lambda: me.state() == "far run — running", 60, "running")
        run_id = win.controller.session.run_id
        await until(lambda: len(iterations(win)) >= 3, 30, "streamed")
        its = iterations(win)
        assert (np.diff(its) > 0).all(), its
        # 3. paused with Space; the difficulty fixed from the toolbar
        me.key(Key.Key_Space)
        await until(lambda: me.state() == "far run — paused", 30, "paused")
        drag_slider(win.controls.slider, 90)
        me.click("Apply")
        await until(lambda: me.override_label() == "fixed at 0.90", 30, "override shown")
        # 4. File ▸ Export… as HTML: rendered there, written here
        out = reports / f"{run_id}.html"
        seen = me.answer_file_dialog(out, html)
        me.menu("File ▸ Export…")
        await until(lambda: out.exists() and "rla-test" in me.message(), 90, "the report written here")
        assert seen["proposed"] == f"{run_id}.html"
        assert run_id in out.read_text(errors="replace")
        # 5. notes and tags typed in History: stored in the remote database
        win.history_dock.raise_()
        await until(lambda: me.history_row("far run"), 20, "listed")
        me.select_runs("far run")
        me.type_into(win.history.notes, "watched over ssh")
        me.type_into(win.history.tags, "remote, ssh")
        me.click("Save notes")
        await until(lambda: me.message().startswith("notes of"), 20, "notes saved")
        store = open_store(remote_db)
        row = store.get_run(run_id)
        store.close()
        assert row["notes"] == "watched over ssh" and row["tags"] == "remote,ssh"
        # 6. resumed; the ssh process killed mid-run: lost is shown, then connected again
        me.key(Key.Key_Space)
        await until(lambda: me.state() == "far run — running", 30, "running again")
        before = int(iterations(win)[-1])
        await until(lambda: int(iterations(win)[-1]) > before, 30, "iterations go on")
        states.clear()
        os.kill(win.controller.client.ssh_pid, signal.SIGKILL)
        await until(lambda: any(s == "lost" for s, _, _ in states), 20, "the link said lost")
        lost = next(entry for entry in states if entry[0] == "lost")
        assert "connection lost" in lost[1] and "reconnecting in" in lost[1], lost
        assert lost[2], "a lost link is shown in colour"
        await until(lambda: "connected over ssh (rla " in link(win)[0], 30, "connected again")
        assert not link(win)[1], "a connected link is shown plainly"
        # 7. the curves go on from where they were: nothing twice, nothing missing
        cut_at = int(iterations(win)[-1])
        await until(lambda: int(iterations(win)[-1]) >= cut_at + 3, 30, "iterations after the reconnect")
        its = iterations(win)
        assert (np.diff(its) > 0).all(), f"an iteration shown twice: {its.tolist()}"
        assert its.tolist() == stored_iterations(remote_db, run_id, int(its[-1])), "an iteration missing"
        # 8. stopped from here
        me.click("Stop")
        await until(lambda: me.state() == "far run — stopped", 60, "stopped")
        assert not me.failure_boxes(), me.failure_boxes()
        # 9. back to a local database with File ▸ Open database…: no link shown, its runs listed
        assert local_run.wait(timeout=60) == 0, local_run.stderr.read()
        me.answer_file_dialog(local_db)
        me.menu("File ▸ Open database…")
        await until(lambda: win.controller.location == local_db, 30, "the local database open")
        await until(lambda: me.history_row("local one"), 20, "its run listed")
        assert me.history_row("far run") is None
        assert link(win)[0] == "" and not win.status_line.connection.isVisible()
        assert str(local_db) in me.title()
        # 10. both are in File ▸ Recent databases, the local one first
        win._fill_recent_menu()
        recent = [a.data() for a in win.recent_menu.actions()]
        assert recent[:2] == [str(local_db.resolve()), str(address)], recent

    drive(journey(), timeout=300)
    close_console(qtbot, win)


def fake_rla(folder: Path, protocol: int) -> Path:
    """An `rla` whose `serve` greets with another protocol version."""
    script = folder / "old-rla"
    script.write_text(f"#!/bin/sh\necho '{{\"rla\": \"serve\", \"protocol\": {protocol}, \"version\": \"0.0.1\"}}'\n"
                      "sleep 30\n")
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("what", ["missing rla", "another protocol"])
def test_an_address_that_cannot_be_served_is_refused(qtbot, tmp_path, drive, ssh_env, what):
    here = tmp_path / "here.db"
    win = open_console(qtbot, tmp_path, db=here)
    me = Person(win, qtbot)
    rla = "/nonexistent/rla" if what == "missing rla" else str(fake_rla(tmp_path, 999))
    remote = tmp_path / "there.db"

    async def journey():
        await until(lambda: win.controller.location == here and me.title().endswith(str(here)), 10, "opened")
        # File ▸ Open remote database…: typed wrong, then right
        me.menu("File ▸ Open remote database…")
        await until(lambda: isinstance(QtWidgets.QApplication.activeModalWidget(), RemoteDatabaseDialog), 10,
                    "the dialog")
        dialog = QtWidgets.QApplication.activeModalWidget()
        me.type_into(dialog.address_edit, "ssh://rla-test")
        assert not dialog.ok.isEnabled() and "no database path" in dialog.error.text()
        me.type_into(dialog.address_edit, f"ssh://rla-test{remote}")
        me.type_into(dialog.rla_edit, rla)
        assert dialog.ok.isEnabled() and dialog.error.text() == ""
        dialog.ok.click()
        await until(lambda: getattr(win, "_refusal_box", None) is not None and win._refusal_box.isVisible(), 40,
                    "the refusal")
        box = win._refusal_box
        words = "was not found" if what == "missing rla" else "999"
        assert words in box.informativeText(), box.informativeText()
        assert f"the console stays on {here}" in box.text()
        box.close()
        # the console stays on its database, with no link to show
        assert win.controller.location == here and not win.status_line.connection.isVisible()
        assert me.title().endswith(str(here))
        assert not remote.exists()

    drive(journey(), timeout=90)
    close_console(qtbot, win)
