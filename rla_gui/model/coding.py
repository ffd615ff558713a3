"""What the console and the report say of a coding run, without Qt: the isolation its programs ran
under (the `sandbox` event) and one program's tests (a samples trajectory's `ground_truth` and
`unit_tests`, vocabulary.SampleTrajectory). Every text here is plain: each view escapes or
inserts it as plain text its own way.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rla_engine.vocabulary import EventKind

# the sandbox's levels, strongest first (rla_engine/sandbox): only bubblewrap keeps a program from
# the network and the file system by itself; a weaker level is said as a warning wherever shown
STRONGEST = "bubblewrap"
LEVELS = (STRONGEST, "namespaces", "process")
WARNING = "⚠"
NO_RESULT = "—"               # an unreadable test has no expected output, so no result
UNREADABLE = "(unreadable)"   # what an unreadable test's input cell says


def latest_isolation(events: Iterable[Mapping[str, Any]]) -> dict | None:
    """The payload of the newest `sandbox` event among `events` (a resumed run writes one again)."""
    found = None
    for e in events:
        if e.get("kind") == EventKind.SANDBOX and isinstance(e.get("payload"), dict):
            found = e["payload"]
    return found


def level_of(payload: Mapping[str, Any]) -> str:
    level = payload.get("level")
    return level if isinstance(level, str) and level else "?"


def is_weak(payload: Mapping[str, Any]) -> bool:
    """Weaker than bubblewrap (or unknown): the programs ran with less than full isolation."""
    return level_of(payload) != STRONGEST


def guarantees(payload: Mapping[str, Any]) -> list[tuple[str, bool, str]]:
    """(name, holds, how or why not) of each guarantee the event lists; odd entries left out."""
    out = []
    for g in payload.get("guarantees") or ():
        if isinstance(g, Mapping) and isinstance(g.get("name"), str):
            out.append((g["name"], g.get("holds") is True, str(g.get("how") or "")))
    return out


def broken(payload: Mapping[str, Any]) -> list[str]:
    return [name for name, holds, _ in guarantees(payload) if not holds]


def isolation_summary(payload: Mapping[str, Any]) -> str:
    """One line: the level, what was required, and which guarantees do not hold."""
    missing = broken(payload)
    held = f"does not hold: {', '.join(missing)}" if missing else "every guarantee holds"
    line = f"isolation {level_of(payload)} (require {payload.get('require', '?')}): {held}"
    return f"{WARNING} {line}, weaker than {STRONGEST}" if is_weak(payload) else line


def short_isolation(payload: Mapping[str, Any]) -> str:
    """The status line's few words: "sandbox: bubblewrap", "⚠ sandbox: process"."""
    text = f"sandbox: {level_of(payload)}"
    return f"{WARNING} {text}" if is_weak(payload) else text


def isolation_details(payload: Mapping[str, Any]) -> str:
    """Several lines: the summary, then each guarantee and how it holds or why not."""
    lines = [isolation_summary(payload)]
    lines += [f"{'✓' if holds else '✗'} {name}: {how}" for name, holds, how in guarantees(payload)]
    return "\n".join(lines)


# -- one program's tests ------------------------------------------------------------------------
def has_tests(traj: Mapping[str, Any]) -> bool:
    return isinstance(traj.get("unit_tests"), list)


def program(traj: Mapping[str, Any]) -> str:
    """The policy's whole answer (its program in a ```python block): the single step's text."""
    for turn in traj.get("turns") or ():
        for step in (turn.get("steps") or ()) if isinstance(turn, Mapping) else ():
            if isinstance(step, Mapping):
                text = step.get("text")
                return text if isinstance(text, str) else ""
    return ""


def ground_truth_text(traj: Mapping[str, Any]) -> str:
    """"ground truth: 2 of 3 tests passed (ok, ok, timeout)"; what is missing, said so."""
    gt = traj.get("ground_truth")
    if not isinstance(gt, Mapping):
        return "ground truth: not recorded"
    statuses = [str(s) for s in gt.get("statuses") or ()]
    listed = f" ({', '.join(statuses)})" if statuses else ""
    return f"ground truth: {gt.get('passed', '?')} of {gt.get('total', '?')} tests passed{listed}"


@dataclass(frozen=True)
class UnitTestRow:
    """One generated test as shown: every field text; `whole` is its input, expected output and
    the generator's sample uncut (the detail pane, a tooltip)."""
    input: str
    output: str
    readable: str
    correct: str
    result: str
    passed: bool | None      # this program passed it (None: unreadable or no result)
    whole: str


TEST_COLUMNS = ("input", "expected output", "readable", "correct", "this program")


def _yes(v: Any) -> str:
    return "yes" if v is True else "no" if v is False else "?"


def unit_test_rows(traj: Mapping[str, Any]) -> list[UnitTestRow]:
    rows = []
    for t in traj.get("unit_tests") or ():
        if not isinstance(t, Mapping):
            continue
        readable = t.get("readable") is True
        inp, out, said = (str(t.get(k) or "") for k in ("input", "output", "said"))
        result = str(t.get("result") or "") if readable else ""
        whole = (f"input:\n{inp}\n\nexpected output:\n{out}\n\n" if readable else
                 "The generator's sample held no readable test.\n\n") + f"the generator wrote:\n{said}"
        rows.append(UnitTestRow(input=inp if readable else UNREADABLE, output=out if readable else NO_RESULT,
                            readable=_yes(readable), correct=_yes(t.get("correct")) if readable else NO_RESULT,
                            result=result or NO_RESULT, passed=(result == "ok") if result else None, whole=whole))
    return rows


def unit_tests_summary(traj: Mapping[str, Any]) -> str:
    """"generated tests: 3, 2 readable; this program passes 1"."""
    rows = unit_test_rows(traj)
    readable = sum(r.readable == "yes" for r in rows)
    passed = sum(r.passed is True for r in rows)
    return f"generated tests: {len(rows)}, {readable} readable; this program passes {passed}"
