"""Scripted answers for the coding setting's diagnostics: programs and tests whose correctness is
known, written as a model would write them, so that everything after the model — extraction, the
sandbox, the parser, the rewards, the measures, the console — runs on real programs and can be
checked (policy.source = scripted; judge.source = oracle with judge.kind = tests).

- A program is the task's trusted reference or one of its mutants (tasks/coding_mutants: each
  fails a ground-truth test), at even odds, in a ```python block.
- A test is one of the task's ground-truth tests, or that input with a mutant's output (a wrong
  test), at even odds, in the test generator's official format.
Every draw comes from the run's torch generator, in the loop's order: a resumed run continues
exactly. Neither learns; both are labelled as what they are in the texts they write.
"""
from __future__ import annotations

import zlib
from collections import OrderedDict

import numpy as np
import torch

from ..sandbox import outputs_match
from ..tasks.coding_mutants import traced_output
from ..tasks.coding_run import tests_of
from ..tasks.task import Task
from .dialogue import TextEpisodes
from .generation import Sampling
from .generated_tests import TestsJudgement, judge_from_texts

MUTANTS = 4              # wrong programs kept per task
CACHE = 256              # tasks whose mutants are kept (a pool is a few dozen tasks)
MUTANT_LINES = 200_000   # a wrong test's output: lines a mutant may run in-process before it is passed over


class Script:
    def __init__(self, family, tokenizer, gen: torch.Generator):
        self.family, self.tokenizer, self.gen = family, tokenizer, gen
        self._mutants: OrderedDict[str, list[str]] = OrderedDict()

    def _coin(self) -> bool:
        return bool(torch.randint(0, 2, (1,), generator=self.gen).item())

    def _pick(self, n: int) -> int:
        return int(torch.randint(0, n, (1,), generator=self.gen).item())

    def mutants(self, task: Task) -> list[str]:
        key = repr(task.params)
        if key not in self._mutants:
            # seeded by the task alone: the cache is memory only, and a resumed run (its cache
            # empty) draws exactly what the uninterrupted one did
            seed = [task.seed, zlib.crc32(key.encode())]
            self._mutants[key] = self.family.wrong_programs(task, np.random.default_rng(seed), MUTANTS)
            if len(self._mutants) > CACHE:
                self._mutants.popitem(last=False)
        self._mutants.move_to_end(key)
        return self._mutants[key]

    # -- the policy's programs ---------------------------------------------------------------------
    def program(self, task: Task) -> str:
        wrong = self.mutants(task)
        correct = self._coin() or not wrong
        source = self.family.reference(task) if correct else wrong[self._pick(len(wrong))]
        kind = "the reference solution" if correct else "a mutant of the reference"
        return f"Scripted program ({kind}).\n```python\n{source}\n```"

    def write(self, active: list[int], tasks: list[Task]) -> list[list[int]]:
        """dialogue.Writer: each episode's program as tokens of the policy's tokenizer."""
        return [list(self.tokenizer(self.program(t), add_special_tokens=False)["input_ids"]) for t in tasks]

    # -- the test generator's tests ----------------------------------------------------------------
    def test(self, task: Task) -> str:
        # a test the official format can carry: an empty input or output reads as an invalid test
        every = tests_of(task.params)
        tests = [t for t in every if t[0].strip() and t[1].strip()] or every
        stdin, expected = tests[self._pick(len(tests))]
        said, kind = expected, "a ground-truth test"
        if not self._coin():
            for source in self.mutants(task):
                got, _ = traced_output(source, stdin, MUTANT_LINES)
                if got is not None and not outputs_match(got.encode(), expected.encode()):
                    said, kind = got, "a wrong test: a mutant's output"
                    break
        return (f"**Test Input:**\n```\n{stdin}\n```\n\n**Test Output:**\n```\n{said}\n```\n\n"
                f"**Explanation:**\nScripted: {kind}.")

    def judge(self, ep: TextEpisodes, m: int, how: Sampling) -> TestsJudgement:
        texts = [[self.test(ep.tasks[g * ep.rollouts]) for _ in range(m)] for g in range(ep.groups)]
        return judge_from_texts(self.family, ep, texts)
