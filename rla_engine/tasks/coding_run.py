"""Running policy programs on a coding task's tests: extraction, one sandbox call, the verdict.

Extraction is Open-AgentRL's (sample/llm_policy_rollout.py, `extract_code`): the last
```python … ``` block of the response, stripped. Without one the official code runs a stand-in
sentence, which can only fail; here nothing is run and every test is reported as "no_code".

Scoring. A test passes when its status is ok (the sandbox compares outputs token by token, the
official rule). A sandbox_error is the machine's failure, not the program's: it is reported
(`sandbox_errors`) and left out of the score's denominator. The score is passed / counted tests;
when no test could be counted the score is None (ungraded), the step's label 0 (unknown) and the
episode is not a success: the program was never judged, so neither reward nor blame is given.
"""
from __future__ import annotations

import re
from dataclasses import replace

from ..sandbox import Execution, Job, Limits, Status
from .text_base import TurnResult

OBSERVATION = "Program received."     # neutral: the judge reads it, and must not read the outcome there
CLIP = 200
_CODE = re.compile(r"```python(.*?)```", re.DOTALL)


def extract_program(text: str) -> str | None:
    """The last ```python block, stripped (the official rule); None when there is none."""
    found = _CODE.findall(text)
    return found[-1].strip() if found else None


def clip(value: str | bytes, n: int = CLIP) -> str:
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return text if len(text) <= n else text[:n] + "…"


def tests_of(params: dict) -> list[tuple[str, str]]:
    return list(zip(params["test_input"], params["test_output"]))


def run_groups(pool, groups: list[tuple[str, list[tuple[str, str]], float]],
               base: Limits) -> list[list[Execution]]:
    """Each (program, tests, time limit) run on its own tests under `base` limits with that time, all
    in one pool call; per group, the executions in test order."""
    jobs = [Job(program, stdin.encode(), expected.encode(), replace(base, time_s=float(limit)))
            for program, tests, limit in groups for stdin, expected in tests]
    done = pool.run(jobs) if jobs else []
    out, at = [], 0
    for _, tests, _ in groups:
        out.append(done[at:at + len(tests)])
        at += len(tests)
    return out


def _failure(i: int, test: tuple[str, str], status: str, got: bytes, detail: str) -> dict:
    return {"test": i, "status": status, "input": clip(test[0]), "expected": clip(test[1]), "got": clip(got),
            "detail": clip(detail)}


def _why(e: Execution) -> str:
    """The sandbox's reason and the end of stderr (a traceback's last line says most)."""
    tail = e.stderr.decode("utf-8", "replace").strip()[-CLIP:]
    return "; ".join(x for x in (e.detail, tail) if x)


def verdict(tests: list[tuple[str, str]], executions: list[Execution] | None, n_steps: int) -> TurnResult:
    """The turn's result from the executions (None: no program was found)."""
    if executions is None:
        statuses = ["no_code"] * len(tests)
        first = _failure(0, tests[0], "no_code", b"", "no ```python block in the response") if tests else None
    else:
        statuses = [e.status.value for e in executions]
        first = next((_failure(i, t, e.status.value, e.stdout, _why(e))
                      for i, (t, e) in enumerate(zip(tests, executions))
                      if e.status not in (Status.OK, Status.SANDBOX_ERROR)), None)
    errors = statuses.count(Status.SANDBOX_ERROR.value)
    passed = statuses.count(Status.OK.value)
    counted = len(statuses) - errors
    score = passed / counted if counted else None
    success = counted > 0 and passed == counted
    label = 0 if not counted else (1 if success else -1)
    info = {"passed": passed, "total": len(tests), "statuses": statuses, "sandbox_errors": errors,
            "first_failure": first, "has_code": executions is not None}
    return TurnResult([label] * n_steps, [dict(info) for _ in range(n_steps)], OBSERVATION, True, success, score)


def over(n_steps: int, success: bool, score: float | None) -> TurnResult:
    """A turn after the episode ended (the backend never sends one; it must not raise)."""
    info = {"passed": 0, "total": 0, "statuses": [], "sandbox_errors": 0, "first_failure": None,
            "has_code": False, "after_done": True}
    return TurnResult([-1] * n_steps, [dict(info) for _ in range(n_steps)], "The episode is over.", True, success,
                      score)
