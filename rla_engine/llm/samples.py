"""The `samples` event of a language-model iteration (vocabulary.SamplesPayload): a few
trajectories as text with every step's verdicts and the judge's reasoning, and the environment
model's proposals and decisions with their critic — what the console's Samples panel shows."""
from __future__ import annotations

from ..vocabulary import (EventKind, SamplesPayload, SampleStep, SampleTrajectory, SampleTurn, SampleVariant,
                          VariantOutcome)
from .dialogue import TextEpisodes
from .code_measures import trajectory_tests
from .judge import TextJudgement
from .generated_tests import TestsJudgement

TRAJECTORIES = 4         # the first rollout of the first groups
TEXT_CHARS = 4000        # each text is cut beyond this: an event stays small


def _cut(text: str) -> str:
    return text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS] + "… (cut)"


def _trajectory(family, ep: TextEpisodes, judgement: TextJudgement, b: int, slot: int) -> SampleTrajectory:
    turns: list[SampleTurn] = []
    for t, step in enumerate(ep.steps[b]):
        said = judgement.texts[judgement.flat(b, t)]
        entry: SampleStep = {"text": _cut(step.text), "verdicts": [int(v) for v in judgement.verdicts[b, t]],
                             "reasoning": [_cut(s) for s in said], "oracle": step.oracle}
        if not turns or ep.turn_of[b][t] != ep.turn_of[b][t - 1]:
            turns.append({"steps": [], "observation": ""})
        turns[-1]["steps"].append(entry)
        if step.observation:
            turns[-1]["observation"] = _cut(step.observation)
    out: SampleTrajectory = {"slot": slot, "task": _cut(ep.instructions[b]), "success": bool(ep.success[b]),
                             "turns": turns}
    if isinstance(judgement, TestsJudgement):     # a program: its ground-truth runs and the generated tests
        out.update(trajectory_tests(ep, judgement, b))   # type: ignore[typeddict-item]
    return out


def _words(family, task) -> str:
    return _cut(str(family.describe(task).get("text", ""))) if task is not None else ""


def event(family, ep: TextEpisodes, judgement: TextJudgement, slots: list[int], proposals, decisions) -> tuple:
    trajectories = [_trajectory(family, ep, judgement, g * ep.rollouts, slots[g])
                    for g in range(min(TRAJECTORIES, ep.groups))]
    variants: list[SampleVariant] = []
    for d in decisions:
        rec = d.record
        variants.append({"slot": d.slot, "direction": rec.direction or "", "critic": rec.critic,
                         "outcome": VariantOutcome.ACCEPTED if d.accepted else VariantOutcome.REJECTED,
                         "task": _words(family, rec.task), "answer": "", "reason": None if d.accepted else
                         f"accuracy {rec.new_acc:.2f} after {rec.prev_acc:.2f} does not meet the {rec.direction} rule"})
    for r, p in proposals:
        for answer, reason in p.invalid:
            variants.append({"slot": r.slot, "direction": r.direction, "critic": r.critic,
                             "outcome": VariantOutcome.INVALID, "task": "", "answer": _cut(answer),
                             "reason": _cut(reason)})
        if p.task is not None:
            variants.append({"slot": r.slot, "direction": r.direction, "critic": r.critic,
                             "outcome": VariantOutcome.PROPOSED, "task": _words(family, p.task), "answer": "",
                             "reason": None})
    payload: SamplesPayload = {"family": family.name, "trajectories": trajectories, "variants": variants}
    return EventKind.SAMPLES, payload
