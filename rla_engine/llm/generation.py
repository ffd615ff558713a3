"""Batched sampling and scoring with a causal LM: what every language-model role shares.

Sampling goes through `model.generate` (KV cache, temperature, top-p, stop strings) in batches of
left-padded prompts; prompts that begin alike encode that beginning once (prompt_cache.py). Its
randomness is torch's global generator, so each call is seeded from the run's own generator first:
a run is reproducible and a resumed one continues the same stream.

Scoring (`token_scores`) gives log-probabilities of given tokens after given contexts under
logits / temperature, without top-p truncation (SPEC §3): the policy's and the judge's PPO ratio
and KL are taken on exactly these numbers, and the entropy of each token's distribution from the
same forward.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
from torch.nn import functional

from ..loop.ppo import Scores, binary_entropy, distribution_entropy
from .prompt_cache import keeps_cache, encode, forward_takes, left_padded, shared_prefixes, shared_runs


@dataclass
class Sampling:
    max_new_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    greedy: bool = False
    stop_at_newline: bool = False      # one line per answer (a command), cut at the first newline
    batch_size: int = 64               # sequences per generate call (lm.generation_batch_size)


def chat_ids(tokenizer, messages: list[dict]) -> list[int]:
    """The prompt of a dialogue as token ids, ready for the assistant's next answer: the model's
    chat template when it has one, else plain `Role: text` lines."""
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    else:
        text = "".join(f"{m['role'].capitalize()}: {m['content']}\n" for m in messages) + "Assistant:"
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _model_device(model) -> torch.device:
    return next(model.parameters()).device


def _keeps_logits(model) -> bool:
    """Whether the model's forward takes `logits_to_keep` (the last k positions' logits only), as
    transformers' causal LMs do since 4.49."""
    return forward_takes(model, "logits_to_keep")


def compute_in(model) -> contextlib.AbstractContextManager:
    """Autocast to the half dtype a trained model computes in over its float32 weights
    (sources.load_model); nothing for a model whose weights are in the dtype it computes in."""
    dtype = getattr(model, "rla_compute_dtype", None)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(_model_device(model).type, dtype=dtype)


def _seed_from(gen: torch.Generator | None) -> None:
    if gen is not None:
        torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=gen, device=gen.device)))


@torch.no_grad()
def sample(model, tokenizer, prompts: list[list[int]], how: Sampling, gen: torch.Generator | None,
           copies: int = 1) -> list[list[int]]:
    """`copies` answers per prompt (prompt-major order), each the sampled token ids up to and
    including the end-of-sequence token when one was written; padding is removed."""
    out: list[list[int]] = []
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    per_call = max(1, how.batch_size // copies)
    device = _model_device(model)
    was_training = model.training
    model.eval()
    for start in range(0, len(prompts), per_call):
        chunk = prompts[start:start + per_call]
        runs = shared_runs(chunk)
        _seed_from(gen)
        kw: dict = {"max_new_tokens": how.max_new_tokens, "pad_token_id": pad, "eos_token_id": eos,
                    "num_return_sequences": copies}
        if how.greedy:
            kw.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        else:
            kw.update(do_sample=True, temperature=how.temperature, top_p=how.top_p, top_k=None)
        if how.stop_at_newline:
            kw.update(stop_strings=["\n"], tokenizer=tokenizer)
        with compute_in(model):
            if copies > 1 or len(runs) < len(chunk):     # prompts to encode once (prompt_cache.py)
                ids, att, cache = encode(model, chunk, copies, pad, runs)
                kw.update(num_return_sequences=1, **cache)
            else:
                ids, att = (t.to(device) for t in left_padded(chunk, pad))
            width = ids.shape[1]           # every answer starts here
            seqs = model.generate(input_ids=ids, attention_mask=att, **kw)
        for row in seqs[:, width:].tolist():
            out.append(_trim(row, eos, pad))
    model.train(was_training)
    return out


def was_cut(answer: list[int], how: Sampling, tokenizer) -> bool:
    """Whether `sample` stopped this answer at max_new_tokens: it has that many tokens and ends
    neither with the end-of-sequence token nor, where answers stop at a newline, with a token
    that holds one (an answer that finishes on its very last allowed token is not cut)."""
    if len(answer) < how.max_new_tokens:
        return False
    last = answer[-1]
    if last == tokenizer.eos_token_id:
        return False
    return not (how.stop_at_newline and "\n" in tokenizer.decode([last]))


def _trim(row: list[int], eos: int | None, pad: int) -> list[int]:
    """An answer up to and including its end-of-sequence token (padding follows it)."""
    if eos is not None and eos in row:
        return row[: row.index(eos) + 1]
    while row and row[-1] == pad and pad != eos:
        row = row[:-1]
    return row


def token_logprobs(model, contexts: list[list[int]], targets: list[list[int]], temperature: float,
                   width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`token_scores`' log-probabilities and mask."""
    s = token_scores(model, contexts, targets, temperature, width)
    assert s.mask is not None
    return s.logp, s.mask


def token_scores(model, contexts: list[list[int]], targets: list[list[int]], temperature: float,
                 width: int, two: tuple[int, int] | None = None) -> Scores:
    """log p(target tokens | context) under logits / temperature, [n, width] with its mask, and
    the entropies of those tokens' distributions on demand; a right-padded forward pass over
    context + target (gradients flow when enabled), whose logits are computed from the shortest
    context's last token on (`logits_to_keep`), not for whole prompts. Contexts that begin alike
    (a judged step's m samples, a task's roll-outs) run that beginning once first, its cache
    shared by their rows with the gradient flowing back into it (prompt_cache.py). With `two`
    token ids, the bonus is the entropy between just those two at every target position,
    [n, width] with its gradient (a verdict's +1 against −1)."""
    device = _model_device(model)
    n = len(contexts)
    order = sorted(range(n), key=contexts.__getitem__)        # contexts that begin alike side by side
    runs = shared_runs([contexts[i] for i in order])
    past: dict = {}
    prefix_mask = None
    skip = [0] * n            # each row's context tokens already in the shared cache
    with compute_in(model):
        if len(runs) < n and keeps_cache(model):
            past, prefix_mask, skip = shared_prefixes(model, [contexts[i] for i in order], runs, order)
        rest = [c[k:] for c, k in zip(contexts, skip)]
        seq_len = max(len(c) + len(t) for c, t in zip(rest, targets))
        ids = torch.zeros((n, seq_len), dtype=torch.long)
        att = torch.zeros((n, seq_len), dtype=torch.long)
        for i, (c, t) in enumerate(zip(rest, targets)):
            row = c + t
            ids[i, :len(row)] = torch.tensor(row, dtype=torch.long)
            att[i, :len(row)] = 1
        ids, att = ids.to(device), att.to(device)
        # the token at position p is predicted by the logits at p − 1: no row needs logits before
        # `first`, so the vocabulary projection skips the shortest context (most of a prompt)
        first = max(0, min(len(c) for c in rest) - 1)
        keep = {"logits_to_keep": seq_len - first} if first and _keeps_logits(model) else {}
        if prefix_mask is not None:      # [prefix | pads][rest + target | pads], positions counted on
            positions = torch.tensor(skip, device=device).unsqueeze(1) + torch.arange(seq_len, device=device)
            logits = model(input_ids=ids, attention_mask=torch.cat([prefix_mask, att], 1), position_ids=positions,
                           use_cache=True, **past, **keep).logits
        else:
            logits = model(input_ids=ids, attention_mask=att, use_cache=False, **keep).logits   # [n, L − first, V]
    offset = first if keep else 0
    pos = torch.zeros((n, width), dtype=torch.long)
    mask = torch.zeros((n, width), dtype=torch.bool)
    for i, (c, t) in enumerate(zip(rest, targets)):
        pos[i, :len(t)] = torch.arange(len(c) - 1, len(c) - 1 + len(t)) - offset
        mask[i, :len(t)] = True
    pos, mask = pos.to(device), mask.to(device)
    picked = logits.gather(1, pos.unsqueeze(-1).expand(-1, -1, logits.shape[-1]))      # [n, width, V]
    logp = functional.log_softmax(picked.float() / temperature, dim=-1)
    tok = ids.gather(1, (pos + offset + 1).clamp(max=seq_len - 1))
    out = logp.gather(-1, tok.unsqueeze(-1)).squeeze(-1)
    between = None if two is None else binary_entropy(logp[..., two[0]] - logp[..., two[1]]).masked_fill(~mask, 0.0)
    return Scores(torch.where(mask, out, torch.zeros_like(out)), mask,
                  lambda: distribution_entropy(logp).masked_fill(~mask, 0.0), between)
