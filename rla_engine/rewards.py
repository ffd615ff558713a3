"""Reference reward and adaptation math of RLAnything (SPEC sections 3-6 and 8).

Pure Python on purpose: these functions are the hand-checkable ground truth; the training
code calls them or a vectorised twin that is tested equal to them. Every z-score uses the
population standard deviation (divide by n).
"""
from __future__ import annotations

import bisect
import math
import numbers

__all__ = [
    "accept_candidate",
    "adaptation_direction",
    "balance",
    "coding_policy_rewards",
    "coding_policy_trained",
    "empirical_precision",
    "judge_rewards",
    "normalize_per_step",
    "parse_verdict",
    "policy_step_rewards",
    "precision_bound",
    "transformed_policy_step_rewards",
    "unit_test_quality",
    "unit_test_rewards",
]

# Below this population std a per-step group counts as constant (SPEC §3).
STD_EPS = 1e-8
_DIRECTIONS = ("harder", "easier")


# ---------------------------------------------------------------- validation helpers


def _sign(x, allowed: tuple[int, ...], what: str) -> int:
    # bool is an int subclass; a True/False here is almost surely a 0/1 outcome mix-up.
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or x not in allowed:
        raise ValueError(f"{what} must be one of {allowed}, got {x!r}")
    return allowed[allowed.index(x)]


def _outcome(x) -> int:
    return _sign(x, (1, -1), "outcome")


def _verdicts(vs, where: str) -> list[int]:
    # Any iterable of ints (list, tuple, numpy row) is fine; a string is a caller bug.
    if isinstance(vs, (str, bytes)):
        raise ValueError(f"verdicts of {where} must be a list of ints, got {vs!r}")
    try:
        vs = list(vs)
    except TypeError:
        raise ValueError(f"verdicts of {where} must be a list of ints, got {vs!r}") from None
    if len(vs) == 0:
        raise ValueError(f"verdicts of {where} are empty (need m >= 1)")
    return [_sign(v, (1, -1, 0), f"verdict {j} of {where}") for j, v in enumerate(vs)]


def _finite(x, what: str) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x):
        raise ValueError(f"{what} must be a finite number, got {x!r}")
    return float(x)


def _acc(x, what: str) -> float:
    x = _finite(x, what)
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"{what} must be in [0, 1], got {x!r}")
    return x


def _band(low, high) -> tuple[float, float]:
    low, high = _acc(low, "low"), _acc(high, "high")
    # With low >= high one accuracy could trigger both directions.
    if not low < high:
        raise ValueError(f"need low < high, got low={low!r}, high={high!r}")
    return low, high


def _mean_std(xs: list[float]) -> tuple[float, float]:
    """Mean and population std of a non-empty list (fsum keeps small groups exact-ish)."""
    n = len(xs)
    mean = math.fsum(xs) / n
    var = math.fsum((x - mean) ** 2 for x in xs) / n
    return mean, math.sqrt(var)


# ---------------------------------------------------------------- SPEC §3 policy reward


def policy_step_rewards(outcome, verdicts, lam=1.0) -> list[float]:
    """R_i = O + (lam/m_i) * sum_j S_ij for every step i of one trajectory.

    Unreadable verdicts (0) add nothing to the sum but still count in m_i.
    """
    o = _outcome(outcome)
    lam = _finite(lam, "lam")
    out = []
    for i, vs in enumerate(verdicts):
        vs = _verdicts(vs, f"step {i}")
        out.append(o + lam * sum(vs) / len(vs))
    return out


def transformed_policy_step_rewards(outcome, verdicts, lam=1.0, form="centred") -> list[float]:
    """policy.step_verdicts (not in the paper): R_i = O + lam * u_i with v_i = (1/m_i) * sum_j S_ij and
    u_i = v_i - mean(v) over the trajectory (centred), v_i - v_(i-1) with v_(-1) = 0 (difference), or
    v_i on a failed trajectory and 0 on a successful one (failures)."""
    o = _outcome(outcome)
    lam = _finite(lam, "lam")
    if form not in ("centred", "difference", "failures"):
        raise ValueError(f"form must be centred, difference or failures, got {form!r}")
    v = []
    for i, vs in enumerate(verdicts):
        vs = _verdicts(vs, f"step {i}")
        v.append(sum(vs) / len(vs))
    if not v:
        return []
    if form == "centred":
        centre = math.fsum(v) / len(v)
        return [o + lam * (x - centre) for x in v]
    if form == "failures":
        return [o + (lam * x if o < 0 else 0.0) for x in v]
    return [o + lam * (x - prev) for x, prev in zip(v, [0.0, *v[:-1]])]


def normalize_per_step(rewards) -> list[list[float]]:
    """Group-relative advantages: z-score each step index over the rollouts that reached it.

    `rewards` holds one (possibly ragged) list per rollout of one task; the result has the
    same shape. A step index reached by fewer than 2 rollouts, or whose std <= 1e-8, gets 0.
    """
    rows = []
    for k, r in enumerate(rewards):
        rows.append([_finite(x, f"reward [{k}][{i}]") for i, x in enumerate(r)])
    out = [[0.0] * len(r) for r in rows]
    longest = max((len(r) for r in rows), default=0)
    for i in range(longest):
        reached = [k for k, r in enumerate(rows) if len(r) > i]
        # SPEC choice: a lone rollout has no group to be relative to, so it teaches nothing.
        if len(reached) < 2:
            continue
        vals = [rows[k][i] for k in reached]
        mean, std = _mean_std(vals)
        if std <= STD_EPS:
            continue
        for k in reached:
            out[k][i] = (rows[k][i] - mean) / std
    return out


# ---------------------------------------------------------------- SPEC §4 judge reward


def judge_rewards(step_reward, verdicts) -> list[float]:
    """Consistency reward of the m verdicts of one step, z-scored over those m.

    raw_j = R_i * S_ij for a readable verdict, -2 for an unreadable one (at lam = 1 the
    worst a readable verdict can score, so a format failure is never better than a wrong verdict).
    """
    r = _finite(step_reward, "step_reward")
    vs = _verdicts(verdicts, "the step")
    raw = [r * v if v != 0 else -2.0 for v in vs]
    # Test equality, not var == 0: the fsum mean of equal floats can be off by an ulp,
    # which would turn a constant group into +-huge values.
    if all(x == raw[0] for x in raw):
        return [0.0] * len(raw)
    mean, std = _mean_std(raw)
    return [(x - mean) / std for x in raw]


# ---------------------------------------------------------------- SPEC §1, §4 judge verdicts

_BOX = "\\boxed{"
_VERDICT_VALUES = {"1": 1, "+1": 1, "-1": -1}


def parse_verdict(text: str) -> int:
    """The verdict S of one sampled judge output: +1, -1, or 0 for unreadable (SPEC §1, §4).

    The LAST occurrence of the literal `\\boxed{` in the text is THE box; nothing earlier
    counts. Its content runs to the first `}` after it, and decides after stripping
    whitespace: `1` or `+1` -> +1, `-1` -> -1. Everything else is 0: no box at all, a last
    box that is never closed (even when an earlier box is closed: a judge that opens a
    second box has changed its mind and not finished, so falling back to the earlier box
    would reward a format failure), a `{` inside the box (nested braces), or any other value
    (`0`, `2`, `yes`, `+ 1`, a Unicode minus, an empty box). Text after the box is ignored.
    `\\boxed{\\boxed{1}}` is +1 by this rule, because the inner box is the last one opened.
    Unreadable costs the judge the fixed raw reward -2 (SPEC §4), so the rule is strict.
    """
    if not isinstance(text, str):
        raise ValueError(f"judge output must be a str, got {type(text).__name__}")
    start = text.rfind(_BOX)
    if start < 0:
        return 0
    body_start = start + len(_BOX)
    end = text.find("}", body_start)
    if end < 0:
        return 0
    body = text[body_start:end]
    if "{" in body:
        return 0
    return _VERDICT_VALUES.get(body.strip(), 0)


# ---------------------------------------------------------------- SPEC §5 adaptation


def adaptation_direction(acc, low=0.2, high=0.8):
    """'harder' if acc >= high, 'easier' if acc <= low, else None (bounds inclusive)."""
    acc = _acc(acc, "acc")
    low, high = _band(low, high)
    if acc >= high:
        return "harder"
    if acc <= low:
        return "easier"
    return None


def accept_candidate(direction, prev_acc, new_acc, low=0.2, high=0.8) -> bool:
    """Accept a candidate on its measured accuracy new_acc versus the slot's prev_acc.

    harder: 0 < new < prev and new >= low; easier: new > prev, new <= high and new > 0.
    """
    if direction not in _DIRECTIONS:
        raise ValueError(f"direction must be one of {_DIRECTIONS}, got {direction!r}")
    prev = _acc(prev_acc, "prev_acc")
    new = _acc(new_acc, "new_acc")
    low, high = _band(low, high)
    # new > 0 in both: a variant nobody solves gives no learning signal at all.
    if direction == "harder":
        return 0.0 < new < prev and new >= low
    return new > prev and new <= high and new > 0.0


# ---------------------------------------------------------------- SPEC §6 theory


def balance(step_outcomes, step_verdicts) -> tuple[float, float, float]:
    """(p_plus, p_minus, mu) over judged steps; a class with no steps gives nan.

    p_plus = P(S=+1 | O=+1), p_minus = P(S=-1 | O=-1), per verdict; unreadable verdicts
    count in the denominators (an unreadable verdict is not a correct one).
    """
    if len(step_outcomes) != len(step_verdicts):
        raise ValueError(
            f"step_outcomes and step_verdicts differ in length: "
            f"{len(step_outcomes)} != {len(step_verdicts)}"
        )
    hits = {1: 0, -1: 0}
    total = {1: 0, -1: 0}
    for k, (o, vs) in enumerate(zip(step_outcomes, step_verdicts)):
        o = _sign(o, (1, -1), f"outcome of step {k}")
        vs = _verdicts(vs, f"step {k}")
        hits[o] += sum(1 for v in vs if v == o)
        total[o] += len(vs)
    p_plus = hits[1] / total[1] if total[1] else math.nan
    p_minus = hits[-1] / total[-1] if total[-1] else math.nan
    return p_plus, p_minus, p_plus + p_minus


def precision_bound(mu: float, m: int) -> float:
    """Theorem 1 lower bound 1 - exp(-m (mu-1)^2 / 4) if mu > 1, else 0.0 (nan stays nan)."""
    if isinstance(m, bool) or not isinstance(m, numbers.Integral) or m < 1:
        raise ValueError(f"m must be an int >= 1, got {m!r}")
    if isinstance(mu, bool) or not isinstance(mu, numbers.Real):
        raise ValueError(f"mu must be a number, got {mu!r}")
    # An undefined mu (a class with no steps) leaves the bound undefined too, so the
    # caller drops it as it drops mu instead of storing a misleading 0.
    if math.isnan(mu):
        return math.nan
    if mu <= 1.0:
        return 0.0
    return 1.0 - math.exp(-int(m) * (float(mu) - 1.0) ** 2 / 4.0)


def empirical_precision(groups) -> float:
    """Empirical precision A: mean over tasks of P(success-step mean > failure-step mean).

    groups: one (success_step_means, failure_step_means) pair per task; ties count 1/2.
    A task missing either side has no pairs and is skipped; nan if no task remains.
    """
    per_task = []
    for t, group in enumerate(groups):
        try:
            succ, fail = group
        except (TypeError, ValueError):
            raise ValueError(f"group {t} must be a (success_means, failure_means) pair") from None
        succ = [_finite(x, f"success mean {i} of group {t}") for i, x in enumerate(succ)]
        fail = [_finite(x, f"failure mean {i} of group {t}") for i, x in enumerate(fail)]
        if not succ or not fail:
            continue
        # Sorted failures + bisect: O((n+f) log f) instead of all n*f pairs.
        fail.sort()
        score = 0.0
        for s in succ:
            below = bisect.bisect_left(fail, s)
            ties = bisect.bisect_right(fail, s) - below
            score += below + 0.5 * ties
        per_task.append(score / (len(succ) * len(fail)))
    if not per_task:
        return math.nan
    return math.fsum(per_task) / len(per_task)


# ---------------------------------------------------------------- coding setting (docs/coding.md)
# Open-AgentRL reward/llm_rl_reward.py at commit 1fe5dbd; line numbers below refer to it.


def _bools(xs, what: str) -> list[bool]:
    if isinstance(xs, (str, bytes)):
        raise ValueError(f"{what} must be a list of bools, got {xs!r}")
    out = list(xs)
    for i, x in enumerate(out):
        if not isinstance(x, bool):
            raise ValueError(f"{what}[{i}] must be a bool, got {x!r}")
    return out


def coding_policy_rewards(pass_ratios) -> list[float]:
    """One task's R program rewards: each program's ground-truth pass ratio, z-scored over the R
    programs (population std; all 0 when std <= STD_EPS, where the official code tests std == 0,
    llm_rl_reward.py:23-31, 207-217). Truncated programs must come in with ratio 0 (l.146-157)."""
    raw = [_acc(x, f"pass ratio {r}") for r, x in enumerate(pass_ratios)]
    if not raw:
        return []
    mean, std = _mean_std(raw)
    if std <= STD_EPS:
        return [0.0] * len(raw)
    return [(x - mean) / std for x in raw]


def coding_policy_trained(pass_all, low=0.2, high=0.8) -> bool:
    """Whether a task's programs train (and its tests train the test generator): low <= share <=
    high, share = the fraction of its programs passing every ground-truth test, 0 with none. Both
    bounds inclusive: the official skips only `proportion > 0.8 or proportion < 0.2` (l.222-225)."""
    flags = _bools(pass_all, "pass_all")
    low, high = _band(low, high)
    share = sum(flags) / len(flags) if flags else 0.0
    return low <= share <= high


def _test_matrix(passes, program_correct) -> tuple[list[list[bool]], list[bool]]:
    """Validated (passes as bools, correct): an invalid test (None) fails every program, as the
    official execute.py:297-300 writes False for an "Invalid Test"."""
    correct = _bools(program_correct, "program_correct")
    if isinstance(passes, (str, bytes)):
        raise ValueError(f"passes must be a list of rows, got {passes!r}")
    rows = []
    for k, row in enumerate(passes):
        if isinstance(row, (str, bytes)):
            raise ValueError(f"passes[{k}] must be a list, got {row!r}")
        row = list(row)
        if len(row) != len(correct):
            raise ValueError(f"passes[{k}] has {len(row)} entries for {len(correct)} programs")
        for r, x in enumerate(row):
            if x is not None and not isinstance(x, bool):
                raise ValueError(f"passes[{k}][{r}] must be True, False or None, got {x!r}")
        rows.append([x is True for x in row])
    return rows, correct


def unit_test_rewards(passes, program_correct) -> list[float] | None:
    """One task's K generated-test rewards, or None when the task is skipped.

    passes[k][r]: program r passes generated test k (None: test k is invalid, i.e. it fails every
    program); program_correct[r]: program r passes all ground-truth tests. A test is correct when
    every correct program passes it (l.285). Raw reward: with no wrong program +1 for a correct test
    and -1 otherwise (l.287-289); else a correct test earns the number of wrong programs it fails
    (l.294, 298) and an incorrect one minus the number of wrong programs it passes (l.295, 300), so
    an invalid test scores 0 (or -1 when there is no wrong program). The K raw rewards are z-scored
    over the task's tests (l.318; std <= STD_EPS -> all 0). Skipped (None): no test (l.267-269) or
    no correct program (l.272-273).
    """
    rows, correct = _test_matrix(passes, program_correct)
    good = [r for r, c in enumerate(correct) if c]
    wrong = [r for r, c in enumerate(correct) if not c]
    if not rows or not good:
        return None
    raw = []
    for row in rows:
        correct_test = all(row[r] for r in good)
        if not wrong:
            raw.append(1.0 if correct_test else -1.0)
        elif correct_test:
            raw.append(float(sum(1 for r in wrong if not row[r])))
        else:
            raw.append(-float(sum(1 for r in wrong if row[r])))
    mean, std = _mean_std(raw)
    if std <= STD_EPS:
        return [0.0] * len(raw)
    return [(x - mean) / std for x in raw]


def unit_test_quality(passes, program_correct) -> tuple[float, float]:
    """(syn_ut_acc, perfect_ut_rate) of one task's K generated tests (l.104-202).

    syn_ut_acc: the share of tests every correct program passes; nan when the task has no correct
    program or no test (the official leaves such tasks out of the denominator, l.186).
    perfect_ut_rate: the share that every correct program passes and every wrong program fails; nan
    unless the task has both kinds of program (l.193-194). Invalid tests count, as failed by all.
    Over a batch the official sums tests over the counted tasks (a micro mean; equal K per task
    makes it the mean of these per-task shares).
    """
    rows, correct = _test_matrix(passes, program_correct)
    good = [r for r, c in enumerate(correct) if c]
    wrong = [r for r, c in enumerate(correct) if not c]
    if not rows or not good:
        return math.nan, math.nan
    ok = [all(row[r] for r in good) for row in rows]
    acc = sum(ok) / len(rows)
    if not wrong:
        return acc, math.nan
    perfect = sum(1 for row, o in zip(rows, ok) if o and not any(row[r] for r in wrong))
    return acc, perfect / len(rows)
