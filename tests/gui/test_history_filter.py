"""History's filter language (rla_gui.model.run_columns: parse_filter, Condition, accepts), without Qt:
a table of cases for every operator, missing values, numbers against text, each kind of column
(a fixed field, `run:`, `config:`, `final:`/`best:`) and quoting; then property tests against a
plain-Python model of the rules, written apart from the code it checks."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rla_gui.model.run_columns import (BEST, FINAL, FIXED, RUN_COLUMNS, accepts, config_column, metric_column,
                                       parse_filter)

LAM = config_column("policy.lam")
FINAL_EVAL = metric_column(FINAL, "eval/success_rate")
BEST_EVAL = metric_column(BEST, "eval/success_rate")
COLUMNS = [*FIXED, *RUN_COLUMNS, LAM, config_column("policy.name"), config_column("judge.on"), FINAL_EVAL, BEST_EVAL]


def run(name="quick", **fields) -> dict:
    """A History row as the console holds it: summary fields, and the chosen columns' values."""
    chosen = {k: fields.pop(k) for k in list(fields) if ":" in k}
    return {"id": f"id-{name}", "name": name, "status": "done", "preset": "quickstart", "iteration": 10,
            "group_id": None, "notes": "", "tags": "", **fields, "columns": chosen}


def shown(text: str, rows: list[dict]) -> list[str]:
    search, conditions = parse_filter(text, COLUMNS)
    return [r["name"] for r in rows if accepts(r, search, conditions, COLUMNS)]


LAMS = [run("half", **{"config:policy.lam": 0.5}), run("full", **{"config:policy.lam": 1.0}),
        run("unset"), run("nan", **{"config:policy.lam": float("nan")}),
        run("text", **{"config:policy.lam": "auto"}), run("switch", **{"config:policy.lam": True})]


@pytest.mark.parametrize("text, expected", [
    # every operator on a number; a run without the value matches only !=
    ("policy.lam=0.5", ["half"]),
    ("policy.lam=.50", ["half"]),                          # a number, not its spelling
    ("policy.lam!=0.5", ["full", "unset", "nan", "text", "switch"]),
    ("policy.lam<1", ["half"]),
    ("policy.lam<=1", ["half", "full"]),
    ("policy.lam>0.5", ["full"]),
    ("policy.lam>=0.5", ["half", "full"]),
    # a value that is not a number is compared as the text History shows, ignoring case
    ("policy.lam=AUTO", ["text"]),
    ("policy.lam=true", ["switch"]),                        # a switch is its text, not 1
    ("policy.lam=1", ["full"]),
    ("policy.lam>a", ["text", "switch"]),                   # as text: "0.5" and "1.0" sort before "a"
    ("policy.lam<=zz", ["half", "full", "text", "switch"]),
    ("policy.lam!=auto", ["half", "full", "unset", "nan", "switch"]),
    # by the column's id as Columns… lists it, and by its title, in any case
    ("config:policy.lam=0.5", ["half"]),
    ("POLICY.LAM=0.5", ["half"]),
    # a word that names no column is searched for, whole
    ("policy.gamma=0.5", []),
    ("lam=0.5", []),
])
def test_each_operator_on_a_configuration_field(text, expected):
    assert shown(text, LAMS) == expected


def test_metric_columns_compare_final_and_best_apart():
    rows = [run("late", **{"final:eval/success_rate": 0.8, "best:eval/success_rate": 0.8}),
            run("peaked", **{"final:eval/success_rate": 0.2, "best:eval/success_rate": 0.9}),
            run("never", **{"final:eval/success_rate": None})]
    assert shown("final:eval/success_rate>0.5", rows) == ["late"]
    assert shown("best:eval/success_rate>0.5", rows) == ["late", "peaked"]
    assert shown("best:eval/success_rate>=0.9", rows) == ["peaked"]
    assert shown("final:eval/success_rate!=0.8", rows) == ["peaked", "never"]
    # a measurement shown with three decimals still compares as the number it is
    assert shown("final:eval/success_rate=0.80000", rows) == ["late"]


def test_fixed_fields_and_run_columns():
    rows = [run("a", iteration=9, status="done", preset="quickstart"),
            run("b", iteration=10, status="crashed", preset="tiny"),
            run("full · seed 0", group_id="g1", iteration=100),
            run("outcome · seed 1", group_id="g1", iteration=100)]
    assert shown("iter>9", rows) == ["b", "full · seed 0", "outcome · seed 1"]   # 10 > 9: not "10" < "9"
    assert shown("iter<10", rows) == ["a"]
    assert shown("status=crashed", rows) == ["b"]
    assert shown("preset!=quickstart", rows) == ["b"]
    # an arm is read from the run's name within its group; outside a group a run has none
    assert shown("arm=full", rows) == ["full · seed 0"]
    assert shown("run:arm=outcome", rows) == ["outcome · seed 1"]
    assert shown("arm!=full", rows) == ["a", "b", "outcome · seed 1"]
    assert shown("run:group=g1", rows) == ["full · seed 0", "outcome · seed 1"]


def test_conditions_all_hold_and_the_rest_is_searched():
    rows = [run("half a", **{"config:policy.lam": 0.5}, iteration=5),
            run("half b", **{"config:policy.lam": 0.5}, iteration=50, notes="needs a rerun"),
            run("full c", **{"config:policy.lam": 1.0}, iteration=50)]
    assert shown("policy.lam=0.5 iter>10", rows) == ["half b"]
    assert shown("policy.lam=0.5 rerun", rows) == ["half b"]          # a condition and a searched word
    assert shown("RERUN", rows) == ["half b"]                          # searched ignoring case
    assert shown("iter>10 full", rows) == ["full c"]
    assert shown("", rows) == ["half a", "half b", "full c"]
    assert shown("   ", rows) == ["half a", "half b", "full c"]
    # a chosen column's cell is searched as it is shown
    assert shown("0.5", rows) == ["half a", "half b"]


@pytest.mark.parametrize("text, expected", [
    ('name="short run"', ["short run"]),              # quotes keep a space inside the value
    ("name='short run'", ["short run"]),
    ('"short run"', ["short run"]),                   # a quoted search is searched as one phrase
    ('"run two"', []),                                # …not as two words anywhere
    ('notes="it\'s fine"', []),                        # notes is searched, not a column
    ("it's", ["it's a run"]),                         # a quote never closed is a plain character
    ('name!="short run"', ["long run", "it's a run"]),
    ('"policy.lam"=0.5', ["short run"]),               # a quoted column name is the same column
    ('policy.lam="0.5"', ["short run"]),               # a quoted number is still that number
    ("name=short run", []),                           # unquoted: `name=short` and a search for "run"
])
def test_quoting(text, expected):
    rows = [run("short run", **{"config:policy.lam": 0.5}), run("long run"), run("it's a run")]
    assert shown(text, rows) == expected


def test_what_parse_filter_returns():
    search, conditions = parse_filter('  policy.lam>=0.5  "two words"  iter<3 rest ', COLUMNS)
    assert search == "two words rest"
    assert [(c.column.id, c.op, c.wanted) for c in conditions] == [
        ("config:policy.lam", ">=", "0.5"), ("field:iteration", "<", "3")]
    # the first operator in a word splits it: a value may hold one too
    assert [(c.op, c.wanted) for c in parse_filter("name=a<b", COLUMNS)[1]] == [("=", "a<b")]
    assert [(c.op, c.wanted) for c in parse_filter("name<=>x", COLUMNS)[1]] == [("<=", ">x")]
    assert [(c.op, c.wanted) for c in parse_filter("name=", COLUMNS)[1]] == [("=", "")]


# -- properties against a model of the rules ------------------------------------------------------
def model_holds(value, op: str, wanted: str) -> bool:
    """The rules as a person reads them in the README, spelt out case by case."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return op == "!="                      # a run that lacks the value is only ever "not equal"
    try:
        target = float(wanted)
    except ValueError:
        target = None
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if is_number and target is not None:
        left, right = float(value), target
    elif target is not None and op not in ("=", "!="):
        return False                           # only a number is above or below a number
    else:
        if isinstance(value, bool):
            left = "true" if value else "false"
        elif isinstance(value, float) and math.isinf(value):
            left = "?"
        else:
            left = str(value) if not isinstance(value, float) else repr(value)
        left, right = left.casefold(), wanted.casefold()
    if op == "=":
        return left == right
    if op == "!=":
        return left != right
    if op == "<":
        return left < right
    if op == ">":
        return left > right
    if op == "<=":
        return left <= right
    return left >= right


values = st.one_of(st.none(), st.just(float("nan")), st.booleans(), st.integers(-1000, 1000),
                   st.floats(-1e3, 1e3, allow_nan=False).map(lambda f: round(f, 3)),
                   st.sampled_from(["auto", "Auto", "b", "0.5x", "", "zeta"]), st.just(float("inf")))
wanteds = st.one_of(st.integers(-1000, 1000).map(str),
                    st.floats(-1e3, 1e3, allow_nan=False).map(lambda f: str(round(f, 3))),
                    st.sampled_from(["auto", "AUTO", "a", "true", "false", "0.5x", "zeta"]))
ops = st.sampled_from(["=", "!=", "<", ">", "<=", ">="])


@settings(max_examples=300, deadline=None)
@given(value=values, op=ops, wanted=wanteds)
def test_a_condition_on_a_setting_follows_the_rules(value, op, wanted):
    row = run("r", **({} if value is None else {"config:policy.lam": value}))
    search, conditions = parse_filter(f"policy.lam{op}{wanted}", COLUMNS)
    assert search == "" and len(conditions) == 1
    assert accepts(row, search, conditions, COLUMNS) == model_holds(value, op, wanted)


@settings(max_examples=200, deadline=None)
@given(terms=st.lists(st.tuples(st.sampled_from(["policy.lam", "iter", "config:policy.lam"]), ops, wanteds),
                      max_size=4),
       lam=values, iteration=st.integers(0, 200))
def test_conditions_are_a_conjunction(terms, lam, iteration):
    row = run("r", iteration=iteration, **({} if lam is None else {"config:policy.lam": lam}))
    text = " ".join(f"{name}{op}{wanted}" for name, op, wanted in terms)
    search, conditions = parse_filter(text, COLUMNS)
    assert search == "" and len(conditions) == len(terms)
    expected = all(model_holds(iteration if name == "iter" else lam, op, wanted) for name, op, wanted in terms)
    assert accepts(row, search, conditions, COLUMNS) == expected
