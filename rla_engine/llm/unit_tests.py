"""The coding setting's test generator (docs/coding.md): its instruction and the parser of its answer.

Both follow Open-AgentRL at commit 1fe5dbd, sample/llm_reward_rollout.py: the prompt at l.459-488 and
extract_test_cases at l.73-116. Pure Python (no torch), so the parser is cheap to test and to fuzz.

The parser returns exactly what the official code would store as syn_input / syn_output, or None
where that is "" for either (a parse failure, or an empty block), which the official execution
turns into an "Invalid Test" that every program fails (reward/execute.py:275, 297-300).
"""
from __future__ import annotations

__all__ = ["SYSTEM_PROMPT", "parse_test", "test_messages", "test_prompt"]

SYSTEM_PROMPT = (
    "You are a rigorous unit-test designer for coding problems.\n"
    "You must produce exactly ONE new test example that is correct and discriminative."
)

# The official user message, with its format block kept character for character: the parser
# below reads exactly these bold labels and triple backticks.
_INSTRUCTION = """You need to provide a new test example. A good test example should be completely accurate and \
conform to the problem’s format requirements, while also possessing enough discriminative power to distinguish \
correct code from incorrect code.

Before providing a test example, you must think carefully and reason step by step to derive an input and output \
you are very confident are correct. For example, start by designing an input you can reliably handle, then compute \
the output step by step. If you're unsure about the output, revise or re-design the input to ensure accuracy. \
Directly providing input/output pairs without this process is discouraged, as it often results in low accuracy.

Finally, after completing these previous thinking and derivation steps (you should not write the final test \
example unless you have gone through these steps very thoroughly), you MUST put your final test example in the \
following format:

**Test Input:**
```<put the EXACT stdin content here>```

**Test Output:**
```<put the EXACT stdout content here>```

**Explanation:**
<brief explanation here>

IMPORTANT:
- Output must contain exactly one **Test Input:** block and one **Test Output:** block.
- Use triple backticks exactly as shown.
- The test must be self-contained and match the problem format.

Problem:
"""

_IN = "**Test Input:**"
_OUT = "**Test Output:**"
_TICKS = "```"
# The plain-text output runs up to the next of these labels or the end (official l.107).
_OUT_ENDS = ("**Explanation:", "**Test Input:")


def test_prompt(question: str) -> str:
    """The user message asking for one test of `question` (official l.464-485). Concatenated, not
    formatted, so braces in a question stay as they are (the official renders it with Jinja, which
    inserts it verbatim too)."""
    return _INSTRUCTION + question


def test_messages(question: str) -> list[dict]:
    """The official system + user chat for one test (for generation.chat_ids)."""
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": test_prompt(question)}]


def _skip_space(text: str, i: int) -> int:
    # The official regexes use \s*, which on str matches exactly what str.isspace() accepts.
    n = len(text)
    while i < n and text[i].isspace():
        i += 1
    return i


def _last_fenced(text: str, label: str) -> str | None:
    """re.findall(label \\s* ```(.*?)```, DOTALL)[-1], or None without a match, in linear time.

    findall's matches never overlap and resume where the previous one ended, so a label inside an
    earlier match is not a match of its own; a label not followed by whitespace and ``` is retried
    one character on, as the regex engine does (the label's `**` can start the next label). Once no
    closing ``` follows an opening one, no later label can match either (it would need two more),
    so the scan stops there.
    """
    last = None
    pos = 0
    while (at := text.find(label, pos)) >= 0:
        body = _skip_space(text, at + len(label))
        if not text.startswith(_TICKS, body):
            pos = at + 1
            continue
        close = text.find(_TICKS, body + len(_TICKS))
        if close < 0:
            break
        last = text[body + len(_TICKS):close]
        pos = close + len(_TICKS)
    return last


def _last_plain_input(text: str) -> str | None:
    """findall(**Test Input:** \\s* ([\\s\\S]*?) (?=**Test Output:**))[-1]: the text up to the next
    output label; the match ends before that label, so the next search starts there. Without an
    output label after it no later input label matches either, so the scan stops: the official
    regex instead rescans to the end from every later input label, quadratic in a model's looping
    output (minutes for 20,000 repetitions of "**Test Input:** x ")."""
    last = None
    pos = 0
    while (at := text.find(_IN, pos)) >= 0:
        body = _skip_space(text, at + len(_IN))
        end = text.find(_OUT, body)
        if end < 0:
            break
        last = text[body:end]
        pos = end
    return last


def _last_plain_output(text: str) -> str | None:
    """findall(**Test Output:** \\s* ([\\s\\S]*?) (?=**Explanation:|**Test Input:|$))[-1]. The
    lookahead first holds at the nearest end label or the end ($ without MULTILINE also holds before a
    final newline); the match stops there and so does the next search's start."""
    last = None
    pos = 0
    n = len(text)
    # The next occurrence of each end label (-1: none left), searched again only once the scan has
    # passed it: searching afresh from every output label is quadratic when one label never comes.
    ahead = dict.fromkeys(_OUT_ENDS, -2)
    while (at := text.find(_OUT, pos)) >= 0:
        body = _skip_space(text, at + len(_OUT))
        end = n - 1 if text.endswith("\n") and n - 1 >= body else n
        for label in _OUT_ENDS:
            if ahead[label] == -2 or 0 <= ahead[label] < body:
                ahead[label] = text.find(label, body)
            if ahead[label] >= 0:
                end = min(end, ahead[label])
        last = text[body:end]
        pos = end
    return last


def _normalize(s: str) -> str:
    return s.replace("\r\n", "\n").strip("\n")


def _field(text: str, label: str, plain) -> str:
    fenced = _last_fenced(text, label)
    if fenced is not None:
        return _normalize(fenced.lstrip("\n"))
    loose = plain(text)
    return _normalize(loose.strip()) if loose is not None else ""


def parse_test(text: str) -> tuple[str, str] | None:
    """(stdin, expected stdout) of one generated test, or None for an invalid test.

    Each field is the LAST ```-fenced block after its bold label, else (no fenced block) the last
    plain text after the label: for the input up to the next **Test Output:**, for the output up to
    the next **Explanation: / **Test Input: or the end. Fenced text loses its leading newlines,
    plain text its surrounding whitespace; then CRLF becomes LF and outer newlines go. Whatever
    follows the opening ``` is kept, a language tag included (```python\\n1 2 gives "python\\n1 2"),
    as the official keeps it. None when either field is empty: a missing label, no input text before
    an output label, or an empty block.
    """
    if not isinstance(text, str):
        raise ValueError(f"test generator output must be a str, got {type(text).__name__}")
    test_in = _field(text, _IN, _last_plain_input)
    test_out = _field(text, _OUT, _last_plain_output)
    if test_in == "" or test_out == "":
        return None
    return test_in, test_out

