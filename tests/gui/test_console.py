"""The console end to end: real widgets (offscreen), a real engine subprocess, a real database."""
import asyncio
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from PySide6 import QtCore

from rla_engine.config import build
from rla_engine import metrics
from rla_engine.paths import checkpoints_dir, log_path
from rla_engine.store import open_store
from rla_gui.main_window import MainWindow
from rla_gui.model import panel_spec

from gui_support import TINY, until

PANEL_KEYS = {"Policy reward": metrics.SUCCESS, "Reward-model agreement": metrics.OUTCOME_AGREEMENT,
              "μ balance": metrics.MU, "Task difficulty": metrics.DIFFICULTY_MEAN}


@pytest.fixture
def window(qtbot, tmp_path, aloop):
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(tmp_path / "h.db", settings=settings)
    win.ask_close_choice = lambda run_id: "stop"
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    yield win
    if not win._closing:
        win.close()
    if win.finished is not None:
        qtbot.waitUntil(win.finished.done, timeout=30_000)


def curve_points(plot, key):
    x, _ = plot.curves[key].line.getData()
    return 0 if x is None else len(x)


def spawn_cli(db, *args):
    return subprocess.Popen([sys.executable, "-m", "rla_engine.cli", "run", "--db", str(db), *args,
                             *TINY],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def test_console_never_imports_torch(tmp_path):
    code = textwrap.dedent(f"""
        import os, sys
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
        from PySide6 import QtWidgets
        import qasync, asyncio
        app = QtWidgets.QApplication([])
        loop = qasync.QEventLoop(app); asyncio.set_event_loop(loop)
        from rla_gui.main_window import MainWindow
        w = MainWindow(__import__("pathlib").Path({str(tmp_path / 'h.db')!r})); w.show(); app.processEvents()
        assert "torch" not in sys.modules, "torch imported"
        print("ok")
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "ok" in res.stdout, res.stderr


def test_start_watch_pause_override_resume_stop(window, drive, qtbot):
    async def scenario():
        form = window.run_form
        cfg = build(preset="tiny", sets=["run.iterations=5000"])
        form.load_config(cfg.to_dict())
        form.name_edit.setText("console e2e")
        assert form.start_button.isEnabled()
        qtbot.mouseClick(form.start_button, QtCore.Qt.MouseButton.LeftButton)
        session = window.controller.session
        await until(lambda: session.run_id and window.controls.status == "running", what="run started")
        run_id = session.run_id
        d = window.dashboard
        panels = {"Policy reward": d.policy, "Reward-model agreement": d.agreement, "μ balance": d.balance,
                  "Task difficulty": d.difficulty}
        await until(lambda: all(curve_points(panels[p], k) >= 3 for p, k in PANEL_KEYS.items()),
                    what="all four panels receive points")
        await until(lambda: window.episode.payload() is not None, what="an episode")

        qtbot.mouseClick(window.controls.pause_button, QtCore.Qt.MouseButton.LeftButton)
        store = open_store(window.controller.db_path)
        await until(lambda: store.get_run(run_id)["status"] == "paused", what="database says paused")
        await until(lambda: window.controls.pause_button.text() == "Resume", what="button follows")

        window.controls.slider.setValue(70)
        qtbot.mouseClick(window.controls.apply_button, QtCore.Qt.MouseButton.LeftButton)
        await until(lambda: any(e["kind"] == "set_difficulty" for e in store.events(run_id)), what="override event")
        await until(lambda: window.pool.model.rowCount() == 8 and all(
            abs(r["difficulty"] - 0.7) < 0.06 for r in window.pool.visible_lines()), what="pool follows the override")

        qtbot.mouseClick(window.controls.pause_button, QtCore.Qt.MouseButton.LeftButton)
        await until(lambda: store.get_run(run_id)["status"] == "running", what="resumed")
        data = window.controller.session.data
        await until(lambda: (data.last(metrics.DIFFICULTY_MEAN) or 0) > 0.64, what="difficulty panel follows")
        qtbot.mouseClick(window.controls.stop_button, QtCore.Qt.MouseButton.LeftButton)
        await until(lambda: store.get_run(run_id)["status"] == "stopped", what="stopped")
        await until(lambda: window.controls.status == "stopped", what="controls follow the stop")
        assert not window.controls.stop_button.isEnabled() and window.controls.resume_run_button.isEnabled()
        await window.refresh_history()
        rows = window.history.model.rows
        assert [r["id"] for r in rows] == [run_id] and rows[0]["status"] == "stopped"
        kinds = [e["kind"] for e in store.events(run_id)]
        for kind in ("pause", "set_difficulty", "resume", "stopped"):
            assert kind in kinds
        return run_id

    drive(scenario(), timeout=180)


def test_reattach_to_a_run_started_from_the_terminal(window, drive, qtbot):
    proc = spawn_cli(window.controller.db_path, "--iterations", "5000", "--name", "terminal run")
    try:
        async def scenario():
            await until(lambda: window.history.model.rows, timeout=60, what="history lists the run")
            run_id = window.history.model.rows[0]["id"]
            window.history.select(run_id)
            qtbot.mouseClick(window.history.buttons["Open"], QtCore.Qt.MouseButton.LeftButton)
            await until(lambda: window.controller.session.run_id == run_id and window.controls.status == "running")
            n = window.controller.session.data.last_iteration()
            await until(lambda: window.controller.session.data.last_iteration() > n + 2, what="live metrics")
            window.controls.toggle_pause()
            store = open_store(window.controller.db_path)
            await until(lambda: store.get_run(run_id)["status"] == "paused", what="paused from the console")
            await until(lambda: window.controls.status == "paused", what="the button follows the database")
            window.controls.toggle_pause()
            await until(lambda: store.get_run(run_id)["status"] == "running")
            window.controls.stop_requested.emit()
            await until(lambda: store.get_run(run_id)["status"] == "stopped", what="stopped from the console")
        drive(scenario(), timeout=120)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_crashed_run_is_shown_crashed_and_delete_removes_its_files(window, drive, qtbot, monkeypatch):
    proc = spawn_cli(window.controller.db_path, "--iterations", "5000", "--name", "doomed")
    store = open_store(window.controller.db_path)

    async def scenario():
        await until(lambda: store.list_runs() and store.list_runs()[0]["iteration"] >= 2, what="a few iterations")
        run_id = store.list_runs()[0]["id"]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        await until(lambda: window.history.model.rows and window.history.model.rows[0]["status"] == "crashed",
                    what="crashed in the history")
        assert checkpoints_dir(window.controller.db_path, run_id).exists()
        monkeypatch.setattr("PySide6.QtWidgets.QMessageBox.question",
                            lambda *a, **k: __import__("PySide6.QtWidgets").QtWidgets.QMessageBox.StandardButton.Yes)
        window.history.select(run_id)
        qtbot.mouseClick(window.history.buttons["Delete…"], QtCore.Qt.MouseButton.LeftButton)
        await until(lambda: not store.list_runs(include_archived=True), what="run deleted")
        assert not checkpoints_dir(window.controller.db_path, run_id).exists()
        assert not log_path(window.controller.db_path, run_id).exists()
    drive(scenario(), timeout=120)


def test_engine_failure_is_shown_with_the_log_tail(window, drive):
    pytest.importorskip("torch")
    import torch
    if torch.cuda.is_available():
        pytest.skip("needs a machine without CUDA")

    async def scenario():
        window.run_form.load_config(build(preset="tiny", sets=["run.device=cuda"]).to_dict())
        window.run_form.start_button.click()
        await until(lambda: getattr(window, "_failure_box", None) is not None, what="failure dialog")
        return window._failure_box.detailedText()
    text = drive(scenario(), timeout=60)
    assert "CUDA" in text and "run.device" in text


def test_a_refusal_is_a_status_message_and_a_failed_engine_a_dialog(window, drive):
    """Errors are told apart by type: an EngineError without a log (deleting a live run) is one line
    in the status bar; one carrying a process's log opens the failure dialog with that log."""
    from rla_engine.client import EngineError
    store = open_store(window.controller.db_path)
    store.create_run("live-here", name="live here", preset=None, config=build(preset="tiny").to_dict(), device="cpu")
    messages = []
    window.statusBar().messageChanged.connect(messages.append)

    async def scenario():
        task = window.controller.delete("live-here")
        await until(task.done, what="the refused delete")
        await asyncio.sleep(0.05)
        assert getattr(window, "_failure_box", None) is None
        assert any(m.startswith("error: run live-here is running; stop it") for m in messages), messages
        assert store.get_run("live-here") is not None          # refused means nothing deleted

        async def engine_dies():
            raise EngineError("engine exited with code 1", "Traceback …\nValueError: the last line")
        await until(window.controller.spawn(engine_dies()).done, what="the failure")
        await asyncio.sleep(0.05)
        return window._failure_box
    box = drive(scenario(), timeout=30)
    assert box.detailedText().endswith("ValueError: the last line")
    assert box.informativeText() == "ValueError: the last line"


def test_each_panel_keeps_its_own_view_choices_across_sessions(window, drive, qtbot, tmp_path):
    d, h = window.dashboard, window.history
    d.view.x_axis_box.setCurrentText("wall time (s)")
    d.view.smoothing.setValue(15)
    d.view.log_y.setChecked(True)
    h.table.sortByColumn(1, QtCore.Qt.SortOrder.AscendingOrder)
    h.show_archived.setChecked(True)
    window.run_form.preset_combo.setCurrentText("arithmetic")
    window.close()
    qtbot.waitUntil(window.finished.done, timeout=30_000)
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    again = MainWindow(tmp_path / "h.db", settings=settings)
    qtbot.addWidget(again)
    try:
        v = again.dashboard.view
        assert (v.x_axis(), v.smoothing.value(), v.log_y.isChecked()) == ("wall time (s)", 15, True)
        assert again.dashboard.losses.x_axis == "wall time (s)" and again.dashboard.losses.smoothing == 0.15
        header = again.history.table.horizontalHeader()
        assert (header.sortIndicatorSection(), header.sortIndicatorOrder()) == (1, QtCore.Qt.SortOrder.AscendingOrder)
        assert again.history.show_archived.isChecked() and again.controller.include_archived
        assert again.run_form.preset_combo.currentText() == "arithmetic"
    finally:
        again.close()
        qtbot.waitUntil(again.finished.done, timeout=30_000)


def test_an_empty_dashboard_frames_every_plot_at_zero_to_one(window, qtbot):
    """Before any run is open, every panel (the difficulty band too) shows the unit square, not a
    range centred on 0."""
    plots = window.dashboard.plots
    assert len(plots) == 4 + len(panel_spec.HEALTH_PANELS)       # the four run panels and every health plot
    window.dashboard.refresh()
    for p in plots:     # drawn now: pyqtgraph settles a view's auto-range just before it paints
        assert not p.grab().isNull()
    assert [p.plotItem.vb.viewRange() for p in plots] == [[[0, 1], [0, 1]]] * len(plots)


def test_delete_on_a_live_run_refuses_before_asking(window, drive, monkeypatch, qtbot):
    """Issue 35, part 2, item 6: "cannot be undone?" was asked, and only a Yes found the run live."""
    store = open_store(window.controller.db_path)
    store.create_run("live-here", name="live here", preset=None, config=build(preset="tiny").to_dict(), device="cpu")
    asked: list[str] = []
    monkeypatch.setattr("PySide6.QtWidgets.QMessageBox.question", lambda *a, **k: asked.append(a[2]))

    async def scenario():
        await window.controller.refresh_history()
        await until(lambda: any(r["id"] == "live-here" for r in window.history.model.rows), what="the run listed")
        window.history.select("live-here")
        qtbot.mouseClick(window.history.buttons["Delete…"], QtCore.Qt.MouseButton.LeftButton)
    drive(scenario(), timeout=30)
    assert asked == []
    assert window.statusBar().currentMessage() == "run live-here is still running: stop it before deleting it"
    assert store.get_run("live-here") is not None
