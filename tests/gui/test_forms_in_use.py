"""The console in real use: numbers typed into the form arrive as typed, the run name
follows what the user did not type, the Samples and Task pool docks read at their default width
(~330 px), and the ablation dialog opens on minutes of work and says how long it will take."""
from __future__ import annotations

import dataclasses
import re

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetrics, QTextDocument
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QStyle

from rla_engine.ablation.arms import ARMS, DIAGNOSTIC_ARMS
from rla_engine.config import Config, ConfigError, preset_data, set_value
from rla_gui.panels.pool_table import PoolTablePanel
from rla_gui.panels.run_form import RunFormPanel
from rla_gui.panels.samples import SamplesPanel
from rla_gui.widgets import file_dialogs
from rla_gui.widgets.ablation_dialog import AblationDialog
from rla_gui.widgets.field_editors import editor_for

DOCK_WIDTH = 330        # the right-hand docks' default width (main_window.resizeDocks)


@pytest.fixture
def panel(qtbot) -> RunFormPanel:
    p = RunFormPanel()
    qtbot.addWidget(p)
    return p


def _float_fields() -> dict[str, dataclasses.Field]:
    cfg = Config()
    return {f"{s.name}.{f.name}": f for s in dataclasses.fields(Config)
            for f in dataclasses.fields(getattr(cfg, s.name)) if f.type == "float"}


def _allowed(key: str, value: float) -> bool:
    """Whether the engine's own check takes this value for this field (relations aside)."""
    try:
        set_value(Config(), key, value)
        return True
    except ConfigError:
        return False


def _type_into(qtbot, widget, text: str) -> None:
    """Replace the field's text by typing, as a user does."""
    widget.lineEdit().selectAll()
    qtbot.keyClicks(widget, text)


# Spellings a user types or copies from a paper or a TOML file: exponents, many places, signs.
TYPED = ("3e-6", "0.000003", "1e-8", "1e-12", "-0.001", "0.001", "0.123456789", "12.5", "1234.5678", "2.5E-4")


# ----------------------------------------------------------------------------- 1. numbers as typed


def test_every_float_field_takes_every_value_its_range_allows(panel, qtbot):
    fields = _float_fields()
    assert len(fields) > 20
    tried = 0
    for key, f in fields.items():
        meta, widget = f.metadata, panel.form.editors[key].widget
        bounds = [repr(b) for b in (meta.get("min"), meta.get("max")) if b is not None]
        for text in (*TYPED, *bounds):
            value = float(text)
            if not _allowed(key, value):
                continue
            tried += 1
            _type_into(qtbot, widget, text)
            assert widget.text() == text, (key, text)                     # shown as typed, nothing cut
            # an error now can only be a relation to another field (band_low < band_high), never the number
            assert "must be a number" not in (panel.form.editors[key].error() or ""), (key, text)
            assert getattr(getattr(panel.form.config(), key.split(".")[0]), f.name) == value, (key, text)
            # and shown back unrounded when a config holding it is loaded
            cfg = Config()
            setattr(getattr(cfg, key.split(".")[0]), f.name, value)
            panel.form.set_config(cfg)
            assert float(widget.text()) == value, (key, text, widget.text())
            assert getattr(getattr(panel.form.config(), key.split(".")[0]), f.name) == value
        panel.form.set_config(Config())
    assert tried > 150
    # a learning rate in scientific notation (once refused), in every spelling
    for text in ("3e-6", "0.000003", "1e-8"):
        _type_into(qtbot, panel.form.editors["policy.lr"].widget, text)
        assert panel.form.config().policy.lr == float(text) and panel.start_button.isEnabled()


@dataclasses.dataclass
class _Signed:
    offset: float = dataclasses.field(default=0.0, metadata={"help": "A signed offset.", "min": -1.0, "max": 1.0})


def test_a_negative_number_is_taken_where_the_range_allows_it(qtbot):
    editor = editor_for("x.offset", dataclasses.fields(_Signed)[0])
    qtbot.addWidget(editor.widget)
    for text in ("-0.001", "-3e-6", "-1"):
        _type_into(qtbot, editor.widget, text)
        assert editor.widget.text() == text and editor.value() == float(text)


def test_a_number_out_of_range_stays_as_typed_and_the_field_says_why(panel, qtbot):
    lam = panel.form.editors["policy.lam"]          # λ ≥ 0: a negative is refused, visibly
    _type_into(qtbot, lam.widget, "-0.001")
    assert lam.widget.text() == "-0.001"            # not "-0.00", which silently meant 0
    assert lam.widget.property("invalid") and "≥ 0" in lam.widget.toolTip()
    assert "policy.lam = -0.001" in panel.error_label.text() and not panel.start_button.isEnabled()
    _type_into(qtbot, lam.widget, "0.5")
    assert lam.error() is None and panel.start_button.isEnabled() and panel.form.config().policy.lam == 0.5


def test_a_half_typed_number_is_named_not_guessed(panel, qtbot):
    lr = panel.form.editors["policy.lr"]
    _type_into(qtbot, lr.widget, "1e-")
    assert lr.widget.text() == "1e-" and "policy.lr" in panel.error_label.text()
    assert not panel.start_button.isEnabled()
    qtbot.keyClicks(lr.widget, "5")
    assert lr.error() is None and panel.form.config().policy.lr == 1e-5
    _type_into(qtbot, lr.widget, "1x")                 # a letter in a number is not taken at all
    assert lr.widget.text() == "1"


def test_the_arrows_step_to_clean_numbers(panel):
    clip = panel.form.editors["policy.clip_eps"].widget
    clip.stepBy(1)
    clip.stepBy(3)
    assert clip.text() == "0.24" and panel.form.config().policy.clip_eps == 0.24


# ----------------------------------------------------------------------------- 2. the run name


def test_scrolling_the_form_over_any_field_changes_no_value(panel, qtbot):
    """A wheel notch over a model path's list set it to a built-in model (the form went invalid
    and Start greyed; seen at the console under Xvfb): a field takes the wheel only when focused."""
    from PySide6.QtCore import QPoint, QPointF
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication, QComboBox, QWidget
    panel.resize(360, 700)
    panel.show()
    before = {key: e.raw() for key, e in panel.form.editors.items()}
    for editor in panel.form.editors.values():
        targets = [editor.widget, *editor.widget.findChildren(QComboBox)]
        for target in targets:
            if not isinstance(target, QWidget):
                continue
            for delta in (120, -120, -120):
                event = QWheelEvent(QPointF(5, 5), QPointF(target.mapToGlobal(QPoint(5, 5))), QPoint(0, 0),
                                    QPoint(0, delta), Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
                                    Qt.ScrollPhase.NoScrollPhase, False)
                QApplication.sendEvent(target, event)
    after = {key: e.raw() for key, e in panel.form.editors.items()}
    assert after == before, {k: (before[k], after[k]) for k in before if before[k] != after[k]}


def test_an_untyped_run_name_follows_the_preset(panel, qtbot):
    assert panel.name_edit.text() == ""
    for preset in ("quickstart", "tiny"):
        panel.preset_combo.setCurrentText(preset)
        assert panel.name_edit.text() == "" and preset in panel.name_edit.placeholderText()
    assert "quickstart" not in panel.name_edit.placeholderText()
    panel.preset_combo.setCurrentIndex(0)                 # no preset: the engine names it by family
    assert "gridworld" in panel.name_edit.placeholderText()
    with qtbot.waitSignal(panel.start_requested, timeout=1000) as sig:
        panel.start_button.click()
    assert sig.args[2] == ""                                # the engine gives the automatic name


def test_a_typed_name_stays_across_presets_but_not_into_a_cloned_config(panel, qtbot, tmp_path, monkeypatch):
    qtbot.keyClicks(panel.name_edit, "my sweep")
    panel.preset_combo.setCurrentText("tiny")               # typed for this form: kept
    assert panel.name_edit.text() == "my sweep"
    assert panel.load_config(preset_data("keyrooms"), "keyrooms")     # a past run's config, cloned
    assert panel.name_edit.text() == "" and "keyrooms" in panel.name_edit.placeholderText()
    with qtbot.waitSignal(panel.start_requested, timeout=1000) as sig:
        panel.start_button.click()
    assert sig.args[1:] == ["keyrooms", ""]
    # a file loaded into the form is another run's too
    qtbot.keyClicks(panel.name_edit, "second")
    path = tmp_path / "run.toml"
    path.write_text(Config().to_toml(), encoding="utf-8")
    monkeypatch.setattr(file_dialogs, "open_file_name", lambda *a, **k: (str(path), ""))
    panel.load_button.click()
    qtbot.waitUntil(panel.load_button.isEnabled)        # the file is read off the GUI thread
    assert panel.name_edit.text() == "" and panel.preset() == ""


# ----------------------------------------------------------------------------- 3. samples


LONG_TASK = "add 12345 and 67890, then multiply the sum by 3 and subtract 7, and say the result " * 2


def _payload() -> dict:
    def step(text, verdicts):
        return {"text": text, "verdicts": verdicts, "reasoning": [f"why {i}" for i in range(len(verdicts))],
                "oracle": 1}
    trajs = [{"slot": s, "success": s % 2 == 0, "task": f"{LONG_TASK} #{s}",
              "turns": [{"steps": [step("2 + 3 = 5", [1, -1, 0])], "observation": "ok"}]} for s in range(4)]
    variants = [{"slot": 1, "direction": "harder", "outcome": "rejected", "reason": LONG_TASK, "task": LONG_TASK,
                 "critic": "c", "answer": "a"}]
    return {"family": "text_arithmetic", "trajectories": trajs, "variants": variants}


@pytest.fixture
def samples(qtbot) -> SamplesPanel:
    p = SamplesPanel()
    qtbot.addWidget(p)
    p.resize(DOCK_WIDTH, 600)
    p.show()
    qtbot.waitExposed(p)
    p.show_samples(_payload(), 5)
    return p


def _fits(qtbot, view) -> None:
    """Every item of a list is inside its viewport's width: nothing runs off to the right."""
    qtbot.waitUntil(lambda: view.visualItemRect(view.item(0)).width() > 0, timeout=2000)
    width = view.viewport().width()
    assert view.horizontalScrollBar().maximum() == 0
    for i in range(view.count()):
        rect = view.visualItemRect(view.item(i))
        assert rect.right() < width, (view.item(i).text(), rect, width)


def test_samples_lists_wrap_at_the_dock_width_with_the_whole_text_in_a_tooltip(samples, qtbot):
    _fits(qtbot, samples.trajectories)
    assert LONG_TASK.strip() in samples.trajectories.item(0).toolTip()
    samples.tabs.setCurrentIndex(1)
    _fits(qtbot, samples.variant_list)
    assert LONG_TASK.strip()[:60] in samples.variant_list.item(0).toolTip()


def _plain(html: str) -> str:
    doc = QTextDocument()
    doc.setHtml(html)
    return doc.toPlainText().replace("\xa0", " ")


def test_verdicts_are_explained_where_they_are_shown(samples):
    legend = samples.findChild(type(samples.header), "verdict_legend")
    assert legend is not None and legend.isVisible()
    text = _plain(legend.text())
    for meaning in ("+1 = step right", "−1 = step wrong", "0 = unreadable"):
        assert meaning in text
    assert legend.width() <= DOCK_WIDTH and "\\boxed" in legend.toolTip()
    samples.select_step(0, 0)
    reasoning = samples.reasoning.toPlainText()
    assert "judge 1 (+1 = step right):\nwhy 0" in reasoning and "judge 3 (0 = unreadable):\nwhy 2" in reasoning
    doc = samples.dialogue.toPlainText()
    zero = doc.index("+1 −1 0") + len("+1 −1 ")
    assert "unreadable" in samples.dialogue.mark_tip(zero)
    assert "step wrong" in samples.dialogue.mark_tip(zero - 2)
    assert "label" in samples.dialogue.mark_tip(doc.index("oracle +1"))


# ----------------------------------------------------------------------------- 4. task pool


def _pool_rows(n: int = 64) -> list[dict]:
    rows = [{"slot": s, "version": s % 17, "family": "gridworld", "status": "active", "difficulty": s / n,
             "last_acc": 0.125} for s in range(n)]
    rows += [{"slot": 3, "version": 9, "family": "gridworld", "difficulty": 0.61, "status": "pending",
              "direction": "harder"},
             {"slot": 5, "version": 2, "family": "gridworld", "difficulty": 0.2, "status": "pending",
              "direction": "easier"}]
    return rows


def test_every_pool_column_reads_whole_at_the_dock_width(qtbot):
    pool = PoolTablePanel()
    qtbot.addWidget(pool)
    pool.resize(DOCK_WIDTH, 300)
    pool.show()
    qtbot.waitExposed(pool)
    pool.set_rows(_pool_rows())
    view, header = pool.view, pool.view.horizontalHeader()
    bold = QFont(header.font())
    bold.setBold(True)
    margin = header.style().pixelMetric(QStyle.PixelMetric.PM_HeaderMargin, None, header)
    shown = [c for c in range(header.count()) if not header.isSectionHidden(c)]
    assert len(shown) >= 6
    for sorted_by in shown:
        view.sortByColumn(sorted_by, Qt.SortOrder.AscendingOrder)
        qtbot.waitUntil(lambda: header.length() > 0, timeout=2000)
        assert header.length() <= view.viewport().width(), sorted_by          # all in view, no scrolling
        assert view.horizontalScrollBar().maximum() == 0
        for c in shown:
            label = pool.model.headerData(c, Qt.Orientation.Horizontal)
            # no header elided ("Las…"), no value cut
            assert header.sectionSize(c) >= QFontMetrics(bold).horizontalAdvance(label) + 2 * margin, label
            assert header.sectionSize(c) >= view.sizeHintForColumn(c), label
    for c in range(header.count()):            # short labels say in full what they hold
        assert pool.model.headerData(c, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)
    # the family, the same on every line of a run's pool, is said once above the table
    assert "gridworld" in pool.caption.text() and "64 slots" in pool.caption.text()
    assert not any(pool.proxy.index(0, c).data() == "gridworld" for c in shown)


# ----------------------------------------------------------------------------- 5. ablation dialog


def _minutes(text: str) -> float:
    m = re.search(r"about (?:(\d+) h )?(\d+) (s|min)", text)
    assert m, text
    hours, n, unit = int(m.group(1) or 0), int(m.group(2)), m.group(3)
    return hours * 60 + (n / 60 if unit == "s" else n)


def test_the_ablation_dialog_opens_on_minutes_and_says_how_long(qtbot):
    dialog = AblationDialog()
    qtbot.addWidget(dialog)
    spec = dialog.spec()
    assert len(spec.arms) * len(spec.seeds) <= 8 and spec.budget < 2_000_000
    assert dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).isEnabled()
    assert _minutes(dialog.estimate.text()) <= 10                          # minutes on two cores
    assert f"{len(spec.arms) * len(spec.seeds)} runs" in dialog.estimate.text()
    # the study of docs/RESULTS.md, one run at a time: hours, and the dialog says so before Start
    dialog.seeds.setText("0,1,2")
    for i in range(dialog.arms.count()):
        dialog.arms.item(i).setCheckState(Qt.CheckState.Checked)
    dialog.budget.setValue(2_000_000)
    dialog.jobs.setValue(1)
    hours = _minutes(dialog.estimate.text())
    assert hours >= 60 and f"{len(ARMS) * 3} runs" in dialog.estimate.text()
    if dialog.jobs.maximum() >= 2:
        dialog.jobs.setValue(2)
        assert _minutes(dialog.estimate.text()) < hours
    assert "steps a second" in dialog.estimate.toolTip()


def test_each_arm_says_what_it_switches(qtbot):
    dialog = AblationDialog()
    qtbot.addWidget(dialog)
    arms = [dialog.arms.item(i).data(Qt.ItemDataRole.UserRole) for i in range(dialog.arms.count())]
    assert arms == list(ARMS)
    for i, arm in enumerate(arms):
        item = dialog.arms.item(i)
        tip = item.toolTip()
        assert len(tip) > 40, arm
        for key, _value in ARMS[arm]:
            assert key in tip, (arm, key)
        # a diagnostic arm says so in the list and in its tooltip; a learning arm does not
        diagnostic = arm in DIAGNOSTIC_ARMS
        assert item.text() == (f"{arm} (diagnostic)" if diagnostic else arm)
        assert ("DIAGNOSTIC, not a learner" in tip) == diagnostic


def test_a_language_model_ablation_gets_a_budget_it_can_finish(panel, monkeypatch):
    shown: list[AblationDialog] = []

    def look(dialog):
        shown.append(dialog)
        return QDialog.DialogCode.Rejected
    monkeypatch.setattr(AblationDialog, "exec", look)
    panel.preset_combo.setCurrentText("tiny")
    panel.ablation_button.click()
    panel.preset_combo.setCurrentText("llm-tiny")
    panel.ablation_button.click()
    tensor, text = shown
    assert text.budget.value() < tensor.budget.value() / 100      # language-model steps are far slower
    assert _minutes(text.estimate.text()) <= 10
