"""The test generator's prompt and answer parser (rla_engine/llm/unit_tests.py) against the official
extract_test_cases, copied below as the oracle, on its own format, malformed and hostile texts."""
import random
import re
import time

import pytest

from rla_engine.llm import unit_tests as ut
from rla_engine.llm.unit_tests import parse_test
from rla_engine.sandbox import outputs_match

# (test_prompt and test_messages are reached through `ut`: imported bare, pytest would collect them)


# Open-AgentRL (Apache-2.0) sample/llm_reward_rollout.py:73-116 at commit 1fe5dbd, verbatim but for
# the return: None where the official stores "" (an invalid test).
def _normalize(s):
    if s is None:
        return ""
    s = s.replace("\r\n", "\n")
    return s.strip("\n")


def official(full_output):
    full_output = full_output or ""
    pattern_input_backticks = r"\*\*Test Input:\*\*\s*```(.*?)```"
    pattern_output_backticks = r"\*\*Test Output:\*\*\s*```(.*?)```"
    matches_input = re.findall(pattern_input_backticks, full_output, re.DOTALL)
    matches_output = re.findall(pattern_output_backticks, full_output, re.DOTALL)
    fail = [""]
    if matches_input:
        test_input = [_normalize(matches_input[-1].lstrip("\n"))]
    else:
        pattern_input_plain = r"\*\*Test Input:\*\*\s*([\s\S]*?)(?=\*\*Test Output:\*\*)"
        matches_input_plain = re.findall(pattern_input_plain, full_output, re.DOTALL)
        test_input = [_normalize(matches_input_plain[-1].strip())] if matches_input_plain else fail
    if matches_output:
        test_output = [_normalize(matches_output[-1].lstrip("\n"))]
    else:
        pattern_output_plain = r"\*\*Test Output:\*\*\s*([\s\S]*?)(?=\*\*Explanation:|\*\*Test Input:|$)"
        matches_output_plain = re.findall(pattern_output_plain, full_output, re.DOTALL)
        test_output = [_normalize(matches_output_plain[-1].strip())] if matches_output_plain else fail
    idx = full_output.rfind("**Test Input:**")
    example_text = [full_output[idx:]] if idx != -1 else fail
    if test_input == fail or test_output == fail or example_text == fail:
        return None
    return test_input[0], test_output[0]


GOOD = """Let me design a small input. n = 3, the array 1 2 3 sums to 6.

**Test Input:**
```
3
1 2 3
```

**Test Output:**
```
6
```

**Explanation:**
1 + 2 + 3 = 6."""


@pytest.mark.parametrize(("text", "want"), [
    (GOOD, ("3\n1 2 3", "6")),
    # the prompt's own one-line shape
    ("**Test Input:**\n```5```\n\n**Test Output:**\n```25```", ("5", "25")),
    # the last block wins: a model that revises its test
    ("**Test Input:**\n```1```\n**Test Output:**\n```1```\nWait, wrong.\n"
     "**Test Input:**\n```2```\n**Test Output:**\n```4```", ("2", "4")),
    # no fences: plain text up to the next label / the explanation
    ("**Test Input:** 7 8\n**Test Output:** 15\n**Explanation:** sum", ("7 8", "15")),
    ("**Test Input:**\n  4\n**Test Output:**\n  16  \n", ("4", "16")),
    # fenced input, plain output, and the reverse
    ("**Test Input:**\n```\n2 3\n```\n**Test Output:** 5", ("2 3", "5")),
    # a language tag stays, as in the official parser
    ("**Test Input:**\n```text\n9\n```\n**Test Output:**\n```\n81\n```", ("text\n9", "81")),
    # CRLF becomes LF; inner blank lines and indentation stay
    ("**Test Input:**\r\n```\r\n1\r\n\r\n  2\r\n```\r\n**Test Output:**\r\n```\r\nok\r\n```", ("1\n\n  2", "ok")),
    # non-ASCII passes through untouched
    ("**Test Input:**\n```\nnaïve 東京 😀\n```\n**Test Output:**\n```\n−1\n```", ("naïve 東京 😀", "−1")),
])
def test_official_format(text, want):
    assert parse_test(text) == want == official(text)


@pytest.mark.parametrize("text", [
    "",
    "I think the answer is 42.",
    "**Test Input:**\n```\n3\n```",                              # no output label
    "**Test Output:**\n```\n3\n```",                             # no input label
    "Test Input:\n```\n3\n```\nTest Output:\n```\n9\n```",       # labels without bold
    "**Test Input:**\n```\n\n```\n**Test Output:**\n```\n9\n```",  # empty input block
    "**Test Input:**\n```\n3\n```\n**Test Output:**\n```\n```",   # empty output block
    "**Test Input:**\n```\n```\n**Test Output:**\n```9",            # empty input, unclosed output
    "**Test Output:** 9\n**Test Input:** 3",                      # plain input needs a later output label
    "**Test Input:**\n```\n3\n```\n**Test Output:**\n**Explanation:** none",
])
def test_malformed_texts_are_invalid(text):
    assert parse_test(text) is None
    assert official(text) is None


def test_nested_backticks_follow_the_regex():
    # ```` opens with ``` and the lazy body ends at the very next ```
    for text in ("**Test Input:**\n````\n1\n````\n**Test Output:**\n```2```",
                 "**Test Input:**\n```a ``` b```\n**Test Output:**\n``````",
                 "**Test Input:**\n```3\n**Test Output:**\n```9\n",   # fences pair across the labels
                 "**Test Input:****Test Input:**\n```1```\n**Test Output:****Test Output:** 2"):
        assert parse_test(text) == official(text)


# The pieces random texts are made of: the labels and their fragments, fences, every kind of
# whitespace the regex's \s sees (and zero-width spaces it does not), CRLF, and plain text.
PIECES = ["**Test Input:**", "**Test Output:**", "**Explanation:", "**Test Input:", "**", "*", "```", "``", "`",
          " ", "\n", "\r\n", "\t", "\x1c", "\u3000", "\u200b", "\xa0", "1", "ab", "é", "東", "😀", ":"]


@pytest.mark.parametrize("seed", range(300))
def test_random_texts_match_the_official_parser(seed):
    rng = random.Random(seed)
    text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 60)))
    assert parse_test(text) == official(text), repr(text)


@pytest.mark.parametrize("seed", range(100))
def test_random_well_formed_answers_match_the_official_parser(seed):
    rng = random.Random(seed)

    def block():
        body = "".join(rng.choice(["1", " ", "\n", "x", "`", "\r\n", "東"]) for _ in range(rng.randint(0, 8)))
        return f"```{body}```" if rng.random() < 0.7 else body

    parts = []
    for _ in range(rng.randint(1, 3)):
        parts += [rng.choice(["", "thinking...\n"]), "**Test Input:**", rng.choice(["\n", " ", ""]), block(),
                  "\n\n**Test Output:**", rng.choice(["\n", " ", ""]), block(),
                  rng.choice(["", "\n\n**Explanation:**\nbecause", "\n"])]
    text = "".join(parts)
    assert parse_test(text) == official(text), repr(text)


@pytest.mark.parametrize("unit", ["**Test Input:**```", "**Test Input:** x ", "**Test Output:** x **Test Input:** ",
                                  "**Test Output:**```x```**Test Input:**```"])
def test_looping_outputs_parse_in_linear_time(unit):
    # A model stuck in a loop. On the first unit the official plain-input regex rescans to the end
    # from every label (about two minutes at 20,000 repetitions, growing with the square: hours
    # here); the parser reads the text a bounded number of times.
    text = unit * 200_000
    start = time.perf_counter()
    parse_test(text)
    assert time.perf_counter() - start < 5.0


def test_huge_well_formed_answer():
    big = "7 " * 500_000
    assert parse_test(f"{'x' * 1_000_000}**Test Input:**\n```\n{big}\n```\n**Test Output:**\n```\n1\n```") == \
        (big.rstrip("\n"), "1")


def test_non_text_is_a_caller_bug():
    with pytest.raises(ValueError):
        parse_test(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        parse_test(b"**Test Input:**")  # type: ignore[arg-type]


def test_prompt_asks_for_the_parsed_format():
    question = "Read n and print n**2. Use {braces} and {{jinja}} freely."
    prompt = ut.test_prompt(question)
    assert prompt.endswith("Problem:\n" + question)
    for line in ("**Test Input:**", "**Test Output:**", "**Explanation:**",
                 "```<put the EXACT stdin content here>```", "```<put the EXACT stdout content here>```"):
        assert line in prompt
    assert "exactly ONE" in ut.SYSTEM_PROMPT
    assert [m["role"] for m in ut.test_messages(question)] == ["system", "user"]
    # the format example itself is not a test: the text in its angle brackets is what it reads
    assert parse_test(prompt) == ("<put the EXACT stdin content here>", "<put the EXACT stdout content here>")


def test_outputs_match_collapses_whitespace():
    # the one comparison of outputs (the sandbox's), as the official code's
    assert outputs_match(b"1 2\n3\n", b" 1  2 3")
    assert outputs_match(b"", b"\n")
    assert not outputs_match(b"12", b"1 2")
