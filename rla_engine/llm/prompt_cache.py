"""Prompts that share a beginning, encoded once before `generate` continues them.

Most of a sampling call's cost on a CPU is encoding prompts, and the prompts of one call repeat
each other: a task's roll-outs ask the same question, the judge's prompts for the steps of one
task carry the same instructions and task text, and the m samples of a judged step are one prompt
m times. `shared_runs` splits a call's prompts (in their order: the order of the rows, and so of
the random draws, stays as it was) into runs that share a prefix, chosen to encode the fewest
tokens; `encode` builds the KV cache of every prompt but its last token, each run's prefix
encoded once:

    columns   [ pads | run's prefix ] [ pads | this prompt's rest ] [ last token ]
    cache      one row per run, then    one row per prompt            `generate` starts here
               repeated for its prompts

Masked pads in the middle change nothing a causal model computes: positions are counted over the
unmasked tokens (as `generate` numbers them), so every token has the position, and the cache the
values, that one left-padded row of the whole prompt would give, up to float rounding. This holds
for full attention (the models here); a sliding-window layer counts columns, not positions. A
prefix run once gives its rows one dropout mask too, which is why it assumes none in training
(LoRA's dropout is 0). `shared_prefixes` does the same for a PPO update's scoring, with gradient.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence

import torch

# a run must share at least this many tokens: below it a second forward costs more than it saves
LEAST_SHARED = 16


def shared_runs(prompts: Sequence[list[int]], least: int = LEAST_SHARED) -> list[tuple[int, int, int]]:
    """(start, end, shared) runs covering the prompts in order: prompts[start:end] all begin with
    the same `shared` tokens, encoded once. Each prompt keeps at least its last token out of the
    shared part (it is what `generate` is fed). The runs minimise the tokens encoded in all."""
    n = len(prompts)
    own = [len(p) - 1 for p in prompts]      # what a prompt alone encodes: all but its last token
    common = [_common_length(prompts[i], prompts[i + 1]) for i in range(n - 1)]
    best = [0] + [0] * n          # best[j]: fewest tokens for prompts[:j]; cut[j]: where its last run starts
    cut = [0] * (n + 1)
    choice = [0] * (n + 1)
    for j in range(1, n + 1):
        best[j], cut[j], choice[j] = best[j - 1] + own[j - 1], j - 1, own[j - 1]
        shared, total = own[j - 1], own[j - 1]
        for i in range(j - 2, -1, -1):         # the run prompts[i:j], two prompts or more
            shared, total = min(shared, common[i], own[i]), total + own[i]
            if shared < least:
                break
            cost = best[i] + shared + total - (j - i) * shared     # the prefix once, then each rest
            if cost < best[j]:
                best[j], cut[j], choice[j] = cost, i, shared
    runs = []
    j = n
    while j > 0:
        i = cut[j]
        runs.append((i, j, choice[j] if j - i > 1 else own[i]))
        j = i
    return runs[::-1]


def _common_length(a: list[int], b: list[int]) -> int:
    k = 0
    for x, y in zip(a, b):
        if x != y:
            break
        k += 1
    return k


def left_padded(rows: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max((len(r) for r in rows), default=0)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    att = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            ids[i, width - len(r):] = torch.tensor(r, dtype=torch.long)
            att[i, width - len(r):] = 1
    return ids, att


def encode(model, prompts: list[list[int]], copies: int, pad: int,
           runs: list[tuple[int, int, int]]) -> tuple[torch.Tensor, torch.Tensor, dict]:
    """(input ids, attention mask, the cache argument) for `generate`, `copies` rows per prompt
    (prompt-major): every prompt but its last token already in the cache."""
    device = next(model.parameters()).device
    run_of = torch.tensor([r for r, (i, j, _) in enumerate(runs) for _ in range(i, j)], device=device)
    shared = [prompts[i][:k] for i, _, k in runs]
    at = {p: k for i, j, k in runs for p in range(i, j)}
    rests = [p[at[n]:-1] for n, p in enumerate(prompts)]
    head, head_att, name, cache = _run_prefixes(model, shared, pad, run_of)
    rest, rest_att = (t.to(device) for t in left_padded(rests, pad))
    att = torch.cat([head_att[run_of], rest_att], 1)
    if rest.shape[1]:
        pos = _positions(att)[:, head.shape[1]:]
        model(input_ids=rest, attention_mask=att, position_ids=pos, use_cache=True, **{name: cache},
              **_no_logits(model))
    last = torch.tensor([[p[-1]] for p in prompts], dtype=torch.long, device=device)
    ids = torch.cat([head[run_of], rest, last], 1)
    att = torch.cat([att, torch.ones_like(last)], 1)
    if copies > 1:
        cache.batch_repeat_interleave(copies)
        ids, att = ids.repeat_interleave(copies, 0), att.repeat_interleave(copies, 0)
    return ids, att, {name: cache}


def shared_prefixes(model, contexts: list[list[int]], runs: list[tuple[int, int, int]],
                    order: list[int]) -> tuple[dict, torch.Tensor, list[int]]:
    """For scoring with gradient: each run's prefix of `contexts` (sorted so that runs hold what
    begins alike; `order[p]` is the row of contexts[p]) run once, and its cache shared by the
    run's rows. Returns the forward's cache argument, the prefixes' attention mask (one row per
    row, in the rows' order) and how many of each row's context tokens the cache holds."""
    device = next(model.parameters()).device
    run_of = [0] * len(order)
    skip = [0] * len(order)
    for r, (i, j, k) in enumerate(runs):
        for p in range(i, j):
            run_of[order[p]], skip[order[p]] = r, k
    rows = torch.tensor(run_of, device=device)
    _, head_att, name, cache = _run_prefixes(model, [contexts[i][:k] for i, _, k in runs], 0, rows)
    return {name: cache}, head_att[rows], skip


def _run_prefixes(model, prefixes: list[list[int]], pad: int, rows: torch.Tensor):
    """The prefixes left-padded and run once; their cache then holds one row per entry of `rows`
    (a prefix's number), and a gradient flows back to the prefix. Returns (ids, mask, the cache
    argument's name, the cache)."""
    device = next(model.parameters()).device
    head, head_att = (t.to(device) for t in left_padded(prefixes, pad))
    name = cache_argument(model)
    out = model(input_ids=head, attention_mask=head_att, position_ids=_positions(head_att), use_cache=True,
                **_no_logits(model))
    cache = out["cache"] if name == "cache" else out.past_key_values
    cache.reorder_cache(rows)
    return head, head_att, name, cache


def keeps_cache(model) -> bool:
    """Whether a forward now returns a KV cache: transformers drops it from a model that
    recomputes activations in its backward pass (activation checkpointing, on CUDA here) while it
    trains with gradients, and such a model scores whole rows."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    on = getattr(base, "is_activation_checkpointing", None)
    if on is None:
        on = getattr(base, "is_gradient_checkpointing", False)
    return not (on and model.training and torch.is_grad_enabled())


def _no_logits(model) -> dict:
    """A forward run for its cache computes the logits of its last position only: the vocabulary
    projection of every position would be a fifth of the work and a [rows, width, vocabulary]
    tensor."""
    return {"logits_to_keep": 1} if forward_takes(model, "logits_to_keep") else {}


def _positions(att: torch.Tensor) -> torch.Tensor:
    """Positions as `generate` numbers them: counted over the unmasked tokens."""
    return (att.cumsum(-1) - 1).masked_fill(att == 0, 0)


def cache_argument(model) -> str:
    """What `generate` and `forward` call a given KV cache: `cache` since transformers 5.x renamed
    it, else `past_key_values`."""
    return "cache" if forward_takes(model, "cache") else "past_key_values"


def forward_takes(model, argument: str) -> bool:
    """Whether the model's forward (the wrapped model's, under peft, which passes arguments on)
    takes `argument`; read once per model class, not on every call."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return argument in _forward_parameters(base.__class__)


@functools.cache
def _forward_parameters(cls) -> frozenset[str]:
    return frozenset(inspect.signature(cls.forward).parameters)
