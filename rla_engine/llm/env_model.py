"""The language-model environment model (SPEC §5): a frozen causal LM that rewrites a slot's task
into a harder or easier variant from the critic's feedback, answering with JSON that the family
parses and validates by code.

The prompt holds the slot's root task (the task the slot was given from outside the model), so
that rewrites of rewrites stay the same task, and its current task, the direction, the accuracy
and the critic: the high-risk steps (all m verdicts −1) with the judge's reasoning on them.
Each request's `tries` answers are sampled in one batch; they are taken in order, the first
valid one wins, and the invalid answers before it are reported with the reason.
"""
from __future__ import annotations

import json

import torch

from ..loop.backend import Proposal, VariantRequest
from ..tasks.task import Task
from .generation import Sampling, chat_ids, sample

CRITIC_CHARS = 2000

PROMPT = """You design tasks for a learning agent. Rewrite a task into a {direction} variant of the same task.

The original task (JSON):
{root}

The task the agent has now (JSON):
{current}

The agent solves the current task {acc:.0%} of the time, which is too {how}. Make the variant {direction}.

Where the agent went wrong, according to its reward model (a step judge, or the tests it generated):
{critic}

The JSON format of a task:
{schema}

Answer with the JSON object of the new task only."""


def request_prompt(family, r: VariantRequest) -> str:
    critic = json.dumps(r.critic, ensure_ascii=False, default=str)
    if len(critic) > CRITIC_CHARS:
        critic = critic[:CRITIC_CHARS] + "…"
    return PROMPT.format(direction=r.direction, root=json.dumps(family.prompt_json(r.root), ensure_ascii=False),
                         current=json.dumps(family.prompt_json(r.task), ensure_ascii=False), acc=r.acc,
                         how="often" if r.direction == "harder" else "rarely", critic=critic,
                         schema=family.variant_schema())


def extract_json(answer: str) -> object:
    """The first JSON value in an answer that starts with `{` (code fences and prose around it
    allowed); ValueError when there is none."""
    decoder = json.JSONDecoder()
    for i, ch in enumerate(answer):
        if ch == "{":
            try:
                return decoder.raw_decode(answer, i)[0]
            except json.JSONDecodeError:
                continue
    raise ValueError("no JSON object in the answer")


def judge_answer(family, answer: str, root: Task) -> tuple[Task | None, str | None]:
    """(the variant, None) if the answer is a valid task, else (None, the reason)."""
    try:
        task = family.from_json(extract_json(answer), root)
    except (ValueError, TypeError, KeyError) as e:
        return None, str(e) or type(e).__name__
    reason = family.validate(task)
    return (task, None) if reason is None else (None, reason)


def propose(family, model, tokenizer, requests: list[VariantRequest], tries: int, how: Sampling,
            gen: torch.Generator | None) -> list[Proposal]:
    if not requests:
        return []
    prompts = [chat_ids(tokenizer, [{"role": "user", "content": request_prompt(family, r)}]) for r in requests]
    answers = sample(model, tokenizer, prompts, how, gen, copies=tries)
    out = []
    for k, r in enumerate(requests):
        invalid: list[tuple[str, str]] = []
        chosen: Task | None = None
        for tokens in answers[k * tries:(k + 1) * tries]:
            text = tokenizer.decode(tokens, skip_special_tokens=True)
            task, reason = judge_answer(family, text, r.root)
            if task is not None:
                chosen = task
                break
            invalid.append((text, reason or "invalid"))
        out.append(Proposal(chosen, invalid))
    return out
