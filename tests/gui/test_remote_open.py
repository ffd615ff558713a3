"""Opening a database on another machine, apart from any ssh server: the address dialog checks
what is typed, the recent list keeps local and remote databases, a remote database's settings
and export folder are its own, `rla-gui --db` refuses a wrong address, and the status bar's link
widget shows a remote database's link only. (With a real sshd: tests/remote/test_remote_console.py.)"""
from __future__ import annotations

from pathlib import Path

from PySide6 import QtWidgets

from rla_engine.remote import SshAddress, parse_location
from rla_gui import app
from rla_gui.model import location as locations
from rla_gui.model.database_settings import database_key
from rla_gui.widgets import file_dialogs
from rla_gui.widgets.remote_dialog import RemoteDatabaseDialog
from rla_gui.widgets.status_line import FAILED_STYLE, LOST_STYLE

from gui_support import shown_window, until


class Settings(dict):
    def value(self, key, default=None):
        return self.get(key, default)

    def setValue(self, key, value):
        self[key] = value


def test_the_address_dialog_checks_what_is_typed_and_enables_open_only_when_valid(qtbot):
    dialog = RemoteDatabaseDialog()
    qtbot.addWidget(dialog)
    assert not dialog.ok.isEnabled() and dialog.error.text() == ""       # nothing typed: no error yet
    assert dialog.rla_edit.text() == "rla" and "ssh://" in dialog.address_edit.placeholderText()
    for typed, said in [("gpu-box:/data/runs.db", "starts with ssh://"), ("ssh://gpu-box", "no database path"),
                        ("ssh://-oProxyCommand=x/runs.db", "no host"), ("ssh://h:99999/runs.db", "Port")]:
        dialog.address_edit.setText(typed)
        assert not dialog.ok.isEnabled() and said in dialog.error.text(), (typed, dialog.error.text())
        assert dialog.address() is None
    dialog.address_edit.setText("ssh://me@gpu-box:2222/data/runs.db")
    assert dialog.ok.isEnabled() and dialog.error.text() == ""
    assert dialog.address() == SshAddress(host="gpu-box", path="/data/runs.db", user="me", port=2222)
    # the remote command becomes the address's ?rla=
    dialog.rla_edit.setText("/home/me/venv/bin/rla")
    assert dialog.address().rla == "/home/me/venv/bin/rla"
    assert str(dialog.address()) == "ssh://me@gpu-box:2222/data/runs.db?rla=/home/me/venv/bin/rla"
    dialog.rla_edit.setText("--evil")
    assert not dialog.ok.isEnabled() and "is not a command" in dialog.error.text()
    # left as `rla`, the address's own ?rla= holds
    dialog.rla_edit.setText("rla")
    dialog.address_edit.setText("ssh://gpu-box/data/runs.db?rla=/opt/rla")
    assert dialog.address().rla == "/opt/rla"


def test_the_dialog_proposes_an_address_with_its_command_apart(qtbot):
    proposed = parse_location("ssh://gpu-box/data/runs.db?rla=/opt/venv/bin/rla")
    dialog = RemoteDatabaseDialog(None, proposed)
    qtbot.addWidget(dialog)
    assert dialog.address_edit.text() == "ssh://gpu-box/data/runs.db"
    assert dialog.rla_edit.text() == "/opt/venv/bin/rla"
    assert dialog.address() == proposed


def test_recent_databases_most_recent_first_once_each_at_most_eight(tmp_path):
    settings = Settings()
    assert locations.recent(settings) == []
    paths = [tmp_path / f"{i}.db" for i in range(10)]
    for p in paths:
        locations.remember(settings, p)
    remote = parse_location("ssh://gpu-box/data/runs.db?rla=/opt/rla")
    locations.remember(settings, remote)
    locations.remember(settings, paths[9])                       # again: moved to the front, not doubled
    assert locations.recent(settings) == [paths[9], remote, *reversed(paths[3:9])]
    locations.forget(settings, remote)
    assert remote not in locations.recent(settings)
    settings[locations.RECENT_KEY] = '["ssh://", 7, "/x.db", "not json'      # hand-mangled: read as nothing
    assert locations.recent(settings) == []
    settings[locations.RECENT_KEY] = '["ssh://", 7, "/x.db"]'               # the bad entries skipped
    assert locations.recent(settings) == [Path("/x.db")]


def test_a_remote_database_has_settings_of_its_own():
    remote = parse_location("ssh://gpu-box/data/runs.db")
    assert database_key(remote) != database_key(Path("/data/runs.db"))
    assert database_key(remote) == database_key(parse_location("ssh://gpu-box/data/runs.db"))
    assert database_key(remote) != database_key(parse_location("ssh://other/data/runs.db"))
    assert locations.local_path(remote) is None and locations.start_folder(remote) == Path.home()
    assert locations.label(remote) == "gpu-box:/data/runs.db"


def test_rla_gui_refuses_a_wrong_address_with_exit_code_2(qapp, monkeypatch, capsys):
    shown: list[str] = []

    class Box:
        def __init__(self, _icon, title, text, *_):
            shown.append(f"{title}: {text}")

        def exec(self):
            return 0
    monkeypatch.setattr(app, "message_box", Box)
    assert app.main(["--db", "ssh://gpu-box"]) == 2
    assert "no database path after the host" in capsys.readouterr().err
    assert shown and "no database path after the host" in shown[0]


def test_the_link_widget_shows_a_remote_database_only(qtbot, tmp_path, aloop):
    with shown_window(qtbot, tmp_path / "h.db", tmp_path) as win:
        line = win.status_line
        assert not line.connection.isVisible() and line.link_state == ""
        line.set_connection("lost", "gpu-box:/data/runs.db: connection lost (x); reconnecting in 2 s (attempt 3)")
        assert line.connection.isVisible() and line.connection.styleSheet() == LOST_STYLE
        assert "reconnecting in 2 s" in line.link_text
        line.set_connection("connected", "connected over ssh (rla 0.1.0)")
        assert line.connection.isVisible() and line.connection.styleSheet() == ""
        line.set_connection("", "")
        assert not line.connection.isVisible()


def test_a_recent_local_database_that_is_gone_is_refused_and_forgotten(qtbot, tmp_path, aloop, drive):
    gone = tmp_path / "gone.db"
    with shown_window(qtbot, gone, tmp_path) as win:        # opened once: in the recent list
        here = tmp_path / "here.db"
        win.controller.switch_database(here)

        async def scenario():
            await until(lambda: win.controller.location == here, 10, "the second database")
            win._fill_recent_menu()
            assert [a.data() for a in win.recent_menu.actions()] == [str(here.resolve()), str(gone.resolve())]
            for suffix in ("", "-wal", "-shm"):
                Path(f"{gone}{suffix}").unlink(missing_ok=True)
            next(a for a in win.recent_menu.actions() if a.data() == str(gone.resolve())).trigger()
            await until(lambda: getattr(win, "_refusal_box", None) is not None, 5, "the refusal")
            assert "no longer exists" in win._refusal_box.informativeText()
            assert win.controller.location == here and not gone.exists()
            assert [a.data() for a in win.recent_menu.actions()] == [str(here.resolve())]
            win._refusal_box.close()
        drive(scenario(), timeout=30)


def test_a_remote_database_that_cannot_be_reached_is_shown_so(qtbot, tmp_path, aloop, drive, monkeypatch):
    """A window on a remote address (as a test opens it: not connected first) whose ssh fails:
    the link widget says it failed, in red; the title names host:path; exports are proposed in
    the home folder and nothing local is taken for the database's files."""
    monkeypatch.setenv("RLA_SSH", "false")          # an "ssh" that fails at once
    remote = parse_location("ssh://gpu-box/data/runs.db")
    with shown_window(qtbot, remote, tmp_path) as win:
        async def scenario():
            await until(lambda: win.status_line.link_state == "failed", 10, "the link failed")
            assert win.status_line.connection.styleSheet() == FAILED_STYLE
            assert "exited with code 1" in win.status_line.link_text
            assert "gpu-box:/data/runs.db" in win.windowTitle()
            assert win.proposed_export_path(["r1"]) == Path.home() / "r1.html"
            assert file_dialogs.database_of(win.history) is None
            win._fill_recent_menu()
            assert [a.data() for a in win.recent_menu.actions()] == [str(remote)]
        drive(scenario(), timeout=30)
    assert isinstance(QtWidgets.QApplication.instance(), QtWidgets.QApplication)


def test_one_remote_database_reached_with_another_rla_command_is_one_recent_entry_and_one_settings_key():
    settings = Settings()
    first = parse_location("ssh://dev/srv/runs.db?rla=/opt/a/bin/rla")
    again = parse_location("ssh://dev/srv/runs.db?rla=/opt/b/bin/rla")
    locations.remember(settings, first)
    locations.remember(settings, Path("/x.db"))
    locations.remember(settings, again)
    assert locations.recent(settings) == [again, Path("/x.db")]        # the command last used, once
    assert database_key(first) == database_key(again)
    assert database_key(first) != database_key(parse_location("ssh://dev/srv/other.db"))
