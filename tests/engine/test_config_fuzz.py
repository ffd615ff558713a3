"""Property-based fuzzing of the configuration validator (DESIGN §5, "bad input").

Property, for every generated input: `config.build(...)` (or `from_dict`) either returns a
config that validates again and round-trips through to_dict/from_dict and TOML, or raises
`ConfigError` whose one-line message names the offending field by its dotted key. No other
exception may leak (TypeError, ValueError, OverflowError, RecursionError, OSError, …).

The keys come from the dataclass tree itself (never hand-listed); values cover every shape a
user can type or a TOML file can hold. Runs are deterministic (derandomize) so CI is stable.
Each fuzz function is run by a plain test that also checks it ran its examples and that both
outcomes (a valid config, an error) were reached, so the fuzzing cannot silently go vacuous.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import math
import os
import tomllib

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rla_engine.config import (SECTIONS, Config, ConfigError, build, from_dict, get_value, parse_set, preset_names,
                               section_fields, validate)

# ----------------------------------------------------------------------------- the key tree

FIELDS: dict[str, dataclasses.Field] = {f"{s}.{f.name}": f for s in SECTIONS for f in section_fields(s)}
REAL_KEYS = sorted(FIELDS)
FIELD_NAMES = sorted({k.partition(".")[2] for k in REAL_KEYS})
RUN_OPTIONS = [k.partition(".")[2] for k in REAL_KEYS if k.startswith("run.")]
# keys a cross-field rule may name although the input did not set them
RELATION_KEYS = {"task.dataset_low", "policy.band_low", "judge.band_low", "env.low", "eval.tiers",
                 "rollout.tasks_per_iter",
                 # a model is set exactly when the family is a text one (a preset's model, another family)
                 "policy.model_path", "judge.model_path", "env.model_path"}
PY_TYPES = {"int": int, "float": float, "bool": bool, "str": str, "list": list}

# Deterministic by default (CI). For a longer hunt: RLA_FUZZ_SCALE=20 RLA_FUZZ_RANDOM=1 pytest this file.
SETTINGS = dict(derandomize=not os.environ.get("RLA_FUZZ_RANDOM"), deadline=None, database=None,
                print_blob=False, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                         HealthCheck.large_base_example])
_SCALE = int(os.environ.get("RLA_FUZZ_SCALE", "1"))
N_SETS, N_FILES, N_DICTS = 600 * _SCALE, 300 * _SCALE, 300 * _SCALE     # 1,200 cases in all by default

HUGE_INT_TEXTS = ["1" + "0" * 5000, "-" + "9" * 4301, "1" + "0" * 400, "-1" + "0" * 400,
                  "9" * 4300, "0x" + "f" * 4000, "1_" + "000_" * 1500 + "000"]
DEEP_TEXTS = ["[" * 50_000 + "]" * 50_000, "[" * 500 + "0.5" + "]" * 500, "{a=" * 3000 + "1" + "}" * 3000,
              "[" * 20_000]
TOMLISH_TEXTS = ["", "[", "]", "[]", "[[]]", "[[0.1], [0.5]]", "{}", "{a = 1}", "{lam = 0.5}", '"', "'", '""',
                 "''", "'''", '"""', '"""a\nb"""', "'''x'''", "1979-05-27", "1979-05-27T07:32:00Z", "07:32:00",
                 "0x1F", "0o17", "0b101", "1_000", "+inf", "-inf", "inf", "nan", "+nan", "-nan", "1e308",
                 "1e309", "-0.0", "+0", "00", "1.", ".5", "1e", "true", "True", "TRUE", "false", "yes", "null",
                 "None", "1\nfoo = 2", "0.5\n[x]\ny = 1", "0.5 # comment", "[0.1, 0.5,]", "[0.1,\n0.5]",
                 "= 1", "a=b", "x = 1", "[policy]", "\x00", "\udcff", "\u2028", "😀", "cpu", "cuda", "auto",
                 "gridworld", "arithmetic", '"gridworld"', "'cpu'", " gridworld ", "GRIDWORLD", "tpu"]
SPECIAL_FLOATS = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1e308, -1e308, 5e-324, 1.7976931348623157e308,
                  1.0000000000000002, 0.9999999999999999, 1e-300]
NASTY_CHARS = "\n\r\t\x00\x1b\x7f\"'\\=[]{}#.,:;\u2028\u0085\u200b é😀 "


def _choices(f: dataclasses.Field) -> tuple:
    c = f.metadata.get("choices")
    return tuple(c() if callable(c) else (c or ()))


@functools.cache
def valid_value(key: str) -> st.SearchStrategy:
    """A value the field accepts on its own (a cross-field rule may still refuse it)."""
    f = FIELDS[key]
    meta, t = f.metadata, PY_TYPES[f.type]
    lo, hi = meta.get("min"), meta.get("max")
    if _choices(f):
        return st.sampled_from(_choices(f))
    if t is bool:
        return st.booleans()
    if t is int:
        return st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, min(lo + 1, hi)]))
    if t is float:
        floats = st.floats(lo, hi, exclude_min=bool(meta.get("min_exclusive")))
        ints = st.integers(math.ceil(lo) + (1 if meta.get("min_exclusive") and lo == int(lo) else 0), math.floor(hi))
        return st.one_of(floats, ints, st.sampled_from([v for v in (lo, hi, (lo + hi) / 2)
                                                        if not (meta.get("min_exclusive") and v == lo)]))
    if t is list:
        item = st.one_of(st.floats(lo, hi), st.integers(math.ceil(lo), math.floor(hi)))
        return st.lists(item, min_size=1, max_size=6)
    if t is str:        # a model path: empty, a built-in source, or any text (checked when a run starts)
        return st.one_of(st.sampled_from(["", *meta.get("sources", ())]), st.text(max_size=20))
    raise AssertionError(f"no strategy for {key}: {f.type}")


scalars = st.one_of(
    st.integers(), st.integers(-2**70, 2**70),
    st.sampled_from([-1, 0, 1, 2, 3, 4, 63, 64, 65, 2**31 - 1, 2**31, 2**63, -2**63, 10**7, 10**7 + 1, 10**400]),
    st.floats(), st.sampled_from(SPECIAL_FLOATS),
    st.booleans(),
    st.text(max_size=12), st.text(alphabet=NASTY_CHARS, max_size=12), st.just(""),
    st.sampled_from(["cpu", "cuda", "auto", "gridworld", "arithmetic", "tpu", "true", "0.5"]),
    st.dates(), st.datetimes(), st.times(),
)
any_value = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=5)


def toml_key(k: str) -> str:
    return tomli_w.dumps({k: 0})[: -len(" = 0\n")]


VALID_PAIR = st.sampled_from(REAL_KEYS).flatmap(lambda k: st.tuples(st.just(k), valid_value(k)))


def toml_literal(v) -> str:
    """A TOML inline literal for v (dicts as inline tables, as a user types them after `key=`)."""
    if isinstance(v, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_literal(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(toml_literal(x) for x in v) + "]"
    return tomli_w.dumps({"v": v})[len("v = "):].rstrip("\n")


unknown_keys = st.one_of(
    st.text(max_size=15),
    st.text(alphabet=NASTY_CHARS + "abc", max_size=10),
    st.builds(lambda s, n: f"{s}.{n}", st.sampled_from(SECTIONS), st.text(max_size=8)),
    st.builds(lambda s, n: f"{s}.{n}", st.text(max_size=6), st.sampled_from(FIELD_NAMES)),
    st.sampled_from([*SECTIONS, "", ".", "..", "policy.", ".lam", "policy.lam.x", "Policy.lam", "policy.LAM",
                     "policy .lam", "task.params", "task.params.size", "a.b.c", "\n", "policy.lam\n"]),
)
keys = st.one_of(st.sampled_from(REAL_KEYS), st.sampled_from(REAL_KEYS), unknown_keys)


@st.composite
def assignment(draw) -> str:
    key = draw(keys)
    shape = draw(st.sampled_from(["valid", "valid", "any", "raw", "huge", "deep", "tomlish", "no-equals",
                                  "spaced"]))
    if shape == "no-equals":
        return key
    if shape == "valid" and key in FIELDS:
        text = toml_literal(draw(valid_value(key)))
    elif shape in ("valid", "any"):
        text = toml_literal(draw(any_value))
    elif shape == "raw":
        text = draw(st.one_of(st.text(max_size=20), st.text(alphabet=NASTY_CHARS + "0123456789", max_size=20)))
    elif shape == "huge":
        text = draw(st.sampled_from([*HUGE_INT_TEXTS, "[" + HUGE_INT_TEXTS[0] + "]", "1e400", "-1e400"]))
    elif shape == "deep":
        text = draw(st.sampled_from(DEEP_TEXTS))
    elif shape == "tomlish":
        text = draw(st.sampled_from(TOMLISH_TEXTS))
    else:
        text = " " + toml_literal(draw(any_value)) + "  "
    return f"{key}={text}"


# ----------------------------------------------------------------------------- the property

OUTCOMES: dict[str, int] = {}


def printable(text: str) -> str:
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _coerced(key: str, value):
    t = PY_TYPES[FIELDS[key].type]
    if t is float:
        return float(value)
    if t is list:
        return [float(x) for x in value]
    return value


def check(call, named: set[str], expected: dict | None = None) -> Config | None:
    """Run call(); assert the property. `named`: keys/sections the input mentions; `expected`:
    dotted key -> value the resulting config must hold when the call succeeds."""
    try:
        cfg = call()
    except ConfigError as e:
        OUTCOMES["error"] = OUTCOMES.get("error", 0) + 1
        msg = str(e)
        assert isinstance(e.key, str)
        assert len(msg.splitlines()) == 1 and "\n" not in msg and "\r" not in msg, repr(msg)
        assert msg.startswith(f"invalid config: {printable(e.key)} = "), (e.key, msg)
        assert e.key in named | RELATION_KEYS | {"config", "preset"}, (e.key, named, msg)
        assert len(msg) <= 2 * len(printable(e.key)) + 600, f"{len(msg)} characters: {msg[:300]}"
        return None
    OUTCOMES["valid"] = OUTCOMES.get("valid", 0) + 1
    assert isinstance(cfg, Config)
    for key, f in FIELDS.items():
        v = get_value(cfg, key)
        assert type(v) is PY_TYPES[f.type], (key, v)
        if f.type == "list":
            assert all(type(x) is float and math.isfinite(x) for x in v), (key, v)
        elif f.type == "float":
            assert math.isfinite(v), (key, v)
    assert validate(copy.deepcopy(cfg)) == cfg
    assert from_dict(cfg.to_dict()) == cfg
    assert from_dict(tomllib.loads(cfg.to_toml())) == cfg
    for key, value in (expected or {}).items():
        assert get_value(cfg, key) == _coerced(key, value), (key, value)
    return cfg


# ----------------------------------------------------------------------------- (a) --set lists

@settings(max_examples=N_SETS, **SETTINGS)
@given(sets=st.lists(assignment(), max_size=5) | st.lists(
           st.sampled_from(REAL_KEYS).flatmap(lambda k: valid_value(k).map(lambda v: f"{k}={toml_literal(v)}")),
           max_size=6),
       preset=st.none() | st.none() | st.sampled_from([*preset_names(), "nope", "", "../presets/quickstart"]),
       overrides=st.dictionaries(st.sampled_from([*RUN_OPTIONS, "nosuch"]),
                                 st.none() | scalars | st.sampled_from(RUN_OPTIONS).flatmap(
                                     lambda n: valid_value(f"run.{n}")), max_size=3))
def _fuzz_set_assignments(sets, preset, overrides):
    named = {"preset"} | {f"run.{n}" for n in overrides}
    for a in sets:
        named |= {a, a.partition("=")[0].strip()}
    expected = {}
    for a in sets:                      # the last --set of each key wins, unless a run option overrides it
        key, sep, _ = a.partition("=")
        key = key.strip()
        if sep and key in FIELDS and not (key.startswith("run.") and overrides.get(key[4:]) is not None):
            try:
                expected[key] = parse_set(a)[1]
            except ConfigError:
                pass
    expected.update({f"run.{n}": v for n, v in overrides.items() if v is not None and f"run.{n}" in FIELDS})
    check(lambda: build(preset=preset, sets=sets, **overrides), named, expected)


# ----------------------------------------------------------------------------- (b) TOML files

@st.composite
def toml_document(draw) -> tuple[bytes, set[str], dict]:
    """A config file's bytes, the keys/sections it names, and the values it sets."""
    doc: dict = {}
    pairs = draw(st.lists(st.sampled_from(REAL_KEYS).flatmap(
        lambda k: st.tuples(st.just(k), valid_value(k) | valid_value(k) | any_value)), max_size=6))
    for key, value in pairs:
        section, _, name = key.partition(".")
        doc.setdefault(section, {})[name] = value
    junk_keys = draw(st.lists(st.tuples(st.sampled_from(SECTIONS), st.text(max_size=8), any_value), max_size=2)
                     if draw(st.integers(0, 2)) == 0 else st.just([]))
    for section, name, value in junk_keys:
        doc.setdefault(section, {})[name] = value
    junk_sections = draw(st.dictionaries(st.one_of(st.text(max_size=8), st.sampled_from(SECTIONS)),
                                         st.one_of(any_value, st.dictionaries(st.sampled_from(FIELD_NAMES),
                                                                              any_value, max_size=2)),
                                         max_size=2))
    if draw(st.integers(0, 3)) == 0:
        doc.update(junk_sections)
    text = tomli_w.dumps(doc)
    tail = draw(st.sampled_from(["none"] * 12 + ["huge", "deep", "garbage", "binary", "latin1"]))
    if tail == "huge":       # a literal tomli_w cannot write: an integer over Python's digit limit
        section = next(s for s in SECTIONS if s not in doc)
        name = draw(st.sampled_from([f.name for f in section_fields(section)]))
        text += f"\n[{section}]\n{name} = {draw(st.sampled_from(HUGE_INT_TEXTS[:2]))}\n"
    elif tail == "deep":
        text = f"zz = {draw(st.sampled_from(DEEP_TEXTS))}\n" + text
    elif tail == "garbage":
        text += draw(st.text(alphabet=NASTY_CHARS + "abc01", min_size=1, max_size=20))
    if tail == "binary":
        data = draw(st.binary(min_size=1, max_size=64)) + b"\xff\xfe\x00"
    else:
        data = text.encode("latin-1" if tail == "latin1" else "utf-8", errors="replace")
    # what the file names, as TOML reads it (nothing when it does not read: then only `config` may be named)
    try:
        parsed = tomllib.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        parsed = {}
    named = set(parsed) | {f"{s}.{k}" for s, v in parsed.items() if isinstance(v, dict) for k in v}
    expected = {f"{s}.{k}": v for s, vs in parsed.items() if isinstance(vs, dict) for k, v in vs.items()
                if f"{s}.{k}" in FIELDS}
    return data, named, expected


@pytest.fixture(scope="module")
def config_file(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz") / "c.toml"


def _fuzz_config_files(path):
    @settings(max_examples=N_FILES, **SETTINGS)
    @given(document=toml_document(), sets=st.just([]) | st.lists(assignment(), max_size=2))
    def fuzz(document, sets):
        data, named, expected = document
        path.write_bytes(data)
        for a in sets:
            named |= {a, a.partition("=")[0].strip()}
        check(lambda: build(config_file=path, sets=sets), named, None if sets else expected)
    fuzz()


# ----------------------------------------------------------------------------- (c) dicts

def _deep_list(depth: int, leaf=0.5) -> list:
    v = leaf
    for _ in range(depth):
        v = [v]
    return v


DEEP_LISTS = [_deep_list(n) for n in (2, 50, 5000, 100_000)]     # built once: the deepest takes a while
python_values = st.one_of(
    any_value, st.none(), st.just(10**5000), st.just(-10**5000), st.just([0.5, 10**5000]), st.just(2**1100),
    st.just([2**1100]), st.sampled_from(DEEP_LISTS),
    st.tuples(st.floats(0, 1)), st.just({0.5}), st.just(b"0.5"), st.just(float("nan")),
)


@st.composite
def nested_dict(draw) -> dict:
    pairs = draw(st.lists(VALID_PAIR, max_size=6) | st.lists(st.one_of(
        st.sampled_from(REAL_KEYS).flatmap(lambda k: st.tuples(st.just(k), valid_value(k) | python_values)),
        st.tuples(unknown_keys, python_values)), max_size=6))
    doc: dict = {}
    for key, value in pairs:
        section, _, name = key.partition(".")
        if not isinstance(doc.get(section, {}), dict):
            continue
        doc.setdefault(section, {})[name] = value
    if draw(st.integers(0, 4)) == 0:
        doc[draw(st.sampled_from([*SECTIONS, "nosuch", ""]))] = draw(python_values)
    return doc


@settings(max_examples=N_DICTS, **SETTINGS)
@given(data=nested_dict())
def _fuzz_from_dict(data):
    named = set(data) | {f"{s}.{k}" for s, v in data.items() if isinstance(v, dict) for k in v}
    check(lambda: from_dict(data), named)


# ----------------------------------------------------------------------------- the tests

def _run(fuzz, minimum: int) -> None:
    OUTCOMES.clear()
    fuzz()
    total = OUTCOMES.get("valid", 0) + OUTCOMES.get("error", 0)
    print(f"{fuzz.__name__}: {OUTCOMES}")
    assert total >= minimum, OUTCOMES
    # both outcomes are exercised, so neither side of the property is vacuous
    assert OUTCOMES.get("valid", 0) >= minimum // 20 and OUTCOMES.get("error", 0) >= minimum // 20, OUTCOMES


def test_fuzz_set_assignments_valid_or_one_error_naming_the_field():
    _run(_fuzz_set_assignments, N_SETS)


def test_fuzz_toml_config_files_valid_or_one_error_naming_the_field(config_file):
    _run(lambda: _fuzz_config_files(config_file), N_FILES)


def test_fuzz_config_dicts_valid_or_one_error_naming_the_field():
    _run(_fuzz_from_dict, N_DICTS)


# ----------------------------------------------------------------------------- found by the fuzzing

@pytest.mark.parametrize("sets, key, allowed", [
    (["policy.lam=1" + "0" * 5000], "policy.lam", "≤ 100"),              # int over the str->int digit limit
    (["run.seed=-" + "9" * 4301], "run.seed", "≥ 0"),
    (["policy.lam=1" + "0" * 400], "policy.lam", "≤ 100"),               # int too large for a float
    (["eval.tiers=[1" + "0" * 400 + "]"], "eval.tiers", "≤ 1"),
    (["policy.lam=" + "[" * 50_000 + "]" * 50_000], "policy.lam", "number"),   # parser recursion
    (["policy.lam=0.5\nfoo = 1"], "policy.lam", "number"),             # not 0.5 with the rest dropped
    (["a\nb=1"], "a\nb", "sections are"),                               # a newline in a key stays one line
    (['eval.tiers=["a"]'], "eval.tiers", "must be a list of numbers"),  # was "a list of a number values"
    (["eval.tiers=0.5"], "eval.tiers", "must be a list of numbers"),
], ids=["int-5000-digits", "negative-int-4301-digits", "int-beyond-float", "int-beyond-float-in-list",
        "nested-50000-deep", "newline-then-more-toml", "newline-in-key", "list-of-numbers-wording",
        "number-for-list-wording"])
def test_found_by_fuzzing(sets, key, allowed):
    with pytest.raises(ConfigError) as e:
        build(sets=sets)
    msg = str(e.value)
    assert e.value.key == key and printable(key) in msg and allowed in msg and "\n" not in msg, msg
    assert len(msg) < 500


@pytest.mark.parametrize("value, shown", [(10**5000, "about 5000 digits"), (_deep_list(100_000), "nested too deeply"),
                                          ("x" * 10_000, "…")], ids=["huge-int", "deep-list", "long-string"])
def test_an_unprintable_or_long_value_is_shown_shortly(value, shown):
    with pytest.raises(ConfigError) as e:
        from_dict({"policy": {"lam": value}})
    assert shown in str(e.value) and len(str(e.value)) < 400


def test_a_config_file_that_is_a_folder_or_unreadable_is_a_config_error(tmp_path):
    for path, allowed in [(tmp_path, "folder"), ("", "folder"), ("a\0b", "cannot read")]:
        with pytest.raises(ConfigError) as e:
            build(config_file=path)
        assert e.value.key == "config" and allowed in str(e.value), str(e.value)
    huge = tmp_path / "huge.toml"
    huge.write_text("[run]\nseed = 1" + "0" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="digits"):
        build(config_file=huge)
    cr = tmp_path / "cr.toml"               # read as bytes: a lone CR is not a TOML newline
    cr.write_bytes(b"[policy]\rlam = 0.5\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        build(config_file=cr)
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 50_000 + "]" * 50_000 + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="nested too deeply"):
        build(config_file=deep)
