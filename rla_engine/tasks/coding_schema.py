"""The coding task as JSON: the official fields, read defensively (coding.py's from_json / validate).

The environment model reads and writes Open-AgentRL's task object (sample/llm_env_rollout.py):
{"question", "test_method": "stdio", "test_time_limit", "test_input": [str], "test_output": [str]}.
The official code takes a proposal whose question is a non-empty string and whose test lists
have the same length, at least num_unit_tests (4) long, then sets the time limit to 4 s. Here the
same checks, plus what a proposal could break the trainer with: strings only (the official code
str()s whatever it gets; a number where a program's stdin goes is a malformed task, said so),
caps on every string and on the total (the task is stored and shown in prompts), a bounded
number of tests, and a time limit that must be a finite positive number, clamped to [1, 10] s.
Every error is one short line naming the field.
"""
from __future__ import annotations

import math

from ..sandbox import outputs_match

FIELDS = ("question", "test_method", "test_time_limit", "test_input", "test_output")
MIN_TESTS, MAX_TESTS = 4, 32
MAX_QUESTION = 4_000           # characters
MAX_TEST = 16_000              # characters per input or output (the largest sampled one is ~6 000)
MAX_TOTAL = 200_000            # characters over every input and output
TIME_RANGE = (1.0, 10.0)       # seconds


def _time_limit(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"test_time_limit must be a number of seconds, not {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"test_time_limit must be a finite positive number of seconds, not {value!r}")
    return float(min(max(value, TIME_RANGE[0]), TIME_RANGE[1]))


def _strings(data: dict, key: str) -> list[str]:
    value = data.get(key)
    if not isinstance(value, list):
        raise ValueError(f"{key} must be a list of strings")
    for i, s in enumerate(value):
        if not isinstance(s, str):
            raise ValueError(f"{key}[{i}] must be a string, not {type(s).__name__}")
        if len(s) > MAX_TEST:
            raise ValueError(f"{key}[{i}] has {len(s)} characters, more than {MAX_TEST}")
    return list(value)


def official(data: object, default_time: float) -> dict:
    """The official fields of a proposed task, checked; raises ValueError naming what is wrong."""
    if not isinstance(data, dict):
        raise ValueError(f"a task must be a JSON object with {', '.join(FIELDS)}")
    unknown = sorted(str(k)[:40] for k in data if k not in FIELDS)
    if unknown:
        raise ValueError(f"unknown keys: {', '.join(unknown)[:200]} (a task has {', '.join(FIELDS)})")
    question = data.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ValueError("question must be a non-empty string")
    if len(question) > MAX_QUESTION:
        raise ValueError(f"question has {len(question)} characters, more than {MAX_QUESTION}")
    if data.get("test_method", "stdio") != "stdio":
        raise ValueError('test_method must be "stdio" (a program reads stdin and writes stdout)')
    limit = _time_limit(data.get("test_time_limit", default_time))
    ins, outs = _strings(data, "test_input"), _strings(data, "test_output")
    if len(ins) != len(outs):
        raise ValueError(f"test_input has {len(ins)} tests but test_output has {len(outs)}")
    if not MIN_TESTS <= len(ins) <= MAX_TESTS:
        raise ValueError(f"a task needs {MIN_TESTS} to {MAX_TESTS} tests, not {len(ins)}")
    total = sum(map(len, ins)) + sum(map(len, outs))
    if total > MAX_TOTAL:
        raise ValueError(f"the tests hold {total} characters, more than {MAX_TOTAL}")
    return {"question": question, "test_method": "stdio", "test_time_limit": limit, "test_input": ins,
            "test_output": outs}


def degenerate(fields: dict) -> str | None:
    """Why tests cannot tell programs apart, or None: a program printing one constant would pass them
    all, or one input is given two different answers (no program passes)."""
    outs = fields["test_output"]
    if all(outputs_match(o.encode(), outs[0].encode()) for o in outs):
        return "every test expects the same output: a program that prints it passes without reading the input"
    seen: dict[str, str] = {}
    for i, (stdin, out) in enumerate(zip(fields["test_input"], outs)):
        if stdin in seen and not outputs_match(seen[stdin].encode(), out.encode()):
            return f"test {i} repeats an earlier input with a different expected output"
        seen.setdefault(stdin, out)
    return None


SCHEMA = (
    'A JSON object with exactly these keys: "question": the problem statement (a non-empty string of at most '
    f'{MAX_QUESTION} characters, input format and constraints included); "test_method": "stdio"; '
    f'"test_time_limit": seconds per test, a number ({TIME_RANGE[0]:g} to {TIME_RANGE[1]:g}); "test_input": '
    f"{MIN_TESTS} to {MAX_TESTS} strings, each the exact standard input of one test; \"test_output\": as many "
    "strings, each the exact standard output the test expects (compared token by token, whitespace ignored). "
    f"Every string at most {MAX_TEST} characters, {MAX_TOTAL} in all. Keep the original problem's topic, skill and "
    "input format; make it harder with larger inputs, wider values, more edge cases (empty lines, single elements, "
    "extremes) or an extra required output, easier with the reverse.")
