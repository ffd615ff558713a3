"""The embedded backend (DESIGN §3): small policy and judge networks over a tensor family's
observation vectors, lock-step batched roll-outs, and the family's procedural environment model."""
from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch.nn import functional

from ..config import Config
from ..models.networks import JudgeNet, PolicyNet, judge_input
from ..tasks.base import Family, Task
from ..vocabulary import EventKind
from .backend import Backend, Episodes, Judgement, Proposal, VariantRequest, connect_games, procedural_proposals
from .ppo import PPOSettings, PPOStats, Scores, binary_entropy, distribution_entropy, ppo_update
from .rollout import Rollout, collect


def action_scores(policy: PolicyNet, obs: torch.Tensor, actions: torch.Tensor, temperature: float) -> Scores:
    """PolicyNet.log_prob with the entropy of the same distribution (taken only when asked)."""
    logp, dist = policy.scores(obs, actions, temperature)
    return Scores(logp, entropy=lambda: distribution_entropy(dist))


def verdict_scores(judge: JudgeNet, x: torch.Tensor, verdicts: torch.Tensor, temperature: float,
                   bonus: bool = False) -> Scores:
    """JudgeNet.log_prob with the entropy of its Bernoulli over {+1, −1}; with `bonus`, that
    entropy with its gradient too (judge.verdict_entropy)."""
    logp, logit = judge.scores(x, verdicts, temperature)

    def entropy() -> torch.Tensor:
        a = logit.detach() / temperature
        return distribution_entropy(torch.stack([functional.logsigmoid(a), functional.logsigmoid(-a)], -1))
    return Scores(logp, entropy=entropy, bonus=binary_entropy(logit / temperature) if bonus else None)


class EmbeddedJudgement(Judgement):
    def __init__(self, verdicts: torch.Tensor, x: torch.Tensor | None):
        super().__init__(verdicts)
        self.x = x           # [B, T, in_dim]: what the judge saw of each step (None: rebuilt when needed)


class EmbeddedBackend(Backend):
    def __init__(self, cfg: Config, family: Family, device: torch.device, gen: torch.Generator,
                 learners: bool = True):
        self.cfg, self.family, self.device, self.gen = cfg, family, device, gen
        self.policy = PolicyNet(family.obs_dim, family.n_actions, cfg.policy.hidden,
                                getattr(family, "slot_features", 0)).to(device)
        self.judge_net = JudgeNet(family.obs_dim, family.n_actions, cfg.judge.hidden).to(device)
        if learners:     # a worker's replica acts and never learns (and an optimiser costs seconds of imports)
            self.policy_opt = torch.optim.AdamW(self.policy.parameters(), lr=cfg.policy.lr)
            self.judge_opt = torch.optim.AdamW(self.judge_net.parameters(), lr=cfg.judge.lr)
        p, j = cfg.policy, cfg.judge
        self.policy_ppo = PPOSettings(p.ppo_epochs, p.minibatch_size, p.clip_eps, p.kl_beta, p.entropy_coef)
        self.judge_ppo = PPOSettings(j.ppo_epochs, j.minibatch_size, j.clip_eps, j.kl_beta,
                                     sample_entropy_coef=j.verdict_entropy)
        connect_games(cfg, family)

    # -- roll-outs -------------------------------------------------------------------------
    def collect(self, tasks: list[Task], rollouts: int, *, greedy: bool = False) -> Rollout:
        self.policy.eval()
        if greedy:
            return collect(self.policy, self.family, tasks, rollouts, temperature=1.0, generator=None,
                           device=self.device, greedy=True)
        return collect(self.policy, self.family, tasks, rollouts, temperature=self.cfg.rollout.temperature,
                       generator=self.gen, device=self.device)

    def then(self, first: Episodes, more: Episodes) -> Rollout:
        assert isinstance(first, Rollout) and isinstance(more, Rollout)
        return first.then(more)

    # -- the judge ---------------------------------------------------------------------------
    def _judge_input(self, ep: Rollout) -> torch.Tensor:
        return judge_input(ep.obs[:, :-1], ep.obs[:, 1:], ep.actions, self.family.n_actions)

    def judge(self, ep: Episodes, m: int) -> EmbeddedJudgement:
        """m verdicts for every real step [B, T, m]; padding steps get 0 (never used). The judge's
        input is built outside inference mode: the judge's update trains on it."""
        assert isinstance(ep, Rollout)
        x = self._judge_input(ep)
        with torch.inference_mode():
            self.judge_net.eval()
            out = torch.zeros((*ep.mask.shape, m), dtype=torch.int8, device=x.device)
            out[ep.mask] = self.judge_net.sample(x[ep.mask], m, self.cfg.judge.temperature, self.gen)
        return EmbeddedJudgement(out, x)

    def oracle_judgement(self, ep: Episodes, verdicts: torch.Tensor) -> EmbeddedJudgement:
        return EmbeddedJudgement(verdicts, None)

    def join_judgements(self, parts: list[Judgement], offsets: list[int]) -> EmbeddedJudgement:
        mine = [p for p in parts if isinstance(p, EmbeddedJudgement)]
        assert len(mine) == len(parts)
        xs = [p.x for p in mine]
        return EmbeddedJudgement(torch.cat([p.verdicts for p in mine]),
                                 None if any(x is None for x in xs) else torch.cat(xs))   # type: ignore[arg-type]

    def travelling(self, judgement: Judgement) -> EmbeddedJudgement:
        """The verdicts only: the judge's input is as big as the roll-out it is built from, and the
        driver, which holds that roll-out, rebuilds it exactly."""
        return EmbeddedJudgement(judgement.verdicts, None)

    # -- updates -----------------------------------------------------------------------------
    def update_policy(self, ep: Episodes, steps: torch.Tensor, advantages: torch.Tensor,
                      visited: torch.Tensor | None) -> PPOStats:
        assert isinstance(ep, Rollout)
        self.policy.train()
        obs, actions = ep.obs[:, :-1][steps], ep.actions[steps]
        temp = self.cfg.rollout.temperature
        seen = ep.obs[:, :-1][visited] if visited is not None else None
        return ppo_update(self.policy, self.policy_opt, lambda i: action_scores(self.policy, obs[i], actions[i], temp),
                          advantages, self.policy_ppo, self.gen, "policy",
                          entropy=None if seen is None else lambda: self.policy.entropy(seen, temp))

    def update_judge(self, ep: Episodes, judgement: Judgement, index: tuple[torch.Tensor, ...],
                     advantages: torch.Tensor) -> PPOStats:
        assert isinstance(judgement, EmbeddedJudgement) and isinstance(ep, Rollout)
        if judgement.x is None:
            judgement.x = self._judge_input(ep)
        b, t, j = index
        jx, jv = judgement.x[b, t], judgement.verdicts[b, t, j]
        temp = self.cfg.judge.temperature
        bonus = self.judge_ppo.sample_entropy_coef > 0
        return ppo_update(self.judge_net, self.judge_opt,
                          lambda i: verdict_scores(self.judge_net, jx[i], jv[i], temp, bonus),
                          advantages, self.judge_ppo, self.gen, "judge")

    # -- the environment model ---------------------------------------------------------------
    def critic_steps(self, ep: Episodes, judgement: Judgement, b: torch.Tensor,
                     t: torch.Tensor) -> list[tuple[int, Any]]:
        assert isinstance(ep, Rollout)
        return list(zip(t.cpu().tolist(), ep.info[b, t].cpu().tolist()))

    def propose(self, requests: list[VariantRequest], tries: int, rng: np.random.Generator) -> list[Proposal]:
        return procedural_proposals(self.family, requests, tries, rng)

    # -- what the console shows ----------------------------------------------------------------
    def episode_events(self, ep: Episodes, judgement: Judgement, tasks: list[Task], slots: list[int],
                       proposals: list[tuple[VariantRequest, Proposal]], decisions: list) -> list[tuple[str, dict]]:
        """The first trajectory of the iteration, for the episode viewer."""
        assert isinstance(ep, Rollout)
        steps = int(ep.mask[0].sum())
        payload = {
            "family": self.family.name, "slot": slots[0], "task": self.family.describe(tasks[0]),
            "success": bool(ep.success[0]), "info_names": list(self.family.info_names),
            "info": ep.info[0, :steps].cpu().tolist(), "verdicts": judgement.verdicts[0, :steps].cpu().tolist(),
            "oracle": ep.oracle[0, :steps].cpu().tolist()}
        transcript = getattr(self.family, "transcript", None)      # a text game's commands and answers
        if transcript is not None:
            payload["transcript"] = transcript(tasks[0], ep.actions[0, :steps].cpu().tolist())
        return [*self._crashed(ep, tasks), (EventKind.EPISODE, payload)]

    def _crashed(self, ep: Rollout, tasks: list[Task]) -> list[tuple[str, dict]]:
        """An event per episode its environment ended by failing (a game's interpreter raised: the
        family's `crash` info column); the family's log line says how."""
        if "crash" not in self.family.info_names:
            return []
        column = ep.info[..., list(self.family.info_names).index("crash")]
        return [(EventKind.EPISODE_CRASHED, {"task": tasks[b // ep.rollouts].to_json(), "episode": b, "step": t,
                                             "error": "the game's interpreter failed (the run's log says how)"})
                for b, t in (column * ep.mask).nonzero().tolist()]

    # -- weights for workers, checkpoint state ------------------------------------------------
    def weights(self) -> dict:
        return {"policy": self.policy.state_dict(), "judge": self.judge_net.state_dict()}

    def load_weights(self, weights: dict) -> None:
        self.policy.load_state_dict(weights["policy"])
        self.judge_net.load_state_dict(weights["judge"])

    # -- checkpoint state ----------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"policy": self.policy.state_dict(), "judge": self.judge_net.state_dict(),
                "policy_opt": self.policy_opt.state_dict(), "judge_opt": self.judge_opt.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.policy.load_state_dict(state["policy"])
        self.judge_net.load_state_dict(state["judge"])
        self.policy_opt.load_state_dict(state["policy_opt"])
        self.judge_opt.load_state_dict(state["judge_opt"])
