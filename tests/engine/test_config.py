"""Run configuration (DESIGN §5): defaults, presets, validation messages, `--set` parsing, TOML
round trips, build() precedence, and the import boundaries (config is torch-free, the engine
never imports Qt)."""
from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
import tomllib

import pytest

from rla_engine.config import (PROFILE_KEY, SECTIONS, Config, ConfigError, build, from_dict, get_value, parse_set,
                               preset_data, preset_description, preset_names, profile_of, section_fields, set_value,
                               validate)
from rla_engine.tasks import family_names


def _flatten(data: dict) -> dict:
    return {f"{s}.{k}": v for s, values in data.items() for k, v in values.items()}


# ----------------------------------------------------------------------------- defaults, presets


def test_defaults_validate_and_match_the_design():
    cfg = validate(Config())
    assert cfg == Config()
    assert build() == Config()
    # the defaults DESIGN §5 gives
    assert (cfg.task.pool_size, cfg.task.dataset_low, cfg.task.dataset_high) == (64, 0.0, 1.0)
    assert (cfg.rollout.tasks_per_iter, cfg.rollout.rollouts_per_task) == (16, 8)
    assert (cfg.policy.lam, cfg.policy.clip_eps, cfg.policy.kl_beta) == (1.0, 0.2, 0.01)
    assert (cfg.judge.m, cfg.judge.train, cfg.judge.band_low, cfg.judge.band_high) == (3, True, 0.2, 0.8)
    assert (cfg.env.strategy, cfg.env.low, cfg.env.high, cfg.env.tries) == ("rlanything", 0.2, 0.8, 3)
    assert (cfg.policy.mu_gate, cfg.env.critic, cfg.judge.weighting) == (False, "judge", "paper")
    assert cfg.run.env_step_budget == 0
    assert (cfg.eval.every, cfg.eval.tasks_per_tier, cfg.eval.tiers) == (10, 32, [0.1, 0.3, 0.5, 0.7, 0.9])
    assert cfg.run.stale_after_s == 15.0 and cfg.run.keep_checkpoints == 3
    assert cfg.task.family in family_names()


def test_default_lists_are_not_shared_between_configs():
    a, b = Config(), Config()
    a.eval.tiers.append(0.95)
    assert b.eval.tiers == [0.1, 0.3, 0.5, 0.7, 0.9]


def test_preset_names_lists_the_shipped_presets():
    assert {"quickstart", "gridworld", "arithmetic"} <= set(preset_names())


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_builds_and_applies_its_values(name):
    cfg = build(preset=name)
    assert cfg.task.family in family_names()
    data = _flatten(preset_data(name))
    assert data, f"preset {name} sets nothing"
    for key, value in data.items():
        if key == PROFILE_KEY:      # a switch, not a field: it holds the settings it stands for
            assert profile_of(cfg) == value, key
        else:
            assert get_value(cfg, key) == value, key
    assert preset_description(name)          # every preset starts with a '# description' line


# ----------------------------------------------------------------------------- invalid inputs


def _from_set(assignment):
    return lambda: build(sets=[assignment])


def _from_dict(data):
    return lambda: from_dict(data)


# (id, call, field named, value text named, text of what is allowed)
INVALID = [
    ("unknown-section-toml", _from_dict({"nosuch": {"x": 1}}), "nosuch", "'x': 1", "task"),
    ("wrong-type-lam", _from_set('policy.lam="x"'), "policy.lam", "'x'", "number"),
    ("wrong-type-lam-toml", _from_dict({"policy": {"lam": "x"}}), "policy.lam", "'x'", "number"),
    ("float-for-int-m", _from_set("judge.m=1.5"), "judge.m", "1.5", "integer"),
    ("int-for-bool-train", _from_set("judge.train=1"), "judge.train", "1", "true or false"),
    ("m-zero", _from_set("judge.m=0"), "judge.m", "0", "≥ 1"),
    ("tasks-per-iter-zero", _from_set("rollout.tasks_per_iter=0"), "rollout.tasks_per_iter", "0", "≥ 1"),
    ("lam-negative", _from_set("policy.lam=-0.1"), "policy.lam", "-0.1", "≥ 0"),
    ("lr-zero-exclusive", _from_set("policy.lr=0"), "policy.lr", "0", "> 0"),
    ("lam-nan", _from_set("policy.lam=nan"), "policy.lam", "nan", "finite"),
    ("unknown-family", _from_set("task.family=chess"), "task.family", "chess", "gridworld"),
    ("unknown-device", _from_set("run.device=gpu"), "run.device", "gpu", "cuda"),
    ("unknown-preset", lambda: build(preset="nope"), "preset", "nope", "quickstart"),
    ("judge-band-equal", _from_set("judge.band_low=0.8"), "judge.band_low", "0.8", "judge.band_high"),
    ("env-low-above-high", lambda: build(sets=["env.low=0.9", "env.high=0.5"]), "env.low", "0.9", "env.high"),
    ("dataset-low-above-high", _from_dict({"task": {"dataset_low": 0.7, "dataset_high": 0.3}}),
     "task.dataset_low", "0.7", "task.dataset_high"),
    ("tasks-per-iter-above-pool", _from_dict({"task": {"pool_size": 8}, "rollout": {"tasks_per_iter": 16}}),
     "rollout.tasks_per_iter", "16", "task.pool_size"),
    ("tier-above-one", _from_set("eval.tiers=[0.5, 1.5]"), "eval.tiers", "1.5", "≤ 1"),
    ("tiers-empty", _from_set("eval.tiers=[]"), "eval.tiers", "[]", "empty"),
    ("tiers-not-numbers", _from_set('eval.tiers=["a"]'), "eval.tiers", "'a'", "number"),
    ("section-not-table", _from_dict({"policy": 5}), "policy", "5", "table"),
]


@pytest.mark.parametrize("call, key, value_text, allowed", [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_input_names_field_value_and_what_is_allowed(call, key, value_text, allowed):
    with pytest.raises(ConfigError) as e:
        call()
    msg = str(e.value)
    assert "\n" not in msg
    assert e.value.key == key
    assert key in msg and value_text in msg and allowed in msg, msg


UNKNOWN_KEY = [
    ("unknown-key-set", _from_set("policy.nope=7"), "policy.nope", "7", "lam"),
    ("unknown-key-toml", _from_dict({"policy": {"nope": 7}}), "policy.nope", "7", "lam"),
    ("unknown-section-set", _from_set("nosuch.x=7"), "nosuch.x", "7", "task"),
]


@pytest.mark.parametrize("call, key, value_text, allowed", [c[1:] for c in UNKNOWN_KEY],
                         ids=[c[0] for c in UNKNOWN_KEY])
def test_unknown_key_names_field_and_what_is_allowed(call, key, value_text, allowed):
    with pytest.raises(ConfigError) as e:
        call()
    msg = str(e.value)
    assert e.value.key == key and key in msg and allowed in msg, msg


@pytest.mark.parametrize("call, key, value_text, allowed", [c[1:] for c in UNKNOWN_KEY],
                         ids=[c[0] for c in UNKNOWN_KEY])
def test_unknown_key_error_names_the_given_value(call, key, value_text, allowed):
    with pytest.raises(ConfigError) as e:
        call()
    assert e.value.value == 7 and "= 7" in str(e.value), str(e.value)


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


# ----------------------------------------------------------------------------- parse_set


@pytest.mark.parametrize("text, expected", [
    ("policy.lam=0.5", ("policy.lam", 0.5)),
    ("run.seed=7", ("run.seed", 7)),
    ("policy.lam=-1e-3", ("policy.lam", -0.001)),
    ("judge.train=false", ("judge.train", False)),
    ("env.strategy=plr", ("env.strategy", "plr")),
    ("eval.tiers=[0.1, 0.5]", ("eval.tiers", [0.1, 0.5])),
    ('run.device="cpu"', ("run.device", "cpu")),
    ("run.device='cuda'", ("run.device", "cuda")),
    ("run.device=cpu", ("run.device", "cpu")),
    ("  policy.lam =  0.25  ", ("policy.lam", 0.25)),
    ("task.family=grid world", ("task.family", "grid world")),
    ("task.family=a=b", ("task.family", "a=b")),
])
def test_parse_set(text, expected):
    key, value = parse_set(text)
    assert (key, value) == expected
    assert type(value) is type(expected[1])


@pytest.mark.parametrize("text", ["policy.lam", "=0.5", "", "  =x"])
def test_parse_set_rejects_a_missing_key_or_equals_sign(text):
    with pytest.raises(ConfigError, match="key=value"):
        parse_set(text)


def test_set_values_reach_the_config():
    cfg = build(sets=["policy.lam=0.25", "judge.train=false", "run.device=cpu", 'task.family="arithmetic"',
                      "eval.tiers=[0.2, 0.4]"])
    assert (cfg.policy.lam, cfg.judge.train, cfg.run.device, cfg.task.family) == (0.25, False, "cpu", "arithmetic")
    assert cfg.eval.tiers == [0.2, 0.4]


# ----------------------------------------------------------------------------- numbers


@pytest.mark.parametrize("call", [
    lambda: from_dict({"policy": {"lam": 2}}),
    lambda: build(sets=["policy.lam=2"]),
], ids=["toml", "set"])
def test_int_for_a_float_field_becomes_float(call):
    cfg = call()
    assert cfg.policy.lam == 2.0 and type(cfg.policy.lam) is float


def test_int_items_of_a_float_list_become_floats():
    cfg = build(sets=["eval.tiers=[0, 1]"])
    assert cfg.eval.tiers == [0.0, 1.0] and all(type(x) is float for x in cfg.eval.tiers)


def test_validate_coerces_ints_set_directly_on_the_dataclass():
    cfg = Config()
    cfg.run.stale_after_s = 30
    assert type(validate(cfg).run.stale_after_s) is float


@pytest.mark.parametrize("key, value", [
    ("policy.lam", True), ("policy.lam", False), ("judge.m", True), ("run.seed", False),
    ("run.stale_after_s", True), ("eval.tiers", [True, 0.5]),
])
def test_a_bool_is_never_accepted_for_a_number(key, value):
    section, _, name = key.partition(".")
    with pytest.raises(ConfigError) as e:
        from_dict({section: {name: value}})
    assert e.value.key == key
    cfg = Config()
    with pytest.raises(ConfigError):
        set_value(cfg, key, value)


def test_a_float_is_not_accepted_for_an_int_field():
    with pytest.raises(ConfigError, match="integer"):
        from_dict({"run": {"iterations": 10.0}})


# ----------------------------------------------------------------------------- TOML round trip


def _modified() -> Config:
    return build(preset="arithmetic", sets=["policy.lam=0.3", "judge.train=false", "eval.tiers=[0.25, 0.75]",
                                            "run.device=cpu", "run.seed=12345", "policy.lr=3e-5"])


@pytest.mark.parametrize("make", [Config, _modified, *[(lambda n=n: build(preset=n)) for n in preset_names()]],
                         ids=["defaults", "modified", *preset_names()])
def test_to_toml_round_trips(make):
    cfg = make()
    text = cfg.to_toml()
    back = from_dict(tomllib.loads(text))
    assert back == cfg
    assert set(tomllib.loads(text)) == set(SECTIONS)


def test_a_round_tripped_config_is_independent_of_the_original():
    cfg = _modified()
    back = from_dict(tomllib.loads(cfg.to_toml()))
    back.eval.tiers.append(0.9)
    assert cfg.eval.tiers == [0.25, 0.75]


# ----------------------------------------------------------------------------- precedence


def test_build_precedence(tmp_path):
    # arithmetic preset: family arithmetic, dataset_high 0.6, iterations 1500
    f = tmp_path / "my.toml"
    f.write_text(textwrap.dedent("""\
        [task]
        dataset_high = 0.4

        [run]
        iterations = 50
        seed = 5

        [policy]
        lam = 0.7
        """), encoding="utf-8")

    assert Config().run.iterations == 100                          # defaults
    p = build(preset="arithmetic")
    assert (p.task.family, p.task.dataset_high, p.run.iterations) == ("arithmetic", 0.6, 1500)

    pf = build(preset="arithmetic", config_file=f)                  # file over preset
    assert (pf.task.family, pf.task.dataset_high, pf.run.iterations) == ("arithmetic", 0.4, 50)
    assert pf.rollout == Config().rollout                           # untouched keys keep defaults

    pfs = build(preset="arithmetic", config_file=f, sets=["run.iterations=40", "policy.lam=0.1"])
    assert (pfs.run.iterations, pfs.policy.lam, pfs.run.seed) == (40, 0.1, 5)   # --set over file

    pfso = build(preset="arithmetic", config_file=f, sets=["run.iterations=40", "run.seed=9"],
                 iterations=30, seed=None, device="cpu")           # explicit run options over --set
    assert (pfso.run.iterations, pfso.run.seed, pfso.run.device) == (30, 9, "cpu")
    assert pfso.policy.lam == 0.7 and pfso.task.family == "arithmetic"


def test_later_set_wins_over_earlier_set():
    assert build(sets=["policy.lam=0.1", "policy.lam=0.9"]).policy.lam == 0.9


def test_explicit_run_override_is_validated():
    with pytest.raises(ConfigError) as e:
        build(iterations=0)
    assert e.value.key == "run.iterations"
    with pytest.raises(ConfigError) as e:
        build(nosuch=1)
    assert e.value.key == "run.nosuch"


@pytest.mark.parametrize("content, allowed", [(None, "no such file"), ("[task\nfamily =", "TOML")],
                         ids=["missing", "not-toml"])
def test_bad_config_file_raises_config_error(tmp_path, content, allowed):
    f = tmp_path / "c.toml"
    if content is not None:
        f.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        build(config_file=f)
    assert str(f) in str(e.value) and allowed in str(e.value)


def test_relations_are_checked_after_all_sources_are_merged():
    # band_low 0.85 alone is invalid (> the default band_high 0.8), but the same --set list then
    # raises band_high, so the final config is valid: relations are checked on the result
    cfg = build(sets=["judge.band_low=0.85", "judge.band_high=0.95"])
    assert (cfg.judge.band_low, cfg.judge.band_high) == (0.85, 0.95)


# ----------------------------------------------------------------------------- import boundaries


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_torch_free_modules_do_not_import_torch():
    r = _python("import rla_engine.config, rla_engine.tasks, rla_engine.store, rla_engine.paths, "
                "rla_engine.client, rla_engine.metrics, rla_engine.rewards, sys; "
                "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch'))[:5]")
    assert r.returncode == 0, r.stderr


def test_no_engine_module_imports_qt():
    code = textwrap.dedent("""\
        import importlib, pkgutil, sys
        import rla_engine
        names = [m.name for m in pkgutil.walk_packages(rla_engine.__path__, "rla_engine.")]
        assert "rla_engine.store" in names and "rla_engine.config" in names, names
        for name in names:
            importlib.import_module(name)
        qt = sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "qasync", "pyqtgraph", "shiboken6"))
        assert not qt, qt
        print(len(names))
        """)
    r = _python(code)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.strip()) >= 10


def test_section_fields_carry_help_for_the_console_forms():
    for section in SECTIONS:
        for f in section_fields(section):
            assert f.metadata.get("help"), f"{section}.{f.name} has no help text"
            assert f.type in ("int", "float", "bool", "str", "list"), f"{section}.{f.name}: {f.type}"
    assert dataclasses.is_dataclass(Config)


@pytest.mark.parametrize("sets, key", [
    (["policy.band_low=0.5", "policy.band_high=0.5"], "policy.band_low"),
    (["eval.tiers=[0.5, 0.5]"], "eval.tiers"),
])
def test_empty_policy_band_and_repeated_tiers_are_refused(sets, key):
    with pytest.raises(ConfigError) as e:
        build(sets=sets)
    assert e.value.key == key


def test_default_policy_band_is_every_mixed_group_at_any_rollout_count():
    cfg = Config()
    for n in (4, 8, 16, 64):
        accs = [k / n for k in range(n + 1)]
        inside = [a for a in accs if cfg.policy.band_low < a < cfg.policy.band_high]
        assert inside == accs[1:-1]


@pytest.mark.parametrize("adapt, strategy", [(True, "rlanything"), (False, "fixed")])
def test_a_config_stored_before_env_strategy_still_loads(adapt, strategy):
    assert from_dict({"env": {"adapt": adapt}}).env.strategy == strategy
    with pytest.raises(ConfigError, match=r"env\.adapt"):
        from_dict({"env": {"adapt": "yes"}})


def test_one_switch_sets_the_judges_form_and_a_run_stores_what_it_stands_for(tmp_path):
    """judge.profile (issue 37) is a switch, not a setting: it sets judge.unanimous and
    policy.step_verdicts, and a configuration written down holds those two, never the switch."""
    from rla_engine.config import JUDGE_PROFILES
    for name, settings in JUDGE_PROFILES.items():
        cfg = build(preset="keyrooms", sets=[f"{PROFILE_KEY}={name}"])
        assert all(get_value(cfg, key) == value for key, value in settings) and profile_of(cfg) == name
        assert "profile" not in cfg.to_toml() and from_dict(cfg.to_dict()) == cfg
    # a later setting of one of the two wins, and the result is neither form
    mixed = build(sets=[f"{PROFILE_KEY}=paper", "policy.step_verdicts=centred"])
    assert (mixed.judge.unanimous, mixed.policy.step_verdicts, profile_of(mixed)) == ("zero", "centred", "")
    path = tmp_path / "paper.toml"
    path.write_text('[judge]\nprofile = "paper"\n', encoding="utf-8")
    assert profile_of(build(preset="keyrooms", config_file=path)) == "paper"
    with pytest.raises(ConfigError) as e:
        build(sets=[f"{PROFILE_KEY}=batch"])
    assert e.value.key == PROFILE_KEY and "paper, repaired" in str(e.value)
