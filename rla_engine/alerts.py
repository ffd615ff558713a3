"""Alerts from the theory: the engine says when the loop is unhealthy, while it happens.

`ALERTS` holds the rules as data — a stable name, the metric read, the condition, a sentence of
what it means and one of what a person might do — for the engine, the console and reports alike.
`AlertWatcher`, fed each committed iteration's metrics in order, returns the events to write.
Torch-free and Qt-free: the console imports this module.

One event kind, `alert` (EventKind.ALERT), whose payload says its state:

  raised   {"alert", "state": "raised", "since": first iteration of the window, "value": the
            windowed value, "threshold", "key", "window", "message", "advice"}
           + "resumed": true when a resumed run says again that an alert it carried over still holds
           + "quantity" (what went non-finite: its metric key, also the "key") for not_finite, whose
             "value" is text ("nan", "inf")
  cleared  {"alert", "state": "cleared", "since": as raised, "raised_at": the iteration of the
            raised event, "value": the windowed value (None when the run ended), "reason":
            "condition ended" | "run ended"}

Windowed: a rule decides on the mean of its measure over the last `window` iterations where the
measure was taken (an iteration without it neither raises nor clears). After each raise or clear
the window starts afresh, so every decision rests on `window` measures taken since the last one
and an alert never flips faster than its window (μ and unanimity are noisy per iteration).
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import metrics
from .vocabulary import EventKind

RAISED, CLEARED = "raised", "cleared"
CONDITION_ENDED, RUN_ENDED = "condition ended", "run ended"
MU_AT_MOST_ONE = "mu_at_most_one"
JUDGE_UNANIMOUS = "judge_unanimous"
NONE_IN_BAND = "none_in_band"
ENV_INVALID = "env_invalid"
NOT_FINITE = "not_finite"
SANDBOX_FAILING = "sandbox_failing"

Event = tuple[str, dict[str, Any]]
Measure = Callable[[Mapping[str, float]], float | None]

_TESTS: dict[str, Callable[[float, float], bool]] = {
    "<=": lambda v, t: v <= t, ">=": lambda v, t: v >= t, ">": lambda v, t: v > t, "==": lambda v, t: v == t}


def _finite(values: Mapping[str, float], key: str) -> float | None:
    v = values.get(key)
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


def _invalid_share(values: Mapping[str, float]) -> float | None:
    """Invalid answers / all answers of this iteration. Every valid answer became a pending
    candidate (the pool's pending ones are exactly this iteration's: last iteration's were all
    decided), so the answers are env/invalid + env/pending; none asked, no share."""
    invalid, valid = _finite(values, metrics.INVALID), _finite(values, metrics.PENDING)
    if invalid is None or valid is None or invalid + valid == 0:
        return None
    return invalid / (invalid + valid)


@dataclass(frozen=True)
class AlertRule:
    name: str
    key: str                     # the metric the rule reads (not_finite: its events name the key that failed)
    condition: str               # "<=", ">=", ">", "==" on the windowed mean; "not finite"
    threshold: float | None
    title: str                   # a few words, for a badge
    message: str                 # what it means, one sentence
    advice: str                  # what a person might do, one sentence
    reads: tuple[str, ...] = ()  # every key the measure looks at (the key first)
    measure: Measure | None = field(default=None, compare=False)   # None: the key's value
    windowed: bool = True

    def value(self, values: Mapping[str, float]) -> float | None:
        return self.measure(values) if self.measure is not None else _finite(values, self.key)

    def holds(self, value: float) -> bool:
        return self.threshold is not None and _TESTS[self.condition](value, self.threshold)


ALERTS: dict[str, AlertRule] = {r.name: r for r in (
    AlertRule(MU_AT_MOST_ONE, metrics.MU, "<=", 1.0, "μ ≤ 1",
              "The judge's μ = p₊ + p₋ is at most 1: by Theorem 1 more verdicts per step cannot make it more "
              "precise, so its step rewards add noise, not signal, to the policy's reward.",
              "Weigh the judge less until μ rises (a lower policy.lam, or policy.mu_gate = true), and check that "
              "the judge trains (judge.train) on tasks inside its band.", reads=(metrics.MU,)),
    AlertRule(JUDGE_UNANIMOUS, metrics.UNANIMITY, ">=", 0.95, "judge unanimous",
              "The judge's m verdicts agree on at least 95 % of steps: on a unanimous step the consistency "
              "reward is zero, so the judge has all but stopped learning (it has collapsed).",
              "Start again with more randomness in the judge (a higher judge.temperature or judge.m, a lower "
              "judge.lr, or, not in the paper, judge.unanimous = batch or judge.verdict_entropy > 0: "
              "docs/RESULTS.md); policy.lam = 0 or the μ gate keeps a collapsed judge out of the policy's reward.",
              reads=(metrics.UNANIMITY,)),
    AlertRule(NONE_IN_BAND, metrics.IN_BAND, "==", 0.0, "no task in band",
              "No sampled task has a success rate inside the band (env.low ≤ acc ≤ env.high): the judge gets no "
              "training data, the policy few mixed groups, and by Theorem 2 the judge's objective degenerates.",
              "Bring the pool within reach: the difficulty override (lower if every task fails, higher if every "
              "task succeeds), or env.strategy = rlanything so that the pool adapts.", reads=(metrics.IN_BAND,)),
    AlertRule(ENV_INVALID, metrics.INVALID, ">", 0.5, "env model invalid",
              "More than half of the environment model's answers fail validation, so the pool hardly adapts "
              "and its tries are spent.",
              "Check env.model_path (a model able to write the variant's JSON), give it more env.max_new_tokens "
              "or a lower env.temperature, or use env.proposer = procedural.",
              reads=(metrics.INVALID, metrics.PENDING), measure=_invalid_share),
    AlertRule(SANDBOX_FAILING, metrics.exec_status_key("sandbox_error"), ">", 0.02, "sandbox failing",
              "More than 2 % of the programs' executions failed in the sandbox itself (not by the program's "
              "doing): those tests are left out of every reward, so the policy and the test generator learn "
              "from less than they were given.",
              "Run `rla sandbox check` on the engine's machine (bubblewrap, user namespaces, free memory and "
              "processes), lower sandbox.workers, or raise sandbox.memory_mb.",
              reads=(metrics.exec_status_key("sandbox_error"),)),
    AlertRule(NOT_FINITE, metrics.LOSS_POLICY, "not finite", None, "loss not finite",
              "A loss or gradient norm of the policy or the judge is not finite (NaN or infinity); the run stops "
              "before the optimiser step can spread it.",
              "Start again with a lower learning rate (policy.lr, judge.lr) or a higher rollout.temperature; "
              "resuming repeats the same iteration from the last checkpoint.",
              reads=(metrics.LOSS_POLICY, metrics.LOSS_JUDGE, metrics.LOSS_KL), windowed=False),
)}


def unheeded_alerts(lam: float, judge_trains: bool) -> frozenset[str]:
    """The judge's alerts that say nothing about a run whose policy reward has no step rewards
    (λ = 0: an ablation's outcome arms): μ ≤ 1 warns that its verdicts add noise to that reward,
    and a unanimous judge that is not trained either has not stopped learning anything."""
    if lam:
        return frozenset()
    return frozenset({MU_AT_MOST_ONE} if judge_trains else {MU_AT_MOST_ONE, JUDGE_UNANIMOUS})


class AlertWatcher:
    """Which alerts are active, and the recent measures that decide the next change. `state`: what
    `state_json()` returned (a checkpoint carries it), so a resumed run goes on where it was;
    `unheeded`: rules this run never raises (unheeded_alerts)."""

    def __init__(self, window: int, enabled: bool = True, state: str | None = None,
                 unheeded: frozenset[str] = frozenset()):
        self.window, self.enabled, self.unheeded = window, enabled, unheeded
        self.recent: dict[str, list[tuple[int, float]]] = {}
        self.active: dict[str, dict[str, Any]] = {}     # name -> {"since", "raised_at", "value"}
        self.failed: dict[str, Any] | None = None         # not_finite's raise: it ends the run, never saved
        if state:
            self._load(state)

    def observe(self, iteration: int, values: Mapping[str, float]) -> list[Event]:
        """The alert events of a committed iteration whose metrics are `values`."""
        if not self.enabled:
            return []
        events: list[Event] = []
        for rule in ALERTS.values():
            v = rule.value(values) if rule.windowed and rule.name not in self.unheeded else None
            if v is None:
                continue
            recent = self.recent.setdefault(rule.name, [])
            recent.append((iteration, v))
            del recent[:-self.window]
            if len(recent) < self.window:
                continue
            mean = math.fsum(x for _, x in recent) / len(recent)
            if rule.holds(mean) and rule.name not in self.active:
                events.append(self._raise(rule, iteration, recent[0][0], mean))
            elif not rule.holds(mean) and rule.name in self.active:
                events.append(self._clear(rule.name, mean))
            else:
                continue
            recent.clear()
        return events

    def not_finite(self, iteration: int, quantity: str, value: float) -> list[Event]:
        """A loss or gradient went NaN/inf in `iteration`, which is never committed: the run fails."""
        if not self.enabled:
            return []
        rule = ALERTS[NOT_FINITE]
        self.failed = {"since": iteration, "raised_at": iteration}
        # the key is what failed (a loss, a KL, a gradient norm; the judge's or the policy's), not the rule's
        return [(EventKind.ALERT, {**_raised_payload(rule, iteration, str(value), 1), "key": quantity,
                                   "quantity": quantity})]

    def end(self, committed: int) -> list[Event]:
        """A cleared event for every alert raised by iteration `committed` (a raise in an iteration
        that failed to commit was never stored), because the run ends. The watcher keeps them: a
        checkpoint taken now holds them, and a resumed run raises them again (`carried_over`)."""
        ended = [(n, a) for n, a in self.active.items() if a["raised_at"] <= committed]
        if self.failed is not None:
            ended.append((NOT_FINITE, self.failed))
        return [(EventKind.ALERT, {"alert": name, "state": CLEARED, "since": a["since"],
                                   "raised_at": a["raised_at"], "value": None, "reason": RUN_ENDED})
                for name, a in ended]

    def carried_over(self, open_in_store: Iterable[str]) -> list[Event]:
        """Raised events, marked resumed, for the active alerts the database shows as closed (the
        run's end cleared them); those it still shows open are not raised twice."""
        still_open = set(open_in_store)
        out: list[Event] = []
        for name, a in self.active.items():
            if name not in still_open:
                rule = ALERTS[name]
                out.append((EventKind.ALERT, {**_raised_payload(rule, a["since"], a["value"], self.window),
                                              "resumed": True}))
        return out

    # -- changes -----------------------------------------------------------------------------
    def _raise(self, rule: AlertRule, iteration: int, since: int, value: float | str) -> Event:
        self.active[rule.name] = {"since": since, "raised_at": iteration, "value": value}
        return EventKind.ALERT, _raised_payload(rule, since, value, self.window)

    def _clear(self, name: str, value: float) -> Event:
        a = self.active.pop(name)
        return EventKind.ALERT, {"alert": name, "state": CLEARED, "since": a["since"], "raised_at": a["raised_at"],
                                 "value": value, "reason": CONDITION_ENDED}

    # -- checkpoint state --------------------------------------------------------------------
    def state_json(self) -> str:
        return json.dumps({"version": 1, "recent": self.recent, "active": self.active})

    def _load(self, text: str) -> None:
        s = json.loads(text)
        self.recent = {n: [(int(it), float(v)) for it, v in r][-self.window:]
                       for n, r in s["recent"].items() if n in ALERTS}
        self.active = {n: a for n, a in s["active"].items() if n in ALERTS and n != NOT_FINITE}


def _raised_payload(rule: AlertRule, since: int, value: float | str, window: int) -> dict[str, Any]:
    return {"alert": rule.name, "state": RAISED, "since": since, "value": value, "threshold": rule.threshold,
            "key": rule.key, "window": window if rule.windowed else 1, "message": rule.message,
            "advice": rule.advice}


def open_alerts(events: Iterable[Mapping[str, Any]], *, at_end: bool = False) -> dict[str, dict[str, Any]]:
    """{name: its raised payload, with the event's iteration} of the alerts raised and not cleared,
    from a run's event rows in order (as the store returns them; other kinds are skipped).
    `at_end`: also those cleared only because the run ended and not since resumed — what was
    active when a finished run stopped."""
    active: dict[str, dict[str, Any]] = {}
    ended: dict[str, dict[str, Any]] = {}
    for e in events:
        kind, p = e.get("kind"), e.get("payload")
        if kind == EventKind.RESUMED_FROM_CHECKPOINT:
            ended.clear()        # the resumed run raises again what still holds (AlertWatcher.carried_over)
        if kind != EventKind.ALERT or not isinstance(p, dict) or not isinstance(p.get("alert"), str):
            continue
        name = p["alert"]
        if p.get("state") == RAISED:
            active[name] = {**p, "iteration": e.get("iteration")}
            ended.pop(name, None)
        elif p.get("state") == CLEARED:
            closed = active.pop(name, None)
            if closed is not None and p.get("reason") == RUN_ENDED:
                ended[name] = closed
    return {**ended, **active} if at_end else active


def describe(payload: Mapping[str, Any]) -> str:
    """A raised alert in one line: `judge_unanimous since iteration 4: rm/unanimity 0.97 ≥ 0.95
    (mean of 20)`; for not_finite, what went non-finite. An odd payload (an import) still gives text."""
    name, since, value = payload.get("alert"), payload.get("since"), payload.get("value")
    rule = ALERTS.get(name) if isinstance(name, str) else None
    if rule is None or not rule.windowed:
        what = payload.get("quantity", rule.key if rule else "?")
        return f"{name} in iteration {since}: {what} = {value}"
    shown = f"{value:.3g}" if isinstance(value, (int, float)) else str(value)
    op = {"<=": "≤", ">=": "≥"}.get(rule.condition, rule.condition)
    return f"{name} since iteration {since}: {rule.key} {shown} {op} {rule.threshold:g} " \
           f"(mean of {payload.get('window', '?')})"
