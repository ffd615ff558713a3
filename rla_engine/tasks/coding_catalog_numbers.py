"""Coding templates over a list of integers: sum and extremes, counting, k-th largest, prefix sums.

Every reference reads with input() and writes with print() only, as the policy is asked to, so
that it runs both in the sandbox and in-process (coding_templates.run_reference).
"""
from __future__ import annotations

import numpy as np

from .coding_templates import Knobs, Template, ints, length, lines, row, top_length

N_MAX = 300          # the longest list at size 1: inputs stay a few kB (they are shown to the environment model)
Q_MAX = 100


def _bounds(k: Knobs, hi: int) -> tuple[int, int]:
    """The value range: 1..V, or −V..V when the edge knob lets negatives in."""
    v = k.v(9, hi)
    return (-v if k.edge else 1), v


def _list_line(k: Knobs, hi: int) -> str:
    lo, v = _bounds(k, hi)
    return f"n integers, each between {lo} and {v}"


# -- sum and extremes ---------------------------------------------------------------------------
def _sum_question(k: Knobs) -> str:
    head = (f"The first line holds an integer n (1 ≤ n ≤ {top_length(k, N_MAX)}); the second line holds "
            f"{_list_line(k, 10**9)}. ")
    return head + ("Print their sum.",
                   "Print their sum, their minimum and their maximum on one line, separated by spaces.",
                   "Print their sum, minimum and maximum on the first line, separated by spaces; on the second "
                   "line print the 1-based position of the first occurrence of the minimum and the 1-based "
                   "position of the last occurrence of the maximum.")[k.twist]


def _sum_make(k: Knobs, rng: np.random.Generator, kind: str) -> str:
    lo, v = _bounds(k, 10**9)
    n = length(k, rng, kind, 1, N_MAX)
    if kind == "max":
        a = [int(rng.choice([lo, v])) for _ in range(n)]
    elif kind == "edge":
        a = [int(rng.integers(lo, v + 1))] * n        # all equal: every position ties
    else:
        a = ints(rng, n, lo, v)
    return lines(str(n), row(a))


_SUM_HEAD = "n = int(input())\na = list(map(int, input().split()))\n"
SUM_EXTREMES = Template("sum_extremes", 0.0, _sum_question, _sum_make, (
    _SUM_HEAD + "print(sum(a))\n",
    _SUM_HEAD + "print(sum(a), min(a), max(a))\n",
    _SUM_HEAD + "lo, hi = min(a), max(a)\nprint(sum(a), lo, hi)\nprint(a.index(lo) + 1, n - a[::-1].index(hi))\n"))


# -- counting ---------------------------------------------------------------------------------
def _count_question(k: Knobs) -> str:
    lo, v = _bounds(k, 1000)
    head = (f"The first line holds an integer n (1 ≤ n ≤ {top_length(k, N_MAX)}); the second line holds "
            f"{_list_line(k, 1000)}. ")
    return head + (
        f"The third line holds an integer x between {lo} and {v}. Print how many of the n integers equal x.",
        f"The third line holds q (1 ≤ q ≤ {top_length(k, Q_MAX)}); each of the next q lines holds an integer x "
        f"between {lo} and {v}. For each x print, on its own line, how many of the n integers equal x.",
        "For each distinct value print a line with the value and how many times it occurs, separated by a "
        "space; order the lines by count, largest first, and equal counts by value, smallest first.")[k.twist]


def _query(rng: np.random.Generator, a: list[int], lo: int, v: int, kind: str) -> int:
    if kind == "edge":
        return lo                                     # absent: the list is all v there
    return int(rng.choice(a)) if rng.random() < 0.5 else int(rng.integers(lo, v + 1))


def _count_make(k: Knobs, rng: np.random.Generator, kind: str) -> str:
    lo, v = _bounds(k, 1000)
    n = length(k, rng, kind, 1, N_MAX)
    a = [v] * n if kind == "edge" else ints(rng, n, lo, v)
    parts = [str(n), row(a)]
    if k.twist == 0:
        parts.append(str(_query(rng, a, lo, v, kind)))
    elif k.twist == 1:
        q = length(k, rng, kind, 1, Q_MAX)
        parts += [str(q), *(str(_query(rng, a, lo, v, kind if i == 0 else "rand")) for i in range(q))]
    return lines(*parts)


_COUNT_TABLE = "cnt = {}\nfor v in a:\n    cnt[v] = cnt.get(v, 0) + 1\n"
COUNTING = Template("counting", 0.05, _count_question, _count_make, (
    _SUM_HEAD + "x = int(input())\nprint(a.count(x))\n",
    _SUM_HEAD + _COUNT_TABLE + "q = int(input())\nfor _ in range(q):\n    print(cnt.get(int(input()), 0))\n",
    _SUM_HEAD + _COUNT_TABLE + "for v, c in sorted(cnt.items(), key=lambda p: (-p[1], p[0])):\n    print(v, c)\n"))


# -- k-th largest ---------------------------------------------------------------------------------
def _kth_question(k: Knobs) -> str:
    head = (f"The first line holds n and k (1 ≤ k ≤ n ≤ {top_length(k, N_MAX)}); the second line holds "
            f"{_list_line(k, 10**9)}. ")
    return head + (
        "Print the k-th largest of them, counting repeated values separately (in 5 5 3 the 2nd largest is 5).",
        "Print the k-th largest distinct value (in 5 5 3 the 2nd largest distinct value is 3), or NONE if there "
        "are fewer than k distinct values.",
        "Print the k largest of them in non-increasing order, separated by spaces, counting repeated values "
        "separately.")[k.twist]


def _kth_make(k: Knobs, rng: np.random.Generator, kind: str) -> str:
    lo, v = _bounds(k, 10**9)
    n = length(k, rng, kind, 1, N_MAX)
    if kind == "edge":
        a = [int(x) for x in rng.choice([lo, v], size=n)]   # two values repeated: duplicates decide
        kk = n
    else:
        a = ints(rng, n, lo, v)
        kk = n if kind == "max" else int(rng.integers(1, n + 1))
    return lines(f"{n} {kk}", row(a))


_KTH_HEAD = "n, k = map(int, input().split())\n"
KTH_LARGEST = Template("kth_largest", 0.05, _kth_question, _kth_make, (
    _KTH_HEAD + "a = sorted(map(int, input().split()), reverse=True)\nprint(a[k - 1])\n",
    _KTH_HEAD + "a = sorted(set(map(int, input().split())), reverse=True)\nprint(a[k - 1] if k <= len(a) else "
                "\"NONE\")\n",
    _KTH_HEAD + "a = sorted(map(int, input().split()), reverse=True)\nprint(*a[:k])\n"))


# -- prefix sums ----------------------------------------------------------------------------------
def _prefix_question(k: Knobs) -> str:
    head = (f"The first line holds an integer n (1 ≤ n ≤ {top_length(k, N_MAX)}); the second line holds "
            f"{_list_line(k, 10**6)} (a_1 … a_n). ")
    queries = (f"The third line holds q (1 ≤ q ≤ {top_length(k, Q_MAX)}); each of the next q lines holds a query "
               "l r (1 ≤ l ≤ r ≤ n). ")
    return head + ("The third line holds l and r (1 ≤ l ≤ r ≤ n). Print a_l + … + a_r.",
                   queries + "For each query print a_l + … + a_r on its own line.",
                   queries + "For each query print, on its own line, a_l + … + a_r and how many of a_l … a_r are "
                             "even, separated by a space.")[k.twist]


def _span(rng: np.random.Generator, n: int, kind: str) -> tuple[int, int]:
    if kind == "max":
        return 1, n
    if kind == "edge":
        i = int(rng.choice([1, n]))
        return i, i                                   # a single element at either end
    lo, hi = sorted(int(x) for x in rng.integers(1, n + 1, size=2))
    return lo, hi


def _prefix_make(k: Knobs, rng: np.random.Generator, kind: str) -> str:
    lo, v = _bounds(k, 10**6)
    n = length(k, rng, kind, 1, N_MAX)
    a = [v] * n if kind == "max" else ints(rng, n, lo, v)
    if k.twist == 0:
        return lines(str(n), row(a), row(list(_span(rng, n, kind))))
    q = length(k, rng, kind, 1, Q_MAX)
    return lines(str(n), row(a), str(q), *(row(list(_span(rng, n, kind))) for _ in range(q)))


_PREFIX = ("p = [0] * (n + 1)\ne = [0] * (n + 1)\nfor i in range(n):\n    p[i + 1] = p[i] + a[i]\n"
           "    e[i + 1] = e[i] + (a[i] % 2 == 0)\nq = int(input())\nfor _ in range(q):\n"
           "    l, r = map(int, input().split())\n")
PREFIX_SUMS = Template("prefix_sums", 0.1, _prefix_question, _prefix_make, (
    _SUM_HEAD + "l, r = map(int, input().split())\nprint(sum(a[l - 1:r]))\n",
    _SUM_HEAD + _PREFIX + "    print(p[r] - p[l - 1])\n",
    _SUM_HEAD + _PREFIX + "    print(p[r] - p[l - 1], e[r] - e[l - 1])\n"))

TEMPLATES = (SUM_EXTREMES, COUNTING, KTH_LARGEST, PREFIX_SUMS)
