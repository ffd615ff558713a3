"""New-run panel (DESIGN §6): the form is generated from the config dataclasses, invalid fields are
marked inline with Start disabled, presets, save/load TOML, cloning a past run's config, and the
console never importing torch."""
from __future__ import annotations

import dataclasses
import gc
import json
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialogButtonBox, QDoubleSpinBox, QLineEdit,
                               QSpinBox, QToolButton, QWidget)

from rla_engine.ablation.arms import ARMS, AblationSpec
from rla_engine.config import Config, merge, preset_data
from rla_engine.tasks import family_names
from rla_gui.panels.run_form import RunFormPanel
from rla_gui.widgets import file_dialogs
from rla_gui.widgets.ablation_dialog import (FIRST_ABLATION_ARMS, FIRST_ABLATION_BUDGET, FIRST_ABLATION_PRESET,
                                             FIRST_ABLATION_S, AblationDialog, duration_text)


def _all_fields() -> dict[str, dataclasses.Field]:
    """Every config field by dotted key, straight from the dataclasses (not from the form)."""
    cfg = Config()
    return {f"{s.name}.{f.name}": f
            for s in dataclasses.fields(Config) for f in dataclasses.fields(getattr(cfg, s.name))}


@pytest.fixture
def panel(qtbot) -> RunFormPanel:
    p = RunFormPanel()
    qtbot.addWidget(p)
    return p


def _invalid(panel: RunFormPanel) -> set[str]:
    return {k for k, e in panel.form.editors.items() if e.widget.property("invalid")}


# ----------------------------------------------------------------------------- generated form


def test_one_editor_per_dataclass_field(panel):
    fields = _all_fields()
    assert len(fields) > 20  # the walk above really found the sections
    assert list(panel.form.editors) == list(fields)  # each field once, in declaration order
    rows = sum(box.layout().rowCount() for box in panel.form.groups.values())
    assert rows == len(fields)


def test_editor_kind_and_range_follow_type_and_metadata(panel):
    for key, f in _all_fields().items():
        w, meta = panel.form.editors[key].widget, f.metadata
        if "choices" in meta:
            kind = QComboBox
        elif meta.get("path") == "model":       # a model source: typed, picked from the built-ins, or browsed
            kind = QWidget
            combo = w.findChild(QComboBox)
            assert combo.isEditable() and [combo.itemText(i) for i in range(combo.count())] == ["", *meta["sources"]]
            assert w.findChild(QToolButton) is not None, key
        else:
            kind = {"int": QSpinBox, "float": QDoubleSpinBox, "bool": QCheckBox,
                    "list": QLineEdit, "str": QLineEdit}[f.type]
        assert isinstance(w, kind), key
        if isinstance(w, (QSpinBox, QDoubleSpinBox)):
            if "min" in meta:
                assert w.minimum() == meta["min"], key
            if "max" in meta:
                assert w.maximum() == meta["max"], key
        assert w.toolTip() == meta["help"] and w.whatsThis() == meta["help"], key
    family = panel.form.editors["task.family"].widget
    assert [family.itemData(i) for i in range(family.count())] == family_names()


def test_a_text_family_needs_a_model_and_the_model_field_takes_one(panel):
    form = panel.form
    form.editors["task.family"].set_value("text_arithmetic")
    assert form.editors["task.family"].error() and "policy.model_path" in form.editors["task.family"].error()
    assert not panel.start_button.isEnabled()
    form.editors["policy.model_path"].set_value("tiny-random")
    assert form.editors["task.family"].error() is None and panel.start_button.isEnabled()
    assert form.config().policy.model_path == "tiny-random"


# ----------------------------------------------------------------------------- start and validation


def test_defaults_start_emits_default_config_and_name(panel, qtbot):
    assert panel.start_button.isEnabled() and panel.error_label.text() == ""
    assert panel.start_button.isDefault()
    qtbot.keyClicks(panel.name_edit, "first try")
    with qtbot.waitSignal(panel.start_requested, timeout=1000) as sig:
        qtbot.mouseClick(panel.start_button, Qt.MouseButton.LeftButton)
    cfg, preset, name = sig.args
    assert isinstance(cfg, Config) and cfg == Config()
    assert (preset, name) == ("", "first try")


def test_enter_in_the_name_field_starts(panel, qtbot):
    with qtbot.waitSignal(panel.start_requested, timeout=1000):
        qtbot.keyClick(panel.name_edit, Qt.Key.Key_Return)


def test_band_low_above_band_high_marks_field_and_disables_start(panel, qtbot):
    low = panel.form.editors["judge.band_low"]
    low.widget.setValue(0.9)
    assert _invalid(panel) == {"judge.band_low"}
    assert "judge.band_high" in low.widget.toolTip()
    assert "judge.band_low" in panel.error_label.text()
    assert not panel.start_button.isEnabled()
    with qtbot.assertNotEmitted(panel.start_requested):
        qtbot.keyClick(panel.name_edit, Qt.Key.Key_Return)  # Enter must not bypass validation
    low.widget.setValue(0.1)
    assert _invalid(panel) == set() and panel.error_label.text() == ""
    assert panel.start_button.isEnabled()
    assert low.widget.toolTip() == low.help  # the help comes back once the error is gone


@pytest.mark.parametrize("text, why", [("0.1, x", "'x' is not a number"), ("0.1, 1.5", "≤ 1.0")])
def test_bad_tiers_mark_the_list_field(panel, qtbot, text, why):
    tiers = panel.form.editors["eval.tiers"].widget
    tiers.clear()
    qtbot.keyClicks(tiers, text)
    assert _invalid(panel) == {"eval.tiers"}
    assert "eval.tiers" in panel.error_label.text() and why in panel.error_label.text()
    assert not panel.start_button.isEnabled()
    tiers.setText("0.2, 0.4")
    assert panel.start_button.isEnabled()
    assert panel.form.config().eval.tiers == [0.2, 0.4]


def test_a_long_editing_session_keeps_the_reference_to_true(panel, qtbot):
    # PySide6 6.12's Python-side Signal.emit() drops a reference to True per call; on Python
    # 3.11 (no immortal objects) that aborts the console after a few hundred edits. The form
    # relays its change signals inside Qt, so editing must not leak at all.
    spin = panel.form.editors["policy.lam"].widget
    gc.collect()  # freeing earlier tests' objects mid-loop would move the count too
    gc.disable()
    try:
        before = sys.getrefcount(True)
        for i in range(1000):
            spin.setValue(0.5 + (i % 2))
        qtbot.keyClicks(panel.form.editors["eval.tiers"].widget, "5")  # invalid, then fixed below
        panel.form.editors["eval.tiers"].widget.setText("0.1")
        lost = before - sys.getrefcount(True)
    finally:
        gc.enable()
    assert lost < 50  # a Python emit per edit would lose ≥ 1000
    assert panel.start_button.isEnabled()


# ----------------------------------------------------------------------------- presets, files, clone


def test_arithmetic_preset_fills_the_form_and_is_emitted(panel, qtbot):
    panel.form.editors["policy.lam"].widget.setValue(3.0)  # a preset resets earlier edits
    panel.preset_combo.setCurrentIndex(panel.preset_combo.findData("arithmetic"))
    assert panel.form.editors["task.family"].value() == "arithmetic"
    assert panel.form.config() == merge(Config(), preset_data("arithmetic"))
    with qtbot.waitSignal(panel.start_requested, timeout=1000) as sig:
        panel.start_button.click()
    assert sig.args[1] == "arithmetic"
    panel.preset_combo.setCurrentIndex(0)
    assert panel.form.config() == Config()


def _changed_config() -> Config:
    cfg = Config()
    cfg.task.family, cfg.policy.lam, cfg.policy.lr = "arithmetic", 0.5, 3e-7
    cfg.judge.train, cfg.run.device, cfg.eval.tiers = False, "cpu", [0.25, 0.75]
    return cfg


def test_save_then_load_toml_round_trips(panel, qtbot, tmp_path, monkeypatch):
    target = tmp_path / "mine.toml"
    monkeypatch.setattr(file_dialogs, "save_file_name", lambda *a, **k: (str(target), ""))
    monkeypatch.setattr(file_dialogs, "open_file_name", lambda *a, **k: (str(target), ""))
    expected = _changed_config()
    panel.form.set_config(expected)
    panel.save_button.click()
    assert tomllib.loads(target.read_text(encoding="utf-8")) == expected.to_dict()
    panel.form.set_config(Config())
    _load(panel, qtbot)
    assert panel.form.config() == expected and panel.error_label.text() == ""


def _load(panel, qtbot) -> None:
    """Load TOML…, waiting for the file, which is read off the GUI thread."""
    panel.load_button.click()
    qtbot.waitUntil(panel.load_button.isEnabled)


def test_loading_a_bad_file_shows_the_error(panel, qtbot, tmp_path, monkeypatch):
    bad = tmp_path / "bad.toml"
    bad.write_text("[judge]\nbogus = 1\n", encoding="utf-8")
    monkeypatch.setattr(file_dialogs, "open_file_name", lambda *a, **k: (str(bad), ""))
    _load(panel, qtbot)
    assert "judge.bogus" in panel.error_label.text()
    assert panel.form.config() == Config()  # the form is left as it was
    bad.write_text("not = [toml", encoding="utf-8")
    _load(panel, qtbot)
    assert "not valid TOML" in panel.error_label.text()


def test_load_config_clones_a_past_run(panel):
    past = _changed_config()
    assert panel.load_config(past.to_dict(), "arithmetic")
    assert panel.form.config() == past and panel.preset() == "arithmetic"
    assert not panel.load_config({"policy": {"nonsense": 1}})
    assert "policy.nonsense" in panel.error_label.text()
    assert panel.form.config() == past


def test_cloning_a_run_stored_before_the_lm_section_fills_the_settings_it_ran_with(panel):
    """Its policy.* language-model settings land in lm.*, its policy's PPO settings in the judge's too."""
    stored = json.loads((Path(__file__).resolve().parent.parent / "data" / "configs_before_lm" / "stored.json")
                        .read_text(encoding="utf-8"))["llm-custom"]
    assert panel.load_config(stored["config"], "llm-tiny")
    editors, old_policy = panel.form.editors, stored["config"]["policy"]
    for name in ("lora_rank", "lora_alpha", "micro_batch_size", "generation_batch_size"):
        assert editors[f"lm.{name}"].value() == old_policy[name], name
    for name in ("ppo_epochs", "minibatch_size", "clip_eps", "kl_beta"):
        assert editors[f"judge.{name}"].value() == editors[f"policy.{name}"].value() == old_policy[name], name
    assert panel.error_label.text() == ""


# ----------------------------------------------------------------------------- import boundary


def test_building_the_panel_does_not_import_torch():
    code = textwrap.dedent("""
        import sys
        from PySide6.QtWidgets import QApplication
        import rla_gui.panels.run_form as run_form
        app = QApplication([])
        panel = run_form.RunFormPanel()
        loaded = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))
        print("editors", len(panel.form.editors), "torch", loaded, flush=True)
    """)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    # Judged on what the child printed, not its exit status: PySide6 6.12 on Python 3.11 can
    # abort at interpreter shutdown (see FieldEditor), after the check has already run.
    assert f"editors {len(_all_fields())} torch []" in done.stdout, done.stdout + done.stderr


def test_the_ablation_dialog_accepts_what_rla_ablate_accepts(qtbot):
    dialog = AblationDialog()
    qtbot.addWidget(dialog)
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    # opens on a small ablation (tests/gui/test_forms_in_use.py: minutes, not hours)
    assert ok.isEnabled() and dialog.spec().arms == ["outcome", "full", "outcome+env"]
    assert dialog.spec().seeds == [0, 1] and len(ARMS) == dialog.arms.count()
    dialog.seeds.setText("0,x")
    assert not ok.isEnabled() and "--seeds" in dialog.error.text()
    dialog.seeds.setText("3, 5")
    for i in range(dialog.arms.count()):
        if dialog.arms.item(i).text() not in ("full", "outcome+env"):
            dialog.arms.item(i).setCheckState(Qt.CheckState.Unchecked)
    assert ok.isEnabled() and dialog.spec().arms == ["full", "outcome+env"] and dialog.spec().seeds == [3, 5]
    for i in range(dialog.arms.count()):
        dialog.arms.item(i).setCheckState(Qt.CheckState.Unchecked)
    assert not ok.isEnabled() and "--arms" in dialog.error.text()


def test_ablation_button_emits_the_forms_config_with_the_dialogs_choices(panel, qtbot):
    spec = AblationSpec([1], 5000, ["outcome", "full"], 1)
    panel.ask_ablation = lambda: (spec, "")
    panel.preset_combo.setCurrentText("tiny")
    with qtbot.waitSignal(panel.ablation_requested) as got:
        panel.ablation_button.click()
    cfg, preset, chosen = got.args
    assert preset == "tiny" and chosen == spec and cfg.rollout.tasks_per_iter == 4
    panel.form.editors["judge.band_low"].widget.setValue(0.95)     # an invalid form starts no ablation
    assert not panel.ablation_button.isEnabled()


def test_a_newcomers_first_ablation_is_the_one_that_shows_the_method(panel, qtbot, monkeypatch):
    """The form as the console opens it (the quickstart, untouched) offers the keyrooms ablation with
    the oracle's ceiling; an edited form or another preset offers the form, as the button says."""
    shown: list[AblationDialog] = []
    monkeypatch.setattr(AblationDialog, "exec", lambda d: shown.append(d) or AblationDialog.DialogCode.Rejected)
    panel.preset_combo.setCurrentText("quickstart")
    panel.ablation_button.click()
    first = shown[-1]
    assert first.base_preset() == FIRST_ABLATION_PRESET and sorted(first.spec().arms) == sorted(FIRST_ABLATION_ARMS)
    assert first.spec().budget == FIRST_ABLATION_BUDGET and "quickstart" in first.base.itemText(1)
    # it says the time it took on two cores; another plan gets the estimate every plan gets
    assert first.estimate.text().endswith(f"about {duration_text(FIRST_ABLATION_S)}, as measured.")
    first.seeds.setText("0,1,2")
    assert "as measured" not in first.estimate.text() and "12 runs" in first.estimate.text()
    first.base.setCurrentIndex(1)       # back to the form: its own small plan
    assert first.base_preset() == "" and first.spec().arms == ["outcome", "full", "outcome+env"]
    assert first.spec().budget != FIRST_ABLATION_BUDGET
    panel.form.editors["policy.lam"].widget.setValue(0.5)
    panel.ablation_button.click()
    assert shown[-1].base_preset() == "" and "quickstart, edited" in shown[-1].base.currentText()
    panel.preset_combo.setCurrentText("arithmetic")
    panel.ablation_button.click()
    assert shown[-1].base_preset() == ""


def test_the_first_ablation_starts_on_its_preset_whatever_the_form_holds(panel, qtbot):
    spec = AblationSpec([0], 1000, ["outcome", "full"], 1)
    panel.ask_ablation = lambda: (spec, FIRST_ABLATION_PRESET)
    panel.preset_combo.setCurrentText("tiny")
    with qtbot.waitSignal(panel.ablation_requested) as got:
        panel.ablation_button.click()
    cfg, preset, chosen = got.args
    assert preset == FIRST_ABLATION_PRESET and chosen == spec
    assert cfg == merge(Config(), preset_data(FIRST_ABLATION_PRESET)) and cfg.task.family == "keyrooms"
