"""Coding: stdin/stdout programming problems, answered with one Python program (issue 36 §2).

A task is Open-AgentRL's coding task object (question, test_method "stdio", test_time_limit,
test_input[], test_output[]) plus, for a procedural task, its template and knobs; `params` holds
all of it, so a variant is rebuilt from its row alone. Twelve templates (coding_catalog_*) draw
problems at a difficulty; their trusted references compute the expected outputs
(coding_templates). A task the environment model rewrote keeps its template name (what it was
anchored to, for display) but drops the knobs: its difficulty is None, it is measured by the pass
rate alone.

The policy answers in one turn; the response is one step. Its last ```python block runs on every
ground-truth test in the sandbox (rla_engine.sandbox), and the step is +1 iff all pass; the score
is the share passed (coding_run). `respond_all` runs a whole batch of episodes in one pool call.

Held-out tasks are disjoint from training ones (`text_support.half`, as text_arithmetic).
"""
from __future__ import annotations

import time

import atexit
import numpy as np

from ..sandbox import Execution, Limits, SandboxPool, Status
from . import coding_catalog_more, coding_catalog_numbers, coding_catalog_text
from .coding_moves import critique, moves
from .coding_mutants import wrong_programs as _mutants
from .coding_run import clip, extract_program, over, run_groups, tests_of, verdict
from .coding_schema import FIELDS, SCHEMA, degenerate, official
from .coding_templates import TIME_LIMIT, Knobs, Template, build_params, draw_knobs, knob_difficulty, run_reference
from .task import Task, draw_seed
from .text_base import TextEpisode, TextFamily, TurnResult
from .text_support import half, sample_near, variant_seed

TEMPLATES: dict[str, Template] = {t.name: t for t in (*coding_catalog_numbers.TEMPLATES,
                                                      *coding_catalog_text.TEMPLATES, *coding_catalog_more.TEMPLATES)}


def _knobs(params: dict) -> tuple[Template, Knobs] | None:
    """The template and knobs of a procedural task; None for a rewritten one (or a malformed row)."""
    t, k = TEMPLATES.get(params.get("template")), params.get("knobs")     # type: ignore[arg-type]
    if t is None or not isinstance(k, dict):
        return None
    try:
        knobs = Knobs.of(k)
    except (KeyError, TypeError, ValueError):
        return None
    ok = 0 <= knobs.size <= 1 and 0 <= knobs.values <= 1 and knobs.twist in (0, 1, 2) and knobs.edge in (0, 1)
    return (t, knobs) if ok else None


def _fresh(t: Template, k: Knobs, rng: np.random.Generator, avoid: dict | None = None) -> dict | None:
    """A training task of these knobs with tests that tell programs apart, other than `avoid`."""
    for _ in range(32):
        params = build_params(t, k, rng)
        if half(params) == 0 and degenerate(params) is None and params != avoid:
            return params
    return None


class CodingEpisode(TextEpisode):
    def __init__(self, family: CodingFamily, params: dict):
        self.family, self.params = family, params
        self.done, self.success = False, False
        self.score: float | None = None

    def respond(self, steps: list[str]) -> TurnResult:
        return self.family.respond_all([self], [steps])[0]


PROMPT_TEST_CHARS = 100     # a test string longer than this is cut in the environment model's prompt


class CodingFamily(TextFamily):
    name = "coding"
    lines_are_steps = False
    multiline_step = True         # the answer is a whole program: one step, however many lines
    max_turns = 1

    def __init__(self) -> None:
        self._sandbox: SandboxPool | None = None
        self._limits = Limits()

    # -- the sandbox ---------------------------------------------------------------------------
    def use_sandbox(self, pool: SandboxPool, memory_mb: int | None = None, output_bytes: int | None = None) -> None:
        """Run programs in `pool` (a rla_engine.sandbox.SandboxPool) from now on, each under these
        memory and output limits (the sandbox's defaults where None); a task sets the time."""
        self._sandbox = pool
        self._limits = Limits(**{k: v for k, v in (("memory_mb", memory_mb), ("output_bytes", output_bytes))
                                 if v is not None})

    def sandbox(self) -> SandboxPool:
        if self._sandbox is None:        # made on first use: importing the family starts nothing
            self._sandbox = SandboxPool(require="isolated")
            atexit.register(self._sandbox.close)
        return self._sandbox

    def run_programs(self, programs: list[str], tests: list[list[tuple[str, str]]],
                     time_limit: float) -> list[list[Execution]]:
        """Each program on its own (input, expected) tests, one pool call: per program, its
        executions in test order."""
        return run_groups(self.sandbox(), [(p, t, time_limit) for p, t in zip(programs, tests)], self._limits)

    def run_responses(self, tasks: list[Task], responses: list[str],
                      tests: list[list[tuple[str, str]]]) -> list[list[Execution]]:
        """Each response's program (its last ```python block) on its own tests under its task's time
        limit, one pool call. A response without a program is not run: each of its tests reads
        runtime_error, as the official code's stand-in program (a sentence, run as Python) would."""
        programs = [extract_program(r) for r in responses]
        groups = [(p, t, float(task.params["test_time_limit"]))
                  for task, p, t in zip(tasks, programs, tests) if p is not None]
        ran = iter(run_groups(self.sandbox(), groups, self._limits))
        missing = Execution(Status.RUNTIME_ERROR, b"", b"no ```python block in the response", 0.0, None, "no program")
        return [next(ran) if p is not None else [missing] * len(t) for p, t in zip(programs, tests)]

    # -- tasks -------------------------------------------------------------------------------------
    def difficulty(self, params: dict) -> float | None:
        got = _knobs(params) if isinstance(params, dict) else None
        return None if got is None else knob_difficulty(*got)

    def sample(self, d: float, rng: np.random.Generator, held_out: bool = False) -> Task:
        def draw(d: float, g: np.random.Generator) -> dict | None:
            t = TEMPLATES[str(g.choice(sorted(n for n, t in TEMPLATES.items() if t.base <= d + 1e-9)))]
            k = draw_knobs(t, d, g)
            params = None if k is None else build_params(t, k, g)
            return params if params is not None and degenerate(params) is None else None
        params, seed = sample_near(d, rng, held_out, 60, draw, lambda p: self.difficulty(p) or 0.0)
        return Task(self.name, params, seed)

    def validate(self, task: Task) -> str | None:
        if task.family != self.name:
            return f"task of family {task.family!r}, not {self.name!r}"
        p = task.params
        if not isinstance(p, dict):
            return "a task's params must be an object"
        try:
            fields = official({k: p[k] for k in FIELDS if k in p}, TIME_LIMIT)
        except ValueError as e:
            return str(e)
        if fields["test_time_limit"] != p.get("test_time_limit") or not isinstance(p.get("template"), str):
            return "a stored task needs its template name and a time limit within range"
        got = _knobs(p)
        if got is None and p.get("knobs") is not None:
            return "the knobs are not a known template's"
        if got is not None:
            t, k = got
            ref = t.references[k.twist]
            if p["question"] != t.question(k) or any(run_reference(ref, i) != o for i, o in tests_of(p)):
                return "the question or the expected outputs are not the template's"
        return degenerate(fields)

    # -- the dialogue --------------------------------------------------------------------------------
    def instruction(self, task: Task) -> str:
        # Open-AgentRL's policy prompt, paraphrased, plus where the program goes (its extraction's rule)
        return ("Think first, then write a Python 3 program that solves the problem below. The program reads "
                "its input with input() and writes its answer with print(); it must compute the output from the "
                "input it reads, not print the answers of particular examples. Give the complete program in one "
                "```python code block; only the last such block is run.\n\nThis is the problem:\n"
                + task.params["question"])

    def start(self, task: Task) -> TextEpisode:
        return CodingEpisode(self, task.params)

    def respond_all(self, episodes: list[TextEpisode], responses: list[list[str]]) -> list[TurnResult]:
        """Every episode's program on its tests, all in one sandbox call."""
        results: list[TurnResult | None] = [None] * len(episodes)
        groups, where = [], []
        for i, (ep, steps) in enumerate(zip(episodes, responses)):
            assert isinstance(ep, CodingEpisode), "a coding family answers its own episodes"
            program = extract_program("\n".join(steps))
            if ep.done:
                results[i] = over(len(steps), ep.success, ep.score)
            elif program is None:
                results[i] = verdict(tests_of(ep.params), None, len(steps))
            else:
                groups.append((program, tests_of(ep.params), float(ep.params["test_time_limit"])))
                where.append(i)
        if groups:
            started = time.perf_counter()
            ran = run_groups(self.sandbox(), groups, self._limits)
            share = (time.perf_counter() - started) / len(groups)    # each program's part of the sandbox's time
            for i, (_, tests, _), execs in zip(where, groups, ran):
                result = results[i] = verdict(tests, execs, len(responses[i]))
                for info in result.infos:
                    info["seconds"] = share
        for ep, res in zip(episodes, results):
            assert isinstance(ep, CodingEpisode) and res is not None
            if not ep.done:
                ep.done, ep.success, ep.score = True, res.success, res.score
        return [r for r in results if r is not None]

    def wrong_programs(self, task: Task, rng: np.random.Generator, n: int) -> list[str]:
        """Up to n mutants of the task's reference, each failing one of its ground-truth tests."""
        got = _knobs(task.params)
        if got is None:
            raise ValueError("a rewritten task has no reference program to mutate")
        t, k = got
        return _mutants(t.references[k.twist], tests_of(task.params), rng, n)

    def reference(self, task: Task) -> str:
        """The correct program of a procedural task."""
        got = _knobs(task.params)
        if got is None:
            raise ValueError("a rewritten task has no reference program")
        return got[0].references[got[1].twist]

    # -- the environment model -------------------------------------------------------------------
    def critic(self, task: Task, steps: list[tuple[int, dict]]) -> dict:
        return critique(task.params if isinstance(task.params, dict) else {}, steps)

    def mutate(self, task: Task, direction: str, critic: dict, rng: np.random.Generator) -> Task:
        if direction not in ("harder", "easier"):
            raise ValueError(f"direction must be 'harder' or 'easier', not {direction!r}")
        sign = 1 if direction == "harder" else -1
        got = _knobs(task.params)
        if got is None:        # a rewritten task has no knobs: a fresh one of its template, off the middle
            t = TEMPLATES.get(task.params.get("template"), TEMPLATES["sum_extremes"])   # type: ignore[arg-type]
            k = draw_knobs(t, max(t.base, 0.5 + sign * 0.15), rng) or Knobs(0.5, 0.5, 1, 0)
            got = (t, k)
        t, k0 = got
        focus = critic.get("focus") if isinstance(critic, dict) else None
        for k in [*moves(t, k0, sign, focus, rng), k0]:      # the last: nothing left that way, fresh tests
            params = _fresh(t, k, rng, avoid=task.params)
            if params is not None:
                return Task(self.name, params, draw_seed(rng))
        raise RuntimeError(f"no fresh tests for template {t.name}")     # unreachable: the knobs were feasible

    def variant_schema(self) -> str:
        return SCHEMA

    def task_json(self, task: Task) -> dict:
        return {k: task.params[k] for k in FIELDS}

    def prompt_json(self, task: Task) -> dict:
        """task_json with each test string over PROMPT_TEST_CHARS cut and its length said: as the
        official environment model's prompt, which leaves long tests out (a task's six tests reach
        ~6 KB each here, a small model's whole context)."""
        data = self.task_json(task)
        for key in ("test_input", "test_output"):
            data[key] = [t if len(t) <= PROMPT_TEST_CHARS else f"{t[:PROMPT_TEST_CHARS]}… ({len(t)} characters in all)"
                         for t in data[key]]
        return data

    def from_json(self, data: object, root: Task) -> Task:
        rp = root.params if isinstance(root.params, dict) else {}
        limit = rp.get("test_time_limit", TIME_LIMIT)
        fields = official(data, limit if isinstance(limit, (int, float)) and not isinstance(limit, bool)
                          and 0 < limit < float("inf") else TIME_LIMIT)
        if all(rp.get(k) == fields[k] for k in FIELDS):
            params = dict(rp)                               # the root itself: its knobs stand
        else:       # "do not drift": the root's template name stays, for display; the knobs go
            name = rp.get("template")
            params = {"template": name if isinstance(name, str) else "custom", "knobs": None, **fields}
        return Task(self.name, params, variant_seed(params))

    def describe(self, task: Task) -> dict:
        p = task.params
        return {"text": p["question"], "template": p.get("template"), "difficulty": self.difficulty(p),
                "time_limit": p["test_time_limit"], "n_tests": len(p["test_input"]),
                "tests": [{"input": clip(i), "output": clip(o)} for i, o in tests_of(p)[:3]]}


FAMILY = CodingFamily()
