"""Line steps scored one completion at a time.

A text family's steps are the lines of an answer: step t's sample is (context, target) with the
context the prompt and lines 0..t−1, the target line t. Scored one sample per sequence, a
completion of k lines runs its prompt through the model k times. But a causal model's
log-probability of a token depends only on the tokens before it, so every sample whose sequence
(context + target) is a prefix of another's can be read off that longer sequence's single forward
pass, with the same values (up to float rounding) and the same gradients.

`CompletionRows` finds those prefix chains once per update (any samples: line steps of one answer,
of later turns of a dialogue, identical samples; a judge's verdicts on one prompt share no target
and stay one row each), `scores` scores a set of samples through one row per chain, and
`micro_batches` cuts a minibatch into micro-batches of whole chains, so that the samples of a
completion meet in one forward. Rows that only begin alike (the judge's m verdicts on one prompt,
a task's roll-outs) are kept side by side, and `token_scores` runs their common beginning once.
PPO's loss over a minibatch is a mean over its samples, so how they are grouped into micro-batches
does not change it.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch

from ..loop.ppo import Scores
from .generation import token_scores


class CompletionRows:
    def __init__(self, contexts: Sequence[list[int]], targets: Sequence[list[int]],
                 verdicts: tuple[tuple[int, int], Sequence[int]] | None = None):
        """`verdicts`: for a judge with judge.verdict_entropy, the two verdict tokens (+1's, −1's)
        and, per sample, where in its target the verdict token is (−1: none): each sample's bonus
        is then the entropy between the two there."""
        self.contexts, self.targets, self.verdicts = contexts, targets, verdicts
        full = [c + t for c, t in zip(contexts, targets)]
        # sorted, a prefix comes before what extends it: each run of consecutive prefixes is a chain
        # whose last (longest) sequence is the row every sample of the chain is read from
        order = sorted(range(len(full)), key=full.__getitem__)
        self.row_of = [0] * len(full)
        self.sequences: list[list[int]] = []
        for k, i in enumerate(order):
            if k == 0 or full[i][:len(self.sequences[-1])] != self.sequences[-1]:
                self.sequences.append(full[i])
            else:
                self.sequences[-1] = full[i]
            self.row_of[i] = len(self.sequences) - 1

    @property
    def rows(self) -> int:
        return len(self.sequences)

    def micro_batches(self, idx: torch.Tensor, rows_per_micro: int) -> list[torch.Tensor]:
        """`idx` (sample numbers) in micro-batches of at most `rows_per_micro` rows, each row's
        samples together; rows in the order of their sequences, so that rows that begin alike
        (one prompt's samples) meet in a micro-batch and run their beginning once."""
        by_row: dict[int, list[int]] = {}
        for i in idx.tolist():
            by_row.setdefault(self.row_of[i], []).append(i)
        groups = [by_row[r] for r in sorted(by_row)]      # rows are numbered in their sequences' order
        return [torch.tensor([i for g in groups[k:k + rows_per_micro] for i in g], dtype=idx.dtype, device=idx.device)
                for k in range(0, len(groups), rows_per_micro)]

    def scores(self, model, idx: torch.Tensor, temperature: float, width: int) -> Scores:
        """The samples `idx` scored as token_scores would score them one by one ([n, width] with
        their mask), from one forward row per chain: each row from the shortest context of its
        samples here to the furthest end of their targets."""
        samples = idx.tolist()
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i in samples:
            r, c = self.row_of[i], len(self.contexts[i])
            start[r] = min(start.get(r, c), c)
            end[r] = max(end.get(r, 0), c + len(self.targets[i]))
        rows = list(start)
        slot = {r: k for k, r in enumerate(rows)}
        row_contexts = [self.sequences[r][:start[r]] for r in rows]
        row_targets = [self.sequences[r][start[r]:end[r]] for r in rows]
        two = self.verdicts[0] if self.verdicts else None
        scored = token_scores(model, row_contexts, row_targets, temperature, max(len(t) for t in row_targets), two)
        device = scored.logp.device
        which = torch.zeros((len(samples), width), dtype=torch.long)
        at = torch.zeros((len(samples), width), dtype=torch.long)
        mask = torch.zeros((len(samples), width), dtype=torch.bool)
        for n, i in enumerate(samples):
            r, length = self.row_of[i], len(self.targets[i])
            first = len(self.contexts[i]) - start[r]
            which[n, :] = slot[r]
            at[n, :length] = torch.arange(first, first + length)
            mask[n, :length] = True
        which, at, mask = which.to(device), at.to(device), mask.to(device)
        logp = scored.logp[which, at].masked_fill(~mask, 0.0)
        row_entropy = scored.entropy
        entropy = None if row_entropy is None else (lambda: row_entropy()[which, at].masked_fill(~mask, 0.0))
        return Scores(logp, mask, entropy, self._bonus(scored, samples, which, at))

    def _bonus(self, scored: Scores, samples: list[int], which: torch.Tensor, at: torch.Tensor) -> torch.Tensor | None:
        """[n]: the entropy between the two verdict tokens where each sample's verdict is (0 where
        it has none)."""
        if self.verdicts is None or scored.bonus is None:
            return None
        where = torch.tensor([self.verdicts[1][i] for i in samples], device=which.device)
        has = where >= 0
        k = where.clamp(min=0).unsqueeze(1)
        picked = scored.bonus[which.gather(1, k), at.gather(1, k)].squeeze(1)
        return torch.where(has, picked, torch.zeros_like(picked))
