"""Small mends of issue 35, Part 2 (items 6, 7 and 8), each on the real window or panel and a real
database: an ended run's alerts read as `rla show` reads them, a long run name never hides the run's
state, the New run form's error line says what holds now and its typed name labels one run only,
the Episode view explains its colours, and Samples steps back to earlier iterations."""
import subprocess
import sys
import textwrap

import pytest
from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtTest import QTest

from rla_engine import metrics
from rla_engine.alerts import ALERTS, JUDGE_UNANIMOUS, AlertWatcher, describe
from rla_engine.config import build
from rla_engine.store import open_store
from rla_engine.vocabulary import EventKind, Status
from rla_gui.panels.run_form import RunFormPanel
from rla_gui.widgets import file_dialogs

from gui_support import shown_window, until

TITLE = ALERTS[JUDGE_UNANIMOUS].title
ORANGE = QtGui.QColor("#e6550d").rgb() & 0xFFFFFF        # the active alert badge's background
TINY = build(preset="tiny").to_dict()

# An engine's first iterations, written as the engine writes them: its judge is unanimous, the
# watcher raises the alert after a window of 2. It then waits to be killed, as a crash kills one.
CRASHING_ENGINE = textwrap.dedent("""
    import sys
    from rla_engine import metrics
    from rla_engine.alerts import AlertWatcher
    from rla_engine.config import build
    from rla_engine.store import open_store
    store = open_store(sys.argv[1])
    store.create_run("crashing", name="crashing", preset="tiny", config=build(preset="tiny").to_dict(), device="cpu")
    watcher = AlertWatcher(window=2)
    for it in (1, 2):
        values = {metrics.UNANIMITY: 1.0}
        store.commit_iteration("crashing", it, env_steps=10 * it, wall_s=float(it), metrics=values,
                               events=watcher.observe(it, values), tasks=[])
    print("ready", flush=True)
    sys.stdin.read()
""")


def unanimous_run(store, run_id: str, name: str | None = None) -> AlertWatcher:
    """A live run of this process whose alert was raised in iteration 2, as the engine writes it."""
    store.create_run(run_id, name=name or run_id, preset="tiny", config=TINY, device="cpu")
    watcher = AlertWatcher(window=2)
    for it in (1, 2):
        values = {metrics.UNANIMITY: 1.0}
        store.commit_iteration(run_id, it, env_steps=10 * it, wall_s=float(it), metrics=values,
                               events=watcher.observe(it, values), tasks=[])
    return watcher


def rla_show_alerts(db, run_id: str) -> list[str]:
    out = subprocess.run([sys.executable, "-m", "rla_engine.cli", "show", "--db", str(db), run_id],
                         check=True, capture_output=True, text=True).stdout
    return [line.strip() for line in out.splitlines() if line.strip().startswith("alert")]


def has_orange(widget: QtWidgets.QWidget) -> bool:
    img = widget.grab().toImage().convertToFormat(QtGui.QImage.Format.Format_RGB32)
    return any(img.pixel(x, y) & 0xFFFFFF == ORANGE for y in range(img.height()) for x in range(img.width()))


def open_in(win, drive, run_id: str, ready, what: str) -> None:
    async def scenario():
        win.open_run(run_id)
        await until(ready, 30, what)
    drive(scenario(), timeout=40)


# ------------------------------------------------------------------- item 6: an ended run's alerts
def test_a_crashed_runs_alert_reads_as_active_when_it_ended_as_rla_show_says(qtbot, tmp_path, drive):
    db = tmp_path / "h.db"
    engine = subprocess.Popen([sys.executable, "-c", CRASHING_ENGINE, str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert engine.stdout.readline().strip() == "ready"
        with shown_window(qtbot, db, tmp_path) as win:
            badge = win.status_line.alerts
            open_in(win, drive, "crashing", lambda: badge.isVisible(), "the live run's badge")
            assert badge.text() == f"⚠ 1 alert: {TITLE}" and has_orange(badge)
            engine.kill()           # the engine dies without its last words: nothing clears the alert
            engine.wait()
            open_in(win, drive, "crashing", lambda: win.controls.status == Status.CRASHED
                    and "ended" in badge.text(), "the crash seen")
            shown = rla_show_alerts(db, "crashing")
            alert = win.status_line.active[JUDGE_UNANIMOUS]
            assert shown == [f"alert (active when the run ended): {describe(alert)}"]
            assert badge.isVisible() and badge.text() == f"1 alert active when the run ended: {TITLE}"
            assert not has_orange(badge)            # told, not warned: it no longer changes
            assert shown[0].split(": ", 1)[1] in badge.toolTip()
    finally:
        engine.kill()
        engine.wait()


def test_an_ended_runs_alerts_are_shown_as_rla_show_shows_them(qtbot, tmp_path, drive):
    db = tmp_path / "h.db"
    store = open_store(db)
    watcher = unanimous_run(store, "ended")
    for kind, payload in watcher.end(2):        # the engine's end clears every alert (runner._finish)
        store.add_event("ended", 2, kind, payload)
    store.end_run("ended", 2, Status.COMPLETED, {"iterations": 2})
    store.close()
    with shown_window(qtbot, db, tmp_path) as win:
        badge = win.status_line.alerts
        open_in(win, drive, "ended", lambda: win.controls.status == Status.COMPLETED, "the ended run open")
        assert rla_show_alerts(db, "ended")[0].startswith("alert (active when the run ended): judge_unanimous")
        assert badge.isVisible() and badge.text() == f"1 alert active when the run ended: {TITLE}"
        assert not has_orange(badge)


# ------------------------------------------------------------------- item 7: a long run name
def test_a_long_run_name_leaves_the_runs_state_in_view(qtbot, tmp_path, drive):
    long_name = " ".join(["an ablation arm with a very long descriptive name"] * 6)
    store = open_store(tmp_path / "h.db")
    unanimous_run(store, "long", name=long_name)
    store.end_run("long", 2, Status.STOPPED, {"iterations": 2})
    store.close()
    with shown_window(qtbot, tmp_path / "h.db", tmp_path) as win:
        win.resize(1100, 700)
        state = win.status_line.state
        open_in(win, drive, "long", lambda: state.text().endswith("— stopped"), "the run's state")
        qtbot.waitUntil(lambda: state.width() > 0)
        bar = win.statusBar()
        # the whole text, state included, is painted inside the status bar
        assert state.fontMetrics().horizontalAdvance(state.text()) <= state.contentsRect().width()
        assert 0 <= state.geometry().left() and state.geometry().right() <= bar.width()
        assert "…" in state.text() and state.toolTip() == long_name         # the whole name, on hover


# ------------------------------------------------------------------- item 8: the New run form
@pytest.fixture
def panel(qtbot, tmp_path, monkeypatch) -> RunFormPanel:
    bad = tmp_path / "bad.toml"
    bad.write_text("[judge]\nbogus = 1\n", encoding="utf-8")
    monkeypatch.setattr(file_dialogs, "open_file_name", lambda *a, **k: (str(bad), ""))
    monkeypatch.setattr(file_dialogs, "save_file_name", lambda *a, **k: (str(tmp_path / "saved.toml"), ""))
    p = RunFormPanel()
    qtbot.addWidget(p)
    return p


def load_bad_file(panel, qtbot) -> None:
    panel.load_button.click()
    qtbot.waitUntil(panel.load_button.isEnabled)


def test_a_failed_load_is_said_until_an_action_goes_through(panel, qtbot, tmp_path):
    load_bad_file(panel, qtbot)
    assert "judge.bogus" in panel.error_label.text()
    panel.save_button.click()                   # the form, unchanged and valid, is saved
    assert (tmp_path / "saved.toml").exists() and panel.error_label.text() == ""
    load_bad_file(panel, qtbot)
    # the line names the file, and says that the form (whose Start stays enabled) is not at fault
    line = panel.error_label.text()
    assert line.startswith("bad.toml not loaded, the form is unchanged: ") and "judge.bogus" in line
    with qtbot.waitSignal(panel.start_requested, timeout=1000):
        panel.start_button.click()               # a run starts from the form: the file's failure is old news
    assert panel.error_label.text() == ""


def test_a_failed_load_does_not_hide_why_the_form_cannot_start(panel, qtbot):
    band = panel.form.editors["judge.band_low"].widget
    band.lineEdit().selectAll()
    QTest.keyClicks(band.lineEdit(), "0.99")
    QTest.keyClick(band.lineEdit(), QtCore.Qt.Key.Key_Return)
    own = panel.error_label.text()
    assert "judge.band_low" in own and not panel.start_button.isEnabled()
    load_bad_file(panel, qtbot)
    assert panel.error_label.text().splitlines() == [panel.error_label.text().splitlines()[0], own]
    assert "bad.toml not loaded" in panel.error_label.text()
    band.lineEdit().selectAll()
    QTest.keyClicks(band.lineEdit(), "0.2")
    QTest.keyClick(band.lineEdit(), QtCore.Qt.Key.Key_Return)
    assert panel.error_label.text() == "" and panel.start_button.isEnabled()


def test_the_typed_name_labels_the_run_it_started_and_no_other(qtbot, tmp_path, drive):
    with shown_window(qtbot, tmp_path / "h.db", tmp_path, close_choice="stop") as win:
        form = win.run_form
        form.load_config(build(preset="tiny", sets=["run.iterations=2"]).to_dict(), "tiny")
        form.name_edit.setText("named once")
        asked = []
        form.start_requested.connect(lambda *args: asked.append(args[2]))

        async def scenario():
            form.start_button.click()
            await until(lambda: win.status_line.state.text().startswith("named once — "), 60, "the run started")
            await until(form.start_button.isEnabled, 30, "Start back")

        drive(scenario(), timeout=100)
        assert asked == ["named once"]
        assert form.name_edit.text() == "" and form.name_edit.placeholderText().startswith("Automatic: tiny")
        form.start_button.click()
        assert asked == ["named once", ""]          # the next run is named automatically


# ------------------------------------------------------------------- item 8: the Episode legend
@pytest.mark.parametrize("family, words", [
    ("gridworld", ["wall", "free", "start", "goal", "judged right", "judged wrong", "no readable verdict",
                   "bumped into a wall"]),
    ("arithmetic", ["chips, one per judge sample", "judged right", "judged wrong", "oracle",
                    "a right step would have written"])])
def test_the_episode_view_explains_its_colours(qtbot, tmp_path, drive, recorded, recorded_db, family, words):
    bundles = recorded("recorded_group") + recorded("recorded_arithmetic")
    run_id = next(b["run"]["id"] for b in bundles if b["run"]["config"]["task"]["family"] == family)
    with shown_window(qtbot, recorded_db(*bundles), tmp_path) as win:
        open_in(win, drive, run_id, lambda: win.episode.payload() is not None, "the episode")
        shown = [label for label in win.episode.findChildren(QtWidgets.QLabel) if label.isVisible()]
        assert len(shown) == 1, "one legend under the picture"
        doc = QtGui.QTextDocument()
        doc.setHtml(shown[0].text())
        text = doc.toPlainText().replace("\xa0", " ")
        for word in words:
            assert word in text, word
        assert f"color:{QtGui.QColor(40, 170, 70).name()}" in shown[0].text().replace(" ", "")
        # the picture is drawn above it, not under it
        assert win.episode.picture_area().bottom() < shown[0].geometry().top()


# ------------------------------------------------------------------- item 8: Samples, step back
def samples_payload(iteration: int, variants: bool = False) -> dict:
    step = {"text": f"step of iteration {iteration}", "verdicts": [1, -1], "reasoning": ["a", "b"], "oracle": 1}
    proposed = [{"slot": 0, "direction": "harder", "outcome": "accepted", "critic": "c", "task": f"v{iteration}",
                 "answer": "{}", "reason": None}] if variants else []
    return {"family": "text_arithmetic", "variants": proposed,
            "trajectories": [{"slot": 0, "success": True, "task": f"task of iteration {iteration}",
                              "turns": [{"steps": [step], "observation": ""}]}]}


def commit_samples(store, run_id: str, iteration: int, variants: bool = False) -> None:
    store.commit_iteration(run_id, iteration, env_steps=10 * iteration, wall_s=float(iteration),
                           metrics={metrics.SUCCESS: 0.5}, events=[(EventKind.SAMPLES, samples_payload(iteration,
                                                                                                   variants))],
                           tasks=[])


def test_samples_step_back_to_an_earlier_iteration_while_the_run_goes_on(qtbot, tmp_path, drive):
    db = tmp_path / "h.db"
    store = open_store(db)
    store.create_run("lm", name="lm", preset="llm-tiny", config=TINY, device="cpu")    # live: this process
    for it in (1, 2, 4):                          # iteration 3 wrote no samples
        commit_samples(store, "lm", it, variants=it == 2)
    try:
        with shown_window(qtbot, db, tmp_path) as win:
            panel = win.samples
            open_in(win, drive, "lm", lambda: panel.iteration == 4, "the newest samples")
            assert panel.latest_box.isChecked() and panel.picker.value() == 4
            assert panel.picker.isEnabled() and panel.picker.iterations == [1, 2, 4]

            async def back():
                panel.picker.setFocus()
                QTest.keyClick(panel.picker, QtCore.Qt.Key.Key_Down)          # 4 → 2: 3 has none
                await until(lambda: panel.iteration == 2, 10, "iteration 2 shown")
                assert not panel.latest_box.isChecked() and panel.picker.value() == 2
                assert panel.header.text() == "iteration 2 · text_arithmetic · 1 trajectories"
                assert "task of iteration 2" in panel.dialogue.toPlainText()
                assert panel.tabs.tabText(1) == "Variants (iteration 2)" and panel.variant_list.count() == 1
                # a new iteration arrives: the person goes on reading iteration 2
                commit_samples(store, "lm", 5)
                await until(lambda: 5 in panel.picker.iterations, 10, "iteration 5 offered")
                assert panel.iteration == 2 and "task of iteration 2" in panel.dialogue.toPlainText()
                # a typed number goes to the iteration at or before it
                panel.picker.lineEdit().selectAll()
                QTest.keyClicks(panel.picker.lineEdit(), "3")
                QTest.keyClick(panel.picker, QtCore.Qt.Key.Key_Return)
                await until(lambda: panel.picker.value() == 2, 10, "3 read as 2")
                panel.picker.lineEdit().selectAll()
                QTest.keyClicks(panel.picker.lineEdit(), "1")
                QTest.keyClick(panel.picker, QtCore.Qt.Key.Key_Return)
                await until(lambda: panel.iteration == 1, 10, "iteration 1 shown")
                assert panel.tabs.tabText(1) == "Variants (iteration 1)" and panel.variant_list.count() == 0
                assert "no variant in iteration 1" in panel.variant_text.toPlainText()
                # "latest" follows the run again
                panel.latest_box.click()
                await until(lambda: panel.iteration == 5, 10, "the newest again")
                assert panel.picker.value() == 5 and "task of iteration 5" in panel.dialogue.toPlainText()
                assert panel.tabs.tabText(1) == "Variants (iteration 2)"      # the newest proposals, as before

            drive(back(), timeout=60)
    finally:
        store.end_run("lm", 5, Status.STOPPED, {"iterations": 5})
        store.close()


def test_the_store_reads_one_iterations_events(tmp_path):
    store = open_store(tmp_path / "h.db")
    try:
        store.create_run("r", name="r", preset="tiny", config=TINY, device="cpu")
        for it in (1, 2):
            store.commit_iteration("r", it, env_steps=it, wall_s=float(it), metrics={},
                                   events=[(EventKind.SAMPLES, samples_payload(it)), ("episode", {"it": it})],
                                   tasks=[])
        rows = store.events_at("r", 2, [EventKind.SAMPLES])
        assert [(r["iteration"], r["kind"], r["payload"]) for r in rows] == [(2, "samples", samples_payload(2))]
        assert [r["kind"] for r in store.events_at("r", 1)] == ["samples", "episode"]
        assert store.events_at("r", 3) == []
    finally:
        store.end_run("r", 2, Status.STOPPED, {})
        store.close()
