"""The coding family's procedural environment model: knob moves of at most 0.15 in difficulty.

A move changes one knob of the task's template (never the template: the variant stays the same
kind of problem): the twist by one (a composed operation or a stricter output added or taken
away), the edge knob (the awkward inputs let in or kept out), or size / values by a random step
worth 0.05 to 0.15 of difficulty. The critic's focus goes first (coding.CodingFamily.critic: the
input size when programs time out, the edge cases when the edge tests fail most, the required
output otherwise); the other knobs follow in a random order.

The critic (`critique`) is Open-AgentRL's per-test view (llm_env_rollout.py shows the environment
model each ground-truth test's pass rate over the policy's programs), plus the statuses.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from .coding_templates import WEIGHTS, Knobs, Template, knob_difficulty

MAX_DELTA = 0.15
KNOBS = ("twist", "edge", "size", "values")


def _step(t: Template, k: Knobs, knob: str, sign: int, rng: np.random.Generator) -> Knobs | None:
    if knob == "twist":
        return Knobs(k.size, k.values, k.twist + sign, k.edge) if 0 <= k.twist + sign <= 2 else None
    if knob == "edge":
        return Knobs(k.size, k.values, k.twist, k.edge + sign) if 0 <= k.edge + sign <= 1 else None
    gain = float(rng.uniform(0.05, MAX_DELTA)) / ((1.0 - t.base) * WEIGHTS[knob])   # knob change for that Δd
    old = getattr(k, knob)
    new = round(min(max(old + sign * gain, 0.0), 1.0), 4)
    if new == old:
        return None
    return Knobs(new, k.values, k.twist, k.edge) if knob == "size" else Knobs(k.size, new, k.twist, k.edge)


def moves(t: Template, k: Knobs, sign: int, focus: object, rng: np.random.Generator) -> list[Knobs]:
    """Knobs that move the difficulty the asked way by more than 0 and at most MAX_DELTA, preferred first."""
    order = [KNOBS[int(i)] for i in rng.permutation(len(KNOBS))]
    if focus in KNOBS:
        order.remove(str(focus))
        order.insert(0, str(focus))
    d0 = knob_difficulty(t, k)
    out = []
    for knob in order:
        cand = _step(t, k, knob, sign, rng)
        if cand is not None and 0 < sign * (knob_difficulty(t, cand) - d0) <= MAX_DELTA + 1e-9:
            out.append(cand)
    return out


def critique(params: dict, steps: list[tuple[int, dict]]) -> dict:
    """The critic: over the high-risk steps' infos (coding_run.verdict), how many programs solved the
    task, the mean pass rate, each ground-truth test's pass rate, the statuses, and the knob to move."""
    infos = [i for _, i in steps if isinstance(i, dict) and isinstance(i.get("statuses"), list)]
    n_tests = len(params.get("test_input") or [])
    fails = [0] * n_tests
    statuses: Counter = Counter()
    for info in infos:
        for j, s in enumerate(info["statuses"][:n_tests]):
            statuses[str(s)] += 1
            fails[j] += s not in ("ok", "sandbox_error")
    wrong, slow = sum(fails), statuses["timeout"] + statuses["memory_limit"]
    # the input size when programs run out of time or memory, the edge cases when the first ("min")
    # and third ("edge") tests fail more than their share (coding_templates.KINDS), else the output asked
    edge_heavy = n_tests > 2 and fails[0] + fails[2] > 2 * wrong / n_tests
    focus = None if not wrong else "size" if slow * 2 >= wrong else "edge" if edge_heavy else "twist"
    shares = [i.get("passed", 0) / i["total"] for i in infos if isinstance(i.get("total"), int) and i["total"] > 0]
    return {"n": len(infos), "solved": sum(1 for i in infos if i.get("total") and i.get("passed") == i.get("total")),
            "pass_rate": round(float(np.mean(shares)), 3) if shares else None,
            "test_pass_rate": [round(1 - f / len(infos), 3) for f in fails] if infos else [],
            "statuses": dict(statuses), "focus": focus, "template": params.get("template")}
