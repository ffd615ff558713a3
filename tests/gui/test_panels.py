"""Episode viewer, task-pool table and event timeline on data of real tiny engine runs, recorded
(tests/data/make_recorded_runs.py) and imported into a fresh database."""
import os
import subprocess
import sys
import time
from collections import Counter

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor, QImage

from rla_engine.store import open_store
from rla_gui.panels import episode_view as EV
from rla_gui.panels.episode_view import EpisodeViewPanel
from rla_gui.panels.event_log import EventLogPanel, summarize
from rla_gui.panels.pool_table import PoolTablePanel


@pytest.fixture(scope="module")
def runs(recorded, recorded_db):
    """One recorded engine run per family (tests/data), imported into a fresh database."""
    bundles = recorded("recorded_group") + recorded("recorded_arithmetic")
    db = recorded_db(*bundles)
    store = open_store(db, create=False)
    out = {}
    for fam in ("gridworld", "arithmetic"):
        run_id = next(b["run"]["id"] for b in bundles if b["run"]["config"]["task"]["family"] == fam)
        events = store.events(run_id)
        out[fam] = {"db": db, "run_id": run_id, "events": events,
                    "episodes": [e["payload"] for e in events if e["kind"] == "episode"],
                    "tasks": store.tasks(run_id, ["active", "pending"])}
    store.close()
    return out


# -- episode viewer ------------------------------------------------------------------------------
def render(qtbot, payload, w=400, h=400) -> QImage:
    """The picture the viewer draws, without the colour legend under it (its marks share the colours)."""
    qtbot.addWidget(viewer := EpisodeViewPanel())
    viewer.resize(w, h)
    viewer.show_episode(payload)
    return viewer.grab(viewer.picture_area()).toImage()


def histogram(img: QImage) -> Counter:
    """Pixel count of every rgb in the image (every pixel: 400×400 is small)."""
    img = img.convertToFormat(QImage.Format.Format_RGB32)
    return Counter(img.pixel(x, y) & 0xFFFFFF for y in range(img.height()) for x in range(img.width()))


def shown(qtbot, widget, w: int, h: int) -> None:
    """Scroll bars and hit tests need a laid-out, exposed widget."""
    widget.resize(w, h)
    widget.show()
    qtbot.waitExposed(widget)


def rgb(c: QColor) -> int:
    return c.rgb() & 0xFFFFFF


def with_a_wall(payload: dict) -> dict:
    """The real episode, plus a wall on a cell its path never touches if its maze has none
    (a low-difficulty pool task is wall-free), so the wall colour has something to show."""
    task = payload["task"]
    if any("#" in row for row in task["walls"]):
        return payload
    used = {tuple(r[:2]) for r in payload["info"]} | {tuple(task["start"]), tuple(task["goal"])}
    used |= {(r[0] + EV.MOVES[r[2]][0], r[1] + EV.MOVES[r[2]][1]) for r in payload["info"]}
    x, y = next((x, y) for y in range(task["size"]) for x in range(task["size"]) if (x, y) not in used)
    walls = [list(row) for row in task["walls"]]
    walls[y][x] = "#"
    return {**payload, "task": {**task, "walls": ["".join(r) for r in walls]}}


def test_gridworld_episode_draws_walls_markers_and_verdict_coloured_path(qtbot, runs):
    payload = with_a_wall(runs["gridworld"]["episodes"][-1])
    assert payload["family"] == "gridworld" and payload["info"]
    img = render(qtbot, payload)
    seen = histogram(img)
    for c in (EV.WALL_COLOR, EV.FREE_COLOR, EV.START_COLOR, EV.GOAL_COLOR):
        assert rgb(c) in seen, c.name()
    # the last step is drawn on top of everything, so its verdict colour must show
    assert rgb(EV.verdict_color(payload["verdicts"][-1])) in seen
    assert img != render(qtbot, None)


def test_path_and_blocked_move_are_drawn_in_their_verdict_colours(qtbot):
    """A corridor on the top row, walls below: right, right (all +1), then down into the wall
    (blocked, all −1). The red mark must exist and stay in the top row: the walker stays."""
    payload = {"family": "gridworld", "slot": 0, "success": False,
               "task": {"size": 3, "walls": ["...", "###", "###"], "start": [0, 0], "goal": [2, 0],
                        "budget": 4, "difficulty": 0.1},
               "info": [[0, 0, 3, 0, 0, 0], [1, 0, 3, 0, 0, 0], [2, 0, 1, 1, 1, 0]],
               "verdicts": [[1, 1], [1, 1], [-1, -1]], "oracle": [1, 1, -1]}
    img = render(qtbot, payload, 300, 300).convertToFormat(QImage.Format.Format_RGB32)
    seen = histogram(img)
    assert rgb(EV.GOOD_COLOR) in seen and rgb(EV.BAD_COLOR) in seen
    half = img.height() // 2
    lower_half = {img.pixel(x, y) & 0xFFFFFF for y in range(half, img.height()) for x in range(300)}   # walls only
    assert rgb(EV.BAD_COLOR) not in lower_half and rgb(EV.WALL_COLOR) in lower_half

    def mean_y(c):   # the red stub points down, below the green segments along the row's centre
        ys = [y for y in range(half) for x in range(300) if img.pixel(x, y) & 0xFFFFFF == rgb(c)]
        return sum(ys) / len(ys)
    assert mean_y(EV.BAD_COLOR) > mean_y(EV.GOOD_COLOR) + 5
    bare = histogram(render(qtbot, {**payload, "info": [], "verdicts": [], "oracle": []}, 300, 300))
    assert rgb(EV.GOOD_COLOR) not in bare and rgb(EV.BAD_COLOR) not in bare


def test_verdict_colour_and_caption():
    assert EV.verdict_color([1, 1, 1]) == EV.GOOD_COLOR
    assert EV.verdict_color([-1, -1]) == EV.BAD_COLOR
    mid = EV.verdict_color([1, -1])
    assert mid not in (EV.GOOD_COLOR, EV.BAD_COLOR) and mid.green() > EV.BAD_COLOR.green()
    assert EV.verdict_color([0, 0]) == EV.UNREADABLE_COLOR
    assert EV.verdict_color(None) == EV.UNREADABLE_COLOR
    payload = {"slot": 5, "success": True, "task": {"difficulty": 0.4, "budget": 9},
               "info": [[0], [1]], "verdicts": [[1, -1], [1, 0]], "oracle": [1, -1]}
    # readable verdicts: +1 vs +1 (hit), −1 vs +1, +1 vs −1 → 1 of 3
    assert EV.oracle_agreement(payload) == pytest.approx(1 / 3)
    assert EV.caption(payload) == "slot 5  ·  d 0.40  ·  success  ·  2/9 steps  ·  oracle agreement 33%"


def test_arithmetic_chain_renders_lines_with_verdict_chips(qtbot, runs):
    payload = runs["arithmetic"]["episodes"][-1]
    assert payload["family"] == "arithmetic"
    img = render(qtbot, payload)
    hist = histogram(img)
    # a chip is a filled square of a few hundred pixels; the ✓/✗ glyphs share its colours but
    # hold far fewer exact pixels, so only chips reach this count
    for v in (1, -1):
        chips = sum(step.count(v) for step in payload["verdicts"])
        assert hist[rgb(EV.chip_color(v))] >= 40 * chips
    assert any(v in (1, -1) for step in payload["verdicts"] for v in step)
    assert img != render(qtbot, None)
    lines = [t for t, *_ in EV._chain_lines(payload)]
    task = payload["task"]
    assert lines[0] == f"start {task['start']}" and lines[-1] == f"answer {task['answer']}"
    assert len(lines) == len(task["ops"]) + 2 and all("→ wrote" in t for t in lines[1:-1])
    # a hand-made chain: 7 − 5 → 2 is right; 2 × 3 → 9 is wrong and hints the 6 it should be
    payload = {"family": "arithmetic", "task": {"start": 7, "ops": ["-", "*"], "operands": [5, 3], "answer": 6},
               "info": [[0, 1, 5, 2, 7], [1, 2, 3, 9, 2]], "verdicts": [[1], [-1]], "oracle": [1, -1]}
    assert EV._chain_lines(payload)[1:3] == [("− 5 → wrote 2", [1], 1, ""), ("× 3 → wrote 9", [-1], -1, "(6)")]


def test_empty_state_unknown_family_malformed_payload_and_plugged_in_family(qtbot, monkeypatch):
    blank = render(qtbot, None)
    assert len(histogram(blank)) > 1 and rgb(EV.WALL_COLOR) not in histogram(blank)   # the text only
    assert render(qtbot, {"family": "chess", "task": {}}) == blank
    # malformed: a message instead of an exception out of paintEvent
    assert render(qtbot, {"family": "gridworld", "task": {"size": 5}}) != blank
    calls = []
    monkeypatch.setitem(EV.PAINTERS, "toy", lambda p, rect, payload, pal: calls.append(payload["slot"]))
    render(qtbot, {"family": "toy", "slot": 4})
    assert calls == [4]


# -- task pool ---------------------------------------------------------------------------------
def pool_rows(runs) -> list[dict]:
    rows = [dict(r) for r in runs["gridworld"]["tasks"]]
    if not any(r["status"] == "pending" for r in rows):
        rows.append({"slot": 3, "version": 9, "family": "gridworld", "difficulty": 0.61, "status": "pending",
                     "direction": "harder", "last_acc": None})
    return rows


@pytest.fixture
def pool(qtbot):
    qtbot.addWidget(panel := PoolTablePanel())
    return panel


def cell(panel, row, col):
    return panel.proxy.index(row, col).data()


def test_pool_shows_one_line_per_slot_with_pending_candidates(pool, runs):
    rows = pool_rows(runs)
    pool.set_rows(rows)
    assert pool.proxy.rowCount() == 8
    pending = {r["slot"]: r for r in rows if r["status"] == "pending"}
    active = {r["slot"]: r for r in rows if r["status"] == "active"}
    for i in range(8):
        slot = int(cell(pool, i, 0))
        assert cell(pool, i, 3) == f"{active[slot]['difficulty']:.2f}"
        assert cell(pool, i, 2) == f"v{active[slot]['version']}"
        if slot in pending:
            assert cell(pool, i, 5) == {"harder": "harder ↑", "easier": "easier ↓"}[pending[slot]["direction"]]
            assert cell(pool, i, 6) == f"{pending[slot]['difficulty']:.2f}"
        else:   # an active row's own direction is its history, not a pending change
            assert cell(pool, i, 5) == "" and cell(pool, i, 6) == ""


def active(slot: int, d: float) -> dict:
    return {"slot": slot, "version": 0, "family": "gridworld", "status": "active", "difficulty": d, "last_acc": 0.5}


def synthetic(n: int, bump: float = 0.0) -> list[dict]:
    return [active(s, round(((s * 37) % n) / n + bump, 4) % 1.0) for s in range(n)]


def test_pool_sorts_numbers_as_numbers(pool, runs):
    pool.set_rows([*pool_rows(runs), active(10, 0.1249), active(11, 0.1201)])
    pool.view.sortByColumn(3, Qt.SortOrder.AscendingOrder)
    diffs = [line["difficulty"] for line in pool.visible_lines()]
    assert diffs == sorted(diffs)                        # 0.1201 before 0.1249 though both read "0.12"
    pool.view.sortByColumn(0, Qt.SortOrder.AscendingOrder)
    # as text, "10" and "11" would come right after "1"
    assert [int(cell(pool, i, 0)) for i in range(pool.proxy.rowCount())] == [*range(8), 10, 11]


def test_pool_updates_keep_sort_scroll_and_selection(pool, qtbot):
    shown(qtbot, pool, 400, 160)
    pool.set_rows(synthetic(40))
    pool.view.sortByColumn(3, Qt.SortOrder.DescendingOrder)
    bar = pool.view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 10, timeout=1000)   # the view lays out lazily
    bar.setValue(10)
    pool.set_rows(synthetic(40, bump=0.3))               # same slots: new values in place
    assert bar.value() == 10
    assert pool.view.horizontalHeader().sortIndicatorSection() == 3
    diffs = [line["difficulty"] for line in pool.visible_lines()]
    assert diffs == sorted(diffs, reverse=True)

    pool.view.selectRow(12)
    chosen = pool.visible_lines()[12]["slot"]
    assert chosen != 0
    rows = synthetic(40, bump=0.3)
    # slot 0 leaves (every row moves up one) and slot 40 arrives: a layout change
    pool.set_rows([*rows[1:], active(40, 0.999)])
    assert pool.proxy.rowCount() == 40
    diffs = [line["difficulty"] for line in pool.visible_lines()]
    assert diffs == sorted(diffs, reverse=True) and diffs[0] == 0.999
    selected = pool.view.selectionModel().selectedRows()
    assert [pool.visible_lines()[i.row()]["slot"] for i in selected] == [chosen]


# -- event timeline ---------------------------------------------------------------------------
@pytest.fixture
def log(qtbot):
    qtbot.addWidget(panel := EventLogPanel())
    return panel


def make_events(n: int, start: int = 1) -> list[dict]:
    return [{"id": i, "iteration": i, "t": time.time(), "kind": "variant_rejected",
             "payload": {"slot": i % 8, "direction": "easier", "prev_acc": 0.0, "new_acc": 0.0,
                         "version": 1, "difficulty": 0.5}} for i in range(start, start + n)]


def test_log_skips_episodes_and_summarises_real_events(log, runs):
    events = runs["gridworld"]["events"] + runs["arithmetic"]["events"]
    log.append(events)
    listed = [e for e in events if e["kind"] != "episode"]
    assert len(listed) < len(events)
    assert [log.model.index(i, 2).data() for i in range(log.row_count())] == [e["kind"] for e in listed]
    for i, e in enumerate(listed):
        assert log.model.index(i, 1).data() == time.strftime("%H:%M:%S", time.localtime(e["t"]))
        if e["kind"].startswith("variant_"):
            p = e["payload"]
            assert log.model.index(i, 3).data() == (
                f"slot {p['slot']} {p['direction']}: acc {p['prev_acc']:.2f} → {p['new_acc']:.2f} "
                f"(v{p['version']}, d {p['difficulty']:.2f})")


def command(kind: str, payload: dict, result: str) -> dict:
    """Shaped as runner._apply_commands writes them."""
    ev_kind = "command_rejected" if result.startswith("rejected") else kind
    return {"id": 1, "iteration": 2, "t": 0.0, "kind": ev_kind,
            "payload": {"command": 1, "kind": kind, "payload": payload, "result": result}}


def test_summaries_of_variants_commands_and_failures():
    assert summarize({"kind": "placed", "payload": {"executor": "ray", "workers": [
        {"role": "rollout", "node": "a"}, {"role": "rollout", "node": "b"}, {"role": "judge", "node": "a"}]}}) \
        == "Ray workers: 2 rollout, 1 judge on 2 nodes"
    assert summarize({"kind": "worker_restarted", "payload": {"role": "rollout", "index": 1, "restart": 1,
                                                              "error": "The actor died"}}) \
        == "rollout worker 1 restarted (#1): The actor died"
    assert summarize({"kind": "stopped", "payload": {"reason": "stop command", "abandoned_iteration": 7}}) \
        == "stop command (iteration 7 cut short, not kept)"
    assert summarize({"kind": "variant_accepted", "payload": {
        "slot": 3, "direction": "harder", "prev_acc": 0.88, "new_acc": 0.62, "version": 4,
        "difficulty": 0.41}}) == "slot 3 harder: acc 0.88 → 0.62 (v4, d 0.41)"
    assert summarize(command("set_difficulty", {"value": 0.6}, "applied: difficulty 0.6")) == "difficulty 0.6 applied"
    assert summarize(command("set_difficulty", {"value": None}, "applied: automatic adaptation")) \
        == "automatic difficulty applied"
    rejected = summarize(command("set_difficulty", {"value": 2}, "rejected: difficulty 2 is not a number in [0, 1]"))
    assert rejected.startswith("rejected: difficulty 2") and "set_difficulty" in rejected
    assert summarize(command("pause", {}, "applied")) == "pause applied"
    assert summarize({"kind": "failed", "payload": {"iteration": 7, "error": "RuntimeError: boom"}}) \
        == "iteration 7: RuntimeError: boom"
    assert summarize({"kind": "something_new", "payload": {"a": 1}}) == '{"a": 1}'


def test_failed_is_highlighted_and_the_log_keeps_every_row(log):
    failed = {"id": 9, "iteration": 3, "t": 0.0, "kind": "failed",
              "payload": {"iteration": 3, "quantity": "loss", "value": "nan"}}
    log.append([*make_events(2), failed])
    bg = Qt.ItemDataRole.BackgroundRole
    assert log.model.index(0, 3).data(bg) is None and log.model.index(2, 3).data(bg) is not None
    assert log.model.index(2, 3).data() == "iteration 3: loss = nan"
    log.clear()
    assert log.row_count() == 0
    log.append(make_events(4000))
    log.append(make_events(2000, start=4001))
    assert log.row_count() == 6000
    assert log.model.event_at(0)["id"] == 1 and log.model.event_at(5999)["id"] == 6000


def top_row(panel) -> int:
    return panel.view.indexAt(QPoint(2, 2)).row()


def test_autoscroll_follows_the_newest_unless_the_user_scrolled_up(qtbot):
    qtbot.addWidget(panel := EventLogPanel())
    shown(qtbot, panel, 500, 200)
    bar = panel.view.verticalScrollBar()
    panel.append(make_events(200))
    assert bar.maximum() > 0 and bar.value() == bar.maximum()
    bar.setValue(50)                                      # the user reads older lines
    first = panel.model.event_at(top_row(panel))["id"]
    panel.append(make_events(20, start=201))
    assert bar.value() == 50 and panel.model.event_at(top_row(panel))["id"] == first
    panel.append(make_events(100, start=221))             # none dropped: the same lines stay in view
    assert panel.row_count() == 320
    assert panel.model.event_at(top_row(panel))["id"] == first
    panel.view.scrollToBottom()
    panel.append(make_events(5, start=321))
    assert bar.value() == bar.maximum()
    assert panel.view.indexAt(QPoint(2, panel.view.viewport().height() - 3)).row() == panel.row_count() - 1


def test_double_click_emits_the_event(qtbot, log):
    shown(qtbot, log, 500, 300)
    events = make_events(3)
    log.append(events)
    rect = log.view.visualRect(log.model.index(1, 3))
    with qtbot.waitSignal(log.event_selected, timeout=1000) as sig:
        # a real double click is a press, a release, then the double-click event: the view only
        # accepts a double click on the index the press landed on
        qtbot.mouseClick(log.view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
        qtbot.mouseDClick(log.view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert sig.args == [events[1]]


# -- no torch in the console ---------------------------------------------------------------------
def test_panels_do_not_import_torch(runs):
    code = f"""
import sys
from PySide6.QtWidgets import QApplication
app = QApplication([])
from rla_engine.store import open_store
from rla_gui.panels.episode_view import EpisodeViewPanel
from rla_gui.panels.pool_table import PoolTablePanel
from rla_gui.panels.event_log import EventLogPanel
store = open_store({str(runs['gridworld']['db'])!r}, create=False)
run = {runs['gridworld']['run_id']!r}
events = store.events(run)
viewer, pool, log = EpisodeViewPanel(), PoolTablePanel(), EventLogPanel()
viewer.show_episode([e for e in events if e["kind"] == "episode"][-1]["payload"])
viewer.grab()
pool.set_rows(store.tasks(run, ["active", "pending"]))
log.append(events)
print("torch" in sys.modules)
"""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == "False"


def test_event_markers_cost_no_scene_item_each_and_stay_bounded(qtbot):
    """One line item per kind, however many events: one scene item per marker (~65 KB each) grew
    the console by ~0.25 MB per command in the soak."""
    import numpy as np

    from rla_engine import metrics
    from rla_gui.model.run_data import RunData
    from rla_gui.widgets.markers import MAX_MARKERS
    from rla_gui.widgets.metric_plot import MetricPlot
    plot = MetricPlot("μ balance", (metrics.MU,), RunData())
    qtbot.addWidget(plot)
    plot.resize(600, 300)
    plot.show()
    plot.add_markers([(0, "pause"), (1, "resume")])
    items_before = len(plot.scene().items())
    for i in range(0, 3 * MAX_MARKERS, 10):     # a long run's worth of pauses and resumes
        plot.add_markers([(i + j, "pause" if j % 2 else "resume") for j in range(10)])
    assert len(plot.scene().items()) == items_before
    assert len(plot.markers) == MAX_MARKERS
    xs = np.concatenate([item.xData for item in plot.markers.items.values()])
    assert len(xs) == 2 * MAX_MARKERS and xs.min() == 2 * MAX_MARKERS      # the newest are kept
    y0, y1 = plot.plotItem.vb.viewRange()[1]
    ys = plot.markers.items["pause"].yData
    assert ys.min() == y0 and ys.max() == y1          # each line spans the visible y range
    legend = [label.text for _, label in plot.plotItem.legend.items]
    assert legend.count("events") == 1 and "pause" not in legend    # one entry for every kind: a short legend
    plot.plotItem.vb.setYRange(-5, 5, padding=0)
    ys = plot.markers.items["pause"].yData
    assert (ys.min(), ys.max()) == (-5, 5)              # and follows it when it changes
    plot.set_markers([(i, "pause") for i in range(5)])
    assert set(plot.markers.items) == {"pause"} and len(plot.markers.items["pause"].xData) == 10
    assert [label.text for _, label in plot.plotItem.legend.items].count("events") == 1
    plot.set_markers([])
    assert "events" not in [label.text for _, label in plot.plotItem.legend.items]
