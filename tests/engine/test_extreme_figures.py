"""Valid but extreme numbers (issue 34, findings 1 and 8): the one mean ± std never raises, and
`rla runs`, `rla show`, the ablation's table and a comparison report write them as numbers
(1.5e+308), never as 309 digits, a traceback or pyqtgraph's "Cannot set range [-inf, inf]"."""
import math
import re
import statistics

import pytest

from rla_engine import metrics
from rla_engine.ablation.results import COLUMNS, ArmResult, markdown
from rla_engine.spread import mean_std
from rla_engine.summary import figure

from extreme_data import EXTREMES, HUGE_INT, extreme_export, imported, rla

LONG_NUMBER = re.compile(r"\d{20}")


@pytest.mark.parametrize("values, mean, std", [
    ((1.5e308, 1.6e308), 1.55e308, 7.0710678118654e306),      # their sum overflows a float
    ((1e200, -1e200), 0.0, 1.4142135623731e200),              # their squares do
    ((5e-324, 5e-324), 5e-324, 0.0),
    ((True, False, None, math.nan, "x"), 0.5, math.sqrt(0.5)),   # switches count; missing values do not
])
def test_mean_std_of_extreme_values(values, mean, std):
    spread = mean_std(values)
    assert spread.mean == pytest.approx(mean) and spread.std == pytest.approx(std) and not spread.problem


def test_mean_std_of_ordinary_values_is_the_plain_one():
    values = [0.1 * i ** 3 - 7 for i in range(40)]
    spread = mean_std(values)
    assert spread.mean == statistics.fmean(values) and spread.std == pytest.approx(statistics.stdev(values), rel=1e-15)


@pytest.mark.parametrize("values, text, problem", [
    ((math.inf, 1.0), "? ± ?", "1 of 2 values is infinite: no mean or standard deviation"),
    ((HUGE_INT,), "?", "1 of 1 values is too large for a float: no mean or standard deviation"),
    ((1.7e308, -1.7e308), "0.000 ± ?", "the standard deviation is too large for a float (above 1.8e308)"),
    ((), "", ""),
])
def test_what_no_float_holds_is_a_question_mark_that_says_why(values, text, problem):
    spread = mean_std(values)
    assert spread.text(figure) == text and spread.problem == problem


def test_figures_are_numbers_never_hundreds_of_digits():
    assert [figure(v) for v in (1.5e308, -1e200, HUGE_INT, -15 * 10 ** 399, 12345.6, 0.25, math.nan)] == [
        "1.5e+308", "-1e+200", "1e+400", "-1.5e+400", "12,346", "0.250", "?"]


def test_the_ablation_table_of_extreme_values():
    arm = ArmResult("base", runs={0: {metrics.DIFFICULTY_MEAN: 1.5e308, metrics.ENV_STEPS: 1e200},
                                  1: {metrics.DIFFICULTY_MEAN: 1.6e308, metrics.ENV_STEPS: -1e200}})
    table = markdown([arm], "extreme")
    row = next(line for line in table.splitlines() if line.startswith("| base "))
    cells = dict(zip((name for name, _ in COLUMNS), row.split(" | ")[2:]))
    assert cells["difficulty"] == "1.55e+308 ± 7.07e+306" and cells["env steps"] == "0 ± 1.41e+200"
    assert not LONG_NUMBER.search(table)


@pytest.mark.parametrize("case", list(EXTREMES))
def test_runs_show_and_the_comparison_report_of_an_imported_extreme_group(tmp_path, recorded, case):
    db = tmp_path / "runs.db"
    ids = imported(db, extreme_export(recorded("recorded_group"), EXTREMES[case], tmp_path / "extreme.json"))
    runs = rla("runs", "--db", str(db))
    assert runs.returncode == 0 and not LONG_NUMBER.search(runs.stdout), runs.stdout
    assert all(f"{v:.3g}" in runs.stdout for v in EXTREMES[case])
    show = rla("show", ids[0], "--db", str(db))
    assert show.returncode == 0 and f"{EXTREMES[case][0]:.4g}" in show.stdout and not LONG_NUMBER.search(show.stdout)
    report = rla("export", *ids, "--db", str(db), "--format", "html", "--out", str(tmp_path / "cmp.html"))
    assert report.returncode == 0, report.stderr
    assert "Cannot set range" not in report.stderr and "Traceback" not in report.stderr, report.stderr
