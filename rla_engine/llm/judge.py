"""The generative step judge (SPEC §1, §4): a causal LM asked about one step at a time — the task,
the steps before it, the step and what the environment answered — that reasons and ends with
\\boxed{1} or \\boxed{-1}. Each step is judged m times; every sample keeps its text and tokens,
because the judge is trained on its whole output.

The judge sees what the policy saw and wrote and what the environment said, never the oracle's
labels or the family's critic facts.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..loop.backend import Judgement
from ..rewards import parse_verdict
from .dialogue import TextEpisodes
from .generation import Sampling, chat_ids, sample

HISTORY_CHARS = 1500     # the earlier steps shown to the judge, cut from the front beyond this
STEP_CHARS = 1000

PROMPT = """You judge one step of an agent that is solving a task.

Task given to the agent:
{task}

Earlier steps:
{history}

The step to judge:
{step}

What the environment answered:
{observation}

Is this step correct and useful for solving the task? Think briefly, then end your answer with
\\boxed{{1}} if the step is good or \\boxed{{-1}} if it is bad."""


def _cut(text: str, limit: int, front: bool = False) -> str:
    if len(text) <= limit:
        return text
    return "…" + text[-limit:] if front else text[:limit] + "…"


def step_prompt(ep: TextEpisodes, b: int, t: int) -> str:
    steps = ep.steps[b]
    lines = []
    for s in steps[:t]:
        lines.append(f"- {s.text}")
        if s.observation:
            lines.append(f"  (environment: {s.observation})")
    history = _cut("\n".join(lines), HISTORY_CHARS, front=True) or "(none: this is the first step)"
    step = steps[t]
    return PROMPT.format(task=_cut(ep.instructions[b], STEP_CHARS), history=history,
                         step=_cut(step.text, STEP_CHARS) or "(empty)",
                         observation=_cut(step.observation, STEP_CHARS) or "(nothing yet)")


@dataclass
class TextJudgement(Judgement):
    cells: list[tuple[int, int]]          # the (b, t) of each judged step, row-major
    prompts: list[list[int]]              # per judged step
    outputs: list[list[list[int]]]        # per judged step, its m samples' tokens
    texts: list[list[str]]                # per judged step, its m samples decoded

    def flat(self, b: int, t: int) -> int:
        return self._where[(b, t)]

    def __post_init__(self) -> None:
        self._where = {cell: k for k, cell in enumerate(self.cells)}


def judged_cells(ep: TextEpisodes) -> list[tuple[int, int]]:
    """The (b, t) of every real step, row-major: the order of a judgement's prompts and texts."""
    return [(int(b), int(t)) for b, t in ep.mask.nonzero().tolist()]


def judge(model, tokenizer, ep: TextEpisodes, m: int, how: Sampling, gen: torch.Generator | None) -> TextJudgement:
    cells = judged_cells(ep)
    prompts = [chat_ids(tokenizer, [{"role": "user", "content": step_prompt(ep, b, t)}]) for b, t in cells]
    answers = sample(model, tokenizer, prompts, how, gen, copies=m)
    outputs = [answers[k * m:(k + 1) * m] for k in range(len(cells))]
    texts = [[tokenizer.decode(a, skip_special_tokens=True) for a in outs] for outs in outputs]
    verdicts = torch.zeros((*ep.mask.shape, m), dtype=torch.int8)
    for (b, t), said in zip(cells, texts):
        verdicts[b, t] = torch.tensor([parse_verdict(s) for s in said], dtype=torch.int8)
    return TextJudgement(verdicts, cells, prompts, outputs, texts)


def verdict_tokens(tokenizer) -> tuple[list[int], int, int] | None:
    """(the tokens that open a box, +1's token, −1's token): where the tokenizer's `\\boxed{1}` and
    `\\boxed{-1}` first differ (SmolLM2: `box`, `ed`, `{`, then `1` or `-`), the box's first token
    left out (text before it can change how it is cut); None where they differ at their first
    token or one is the other's prefix."""
    good = tokenizer("\\boxed{1}", add_special_tokens=False)["input_ids"]
    bad = tokenizer("\\boxed{-1}", add_special_tokens=False)["input_ids"]
    k = next((i for i, (g, b) in enumerate(zip(good, bad)) if g != b), 0)
    return (good[1:k] or good[:k], good[k], bad[k]) if k else None


def verdict_position(output: list[int], verdict: int, tokens: tuple[list[int], int, int]) -> int:
    """Where in a sample's tokens its verdict was decided: right after the last box opened (the
    box parse_verdict reads), if the token there is the verdict's; −1 for an unreadable sample or
    one written otherwise (`{ -1}`, `{+1}`)."""
    opens, good, bad = tokens
    want = good if verdict > 0 else bad if verdict < 0 else None
    n = len(opens)
    last = next((k for k in range(len(output) - 1, n - 1, -1) if output[k - n:k] == opens), None)
    return last if last is not None and output[last] == want else -1


def oracle_judgement(ep: TextEpisodes, verdicts: torch.Tensor) -> TextJudgement:
    """Given verdicts (judge.source = oracle, a diagnostic) as a judgement the console and the
    critic can read: each sample's text says it is the oracle's label; nothing was generated."""
    cells = judged_cells(ep)
    m = verdicts.shape[-1]
    said = {1: "(oracle) \\boxed{1}", -1: "(oracle) \\boxed{-1}", 0: "(oracle: this step has no label)"}
    texts = [[said[int(v)] for v in verdicts[b, t]] for b, t in cells]
    return TextJudgement(verdicts, cells, [[] for _ in cells], [[[] for _ in range(m)] for _ in cells], texts)


def unreadable_share(judgement: TextJudgement) -> float:
    """Share of the judge's samples over every judged step whose verdict could not be read (0);
    nan when no step was judged."""
    if not judgement.cells:
        return float("nan")
    b, t = (list(x) for x in zip(*judgement.cells))
    return float((judgement.verdicts[b, t] == 0).float().mean())


def join_judgements(parts: list[TextJudgement], offsets: list[int]) -> TextJudgement:
    """The judgements of consecutive parts of one batch as one (cells moved by each part's first
    episode); row-major order holds because the parts are in order."""
    cells = [(b + off, t) for p, off in zip(parts, offsets) for b, t in p.cells]
    return TextJudgement(torch.cat([p.verdicts for p in parts]), cells, [x for p in parts for x in p.prompts],
                         [x for p in parts for x in p.outputs], [x for p in parts for x in p.texts])
