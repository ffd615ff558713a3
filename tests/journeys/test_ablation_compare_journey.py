"""An ablation from its dialog to its comparison — two seeds, so each arm's mean with its band —
then the comparison read as a person reads it: the summary, smoothing, another x-axis, exact
values under the mouse, an export, and the tab closed again."""
from PySide6 import QtCore, QtWidgets
from PySide6.QtTest import QTest

from rla_gui.panels.group_comparison import GroupComparisonPanel
from rla_gui.widgets.ablation_dialog import AblationDialog

from person import Key, Person, close_console, drag_slider, open_console, pause, until

ARMS = ("outcome", "full")


def fill_ablation(dialog: AblationDialog, seen: dict) -> None:
    """Seeds 0 and 1, arms outcome and full, 900 steps, 2 at a time — and what the dialog said first."""
    seen["opened with"] = dialog.estimate.text()
    seen["tips"] = {dialog.arms.item(i).text(): dialog.arms.item(i).toolTip() for i in range(dialog.arms.count())}
    dialog.seeds.selectAll()
    QTest.keyClicks(dialog.seeds, "0,1")
    for i in range(dialog.arms.count()):
        item = dialog.arms.item(i)
        item.setCheckState(QtCore.Qt.CheckState.Checked if item.text() in ARMS else QtCore.Qt.CheckState.Unchecked)
    dialog.budget.lineEdit().selectAll()
    QTest.keyClicks(dialog.budget.lineEdit(), "900")
    dialog.jobs.setValue(2)
    seen["estimate"] = dialog.estimate.text()
    dialog.buttons.button(QtWidgets.QDialogButtonBox.StandardButton.Ok).click()


def test_ablation_from_its_dialog_to_an_exported_comparison(qtbot, tmp_path, drive):
    win = open_console(qtbot, tmp_path)
    me = Person(win, qtbot)
    seen: dict = {}

    async def journey():
        # 1. the tiny preset in the form; Ablation… opens the dialog
        win.show_new_run()
        me.choose_preset("tiny")
        me.when_modal(AblationDialog, lambda d: fill_ablation(d, seen))
        me.click("Ablation…")
        await until(lambda: "estimate" in seen, 20, "the dialog filled in")
        # 2. it opened on a plan of minutes, said how long, and says what each arm switches
        assert "about" in seen["opened with"] and " h " not in seen["opened with"], seen["opened with"]
        assert all(tip for tip in seen["tips"].values()), seen["tips"]
        # 3. the estimate followed the choices
        assert seen["estimate"].startswith("4 runs (2 arms × 2 seeds)"), seen["estimate"]
        # 4. the first run is shown live
        await until(lambda: me.state().startswith("outcome · seed 0"), 90, "the first arm shown")
        # its start says what ends it: the budget, not the iteration ceiling no arm reaches
        await until(lambda: any(cells[3].endswith(", until 900 env steps") for _, cells in win.events.model.items),
                    30, "the start in Events")
        # 5. when the group ends it opens as a comparison of its arms: a mean curve and band each
        await until(lambda: len(me.tabs()) == 2, 180, "the comparison tab")
        cmp = win.comparisons[-1]
        assert isinstance(cmp, GroupComparisonPanel) and cmp.column == "run:arm"
        assert [label for label, _ in cmp.groups] == list(ARMS) and all(len(runs) == 2 for _, runs in cmp.groups)
        assert sorted(r["name"] for r in me.history()) == [f"{arm} · seed {s}" for arm in ("full", "outcome")
                                                           for s in (0, 1)]
        # 6. the summary gives each arm's mean ± std of whole counts over its two seeds (halves at most)
        cmp.tabs.setCurrentIndex(1)
        table = cmp.summary_table
        counts = [table.item(r, c).text() for r in range(table.rowCount())
                  if "variants" in (table.verticalHeaderItem(r).text() if table.verticalHeaderItem(r) else "")
                  for c in range(table.columnCount()) if table.item(r, c)]
        means = [float(c.split(" ± ")[0]) for c in counts]
        assert counts and all(" ± " in c and (2 * m).is_integer() for c, m in zip(counts, means)), counts
        cmp.tabs.setCurrentIndex(0)
        await pause(0.3)                           # the panels are laid out, as on a screen
        # 7. smoothing: the slider shows its weight
        drag_slider(cmp.view.smoothing, 60)
        assert cmp.view.smoothing_value.text() not in ("", "off")
        # 8. env steps on x: every plot says so
        cmp.view.x_axis_box.setCurrentText("env steps")
        assert all(p.plotItem.getAxis("bottom").labelText == "env steps" for p in cmp.plots)
        # 9. exact values under the mouse, gone when the mouse leaves
        plot = cmp.plots[0]
        me.hover(plot, 0.98)
        assert plot.readout.item.isVisible()
        vb = plot.plotItem.vb
        size = f"{vb.width():.0f} × {vb.height():.0f} px in a {win.width()} × {win.height()} window"
        assert plot.plotItem.vb.height() >= 120 and plot.plotItem.vb.width() >= 200, f"the plot is {size}"
        assert plot.plotItem.vb.sceneBoundingRect().contains(plot.readout.item.sceneBoundingRect()), \
            f"the read-out is cut off at the plot's edge ({size})"
        me.leave(plot)
        assert not plot.readout.item.isVisible()
        # 10. File ▸ Export… exports the comparison in view, under a comparison's name
        answered = me.answer_file_dialog(None)
        me.menu("File ▸ Export…")
        await until(lambda: me.message().startswith("wrote"), 120, "the comparison exported")
        assert answered["proposed"].startswith("comparison-"), answered
        assert list(tmp_path.glob("comparison-*.html"))
        # 11. Ctrl+W closes the comparison; the dashboard stays
        win.views.setCurrentIndex(1)
        me.key(Key.Key_W, QtCore.Qt.KeyboardModifier.ControlModifier)
        await until(lambda: me.tabs() == ["Run"], 10, "the tab closed")
        assert not me.failure_boxes()

    drive(journey(), timeout=400)
    close_console(qtbot, win)
