"""A coding run (task.family = coding, judge.kind = tests) in the real console: the agreement panel
shows the test generator's figures, a Sandbox tab the executions, the status line and the event log
the isolation in force, and Samples the program with its generated tests. The run is written with
the store's own write path into a real SQLite file, beside a step-judge run that must look as before."""
import pytest
from PySide6 import QtCore, QtGui, QtWidgets

from rla_engine import metrics
from rla_engine.config import build
from rla_engine.store import open_store
from rla_gui.model import coding
from rla_gui.model.panel_spec import (AGREEMENT, ANY_AGREEMENT, EXEC_STATUSES, PANELS, SANDBOX_COST, SANDBOX_SHARES,
                                      TEST_AGREEMENT, agreement_panel, run_panels)
from rla_gui.panels import program_view as PV
from rla_gui.panels.comparison import ComparisonView
from rla_gui.panels.event_log import ALERT_BACKGROUND
from rla_gui.model.comparison import Comparison
from rla_gui.widgets import status_line

from gui_support import runs_with_data, shown_window, until
from rendered_text import all_sinks, everything, holding, hostile_strings, plant_image, problems

LONG_INPUT = "3 4\n" + "1 " * 400
PROGRAM = "```python\na, b = map(int, input().split())\nprint(a + b)  # {markup}\n```"
GUARANTEES = [{"name": "no network", "holds": False, "how": "no network namespace"},
              {"name": "time limit", "holds": True, "how": "RLIMIT_CPU"}]


def coding_config(kind="tests"):
    config = build(preset="tiny").to_dict()
    config["task"]["family"] = "coding"      # the text family helpers add; the store keeps any dict
    config["judge"]["kind"] = kind
    return config


def sample(markup):
    """One coding trajectory (vocabulary.SampleTrajectory): a program, its ground truth, three
    generated tests — one with a long input, one it fails, one unreadable."""
    tests = [{"input": LONG_INPUT, "output": "7", "said": f"long {markup}", "readable": True, "correct": True,
              "result": "ok"},
             {"input": f"1 {markup}", "output": "2", "said": "t2", "readable": True, "correct": False,
              "result": "wrong_answer"},
             {"input": "", "output": "", "said": f"no test here {markup}", "readable": False, "correct": False,
              "result": ""}]
    step = {"text": PROGRAM.format(markup=markup), "verdicts": [1, -1, 0], "reasoning": [t["said"] for t in tests]}
    traj = {"slot": 0, "task": "add two numbers", "success": True, "turns": [{"steps": [step], "observation": ""}],
            "ground_truth": {"passed": 2, "total": 3, "statuses": ["ok", "ok", "timeout"]}, "unit_tests": tests}
    return {"family": "coding", "trajectories": [traj], "variants": []}


def figures(it):
    shares = {metrics.exec_status_key(s): 0.0 for s in EXEC_STATUSES}
    shares.update({metrics.exec_status_key("ok"): 0.5, metrics.exec_status_key("wrong_answer"): 0.3,
                   metrics.exec_status_key("timeout"): 0.2})
    return {metrics.SUCCESS: 0.2 * it, metrics.SYN_UT_ACC: 0.3 + 0.1 * it, metrics.PERFECT_UT_RATE: 0.1 * it,
            metrics.TEST_PARSE_FAILURES: 0.05, metrics.EXEC_SECONDS: 1.5, metrics.SANDBOX_ERRORS: 0.0, **shares}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    image = plant_image(tmp_path_factory.mktemp("image"))
    return hostile_strings(image), everything(image)


@pytest.fixture(scope="module")
def db(tmp_path_factory, hostile):
    path = tmp_path_factory.mktemp("coding") / "c.db"
    store = open_store(path)
    store.create_run("code", name="code", preset="tiny", config=coding_config(), device="cpu")
    sandbox = {"level": "process", "require": "any", "guarantees": GUARANTEES}
    for it in (1, 2, 3):
        events = [("sandbox", sandbox)] if it == 1 else [("samples", sample(hostile[1]))] if it == 3 else []
        store.commit_iteration("code", it, env_steps=10 * it, wall_s=1.0, metrics=figures(it), events=events,
                               tasks=[])
    store.end_run("code", 3, "completed", {"iterations": 3})
    store.create_run("steps", name="steps", preset="tiny", config=build(preset="tiny").to_dict(), device="cpu")
    store.commit_iteration("steps", 1, env_steps=10, wall_s=1.0, events=[], tasks=[],
                           metrics={metrics.SUCCESS: 0.5, metrics.OUTCOME_AGREEMENT: 0.7})
    store.end_run("steps", 1, "completed", {"iterations": 1})
    store.close()
    return path


def test_the_panel_spec_picks_the_agreement_keys_from_the_judge_kind():
    assert agreement_panel([coding_config()]) is TEST_AGREEMENT
    assert TEST_AGREEMENT.keys == metrics.UNIT_TESTS and TEST_AGREEMENT.id == AGREEMENT.id
    # a step judge, and a configuration stored before judge.kind existed, keep today's panel
    old = build(preset="tiny").to_dict()
    del old["judge"]["kind"]
    assert agreement_panel([coding_config("steps")]) is AGREEMENT and agreement_panel([old, None]) is AGREEMENT
    assert run_panels([old]) == PANELS
    assert agreement_panel([old, coding_config()]) is ANY_AGREEMENT
    assert set(metrics.UNIT_TESTS) | set(AGREEMENT.keys) == set(ANY_AGREEMENT.keys)


def open_run(win, drive, run_id, ready):
    async def scenario():
        win.open_run(run_id)
        await until(lambda: win.controller.session.run is not None and win.controller.session.run["id"] == run_id
                    and ready(), what=f"{run_id} shown")
    drive(scenario(), timeout=30)


def sandbox_tab(win):
    health = win.dashboard.health
    return next(i for i in range(health.count()) if health.tabText(i) == "Sandbox")


def test_a_coding_run_shows_its_generator_sandbox_and_isolation_and_a_step_run_does_not(qtbot, db, tmp_path, drive):
    with shown_window(qtbot, db, tmp_path) as win:
        open_run(win, drive, "code", lambda: win.samples.iteration == 3 and win.events.row_count() >= 2)
        dash = win.dashboard
        assert dash.agreement.title == TEST_AGREEMENT.title and tuple(dash.agreement.curves) == metrics.UNIT_TESTS
        legend = [label.text for _, label in dash.agreement.plotItem.legend.items]
        assert legend == ["syn UT acc", "perfect UT rate",
                          "unreadable tests"]
        assert dash.health.isTabVisible(sandbox_tab(win))
        assert tuple(dash.health.plots[SANDBOX_SHARES.id].curves) == SANDBOX_SHARES.keys
        assert tuple(dash.health.plots[SANDBOX_COST.id].curves) == (metrics.EXEC_SECONDS, metrics.SANDBOX_ERRORS)
        dash.refresh()
        x, _ = dash.agreement.curves[metrics.SYN_UT_ACC].line.getData()
        assert list(x) == [1, 2, 3]         # drawn (smoothed, as the view bar says)
        # the isolation: in the status bar, a warning (process is weaker than bubblewrap), each guarantee on hover
        label = win.status_line.sandbox
        assert label.isVisibleTo(win) and label.text() == "⚠ sandbox: process"
        assert label.styleSheet() == status_line.ACTIVE_STYLE
        assert "✗ no network: no network namespace" in label.toolTip()
        # and its one line in the event log, tinted as a raised alert
        model = win.events.model
        row = next(r for r in range(model.rowCount()) if model.event_at(r)["kind"] == "sandbox")
        assert model.index(row, 3).data() == ("⚠ isolation process (require any): does not hold: no network, "
                                               "weaker than bubblewrap")
        assert model.index(row, 3).data(QtCore.Qt.ItemDataRole.BackgroundRole) == ALERT_BACKGROUND

        open_run(win, drive, "steps", lambda: win.dashboard.agreement.title == AGREEMENT.title)
        assert tuple(dash.agreement.curves) == AGREEMENT.keys
        assert not dash.health.isTabVisible(sandbox_tab(win)) and not win.status_line.sandbox.isVisibleTo(win)


def test_samples_show_the_program_its_ground_truth_and_the_generated_tests_as_plain_text(qtbot, db, tmp_path,
                                                                                          drive, hostile):
    strings, markup = hostile
    with shown_window(qtbot, db, tmp_path) as win:
        open_run(win, drive, "code", lambda: win.samples.iteration == 3)
        panel, view = win.samples, win.samples.program
        assert view.isVisibleTo(panel) and not panel.dialogue.isVisibleTo(panel)
        assert not panel.legend.isVisibleTo(panel)          # the step verdicts' legend means nothing here
        assert view.program.toPlainText() == PROGRAM.format(markup=markup)
        widths = QtGui.QFontMetrics(view.program.font())
        assert widths.horizontalAdvance("iiii") == widths.horizontalAdvance("WWWW")     # monospace: columns kept
        assert view.summary.text() == ("ground truth: 2 of 3 tests passed (ok, ok, timeout)\n"
                                       "generated tests: 3, 2 readable; this program passes 1")
        table = view.tests
        head = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
        assert head == ["input", "expected output", "readable", "correct", "this program"]
        cells = [[table.item(r, c).text() for c in range(table.columnCount())] for r in range(table.rowCount())]
        assert cells[0][0] == PV.cell_text(LONG_INPUT) and cells[0][0].endswith("…")      # elided in its cell
        assert cells[0][1:] == ["7", "yes", "yes", "ok"]
        assert cells[1][0].startswith("1 <font") and cells[1][2:] == ["yes", "no", "wrong_answer"]
        assert cells[2] == [coding.UNREADABLE, "—", "no", "—", "—"]
        # a tooltip has the first PV.TIP_CHARS (and says it is cut); the pane below, the selected test whole
        tip = table.item(0, 0).toolTip()
        assert tip.startswith(f"input:\n{LONG_INPUT[:300]}") and tip.endswith(PV.CUT)
        assert view.detail.toPlainText().startswith(f"input:\n{LONG_INPUT}\n\nexpected output:\n7\n")
        table.setCurrentCell(2, 0)
        assert view.detail.toPlainText() == ("The generator's sample held no readable test.\n\n"
                                             f"the generator wrote:\nno test here {markup}")
        # nothing model-written was read as markup anywhere (tooltips included), and it was walked
        sinks = all_sinks(QtWidgets.QApplication.instance())
        assert problems(sinks, strings) == []
        assert any("tests" in where or "QTableWidget" in where for where in holding(sinks, strings["BOLD"]))
        assert "<img" not in view.program.document().toHtml() and "<img" not in view.detail.document().toHtml()


def test_a_comparison_offers_the_agreement_keys_of_its_runs(qtbot, db):
    runs = {run["id"]: (run, data) for run, data in runs_with_data(db, with_config=True)}
    view = ComparisonView(Comparison.of_runs([runs["code"]]), "compare")
    qtbot.addWidget(view)
    agreement = next(p for p in view.plots if p.panel.id == AGREEMENT.id)
    assert agreement.panel is TEST_AGREEMENT
    assert [agreement.key_box.itemText(i) for i in range(agreement.key_box.count())] == list(metrics.UNIT_TESTS)
    view.set_comparison(Comparison.of_runs([runs["code"], runs["steps"]]))
    assert agreement.panel is ANY_AGREEMENT and agreement.key_box.count() == len(ANY_AGREEMENT.keys)
    view.set_comparison(Comparison.of_runs([runs["steps"]]))
    assert agreement.panel is AGREEMENT and agreement.key_box.currentText() == metrics.OUTCOME_AGREEMENT
