"""Coding templates over text: reversing words, palindromes, bracket balance, run-length coding.

References read with input() and write with print() only (coding_templates.run_reference).
"""
from __future__ import annotations

import numpy as np

from .coding_templates import Knobs, Template, length, lines, top_length, word

T_MAX = 20           # lines of a multi-line input at size 1


# -- reversing words ------------------------------------------------------------------------------
def _words_question(k: Knobs) -> str:
    wl = k.v(2, 12)
    spaces = ("Words may be separated by several spaces, the line may begin or end with spaces, and a line may "
              "hold no word at all (then print an empty line). " if k.edge else
              "Words are separated by single spaces. ")
    what = ("print the words in reverse order", "print the words in reverse order with the first letter of each "
            "word in upper case")[min(k.twist, 1)]
    if k.twist < 2:
        return (f"The input is one line of at most {top_length(k, 200)} words of 1 to {wl} lowercase letters. "
                f"{spaces}On one line {what}, separated by single spaces.")
    return (f"The first line holds t (1 ≤ t ≤ {top_length(k, T_MAX)}); each of the next t lines holds at most "
            f"{top_length(k, 30)} words of 1 to {wl} lowercase letters. {spaces}For each line {what}, separated "
            "by single spaces, on its own line.")


def _words_line(k: Knobs, rng: np.random.Generator, kind: str, hi: int) -> str:
    if kind == "edge" and k.edge:
        return " " * int(rng.integers(1, 4))                          # no word at all
    n = length(k, rng, kind, 1, hi)
    ws = [word(rng, int(rng.integers(1, k.v(2, 12) + 1)), 26) for _ in range(n)]
    if kind == "edge":
        ws = [ws[0]] * n                                              # one word repeated
    if not k.edge:
        return " ".join(ws)
    gaps = [" " * int(rng.integers(1, 4)) for _ in range(n + 1)]
    return gaps[0] * int(rng.integers(0, 2)) + "".join(w + g for w, g in zip(ws, gaps[1:]))


def _words_make(k: Knobs, rng: np.random.Generator, kind: str) -> str:
    if k.twist < 2:
        return lines(_words_line(k, rng, kind, 200))
    t = length(k, rng, kind, 1, T_MAX)
    return lines(str(t), *(_words_line(k, rng, kind if i == 0 else "rand", 30) for i in range(t)))


_CAPS = 'print(" ".join(w.capitalize() for w in input().split()[::-1]))\n'
REVERSE_WORDS = Template("reverse_words", 0.0, _words_question, _words_make, (
    'print(" ".join(input().split()[::-1]))\n',
    _CAPS,
    "t = int(input())\nfor _ in range(t):\n    " + _CAPS))


# -- palindromes ----------------------------------------------------------------------------------
def _pal_question(k: Knobs) -> str:
    least = 1 if k.edge else 2
    letters = f"the first {k.v(2, 26)} lowercase letters"
    if k.twist == 0:
        return (f"The input is one string of {least} to {top_length(k, 300)} characters from {letters}. Print YES if "
                "it reads the same forwards and backwards, else NO.")
    head = f"The first line holds t (1 ≤ t ≤ {top_length(k, T_MAX)}); "
    if k.twist == 1:
        return (head + f"each of the next t lines holds a string of {least} to {top_length(k, 60)} characters from "
                f"{letters}. For each string print YES if it reads the same forwards and backwards, else NO.")
    empty = " A line may hold no letter or digit at all; it counts as a palindrome." if k.edge else ""
    return (head + f"each of the next t lines holds text of at most {4 * top_length(k, 60)} characters: letters, "
            "digits, spaces and punctuation. A line is a palindrome if, keeping only its letters and digits and "
            f"ignoring case, it reads the same forwards and backwards.{empty} For each line print YES or NO; then "
            "print the number of YES lines on a last line.")


def _pal_string(k: Knobs, rng: np.random.Generator, kind: str, hi: int) -> str:
    n = length(k, rng, kind, 1 if k.edge else 2, hi)
    half = word(rng, (n + 1) // 2, k.v(2, 26))
    s = list(half + half[: n // 2][::-1])
    if n > 1 and kind != "max" and rng.random() < 0.5:               # a near-palindrome: one end changed
        i = int(rng.integers(0, n // 2))
        s[i] = chr(97 + (ord(s[i]) - 97 + 1) % k.v(2, 26))   # another letter of the alphabet
    return "".join(s)


def _pal_noisy(k: Knobs, rng: np.random.Generator, kind: str) -> str:
    if kind == "edge" and k.edge:
        return str(rng.choice([" ", ", !", "..."]))
    out = []
    for c in _pal_string(k, rng, kind, 60):
        out.append(c.upper() if rng.random() < 0.3 else c)
        if rng.random() < 0.3:
            out.append(str(rng.choice([" ", ",", "!", "'", " - "])))
    return "".join(out)


def _pal_make(k: Knobs, rng: np.random.Generator, kind: str) -> str:
    if k.twist == 0:
        return lines(_pal_string(k, rng, kind, 300))
    t = length(k, rng, kind, 1, T_MAX)
    one = _pal_string if k.twist == 1 else (lambda k, rng, kind, hi: _pal_noisy(k, rng, kind))
    return lines(str(t), *(one(k, rng, kind if i == 0 else "rand", 60) for i in range(t)))


_PAL_LOOP = "t = int(input())\nfor _ in range(t):\n    s = input().strip()\n    "
PALINDROMES = Template("palindromes", 0.0, _pal_question, _pal_make, (
    's = input().strip()\nprint("YES" if s == s[::-1] else "NO")\n',
    _PAL_LOOP + 'print("YES" if s == s[::-1] else "NO")\n',
    "t = int(input())\nyes = 0\nfor _ in range(t):\n    s = [c.lower() for c in input() if c.isalnum()]\n"
    '    if s == s[::-1]:\n        yes += 1\n        print("YES")\n    else:\n        print("NO")\nprint(yes)\n'))


# -- bracket balance ------------------------------------------------------------------------------
def _br_question(k: Knobs) -> str:
    kinds = "( and )" if k.twist == 0 else "(, ), [, ], { and }"
    empty = " A line may be empty (an empty string is balanced)." if k.edge else ""
    out = ("print YES if it is balanced (every bracket closed by a matching one, in the right order), else NO.",
           "print YES followed by its maximum nesting depth if it is balanced (every bracket closed by a matching one, "
           "in the right order); else NO followed by the 1-based position of the first character at which it "
           "cannot be balanced any more (the length plus 1 if only closing brackets are missing).")[k.twist == 2]
    return (f"The first line holds t (1 ≤ t ≤ {k.v(2, T_MAX)}); each of the next t lines holds a string of at most "
            f"{top_length(k, 200)} characters from {kinds}.{empty} For each string, on its own line, {out}")


def _br_string(k: Knobs, rng: np.random.Generator, kind: str) -> str:
    if kind == "min":
        return "" if k.edge else str(rng.choice(["()", ")("]))
    opens = "(" if k.twist == 0 else "([{"
    close = {"(": ")", "[": "]", "{": "}"}
    m = max(1, length(k, rng, kind, 2, 200) // 2)
    st: list[str] = []
    out = []
    for left in range(2 * m, 0, -1):                                  # a random balanced string of length 2m
        if not st or (len(st) < left and rng.random() < 0.5):
            st.append(str(rng.choice(list(opens))))
            out.append(st[-1])
        else:
            out.append(close[st.pop()])
    if kind == "edge" and k.edge:
        out = [out[-1], *out[:-1]]                                    # starts with a closing bracket
    elif kind == "rand" and rng.random() < 0.6:                       # a corruption: one bracket changed or lost
        i = int(rng.integers(0, len(out)))
        out[i:i + 1] = [] if rng.random() < 0.5 else [str(rng.choice(list(opens) + [close[c] for c in opens]))]
    return "".join(out)


def _br_make(k: Knobs, rng: np.random.Generator, kind: str) -> str:
    t = 1 if kind == "min" else (k.v(2, T_MAX) if kind == "max" else int(rng.integers(1, k.v(2, T_MAX) + 1)))
    return lines(str(t), *(_br_string(k, rng, kind if i == 0 else "rand") for i in range(t)))


_BR_HEAD = 't = int(input())\npairs = {")": "(", "]": "[", "}": "{"}\nfor _ in range(t):\n'
BRACKETS = Template("brackets", 0.1, _br_question, _br_make, (
    "t = int(input())\nfor _ in range(t):\n    bal = 0\n    for c in input().strip():\n"
    '        bal += 1 if c == "(" else -1\n        if bal < 0:\n            break\n'
    '    print("YES" if bal == 0 else "NO")\n',
    _BR_HEAD + "    st = []\n    ok = True\n    for c in input().strip():\n        if c in \"([{\":\n"
    "            st.append(c)\n        elif not st or st.pop() != pairs[c]:\n            ok = False\n"
    '            break\n    print("YES" if ok and not st else "NO")\n',
    _BR_HEAD + "    s = input().strip()\n    st = []\n    best = fail = 0\n    for i, c in enumerate(s):\n"
    '        if c in "([{":\n            st.append(c)\n            best = max(best, len(st))\n'
    "        elif not st or st.pop() != pairs[c]:\n            fail = i + 1\n            break\n"
    "    if not fail and st:\n        fail = len(s) + 1\n"
    '    print(f"NO {fail}" if fail else f"YES {best}")\n'))


# -- run-length coding ----------------------------------------------------------------------------
def _rl_question(k: Knobs) -> str:
    runs = f"at most {top_length(k, 150)} runs (maximal blocks of one repeated letter) of at most {_rl_top(k)} letters"
    if k.twist < 2:
        ones = "each run as its letter followed by its length (aaab becomes a3b1)" if k.twist == 0 else \
            "each run as its letter followed by its length, the length left out when it is 1 (aaab becomes a3b)"
        return f"The input is one string of lowercase letters of {runs}. Print its run-length code: {ones}."
    return ("The input is the run-length code of a string of lowercase letters: each run (a maximal block of one "
            "repeated letter) written as its letter followed by its length, the length left out when it is 1 "
            f"(aaab is written a3b). The string has {runs}. Print the string.")


def _rl_top(k: Knobs) -> int:
    return k.v(2, 40) if k.edge else k.v(2, 9)                       # edge: counts of several digits


def _rl_make(k: Knobs, rng: np.random.Generator, kind: str) -> str:
    n = length(k, rng, kind, 1, 150)
    top = _rl_top(k)
    runs, prev = [], -1
    for _ in range(n):
        c = int(rng.integers(0, 25))
        c += int(0 <= prev <= c)                                      # never the previous run's letter
        size = top if kind == "max" else 1 if kind == "edge" else int(rng.integers(1, top + 1))
        runs.append((chr(97 + c), size))
        prev = c
    if kind == "edge" and k.edge:
        runs = [(runs[0][0], top)]                                    # one long run
    if k.twist < 2:
        return lines("".join(c * m for c, m in runs))
    return lines("".join(c + (str(m) if m > 1 else "") for c, m in runs))


_RL_ENC = ("s = input().strip()\nout = []\ni = 0\nwhile i < len(s):\n    j = i\n"
           "    while j < len(s) and s[j] == s[i]:\n        j += 1\n")
RUN_LENGTH = Template("run_length", 0.1, _rl_question, _rl_make, (
    _RL_ENC + "    out.append(s[i] + str(j - i))\n    i = j\nprint(\"\".join(out))\n",
    _RL_ENC + "    out.append(s[i] + (str(j - i) if j - i > 1 else \"\"))\n    i = j\nprint(\"\".join(out))\n",
    "s = input().strip()\nout = []\ni = 0\nwhile i < len(s):\n    j = i + 1\n"
    "    while j < len(s) and s[j].isdigit():\n        j += 1\n"
    "    out.append(s[i] * (int(s[i + 1:j]) if j > i + 1 else 1))\n    i = j\nprint(\"\".join(out))\n"))

TEMPLATES = (REVERSE_WORDS, PALINDROMES, BRACKETS, RUN_LENGTH)
