"""Configurations written before the `lm` section and the judge's own PPO settings load to the
settings every role ran with then (rla_engine/config.py: MOVED_KEYS, JUDGE_PPO, merge).

The fixtures in tests/data/configs_before_lm/ were written by that code
(tests/data/make_configs_before_lm.py): what the runs table held for every preset, the defaults and
a language-model run with every moved setting off its default, that run's saved TOML, and the llm
presets as they shipped — each beside what each role ran with."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from rla_engine.config import (JUDGE_PPO, MOVED_KEYS, Config, ConfigError, build, current_key, from_dict, get_value,
                               merge, preset_names, profile_of)
from rla_engine.store import open_store
from rla_engine.summary import config_differences

BEFORE = Path(__file__).resolve().parent.parent / "data" / "configs_before_lm"
STORED: dict = json.loads((BEFORE / "stored.json").read_text(encoding="utf-8"))
FILES: dict = json.loads((BEFORE / "files.json").read_text(encoding="utf-8"))
SHARED = ("lora_rank", "lora_alpha", "micro_batch_size", "generation_batch_size")


def effective(cfg: Config) -> dict:
    """What each role runs with, read as llm/backend.py and loop/embedded.py read it."""
    shared = {name: getattr(cfg.lm, name) for name in SHARED}
    return {"policy": {**shared, **{name: getattr(cfg.policy, name) for name in JUDGE_PPO}},
            "judge": {**shared, **{name: getattr(cfg.judge, name) for name in JUDGE_PPO}},
            "env": {"generation_batch_size": cfg.lm.generation_batch_size}}


def same_values(cfg: Config, old: dict) -> None:
    """Every key of the earlier layout holds its value, wherever it lives now."""
    for section, values in old.items():
        for name, value in values.items():
            assert get_value(cfg, f"{section}.{name}") == value, f"{section}.{name}"


# presets first shipped after the lm section: no run of them was ever stored in the earlier layout
PRESETS_SINCE = {"llm-code-tiny", "llm-smol-code", "textworld", "textworld-commands"}


def test_the_fixtures_cover_every_preset_and_every_moved_setting():
    assert set(preset_names()) - PRESETS_SINCE <= set(STORED)
    custom = STORED["llm-custom"]["config"]
    for old, new in MOVED_KEYS.items():
        section, _, name = old.partition(".")
        assert custom[section][name] != get_value(Config(), new), old
    assert all(custom["policy"][name] != getattr(Config().policy, name) for name in JUDGE_PPO)


@pytest.mark.parametrize("name", sorted(STORED))
def test_a_stored_run_of_the_earlier_layout_loads_to_the_same_settings(name):
    cfg = from_dict(STORED[name]["config"])
    assert effective(cfg) == STORED[name]["effective"]
    same_values(cfg, STORED[name]["config"])


def test_a_run_stored_in_the_runs_table_resumes_with_the_same_settings(tmp_path):
    """The resume path (launch.py): the config JSON of a run row, through from_dict."""
    store = open_store(tmp_path / "before.db")
    store.create_run("old", name="old", preset="llm-tiny", config=STORED["llm-custom"]["config"], device="cpu")
    assert effective(from_dict(store.run_config("old"))) == STORED["llm-custom"]["effective"]


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_file_of_the_earlier_layout_loads_to_the_same_settings(name):
    assert effective(build(config_file=BEFORE / name)) == FILES[name]


# the embedded presets took the repaired judge, the language-model ones the verdict entropy bonus
# (issue 37, docs/RESULTS.md): their only changes since
REPAIRED = {"quickstart", "gridworld", "keyrooms", "arithmetic", "tiny"}
ENTROPY = {"llm-tiny", "llm-smol"}


@pytest.mark.parametrize("name", sorted(set(preset_names()) - PRESETS_SINCE))
def test_every_preset_keeps_its_settings(name):
    cfg = build(preset=name)
    assert effective(cfg) == STORED[name]["effective"]
    kept = STORED[name]["config"]
    if name in REPAIRED:
        assert profile_of(cfg) == "repaired"
        merge(cfg, {"judge": {"profile": "paper"}})
    if name in ENTROPY:
        assert cfg.judge.verdict_entropy == 0.1
        merge(cfg, {"judge": {"verdict_entropy": 0.0}})
    same_values(cfg, kept)


def test_a_config_written_now_round_trips_with_the_judges_own_settings():
    cfg = build(sets=["judge.ppo_epochs=5", "judge.minibatch_size=7", "judge.clip_eps=0.1", "judge.kl_beta=0.5"])
    assert from_dict(cfg.to_dict()) == cfg
    assert (cfg.policy.ppo_epochs, cfg.policy.minibatch_size, cfg.policy.clip_eps, cfg.policy.kl_beta) == \
           (2, 512, 0.2, 0.01)


@pytest.mark.parametrize("old, new", sorted(MOVED_KEYS.items()))
def test_a_moved_key_sets_the_key_where_it_lives_now(old, new):
    value = 3 if new.endswith(("rank", "size")) else 3.0
    for cfg in (build(sets=[f"{old}={value}"]), from_dict({"policy": {old.partition(".")[2]: value}})):
        assert get_value(cfg, new) == value and get_value(cfg, old) == value
    assert current_key(old) == new


def test_an_invalid_moved_key_is_named_as_given_and_where_it_lives_now():
    with pytest.raises(ConfigError) as e:
        build(sets=["policy.lora_rank=-1"])
    assert e.value.key == "policy.lora_rank"
    assert str(e.value) == "invalid config: policy.lora_rank = -1: must be ≥ 0 and ≤ 1024 " \
                           "(policy.lora_rank is now lm.lora_rank)"


@pytest.mark.parametrize("sets, key", [(["judge.ppo_epochs=0"], "judge.ppo_epochs"),
                                       (["judge.clip_eps=1.5"], "judge.clip_eps"),
                                       (["lm.micro_batch_size=0"], "lm.micro_batch_size")])
def test_the_new_fields_are_checked_like_every_field(sets, key):
    with pytest.raises(ConfigError) as e:
        build(sets=sets)
    assert e.value.key == key


def test_a_table_that_gives_only_the_policys_ppo_settings_gives_them_to_the_judge():
    """As every configuration did before the judge had its own; one that names the judge's keeps them."""
    cfg = from_dict({"policy": {"ppo_epochs": 4, "kl_beta": 0.5}})
    assert (cfg.judge.ppo_epochs, cfg.judge.kl_beta, cfg.judge.minibatch_size) == (4, 0.5, 512)
    cfg = from_dict({"policy": {"ppo_epochs": 4}, "judge": {"ppo_epochs": 1}})
    assert (cfg.policy.ppo_epochs, cfg.judge.ppo_epochs) == (4, 1)
    # a later table that does not name the policy's settings leaves the judge's as they are
    assert merge(cfg, {"judge": {"lr": 0.5}}).judge.ppo_epochs == 1


def test_on_the_command_line_the_policys_ppo_settings_are_the_policys_alone():
    cfg = build(preset="llm-tiny", sets=["policy.ppo_epochs=4"])
    assert (cfg.policy.ppo_epochs, cfg.judge.ppo_epochs) == (4, 1)


@pytest.mark.parametrize("name", ["llm-tiny", "llm-smol", "quickstart"])
def test_a_run_of_the_earlier_layout_beside_a_new_one_differs_nowhere(tmp_path, name):
    """What the comparison, the report and History's columns read: the same preset stored before
    and after the lm section has the same settings under the same keys (not the moved ones as
    missing on one side and new on the other); the repaired judge's two settings are the only
    change a preset has had since, and the paper's profile undoes it."""
    as_before = ["judge.profile=paper", "judge.verdict_entropy=0"]
    old, new = STORED[name]["config"], build(preset=name, sets=as_before).to_dict()
    assert config_differences([old, new]) == []
    changed = set(config_differences([old, build(preset=name).to_dict()]))
    assert changed == ({"judge.unanimous", "policy.step_verdicts"} if name in REPAIRED else {"judge.verdict_entropy"})
    store = open_store(tmp_path / "both.db")
    store.create_run("old", name="old", preset=name, config=old, device="cpu")
    store.create_run("new", name="new", preset=name, config=new, device="cpu")
    flat = store.flat_configs(["old", "new"])
    assert flat["old"] == flat["new"] and "lm.micro_batch_size" in flat["old"]
    assert not any(key in store.config_fields() for key in MOVED_KEYS)
