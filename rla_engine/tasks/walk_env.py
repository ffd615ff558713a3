"""The batched environment of the grid families (gridworld, keyrooms): every state of every task
is a row of flat tables — where each action leads, its oracle label and info row, the static
observation, the oracle action, whether it is the goal — so a step is a handful of gathers over
all episodes and never a Python loop. A family builds the tables; this class walks them.

State rows: task t's states are rows t·S … t·S + S − 1, and a state's grid cell is row mod 289
(S is a multiple of the 17×17 frame), which is all the visited flags need.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .base import BatchEnv
from .grid_layout import CELLS, OFFSETS

STAY = 4      # table column that inactive episodes "take": no move, label +1, info 0


def budget_for(shortest: int) -> int:
    """A walker that wastes a third of its moves still arrives; a random one on a long path does not."""
    return math.ceil(1.5 * shortest) + 4


class WalkEnv(BatchEnv):
    def __init__(self, tables: list[dict[str, np.ndarray]], states: int, start: np.ndarray, budget: np.ndarray,
                 rollouts: int, device: torch.device | str = "cpu"):
        """tables: per task, "next" [S, 5], "oracle" [S, 5], "info" [S, 5, I], "static" [S, F],
        "best" [S], "goal" [S] bool; start: per task, its start state; budget: per task."""
        T = len(tables)
        self.n = T * rollouts

        def cat(key):
            return np.concatenate([tab[key] for tab in tables])

        dev = torch.device(device)
        base = np.arange(T).repeat(states)[:, None] * states
        self._trans = torch.as_tensor((cat("next").astype(np.int64) + base).ravel(), device=dev)
        self._oracle = torch.as_tensor(cat("oracle").ravel(), device=dev)
        info = cat("info")
        self._info = torch.as_tensor(info.reshape(-1, info.shape[-1]).astype(np.int32), device=dev)
        self._static = torch.as_tensor(cat("static").astype(np.float32), device=dev)
        self._best = torch.as_tensor(cat("best").astype(np.int64), device=dev)
        self._goal = torch.as_tensor(cat("goal"), device=dev)
        ep_task = np.arange(self.n) // rollouts
        self._start = torch.as_tensor(ep_task * states + start[ep_task], device=dev)
        self._budget = torch.as_tensor(budget[ep_task].astype(np.int32), device=dev)
        self._slab = torch.as_tensor(np.arange(self.n) * CELLS, device=dev)    # each episode's visited cells
        self._nbr = torch.as_tensor(np.array(OFFSETS), device=dev)
        self._stay = torch.tensor(STAY, device=dev)
        # visited cells hold the number of the reset that visited them, so a reset clears
        # nothing; numpy allocates the zeros because a large torch fill may start a parallel
        # region (milliseconds when the cores are busy)
        self._visited = torch.as_tensor(np.zeros(self.n * CELLS, np.int32), device=dev)
        self._epoch = 0
        self.max_steps = int(budget.max()) if T else 0
        self.reset()

    def _obs(self) -> torch.Tensor:
        # index_select/take, not tensor[idx]: advanced indexing may start an intra-op parallel
        # region, which costs milliseconds when the cores are busy. A walker is never on the
        # frame's border (always wall), so its neighbours stay inside its own slab.
        vpos = self.pos % CELLS + self._slab
        self._visited.index_fill_(0, vpos, self._epoch)
        seen = self._visited.take(vpos.unsqueeze(1) + self._nbr) == self._epoch
        return torch.cat([self._static.index_select(0, self.pos), seen], 1)   # cat promotes to float32

    def reset(self) -> torch.Tensor:
        self.pos = self._start.clone()
        self.t = torch.zeros_like(self._budget)
        self._epoch += 1
        self.active = torch.ones(self.n, dtype=torch.bool, device=self.pos.device)
        self.success = torch.zeros_like(self.active)
        return self._obs()

    def step(self, actions: torch.Tensor):
        act = self.active
        idx = self.pos * 5 + torch.where(act, actions, self._stay)
        self.pos = self._trans.index_select(0, idx)
        self.t += act
        # a finished episode either sits on its goal or has used its budget, so both flags
        # follow from the state alone
        self.success = self._goal.index_select(0, self.pos)
        self.active = (self.t < self._budget) & ~self.success
        return self._obs(), self._oracle.index_select(0, idx), self._info.index_select(0, idx)

    def oracle_action(self) -> torch.Tensor:
        return self._best.index_select(0, self.pos)
