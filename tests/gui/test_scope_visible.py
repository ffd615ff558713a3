"""The scope of every action visible (issue 35, part 2, items 5, 7 and 8): History groups an arm
within its ablation and warns when a group mixes presets or budgets; File ▸ Export… lists the
runs it writes, as its help says; quitting, or leaving the database, names every live or paused
run and can stop them all; a database opened with live runs says so, with Attach and Stop.
Also: `run:arm=` filters as `arm=` does, archived runs are marked, History's column widths and
layout hold, the Training health dock opens tall enough to read, and the final/best headers say
what they mean. Real windows offscreen, real databases (recorded runs imported, real engines)."""
import copy
import subprocess
import sys

import pytest
from PySide6 import QtCore, QtGui, QtWidgets

from rla_engine import metrics
from rla_engine.store import open_store
from rla_engine.summary import BEST, FINAL
from rla_gui.main_window import MainWindow
from rla_gui.panels.history import HistoryPanel

from gui_support import TINY, shown_window, until

ROLE = QtCore.Qt.ItemDataRole
HORIZONTAL = QtCore.Qt.Orientation.Horizontal

# two ablations that both have a "full" arm: a tiny one of 100k steps and a quickstart one of 500k
ABLATIONS = {"tiny100k": ("tiny", 100_000), "quick500k": ("quickstart", 500_000)}


def ablation_runs(recorded) -> list[dict]:
    """Four recorded runs made into two seeds of the arm "full" in each of ABLATIONS (the same
    λ everywhere, so that grouping by λ mixes the ablations)."""
    base = recorded("recorded_group")[0]
    bundles = []
    for n, (group, (preset, budget)) in enumerate((g, ABLATIONS[g]) for g in ABLATIONS for _ in range(2)):
        b = copy.deepcopy(base)
        seed = n % 2
        b["run"].update(id=f"{group}.full.s{seed}", name=f"full · seed {seed}", group_id=group, preset=preset)
        b["run"]["config"]["run"]["env_step_budget"] = budget
        b["run"]["config"]["policy"]["lam"] = 1.0
        for table in ("metrics", "events", "tasks", "iterations"):
            for row in b.get(table) or []:
                if isinstance(row, dict) and "run_id" in row:
                    row["run_id"] = b["run"]["id"]
        bundles.append(b)
    return bundles


@pytest.fixture(scope="module")
def ablations_db(recorded, recorded_db):
    return recorded_db(*ablation_runs(recorded))


@pytest.fixture
def window(qtbot, tmp_path, aloop, ablations_db):
    with shown_window(qtbot, ablations_db, tmp_path) as win:
        yield win


def listed(win, n=4):
    return until(lambda: len(win.history.model.rows) == n, what=f"{n} runs listed")


def group_rows_shown(history) -> list[tuple[str, str]]:
    """(text, tooltip) of each group's row in the grouped view."""
    model = history.tree.model()
    return [(model.index(i, 0).data(), model.index(i, 0).data(ROLE.ToolTipRole) or "")
            for i in range(model.rowCount())]


def test_an_arm_is_grouped_within_its_ablation_and_a_group_mixing_budgets_warns(window, drive):
    history = window.history

    async def scenario():
        await listed(window)
        history.set_columns(["config:policy.lam"])
        history.set_group_by("run:arm")
        by_arm = group_rows_shown(history)
        history.set_group_by("run:arm_pooled")          # asked for: one arm across ablations
        pooled = group_rows_shown(history)
        history.set_group_by("config:policy.lam")
        return by_arm, pooled, group_rows_shown(history)
    by_arm, pooled, by_lam = drive(scenario(), timeout=60)
    [(text, tip)] = pooled
    assert "arm (every ablation) = full" in text and "(4 runs)" in text and "⚠ mixes" in text, text
    assert "100000" in tip and "500000" in tip, tip
    # "full" of the 100k ablation and "full" of the 500k one: two groups of two, never one of four
    assert len(by_arm) == 2, by_arm
    assert all("full" in text and "(2 runs)" in text and "⚠" not in text for text, _ in by_arm), by_arm
    assert {g for g in ABLATIONS if any(g in text for text, _ in by_arm)} == set(ABLATIONS), by_arm
    # one λ, four runs of two presets and two budgets: the group says so, its tooltip says what differs
    [(text, tip)] = by_lam
    assert "(4 runs)" in text and "⚠ mixes" in text and "preset" in text and "run.env_step_budget" in text
    for what in ("quickstart", "tiny", "100000", "500000"):
        assert what in tip, tip


def test_run_arm_filters_as_arm_does_and_archived_runs_are_marked(window, drive, ablations_db):
    history = window.history

    async def scenario():
        await listed(window)
        history.set_columns(["run:arm"])
        history.filter.setText("run:arm=full")           # as Columns… names the column
        shown_by_id = history.proxy.rowCount()
        history.filter.setText("arm=nothing")
        shown_by_title = history.proxy.rowCount()
        history.filter.setText("")
        store = open_store(ablations_db, create=False)
        store.set_archived("tiny100k.full.s0", True)
        store.close()
        history.show_archived.setChecked(True)
        await until(lambda: any(r.get("archived") == 1 for r in history.model.rows), what="the archived run listed")
        return shown_by_id, shown_by_title
    assert drive(scenario(), timeout=60) == (4, 0)
    heads = [history.model.headerData(c, HORIZONTAL) for c in range(history.model.columnCount())]
    proxy, status_col, id_col = history.proxy, heads.index("status"), heads.index("id")
    cells = {proxy.index(r, id_col).data(): (proxy.index(r, status_col).data(),
                                             proxy.index(r, 0).data(ROLE.ForegroundRole))
             for r in range(proxy.rowCount())}
    status, grey = cells["tiny100k.full.s0"]
    assert status == "completed (archived)" and grey is not None and grey.color().name() == "#8c8c8c"
    assert cells["quick500k.full.s1"][0] == "completed"
    store = open_store(ablations_db, create=False)
    store.set_archived("tiny100k.full.s0", False)       # the module's other tests list all four
    store.close()


def test_final_and_best_headers_say_what_they_mean(window, drive):
    history = window.history

    async def scenario():
        await listed(window)
        history.set_columns([f"final:{metrics.SUCCESS}", f"best:{metrics.SUCCESS}"])
    drive(scenario(), timeout=60)
    tips = {history.model.headerData(c, HORIZONTAL): history.model.headerData(c, HORIZONTAL, ROLE.ToolTipRole)
            for c in range(history.model.columnCount())}
    assert FINAL.definition in tips[f"final:{metrics.SUCCESS}"] and BEST.definition in tips[f"best:{metrics.SUCCESS}"]
    history.set_group_by("run:arm")                      # the grouped view's headers too
    tree = history.tree.model()
    assert FINAL.definition in tree.headerData(len(history.model.columns) - 2, HORIZONTAL, ROLE.ToolTipRole)


def test_export_lists_the_runs_it_writes_the_comparison_in_view_as_its_help_says(window, drive, qtbot):
    history, seen = window.history, {}

    def read_dialog():
        dialog = QtWidgets.QApplication.activeModalWidget()
        if not isinstance(dialog, QtWidgets.QFileDialog):
            QtCore.QTimer.singleShot(50, read_dialog)
            return
        label = dialog.findChild(QtWidgets.QLabel, "exportScope")
        seen["title"], seen["text"] = dialog.windowTitle(), label.text() if label is not None else ""
        dialog.reject()

    async def scenario():
        await listed(window)
        window.controller.compare(["quick500k.full.s0", "quick500k.full.s1"])
        await until(lambda: window.comparisons, what="the comparison in view")
        history.select("tiny100k.full.s0")                # History's selection is another run
        QtCore.QTimer.singleShot(50, read_dialog)
        QtCore.QTimer.singleShot(0, window.ask_export)
        await until(lambda: "text" in seen, what="the export dialog read")
    drive(scenario(), timeout=60)
    assert "2 runs" in seen["title"] and "comparison in view" in seen["title"]
    assert "the comparison in view" in seen["text"], seen
    for run_id in ("quick500k.full.s0", "quick500k.full.s1"):
        assert f"full · seed {run_id[-1]} ({run_id})" in seen["text"], seen
    assert "tiny100k" not in seen["text"]
    window.show_shortcuts()
    assert "comparison in view" in window._shortcuts_box.text()


def test_history_fits_a_narrow_dock_without_overlapping_controls(qtbot):
    """Beside the Run view's x-axis row an 800 × 600 window leaves History about 260 px."""
    dock = QtWidgets.QWidget()              # as a dock holds it: given its place, whatever its minimum
    qtbot.addWidget(dock)
    history = HistoryPanel(dock)
    dock.resize(260, 440)
    history.setGeometry(0, 0, 260, 440)
    dock.show()
    qtbot.waitExposed(dock)
    controls = [w for w in history.findChildren(QtWidgets.QWidget)
                if w.parent() is history and w.isVisible() and not isinstance(w, QtWidgets.QStackedWidget)]
    controls.append(history.views)
    names = {w: f"{type(w).__name__} {getattr(w, 'text', lambda: '')()}" for w in controls}
    boxes = {names[w]: w.geometry() for w in controls}
    squashed = [names[w] for w in controls if w.width() < w.minimumSizeHint().width()]
    assert not squashed, f"squeezed below what they need to read whole: {squashed}"
    inside = history.rect()
    assert all(inside.contains(box) for box in boxes.values()), (history.size(), boxes)
    clashes = [(a, b) for a in boxes for b in boxes if a < b and boxes[a].intersects(boxes[b])]
    assert not clashes, clashes


def test_column_widths_and_a_readable_health_dock(qtbot, tmp_path, aloop, ablations_db, drive):
    with shown_window(qtbot, ablations_db, tmp_path) as win:
        drive(listed(win), timeout=60)
        win.losses_dock.raise_()
        qtbot.wait(50)
        health = win.losses_dock.height()
        win.history.table.horizontalHeader().resizeSection(0, 263)      # the name column, widened
    with shown_window(qtbot, ablations_db, tmp_path) as again:
        drive(listed(again), timeout=60)
        assert again.history.table.horizontalHeader().sectionSize(0) == 263
    assert health >= 260, f"the Training health dock opens {health} px tall"


def test_a_grouped_history_reopens_with_its_group_labels_readable(qtbot, tmp_path, aloop, ablations_db, drive):
    """Grouped by arm when the console closed: on the next start the groups arrive after the
    grouping is restored, and the first column still fits their labels (it opened cut to "arm …")."""
    with shown_window(qtbot, ablations_db, tmp_path) as win:
        drive(listed(win), timeout=60)
        win.history.set_group_by("run:arm")
    with shown_window(qtbot, ablations_db, tmp_path) as again:
        drive(listed(again), timeout=60)
        tree = again.history.tree
        drive(until(lambda: tree.model().rowCount() > 0, what="the groups"), timeout=30)
        font = QtGui.QFont(tree.font())
        font.setBold(True)
        widest = max(QtGui.QFontMetrics(font).horizontalAdvance(tree.model().index(i, 0).data())
                     for i in range(tree.model().rowCount()))
        assert tree.columnWidth(0) >= widest + tree.indentation(), (tree.columnWidth(0), widest)


# -- live and paused runs: said on opening, listed on leaving ------------------------------------
def engine(db, name):
    return subprocess.Popen([sys.executable, "-m", "rla_engine.cli", "run", "--db", str(db), *TINY,
                             "--iterations", "20000", "--name", name], stdout=subprocess.DEVNULL)


def status_of(db):
    store = open_store(db, create=False)
    try:
        return {r["name"]: (r["id"], r["status"]) for r in store.list_runs()}
    finally:
        store.close()


def answer_box(button_prefix: str, seen: dict) -> None:
    """Note the next modal message box's text, and press the button whose text starts so."""
    box = QtWidgets.QApplication.activeModalWidget()
    if not isinstance(box, QtWidgets.QMessageBox):
        QtCore.QTimer.singleShot(50, lambda: answer_box(button_prefix, seen))
        return
    seen["text"], seen["buttons"] = box.text(), [b.text() for b in box.buttons()]
    next(b for b in box.buttons() if b.text().replace("&", "").startswith(button_prefix)).click()


def test_live_runs_are_listed_on_opening_and_on_leaving(qtbot, tmp_path, aloop, drive):
    db = tmp_path / "live.db"
    open_store(db).close()
    procs = [engine(db, "left running"), engine(db, "left paused")]
    try:
        deadline = QtCore.QDeadlineTimer(120_000)
        while not all(s == "running" for _, s in status_of(db).values()) or len(status_of(db)) < 2:
            assert not deadline.hasExpired() and all(p.poll() is None for p in procs), status_of(db)
            qtbot.wait(200)
        runs = status_of(db)
        store = open_store(db, create=False)
        store.add_command(runs["left paused"][0], "pause")
        store.close()
        while status_of(db)["left paused"][1] != "paused":
            assert not deadline.hasExpired(), status_of(db)
            qtbot.wait(200)
        settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
        win = MainWindow(db, settings=settings)
        qtbot.addWidget(win)
        win.show()
        ids = {name: run_id for name, (run_id, _) in runs.items()}

        async def scenario():
            # opened: both are listed, with Attach and Stop; nothing opened on its own
            box = await until(lambda: win.live_runs_box if win.live_runs_box and win.live_runs_box.isVisible()
                              else None, what="the live runs said on opening")
            assert win.controller.session.run_id is None
            texts = {run_id: [w.text() for w in row] for run_id, row in box.rows.items()}
            assert texts == {ids["left running"]: [f"left running ({ids['left running']}) — running", "Attach",
                                                   "Stop it"],
                             ids["left paused"]: [f"left paused ({ids['left paused']}) — paused", "Attach",
                                                  "Stop it"]}
            box.rows[ids["left running"]][1].click()                  # Attach: the Run tab shows it
            await until(lambda: win.status_line.state.text() == "left running — running", 30, "attached")
            # another database, then Cancel: both runs named, the console stays
            seen: dict = {}
            QtCore.QTimer.singleShot(50, lambda: answer_box("Cancel", seen))
            QtCore.QTimer.singleShot(0, lambda: win.leave_database_for(tmp_path / "other.db"))
            await until(lambda: "text" in seen, what="the question on leaving")
            assert win.controller.db_path == db
            # quit: both named (the paused one too, though it is not open); stop them all
            closing: dict = {}
            QtCore.QTimer.singleShot(50, lambda: answer_box("Stop all 2", closing))
            QtCore.QTimer.singleShot(0, win.close)
            await until(lambda: win.finished is not None and win.finished.done(), 60, "closed")
            return seen, closing
        seen, closing = drive(scenario(), timeout=180)
        for text in (seen["text"], closing["text"]):
            assert f"left running ({ids['left running']}) — running" in text, text
            assert f"left paused ({ids['left paused']}) — paused" in text, text
        assert [p.wait(timeout=90) for p in procs] == [0, 0]
        assert {s for _, s in status_of(db).values()} == {"stopped"}
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
