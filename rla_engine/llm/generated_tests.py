"""The reward model as a unit-test generator (judge.kind = tests: the paper's coding setting).

For every task of the batch the judge LM writes m tests in the official format (one Test Input /
Test Output pair, then an explanation); every program the policy wrote for that task is run on
every readable test in the sandbox. The verdict of test k on episode b is +1 (the program passes
it), −1 (it does not: a wrong answer, a timeout, a crash, too much output or memory) or 0 (the
test could not be read, or the sandbox itself failed: neither is the program's doing).

It reuses the step judge's shapes, so that the loop, the Ray executor and the judge's PPO stay one
code path: one judged cell per group (its first episode's only step) holds the group's prompt and
its m samples, and verdicts are [B, 1, m]. The judge sees the task's question only: never the
ground-truth tests, the reference solution or the programs' results.
"""
from __future__ import annotations

import bisect
import time
from dataclasses import dataclass

import torch

from ..sandbox import Status
from .dialogue import TextEpisodes
from .generation import Sampling, chat_ids, sample
from .judge import TextJudgement
from .unit_tests import parse_test, test_messages

# the statuses that are the program's failure; SANDBOX_ERROR is the machine's, never the program's
FAILED = frozenset({Status.WRONG_ANSWER, Status.TIMEOUT, Status.RUNTIME_ERROR, Status.OUTPUT_LIMIT,
                    Status.MEMORY_LIMIT})


@dataclass
class TestsJudgement(TextJudgement):
    tests: list[list[tuple[str, str] | None]]   # per group, its m tests as read (None: unreadable)
    results: list[list[list[str]]]              # per group, per test, per rollout: the Status ("" unreadable)
    exec_seconds: float                         # wall seconds the sandbox spent on them

    def flat(self, b: int, t: int) -> int:
        """The group cell of any episode b (its group's prompt and samples), whatever its step."""
        return bisect.bisect_right(self._starts, b) - 1

    def __post_init__(self) -> None:
        super().__post_init__()
        self._starts = [cell[0] for cell in self.cells]


def verdict_of(status: str) -> int:
    if status == Status.OK:
        return 1
    return -1 if status in FAILED else 0


def judge_tests(family, model, tokenizer, ep: TextEpisodes, m: int, how: Sampling,
                gen: torch.Generator | None) -> TestsJudgement:
    prompts = [chat_ids(tokenizer, test_messages(str(family.describe(ep.tasks[g * ep.rollouts])["text"])))
               for g in range(ep.groups)]
    answers = sample(model, tokenizer, prompts, how, gen, copies=m)
    outputs = [answers[g * m:(g + 1) * m] for g in range(ep.groups)]
    texts = [[tokenizer.decode(a, skip_special_tokens=True) for a in outs] for outs in outputs]
    return judge_from_texts(family, ep, texts, prompts, outputs)


def judge_from_texts(family, ep: TextEpisodes, texts: list[list[str]], prompts: list[list[int]] | None = None,
                     outputs: list[list[list[int]]] | None = None) -> TestsJudgement:
    """The judgement of m written tests per group (`texts`), read and run; `prompts` and `outputs`
    (the tokens a learned generator trains on) are empty for scripted tests."""
    groups, rollouts, m = ep.groups, ep.rollouts, len(texts[0]) if texts else 0
    cells = [(g * rollouts, 0) for g in range(groups)]
    tests = [[parse_test(text) for text in said] for said in texts]
    started = time.perf_counter()
    results = run_on_tests(family, ep, tests)
    seconds = time.perf_counter() - started
    verdicts = torch.zeros((*ep.mask.shape, m), dtype=torch.int8)
    for g in range(groups):
        for k in range(m):
            for r in range(rollouts):
                verdicts[g * rollouts + r, 0, k] = verdict_of(results[g][k][r])
    return TestsJudgement(verdicts, cells, prompts or [[] for _ in cells],
                          outputs or [[[] for _ in range(m)] for _ in cells], texts, tests, results, seconds)


def run_on_tests(family, ep: TextEpisodes, tests: list[list[tuple[str, str] | None]]) -> list[list[list[str]]]:
    """Every program of each group on each of its group's readable tests, in one sandbox call."""
    rollouts = ep.rollouts
    programs: list[str] = []
    their_tests: list[list[tuple[str, str]]] = []
    for b in range(len(ep.steps)):
        readable = [t for t in tests[b // rollouts] if t is not None]
        programs.append(ep.steps[b][0].text if ep.steps[b] else "")
        their_tests.append(readable)
    runs = family.run_responses(ep.tasks, programs, their_tests)
    results: list[list[list[str]]] = [[[""] * rollouts for _ in group] for group in tests]
    for b, executions in enumerate(runs):
        g, r = divmod(b, rollouts)
        read = [k for k, t in enumerate(tests[g]) if t is not None]
        for k, execution in zip(read, executions):
            results[g][k][r] = str(execution.status.value)
    return results


def join_tests_judgements(parts: list[TestsJudgement], offsets: list[int]) -> TestsJudgement:
    """The judgements of consecutive parts of one batch as one (as judge.join_judgements)."""
    cells = [(b + off, t) for p, off in zip(parts, offsets) for b, t in p.cells]
    return TestsJudgement(torch.cat([p.verdicts for p in parts]), cells, [x for p in parts for x in p.prompts],
                          [x for p in parts for x in p.outputs], [x for p in parts for x in p.texts],
                          [x for p in parts for x in p.tests], [x for p in parts for x in p.results],
                          sum(p.exec_seconds for p in parts))


def generated_test_notes(judgement: TestsJudgement, groups: list[int], chars: int) -> list[dict]:
    """For the environment model's critic: each generated test of the groups, cut to `chars`, with
    the share of the group's programs that passed it (None: unreadable)."""
    notes = []
    for g in groups:
        for test, results in zip(judgement.tests[g], judgement.results[g]):
            ran = [r for r in results if r and r != Status.SANDBOX_ERROR]
            notes.append({"input": test[0][:chars] if test else "", "output": test[1][:chars] if test else "",
                          "pass_rate": sum(r == Status.OK for r in ran) / len(ran) if test and ran else None})
    return notes
