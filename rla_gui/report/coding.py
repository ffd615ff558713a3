"""The report's section for a coding run (judge.kind = tests): the isolation its programs ran under,
the test generator's figures, how the executions ended, and one program with its tests.

A program, a test and what the generator wrote are model output: every one reaches the markup
through escape.esc / value_text, cut first (a runaway answer would be pages of PDF).
"""
from __future__ import annotations

import numpy as np

from rla_engine import metrics
from rla_engine.vocabulary import EventKind

from ..model import coding
from ..model.panel_spec import EXEC_STATUSES, TESTS, judge_kind, short
from .escape import DASH, esc, kv_table, num, table, value_text
from .sections import Facts

PROGRAM_CHARS = 6000      # the sample's program; the JSON export has it whole
CELL_CHARS = 200          # a test's input or expected output in its cell
SAID_CHARS = 600
MAX_TESTS = 30            # of the sample's generated tests, listed
FIGURES = ((metrics.SUCCESS, "pass-all accuracy (policy success)"),
           (metrics.SYN_UT_ACC, short(metrics.SYN_UT_ACC)),
           (metrics.PERFECT_UT_RATE, short(metrics.PERFECT_UT_RATE)),
           (metrics.TEST_PARSE_FAILURES, short(metrics.TEST_PARSE_FAILURES)))


def is_coding(f: Facts) -> bool:
    """A run whose reward model writes tests, or that stored what a coding run stores."""
    events = f.bundle.get("events") or ()
    return (judge_kind(f.config) == TESTS or coding.latest_isolation(events) is not None
            or any(k in f.data for k in (*metrics.UNIT_TESTS, *metrics.CODE)))


def coding_block(f: Facts) -> str:
    return ("<h3>Sandbox</h3>" + isolation_block(f) + "<h3>The test generator</h3>" + figures_table(f)
            + "<h3>How the programs ran</h3>" + executions_table(f) + "<h3>One program and its tests</h3>"
            + sample_block(f))


def isolation_block(f: Facts) -> str:
    payload = coding.latest_isolation(f.bundle.get("events") or ())
    if payload is None:
        return '<p class="muted">The run stored no sandbox event (the isolation in force is not known).</p>'
    head = f'<p class="error">{esc(coding.isolation_summary(payload))}</p>' if coding.is_weak(payload) else \
        f"<p>{esc(coding.isolation_summary(payload))}</p>"
    rows = [[esc(name), esc("holds" if holds else "does not hold"), value_text(how, 300)]
            for name, holds, how in coding.guarantees(payload)]
    return head + (table(["guarantee", "", "how, or why not"], rows, "sandbox", wide=True) if rows else "")


def figures_table(f: Facts) -> str:
    rows = []
    for key, label in FIGURES:
        best, at = f.best(key)
        rows.append([esc(label), num(f.final(key)), num(best), num(at)])
    return table(["", "final", "best", "at iteration"], rows, "unit-tests", numeric=(1, 2, 3))


def _mean(f: Facts, key: str) -> float | None:
    if key not in f.data:
        return None
    y = f.data.xy(key)[1]
    y = y[np.isfinite(y)]
    return float(y.mean()) if len(y) else None


def _sum(f: Facts, key: str) -> float | None:
    if key not in f.data:
        return None
    return float(np.nansum(f.data.xy(key)[1]))


def executions_table(f: Facts) -> str:
    """Each status's share of the executions: the last iteration's, and the mean over the run."""
    rows = [[esc(status.replace("_", " ")), num(f.final(metrics.exec_status_key(status))),
             num(_mean(f, metrics.exec_status_key(status)))] for status in EXEC_STATUSES]
    return (table(["status", "final share", "mean share"], rows, "executions", numeric=(1, 2))
            + kv_table([("seconds running programs (sum)", num(_sum(f, metrics.EXEC_SECONDS))),
                        ("sandbox errors (sum)", num(_sum(f, metrics.SANDBOX_ERRORS)))]))


def newest_sample(f: Facts) -> tuple[int | None, dict] | None:
    """The newest trajectory that has generated tests, and its iteration."""
    for e in reversed(f.bundle.get("events") or ()):
        payload = e.get("payload")
        if e.get("kind") != EventKind.SAMPLES or not isinstance(payload, dict):
            continue
        for traj in payload.get("trajectories") or ():
            if isinstance(traj, dict) and coding.has_tests(traj):
                return e.get("iteration"), traj
    return None


def sample_block(f: Facts) -> str:
    found = newest_sample(f)
    if found is None:
        return '<p class="muted">No sample with generated tests was stored.</p>'
    iteration, traj = found
    rows = coding.unit_test_rows(traj)
    cells = [[value_text(r.input, CELL_CHARS), value_text(r.output, CELL_CHARS), esc(r.readable), esc(r.correct),
              esc(r.result)] for r in rows[:MAX_TESTS]]
    unreadable = [value_text(r.whole, SAID_CHARS) for r in rows if r.readable != "yes"][:3]
    more = f'<p class="muted">The first {MAX_TESTS} of {len(rows)} tests are listed.</p>' if len(rows) > MAX_TESTS \
        else ""
    return (f"<p>Iteration {num(iteration)}, slot {esc(traj.get('slot', DASH))}: "
            f"{value_text(traj.get('task'), 300)}</p>"
            f'<pre class="program">{value_text(coding.program(traj), PROGRAM_CHARS)}</pre>'
            f"<p>{esc(coding.ground_truth_text(traj))}<br>{esc(coding.unit_tests_summary(traj))}</p>"
            + table(list(coding.TEST_COLUMNS), cells, "tests", wide=True) + more
            + "".join(f'<p class="muted">{u}</p>' for u in unreadable))
