"""What a coding iteration measures and shows beyond the step judge's keys (judge.kind = tests):
the test generator's quality, its unreadable samples, and the sandbox's executions — the ground-
truth runs of every program and the runs on the generated tests together."""
from __future__ import annotations

import math
from collections import Counter

import torch

from .. import metrics
from ..loop.advantages import unit_test_quality
from ..sandbox import Status
from ..vocabulary import SampleGroundTruth, SampleUnitTest
from .dialogue import TextEpisodes
from .generated_tests import TestsJudgement

SAID_CHARS = 2000


def ground_truth_statuses(ep: TextEpisodes) -> list[list[str]]:
    """Per episode, the status of each ground-truth test its program ran (the family's step info)."""
    return [[str(s) for s in (steps[0].info.get("statuses", []) if steps else [])] for steps in ep.steps]


def code_measures(ep: TextEpisodes, judgement: TestsJudgement) -> dict[str, float]:
    out: dict[str, float] = {}
    samples = [t for group in judgement.tests for t in group]
    if samples:
        out[metrics.TEST_PARSE_FAILURES] = sum(t is None for t in samples) / len(samples)
        quality = unit_test_quality(passes_tensor(judgement, ep.rollouts), ep.success.view(ep.groups, -1))
        # nan where no task counts (no correct program, or no wrong one): left out, not stored as 0
        out.update({key: value for key, value in zip((metrics.SYN_UT_ACC, metrics.PERFECT_UT_RATE), quality)
                    if math.isfinite(value)})
    # executions only: a response without a program ran nothing (its tests read no_code)
    ran = [bool(steps and steps[0].info.get("has_code", True)) for steps in ep.steps]
    if ran:
        out[metrics.NO_PROGRAM] = 1 - sum(ran) / len(ran)
    statuses = Counter(s for b, row in enumerate(ground_truth_statuses(ep)) if ran[b] for s in row)
    statuses.update(judgement.results[g][k][r] for g, group in enumerate(judgement.results)
                    for k, test in enumerate(group) for r in range(len(test))
                    if test[r] and ran[g * ep.rollouts + r])
    total = sum(statuses.values())
    if total:
        for status in Status:
            out[metrics.exec_status_key(status.value)] = statuses[status.value] / total
    out[metrics.SANDBOX_ERRORS] = float(statuses[Status.SANDBOX_ERROR.value])
    seconds = sum(float(steps[0].info.get("seconds", 0.0)) for steps in ep.steps if steps)
    out[metrics.EXEC_SECONDS] = seconds + judgement.exec_seconds
    return out


def passes_tensor(judgement: TestsJudgement, rollouts: int) -> torch.Tensor:
    """[G, m, R] int8: +1 the program passes the test, −1 it fails it, 0 unreadable (or a sandbox error)."""
    g = len(judgement.cells)
    return judgement.verdicts[:, 0, :].reshape(g, rollouts, -1).permute(0, 2, 1).contiguous()


def trajectory_tests(ep: TextEpisodes, judgement: TestsJudgement, b: int) -> dict:
    """The `ground_truth` and `unit_tests` of one trajectory in the samples event."""
    g, r = divmod(b, ep.rollouts)
    gt = ground_truth_statuses(ep)[b]
    truth: SampleGroundTruth = {"passed": sum(s == Status.OK.value for s in gt), "total": len(gt), "statuses": gt}
    correct_rows = [rr for rr in range(ep.rollouts) if bool(ep.success[g * ep.rollouts + rr])]
    tests: list[SampleUnitTest] = []
    for k, (test, said) in enumerate(zip(judgement.tests[g], judgement.texts[g])):
        results = judgement.results[g][k]
        tests.append({"input": test[0] if test else "", "output": test[1] if test else "",
                      "said": said[-SAID_CHARS:], "readable": test is not None,
                      "correct": test is not None and bool(correct_rows)
                      and all(results[rr] == Status.OK.value for rr in correct_rows),
                      "result": results[r]})
    return {"ground_truth": truth, "unit_tests": tests}
