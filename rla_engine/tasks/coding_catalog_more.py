"""Coding templates: gcd and lcm, FizzBuzz with rules, interval merging, maximum subarray.

References read with input() and write with print() only (coding_templates.run_reference).
"""
from __future__ import annotations

import itertools

import numpy as np

from .coding_templates import Knobs, Template, ints, length, lines, row, top_length

# -- gcd and lcm ----------------------------------------------------------------------------------
_GCD_ZERO = " Numbers may be 0: gcd(0, 0) = 0, and an lcm of numbers one of which is 0 is 0."


def _gcd_top(k: Knobs) -> int:
    return k.v(9, 10**6) if k.twist == 2 else k.v(9, 10**12)     # lists keep their lcm to a few dozen digits


def _gcd_question(k: Knobs) -> str:
    lo = 0 if k.edge else 1
    zero = _GCD_ZERO if k.edge else ""
    head = f"The first line holds t (1 ≤ t ≤ {top_length(k, 50)}); "
    if k.twist < 2:
        what = ("their greatest common divisor", "their greatest common divisor and their least common multiple, "
                "separated by a space")[k.twist]
        return (head + f"each of the next t lines holds two integers a and b between {lo} and {_gcd_top(k)}.{zero} "
                f"For each line print {what}.")
    return (head + f"each of the next t lines holds m (1 ≤ m ≤ 6) followed by m integers between {lo} and "
            f"{_gcd_top(k)}.{zero} For each line print the greatest common divisor and the least common multiple "
            "of its m integers, separated by a space.")


def _gcd_numbers(k: Knobs, rng: np.random.Generator, kind: str, m: int) -> list[int]:
    lo, v = (0 if k.edge else 1), _gcd_top(k)
    if kind == "min":
        return [lo] * m
    if kind == "max":
        return [v] * (m - 1) + [v - 1]                                # coprime neighbours at the top
    if kind == "edge":
        x = int(rng.integers(max(lo, 1), v // 2 + 1))
        return [0 if k.edge else x] + [x * int(rng.integers(1, 3)) for _ in range(m - 1)]
    g = int(rng.integers(1, max(2, int(v ** 0.5)) + 1))              # a shared factor: gcds above 1
    return [g * int(x) for x in rng.integers(1 if g > 1 else lo, v // g + 1, size=m)]


def _gcd_make(k: Knobs, rng: np.random.Generator, kind: str) -> str:
    t = length(k, rng, kind, 1, 50)
    if k.twist < 2:
        return lines(str(t), *(row(_gcd_numbers(k, rng, kind if i == 0 else "rand", 2)) for i in range(t)))
    rows = []
    for i in range(t):
        xs = _gcd_numbers(k, rng, kind if i == 0 else "rand", int(rng.integers(1, 7)))
        rows.append(row([len(xs), *xs]))
    return lines(str(t), *rows)


_GCD_DEF = "def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n\n\nt = int(input())\n"
_GCD_PAIR = "for _ in range(t):\n    a, b = map(int, input().split())\n"
GCD_LCM = Template("gcd_lcm", 0.0, _gcd_question, _gcd_make, (
    _GCD_DEF + _GCD_PAIR + "    print(gcd(a, b))\n",
    _GCD_DEF + _GCD_PAIR + "    g = gcd(a, b)\n    print(g, a * b // g if g else 0)\n",
    _GCD_DEF + "for _ in range(t):\n    xs = list(map(int, input().split()))[1:]\n    g, m = 0, 1\n"
    "    for x in xs:\n        g = gcd(g, x)\n        m = m * x // gcd(m, x) if m and x else 0\n    print(g, m)\n"))


# -- FizzBuzz with rules --------------------------------------------------------------------------
WORDS = ("Fizz", "Buzz", "Jazz", "Pop", "Zap", "Bop")


def _fizz_question(k: Knobs) -> str:
    lo, v = (1, k.v(3, 40)) if k.edge else (2, k.v(3, 40))
    head = "Print the numbers 1 to n, one per line, replacing some of them by words. "
    edge = " A divisor may be 1 or larger than n, and divisors may repeat." if k.edge else ""
    if k.twist == 0:
        return (head + f"The input is one line: n (1 ≤ n ≤ {top_length(k, 300)}) and d ({lo} ≤ d ≤ {v}). "
                f"Replace every multiple of d by Fizz.{edge}")
    if k.twist == 1:
        return (head + f"The input is one line: n (1 ≤ n ≤ {top_length(k, 300)}), a and b ({lo} ≤ a, b ≤ {v}). "
                "Replace a multiple of a by Fizz, a multiple of b by Buzz, and a multiple of both by FizzBuzz."
                + edge)
    return (head + f"The first line holds n (1 ≤ n ≤ {top_length(k, 300)}) and m (1 ≤ m ≤ 4); each of the next m "
            f"lines holds a rule: a divisor d ({lo} ≤ d ≤ {v}) and a word. Replace a number by the words of every "
            f"rule whose d divides it, joined in the rules' order without spaces; keep it if no rule applies.{edge}")


def _fizz_make(k: Knobs, rng: np.random.Generator, kind: str) -> str:
    lo, v = (1, k.v(3, 40)) if k.edge else (2, k.v(3, 40))
    n = length(k, rng, kind, 1, 300)
    m = (1, 2, int(rng.integers(1, 5)))[k.twist]
    ds = ints(rng, m, lo, v)
    if kind == "edge":
        ds = [lo] * m if k.edge else [ds[0] * (i + 1) for i in range(m)]   # 1 divides all; or nested multiples
        ds = [min(d, v) for d in ds]
    if k.twist < 2:
        return lines(row([n, *ds]))
    return lines(f"{n} {m}", *(f"{d} {WORDS[int(rng.integers(0, len(WORDS)))]}" for d in ds))


FIZZBUZZ = Template("fizzbuzz", 0.0, _fizz_question, _fizz_make, (
    "n, d = map(int, input().split())\nfor i in range(1, n + 1):\n    print(\"Fizz\" if i % d == 0 else i)\n",
    "n, a, b = map(int, input().split())\nfor i in range(1, n + 1):\n    s = \"\"\n    if i % a == 0:\n"
    "        s += \"Fizz\"\n    if i % b == 0:\n        s += \"Buzz\"\n    print(s or i)\n",
    "n, m = map(int, input().split())\nrules = [input().split() for _ in range(m)]\nfor i in range(1, n + 1):\n"
    "    s = \"\".join(w for d, w in rules if i % int(d) == 0)\n    print(s or i)\n"))


# -- interval merging -----------------------------------------------------------------------------
def _iv_question(k: Knobs) -> str:
    rel = "l ≤ r" if k.edge else "l < r"
    edge = " Intervals may be single points, nested or repeated." if k.edge else ""
    what = ("Print how many intervals remain.",
            "Print the merged intervals ordered by l, one per line as l r.",
            "Print how many intervals remain on the first line, then the merged intervals ordered by l, one per line "
            "as l r, then a last line with their total length (the sum of r − l).")[k.twist]
    return (f"The first line holds n (1 ≤ n ≤ {top_length(k, 200)}); each of the next n lines holds an interval "
            f"l r of integers with 0 ≤ {rel} ≤ {k.v(20, 10**9)}.{edge} Merge every two intervals that overlap or "
            f"touch (one ends where the other begins) until none do. {what}")


def _iv_make(k: Knobs, rng: np.random.Generator, kind: str) -> str:
    v = k.v(20, 10**9)
    n = length(k, rng, kind, 1, 200)
    if kind == "edge":                                                # a chain of touching intervals, shuffled
        cuts = sorted(int(x) for x in rng.choice(v + 1, size=min(n + 1, v + 1), replace=False))
        iv = [[a, b] for a, b in itertools.pairwise(cuts)] or [[0, v]]
        if k.edge:                                                    # a point and a repeat, within n
            extra = [[cuts[0], cuts[0]], list(iv[0])][: max(1, n - 1)]
            iv = iv[: max(1, n - len(extra))] + extra
        iv = [iv[int(i)] for i in rng.permutation(len(iv))]
    else:
        span = max(2, 3 * v // max(n, 1))
        iv = []
        for _ in range(n):
            a = int(rng.integers(0, v))
            iv.append([a, min(v, a + int(rng.integers(0 if k.edge else 1, span + 1)))])
    return lines(str(len(iv)), *(row(p) for p in iv))


_IV = ("n = int(input())\niv = sorted(tuple(map(int, input().split())) for _ in range(n))\nout = []\n"
       "for l, r in iv:\n    if out and l <= out[-1][1]:\n        out[-1][1] = max(out[-1][1], r)\n"
       "    else:\n        out.append([l, r])\n")
_IV_LIST = "for l, r in out:\n    print(l, r)\n"
MERGE_INTERVALS = Template("merge_intervals", 0.2, _iv_question, _iv_make, (
    _IV + "print(len(out))\n",
    _IV + _IV_LIST,
    _IV + "print(len(out))\n" + _IV_LIST + "print(sum(r - l for l, r in out))\n"))


# -- maximum subarray -----------------------------------------------------------------------------
def _ms_question(k: Knobs) -> str:
    first = "n (1 ≤ n ≤ {})" if k.twist < 2 else "n and L (1 ≤ L ≤ n ≤ {})"
    sign = " They may all be negative." if k.edge else " At least one of them is positive."
    what = ("Print the largest sum of a non-empty block of consecutive numbers.",
            "Print, on one line, the largest sum of a non-empty block of consecutive numbers and the 1-based "
            "positions of the block's first and last number; of several best blocks take the one that starts "
            "first, and of those the shortest.",
            "Print the largest sum of a non-empty block of consecutive numbers on the first line, and the largest "
            "sum of a block of exactly L consecutive numbers on the second.")[k.twist]
    return (f"The first line holds {first.format(top_length(k, 300))}; the second line holds n integers between "
            f"{-k.v(9, 10**6)} and {k.v(9, 10**6)}.{sign} {what}")


def _ms_make(k: Knobs, rng: np.random.Generator, kind: str) -> str:
    v = k.v(9, 10**6)
    n = length(k, rng, kind, 1, 300)
    if kind == "edge":
        a = ints(rng, n, -v, -1) if k.edge else [0] * n               # all negative; or ties everywhere
    else:
        a = ints(rng, n, -v, v)
    if not k.edge and max(a) <= 0:
        a[int(rng.integers(0, n))] = int(rng.integers(1, v + 1))      # the promised positive number
    head = str(n) if k.twist < 2 else f"{n} {n if kind == 'max' else int(rng.integers(1, n + 1))}"
    return lines(head, row(a))


_KADANE = ("a = list(map(int, input().split()))\nbest = cur = a[0]\nfor x in a[1:]:\n    cur = max(x, cur + x)\n"
           "    best = max(best, cur)\nprint(best)\n")
MAX_SUBARRAY = Template("max_subarray", 0.15, _ms_question, _ms_make, (
    "n = int(input())\n" + _KADANE,
    "n = int(input())\na = list(map(int, input().split()))\nbest, bl, br = a[0], 1, 1\nfor l in range(n):\n"
    "    s = 0\n    for r in range(l, n):\n        s += a[r]\n        if s > best:\n"
    "            best, bl, br = s, l + 1, r + 1\nprint(best, bl, br)\n",
    "n, L = map(int, input().split())\n" + _KADANE
    + "w = sum(a[:L])\nwb = w\nfor i in range(L, n):\n    w += a[i] - a[i - L]\n    wb = max(wb, w)\nprint(wb)\n"))

TEMPLATES = (GCD_LCM, FIZZBUZZ, MERGE_INTERVALS, MAX_SUBARRAY)
