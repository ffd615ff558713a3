"""Text roll-outs: every episode of an iteration played turn by turn, all active episodes of a
turn answered by one batched generation.

A step is an exact span of sampled tokens with the context it was sampled after, so the policy's
update scores the very tokens it sampled. A family whose lines are steps gets its response split
after every token that holds a newline (a trailing span with no text joins the step before it).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from ..loop.backend import PER_EPISODE, Episodes
from ..tasks.task import Task
from .generation import Sampling, chat_ids, sample

MAX_LINES = 32          # steps of one response at most; the rest of it joins the last step


@dataclass
class TextStep:
    context: list[int]       # token ids the step was sampled after
    tokens: list[int]        # the step's sampled tokens
    text: str
    observation: str = ""    # the environment's answer after it ("" inside a turn of several lines)
    oracle: int = 0
    info: dict = field(default_factory=dict)


@dataclass
class TextEpisodes(Episodes):
    tasks: list[Task] = field(default_factory=list, metadata=PER_EPISODE)
    steps: list[list[TextStep]] = field(default_factory=list, metadata=PER_EPISODE)   # in order
    instructions: list[str] = field(default_factory=list, metadata=PER_EPISODE)       # the first user message
    turn_of: list[list[int]] = field(default_factory=list, metadata=PER_EPISODE)      # the turn of each step
    # [B] float: the family's graded share (TurnResult.score), the success where it grades nothing
    scores: torch.Tensor = field(default_factory=lambda: torch.zeros(0), metadata=PER_EPISODE)

    def graded(self) -> torch.Tensor:
        return self.scores if len(self.scores) == len(self.success) else self.success.float()


def split_lines(tokenizer, tokens: list[int]) -> list[list[int]]:
    """The response's tokens cut after each token holding a newline (MAX_LINES spans at most)."""
    spans: list[list[int]] = [[]]
    for tok in tokens:
        spans[-1].append(tok)
        if "\n" in tokenizer.decode([tok]) and len(spans) < MAX_LINES:
            spans.append([])
    if not spans[-1]:
        spans.pop()
    if len(spans) > 1 and not tokenizer.decode(spans[-1], skip_special_tokens=True).strip():
        tail = spans.pop()
        spans[-1] += tail
    return spans


# what writes a turn's answers in place of the model: (the episodes answering, their tasks) → tokens each
Writer = Callable[[list[int], list[Task]], list[list[int]]]


def play(family, model, tokenizer, tasks: list[Task], rollouts: int, how: Sampling,
         gen: torch.Generator | None, writer: Writer | None = None) -> TextEpisodes:
    """Every task `rollouts` times; episode b plays task b // rollouts. A `writer` (policy.source =
    scripted, a diagnostic) answers instead of the model."""
    n = len(tasks) * rollouts
    family.prepare(tasks)
    ep_tasks = [tasks[b // rollouts] for b in range(n)]
    instructions = [family.instruction(t) for t in ep_tasks]
    dialogues = [[{"role": "user", "content": text}] for text in instructions]
    episodes = [family.start(t) for t in ep_tasks]
    budget = [family.turns(t) for t in ep_tasks]
    steps: list[list[TextStep]] = [[] for _ in range(n)]
    turn_of: list[list[int]] = [[] for _ in range(n)]
    success = [False] * n
    scores: list[float | None] = [None] * n
    active = list(range(n))
    turn = 0
    while active:
        prompts = [chat_ids(tokenizer, dialogues[b]) for b in active]
        answers = writer(active, [ep_tasks[b] for b in active]) if writer else sample(model, tokenizer, prompts,
                                                                                      how, gen)
        still = []
        spans_of = [(split_lines(tokenizer, tokens) if family.lines_are_steps else [tokens]) or [tokens]
                    for tokens in answers]
        texts_of = [[tokenizer.decode(s, skip_special_tokens=True).strip("\n") for s in spans] for spans in spans_of]
        results = family.respond_all([episodes[b] for b in active], texts_of)
        for b, prompt, tokens, spans, texts, result in zip(active, prompts, answers, spans_of, texts_of, results):
            before = list(prompt)
            for k, (span, text) in enumerate(zip(spans, texts)):
                last = k == len(spans) - 1
                steps[b].append(TextStep(before, span, text, result.observation if last else "",
                                         int(result.labels[k]), dict(result.infos[k])))
                turn_of[b].append(turn)
                before = before + span
            response = tokenizer.decode(tokens, skip_special_tokens=True)
            dialogues[b] += [{"role": "assistant", "content": response},
                             {"role": "user", "content": result.observation}]
            if result.done:
                success[b] = bool(result.success)
                scores[b] = result.score
            elif turn + 1 < budget[b]:
                still.append(b)
        active = still
        turn += 1
    width = max(len(s) for s in steps)
    mask = torch.zeros((n, width), dtype=torch.bool)
    oracle = torch.zeros((n, width), dtype=torch.int8)
    for b, s in enumerate(steps):
        mask[b, :len(s)] = True
        oracle[b, :len(s)] = torch.tensor([st.oracle for st in s], dtype=torch.int8)
    graded = torch.tensor([float(ok) if score is None else float(score) for ok, score in zip(success, scores)])
    return TextEpisodes(len(tasks), rollouts, mask=mask, oracle=oracle, success=torch.tensor(success),
                        tasks=ep_tasks, steps=steps, instructions=instructions, turn_of=turn_of, scores=graded)


def join(first: TextEpisodes, more: TextEpisodes) -> TextEpisodes:
    """`first` followed by `more` (DAPO's extra draws), padded to the longer one."""
    width = max(first.mask.shape[1], more.mask.shape[1])

    def pad(x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, x.new_zeros((x.shape[0], width - x.shape[1]))], 1)

    return TextEpisodes(first.groups + more.groups, first.rollouts,
                        mask=torch.cat([pad(first.mask), pad(more.mask)]),
                        oracle=torch.cat([pad(first.oracle), pad(more.oracle)]),
                        success=torch.cat([first.success, more.success]), tasks=first.tasks + more.tasks,
                        steps=first.steps + more.steps, instructions=first.instructions + more.instructions,
                        turn_of=first.turn_of + more.turn_of, scores=torch.cat([first.graded(), more.graded()]))
