"""One RLAnything iteration (SPEC §2), in order: sample and roll out, judge, decide candidates,
rewards, update the policy then the judge, adapt the pool, evaluate, measure. `Trainer.step`
reads as that list; each phase is a method below it, and what the phases share is named once in
an `IterationBatch` and its `Rewards`."""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from .. import metrics
from ..config import Config
from ..tasks import load_family
from ..tasks.task import Task
from ..vocabulary import EventKind
from . import curriculum
from .advantages import (coding_policy_advantages, coding_policy_band, judge_rewards, normalize_per_step,
                         oracle_verdicts, outcome_balanced_weights, step_rewards, transformed_step_rewards,
                         unanimous_steps_pooled, unit_test_advantages)
from .backend import Episodes, Judgement, Proposal, VariantRequest
from .backend_factory import make_backend
from .device import limit_threads
from .evaluation import held_out_suite
from .executor_factory import make_executor
from .gate import MuGate
from .health import role_health
from .interfaces import IterationResult, budget_reached
from .measures import balance_mu, judge_error_structure, judge_measures, policy_measures
from .no_dynamo import skip_dynamo_import
from .pool import Decision, TaskPool
from .ppo import PPOStats

MAX_CRITIC_STEPS = 64
MAX_CRITIC_NOTES = 4      # steps told in words to a language-model environment model
MAX_CRITIC_TESTS = 8      # a test generator's tests, with their pass rates, told to it


class PhaseTimer:
    """Seconds spent in each phase of an iteration (stored as perf/seconds@<phase>)."""

    def __init__(self) -> None:
        self.start = self.last = time.perf_counter()
        self.seconds: dict[str, float] = {}

    def mark(self, phase: str) -> None:
        """`phase` ended now: it took the time since the previous mark."""
        now = time.perf_counter()
        self.seconds[phase], self.last = now - self.last, now

    def elapsed(self) -> float:
        return time.perf_counter() - self.start


@dataclass
class IterationBatch:
    """This iteration's groups: the sampled pool slots' rollouts first, then the pending
    candidates', one group of `rollouts` episodes per task (SPEC §2.1). The later fields are set
    by the phase that makes them (reading one earlier raises AttributeError)."""
    iteration: int
    sampled: list[int]               # pool slots
    candidates: list[int]            # slots whose pending candidate was rolled out
    tasks: list[Task]                # per group, in rollout order
    episodes: Episodes
    rollouts: int
    judgement: Judgement = field(init=False)          # 2. judge
    group_acc: list[float] = field(init=False)        # 3. per group: its share of successes
    group_acc_tensor: torch.Tensor = field(init=False)  # 3. the same, [G] on the device, for the learners' masks
    decisions: list[Decision] = field(init=False)     # 3. per candidate: accepted or rejected
    kept: torch.Tensor = field(init=False)            # 3. [G] bool: sampled groups and accepted candidates
    trained: torch.Tensor = field(init=False)         # 3. [G] bool: kept groups the learners may train on
    has_correct: torch.Tensor = field(init=False)     # 4. judge.kind = tests: [G] bool, the generator trains on it

    def per_episode(self, per_group: torch.Tensor) -> torch.Tensor:
        """A per-group tensor [G] repeated for each of the group's episodes [B]."""
        return per_group.repeat_interleave(self.rollouts)


@dataclass
class Rewards:
    """SPEC §3–4 for every real step: the step reward, the policy's advantages and the judge's
    consistency rewards."""
    lam: float                       # λ in force (the μ gate may scale it)
    step: torch.Tensor               # [B, T] R = O + λ·mean(S) (SPEC §3): the judge's reward reads it
    policy: torch.Tensor             # [B, T] what the policy's advantages come from (R, or policy.step_verdicts')
    policy_advantages: torch.Tensor  # [B, T] z-scored per task and step index
    judge: torch.Tensor              # [B, T, m] consistency reward per verdict, 0 on padding


class Trainer:
    def __init__(self, cfg: Config, device: torch.device):
        self.cfg, self.device = cfg, device
        self.family = load_family(cfg.task.family)
        seed = cfg.run.seed
        limit_threads(self.family, device)
        skip_dynamo_import()      # before the optimisers are made: 2.3 s of every engine start
        torch.manual_seed(seed)   # network initialisation
        self.gen = torch.Generator(device=device).manual_seed(seed)
        self.backend = make_backend(cfg, self.family, device, self.gen)
        self.executor = make_executor(cfg, self.backend, device, self.gen)
        self.rng = np.random.default_rng(seed)
        self.pool = TaskPool(self.family, cfg.env.low, cfg.env.high, cfg.env.tries)
        self.pool.fill(cfg.task.pool_size, cfg.task.dataset_low, cfg.task.dataset_high, self.rng)
        self.suite = held_out_suite(self.family, cfg.eval.tiers, cfg.eval.tasks_per_tier)
        self.iteration = 0
        self.env_steps = 0
        p = cfg.policy
        self.gate = MuGate(p.mu_target, p.mu_ema) if p.mu_gate else None

    # -- one iteration, in SPEC order --------------------------------------------------------------
    def step(self, final: bool = False) -> IterationResult:
        timer = PhaseTimer()
        batch = self._sample_and_roll_out(self.iteration + 1)
        final = final or budget_reached(self.cfg.run.env_step_budget, self.env_steps + batch.episodes.env_steps)
        timer.mark("rollout")

        batch.judgement = self._judge(batch.episodes)
        timer.mark("judge")

        events = self._decide_candidates(batch)
        rewards = self._rewards(batch)
        timer.mark("rewards")

        policy_stats = self._update_policy(batch, rewards)
        judge_stats = self._update_judge(batch, rewards)
        self.executor.weights_changed()
        timer.mark("updates")

        proposals = self._adapt(batch) if self.cfg.env.strategy == "rlanything" else []
        events += [(EventKind.VARIANT_INVALID, {"slot": request.slot, "direction": request.direction,
                                                "answer": answer, "reason": reason})
                   for request, proposal in proposals for answer, reason in proposal.invalid]
        timer.mark("adaptation")

        values = self._evaluate() if batch.iteration % self.cfg.eval.every == 0 or final else {}
        timer.mark("eval")

        self.iteration = batch.iteration
        self.env_steps += batch.episodes.env_steps
        values.update(self._measure(batch, rewards, policy_stats, judge_stats))
        if self.family.kind == "text":
            values[metrics.INVALID] = float(sum(len(proposal.invalid) for _, proposal in proposals))
        events += self.backend.episode_events(batch.episodes, batch.judgement, batch.tasks,
                                              batch.sampled + batch.candidates, proposals, batch.decisions)
        events = self.executor.take_events() + events
        wall = timer.elapsed()
        values[metrics.ITERATION_S] = wall
        values[metrics.ENV_STEPS_PER_S] = batch.episodes.env_steps / wall
        timer.mark("measures")
        values.update({metrics.phase_key(phase): s for phase, s in timer.seconds.items()})
        return IterationResult(batch.iteration, values, events, self.pool.take_dirty_rows(), self.env_steps, wall,
                               timer.seconds)

    # -- 1. sample and roll out --------------------------------------------------------------------
    def _sample_and_roll_out(self, iteration: int) -> IterationBatch:
        """The env.strategy's slots and every pending candidate, rolled out. DAPO draws further
        slots until enough groups are mixed or the pool is used up; it never adapts, so no
        candidate follows the sampled groups."""
        pool, k = self.pool, self.cfg.rollout.tasks_per_iter
        sampled = self._draw(k, iteration)
        candidates = pool.candidate_slots()
        tasks = [pool.active[s].task for s in sampled] + [pool.pending[s].task for s in candidates]
        episodes = self._collect(tasks)
        if self.cfg.env.strategy == "dapo" and not candidates:
            left = [s for s in pool.free_slots() if s not in sampled]
            while left and not curriculum.enough_mixed(episodes.group_acc().cpu().tolist(), k):
                more = sorted(int(s) for s in self.rng.choice(left, size=min(k, len(left)), replace=False))
                left = [s for s in left if s not in more]
                more_tasks = [pool.active[s].task for s in more]
                episodes = self.backend.then(episodes, self._collect(more_tasks))
                sampled, tasks = sampled + more, tasks + more_tasks
        pool.note_drawn(sampled, iteration)
        return IterationBatch(iteration, sampled, candidates, tasks, episodes, self.cfg.rollout.rollouts_per_task)

    def _draw(self, k: int, it: int) -> list[int]:
        env, pool = self.cfg.env, self.pool
        if env.strategy == "plr":
            free = pool.free_slots()
            recs = [pool.active[s] for s in free]
            return curriculum.plr_sample(free, [curriculum.learnability(r.last_acc) for r in recs],
                                         [r.last_drawn for r in recs], k, it, env.plr_temperature,
                                         env.plr_staleness, self.rng)
        slots = pool.sample_slots(k, self.rng)
        if env.strategy == "uniform" and pool.override is None:   # a manual override holds the pool still
            pool.refresh(slots, curriculum.uniform_difficulties(len(slots), self.rng), it, self.rng)
        return slots

    def _collect(self, tasks: list[Task]) -> Episodes:
        return self.executor.collect(tasks, self.cfg.rollout.rollouts_per_task)

    # -- 2. judge ----------------------------------------------------------------------------------
    def _judge(self, roll: Episodes) -> Judgement:
        """The judge's verdicts, or with judge.source = "oracle" (a diagnostic) the family's oracle
        labels in their place (flipped at random with judge.oracle_noise); the judge never sees them."""
        j = self.cfg.judge
        if j.source == "learned" or j.kind == "tests":     # a test generator's oracle is the backend's to script
            return self.executor.judge(roll, j.m)
        return self.backend.oracle_judgement(roll, oracle_verdicts(roll.oracle, roll.mask, j.m, j.oracle_noise,
                                                                   self.gen))

    # -- 3. decide candidates (SPEC §5) ------------------------------------------------------------
    def _decide_candidates(self, batch: IterationBatch) -> list[tuple[str, dict]]:
        """Accept or reject each candidate on the accuracy its rollouts just measured, record the
        sampled slots' accuracy, and mark which groups the learners may train on: the sampled
        ones and the accepted candidates (DAPO: only the first mixed ones)."""
        batch.group_acc_tensor = batch.episodes.group_acc()
        acc = batch.group_acc = batch.group_acc_tensor.cpu().tolist()
        n_sampled = len(batch.sampled)
        batch.decisions = [self.pool.decide(slot, acc[n_sampled + i], batch.iteration)
                           for i, slot in enumerate(batch.candidates)]
        for i, slot in enumerate(batch.sampled):
            self.pool.record_acc(slot, acc[i])
        batch.kept = torch.tensor([True] * n_sampled + [d.accepted for d in batch.decisions], device=self.device)
        batch.trained = batch.kept
        if self.cfg.env.strategy == "dapo":
            batch.trained = batch.kept & torch.tensor(curriculum.first_mixed(acc[:n_sampled],
                                                                             self.cfg.rollout.tasks_per_iter),
                                                      device=self.device)
        return [(EventKind.VARIANT_ACCEPTED if d.accepted else EventKind.VARIANT_REJECTED,
                 {"slot": d.slot, "version": d.record.version, "direction": d.record.direction,
                  "prev_acc": d.record.prev_acc, "new_acc": d.record.new_acc, "difficulty": d.record.difficulty})
                for d in batch.decisions]

    # -- 4. rewards (SPEC §3–4) --------------------------------------------------------------------
    def _rewards(self, batch: IterationBatch) -> Rewards:
        if self.cfg.judge.kind == "tests":
            return self._test_rewards(batch)
        cfg, episodes, verdicts = self.cfg, batch.episodes, batch.judgement.verdicts
        lam = self._lambda(verdicts, episodes, batch.per_episode(batch.kept))
        step = step_rewards(episodes.outcome, verdicts, episodes.mask, lam)
        policy = step if cfg.policy.step_verdicts == "paper" else \
            transformed_step_rewards(episodes.outcome, verdicts, episodes.mask, lam, cfg.policy.step_verdicts)
        judge = judge_rewards(step, verdicts)
        if cfg.judge.unanimous == "batch":
            judge = unanimous_steps_pooled(step, verdicts, episodes.mask, judge)
        elif cfg.judge.unanimous == "trained":
            judged = episodes.mask & batch.per_episode(self._judge_groups(batch)).unsqueeze(1)
            judge = unanimous_steps_pooled(step, verdicts, judged, judge)
        return Rewards(lam, step, policy, normalize_per_step(policy, episodes.mask, batch.rollouts),
                       judge * episodes.mask.unsqueeze(-1))

    def _test_rewards(self, batch: IterationBatch) -> Rewards:
        """The coding setting (judge.kind = tests, docs/coding.md), as the official code: the policy's
        reward is its share of ground-truth tests passed, z-scored within the task; each generated
        test's reward is scored on the group's correct and wrong programs and z-scored within the
        task, and sits at the group's judged cell (its first episode's step) where the judge's update
        finds it. Groups without a correct program give the test generator nothing."""
        episodes, verdicts, rollouts = batch.episodes, batch.judgement.verdicts, batch.rollouts
        mask = episodes.mask
        graded = episodes.graded().to(mask.device)
        policy = graded.unsqueeze(1) * mask
        advantages = coding_policy_advantages(graded, rollouts).unsqueeze(1) * mask
        groups = episodes.groups
        passes = verdicts[:, 0, :].reshape(groups, rollouts, -1).permute(0, 2, 1)
        # the official code skips a task outside the band for both learners (docs/coding.md)
        in_band = coding_policy_band(episodes.success, rollouts, self.cfg.policy.band_low, self.cfg.policy.band_high)
        test_rewards, batch.has_correct = unit_test_advantages(passes, episodes.success.view(groups, rollouts),
                                                               in_band)
        judge = torch.zeros(verdicts.shape, dtype=torch.float32, device=verdicts.device)
        judge[torch.arange(groups, device=verdicts.device) * rollouts, 0] = test_rewards.to(judge.device)
        return Rewards(0.0, policy, policy, advantages, judge * mask.unsqueeze(-1))

    def _lambda(self, verdicts: torch.Tensor, roll: Episodes, ep_keep: torch.Tensor) -> float:
        """λ in force this iteration: the configured one, scaled by the μ gate when it is on."""
        if self.gate is None:
            return self.cfg.policy.lam
        self.gate.update(balance_mu(verdicts[ep_keep], roll.mask[ep_keep], roll.outcome[ep_keep]))
        return self.cfg.policy.lam * self.gate.scale()

    # -- 5. update the policy, then the judge ------------------------------------------------------
    def _update_policy(self, batch: IterationBatch, rewards: Rewards) -> PPOStats:
        """PPO on every step of the trained groups in the policy's band (mixed groups; with
        policy.unanimous_groups all-success and all-failure ones too) whose advantage is not 0."""
        cfg, episodes, acc = self.cfg, batch.episodes, batch.group_acc_tensor
        if cfg.policy.source != "learned":     # scripted programs (a diagnostic): nothing to train
            return PPOStats()
        in_band = (acc > cfg.policy.band_low) & (acc < cfg.policy.band_high)
        if cfg.judge.kind == "tests":     # the official code's band on the pass-all share is inclusive
            in_band = coding_policy_band(episodes.success, batch.rollouts, cfg.policy.band_low,
                                         cfg.policy.band_high).to(acc.device)
        unanimous = cfg.policy.unanimous_groups & ((acc == 0) | (acc == 1))
        groups = batch.trained & (in_band | unanimous)
        steps = episodes.mask & batch.per_episode(groups).unsqueeze(1) & (rewards.policy_advantages != 0)
        # the entropy bonus's states: every step rolled out but rejected candidates' (taken only when used)
        visited = episodes.mask & batch.per_episode(batch.kept).unsqueeze(1) if cfg.policy.entropy_coef > 0 else None
        return self.backend.update_policy(episodes, steps, rewards.policy_advantages[steps], visited)

    def _update_judge(self, batch: IterationBatch, rewards: Rewards) -> PPOStats | None:
        """PPO on every verdict of the trained groups in the judge's band whose consistency reward
        is not 0 (with judge.verdict_entropy, on every verdict there: the bonus applies to all);
        None when the judge does not learn (judge.train off, or the oracle in its place)."""
        cfg, episodes = self.cfg, batch.episodes
        if not cfg.judge.train or cfg.judge.source != "learned":
            return None
        groups = self._judge_groups(batch)
        chosen = (episodes.mask & batch.per_episode(groups).unsqueeze(1)).unsqueeze(-1)
        chosen = chosen & (rewards.judge != 0) if cfg.judge.verdict_entropy == 0 else chosen.expand_as(rewards.judge)
        episode, step, verdict = chosen.nonzero(as_tuple=True)
        advantages = rewards.judge[episode, step, verdict]
        if cfg.judge.weighting == "balanced":
            advantages = advantages * outcome_balanced_weights(episodes.success[episode])
        return self.backend.update_judge(episodes, batch.judgement, (episode, step, verdict), advantages)

    def _judge_groups(self, batch: IterationBatch) -> torch.Tensor:
        """[G] bool: the trained groups in the judge's band (SPEC §4: 0.2 ≤ acc ≤ 0.8); a test
        generator's, those with a correct program (the official code skips the others)."""
        acc = batch.group_acc_tensor
        if self.cfg.judge.kind == "tests":
            return batch.trained & batch.has_correct.to(batch.trained.device)
        return batch.trained & (acc >= self.cfg.judge.band_low) & (acc <= self.cfg.judge.band_high)

    # -- 6. adapt (SPEC §5) ------------------------------------------------------------------------
    def _adapt(self, batch: IterationBatch) -> list[tuple[VariantRequest, Proposal]]:
        """Ask the environment model for a variant of each triggering sampled slot, with critic
        feedback from the steps every verdict judged −1 (SPEC §5), all requests at once."""
        n, episodes, judgement = batch.rollouts, batch.episodes, batch.judgement
        high_risk = (judgement.verdicts == -1).all(-1) & episodes.mask
        writes_tests = self.cfg.judge.kind == "tests"
        requests = []
        for g, slot in enumerate(batch.sampled):
            acc = batch.group_acc[g]
            direction = self.pool.wants_variant(slot, acc)
            if direction is None:
                continue
            group = slice(g * n, (g + 1) * n)
            # a test generator's critic reads every program of the task (the official per-test pass
            # rates are over all of them), not only those that failed every generated test
            b, t = (episodes.mask if writes_tests else high_risk)[group].nonzero(as_tuple=True)
            if self.cfg.env.critic == "random":     # as many steps, chosen without the judge
                b, t = self._random_steps(episodes.mask[group], len(b))
            b, t = b[:MAX_CRITIC_STEPS] + g * n, t[:MAX_CRITIC_STEPS]
            task = self.pool.active[slot].task
            critic = self.family.critic(task, self.backend.critic_steps(episodes, judgement, b, t))
            critic.update({"acc": acc, "direction": direction})
            notes = self.backend.critic_notes(episodes, judgement, b, t)
            if notes and writes_tests:
                critic["generated_tests"] = notes[:MAX_CRITIC_TESTS]
            elif notes:
                critic["high_risk_steps"] = notes[:MAX_CRITIC_NOTES]
            requests.append(VariantRequest(slot, self.pool.roots[slot], task, direction, acc, critic))
        proposals = self.executor.propose(requests, self.cfg.env.tries, self.rng)
        for request, proposal in zip(requests, proposals):
            if proposal.task is not None:
                self.pool.add_pending(request.slot, proposal.task, request.direction, request.acc, request.critic,
                                      batch.iteration)
        return list(zip(requests, proposals))

    def _random_steps(self, mask: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        real = mask.nonzero()
        pick = torch.as_tensor(np.sort(self.rng.choice(len(real), size=min(n, len(real)), replace=False)),
                               dtype=torch.long, device=mask.device)
        return real[pick, 0], real[pick, 1]

    # -- 7. evaluate and measure (SPEC §7) ---------------------------------------------------------
    def _evaluate(self) -> dict[str, float]:
        """Greedy held-out success per set (SPEC §7), and their mean."""
        tasks = [t for s in self.suite for t in s.tasks]
        success = self.executor.successes(tasks).float().cpu()
        out, start = {}, 0
        for s in self.suite:
            out[metrics.eval_set_key(s.name)] = float(success[start:start + len(s.tasks)].mean())
            start += len(s.tasks)
        out[metrics.EVAL_SUCCESS] = float(np.mean([out[metrics.eval_set_key(s.name)] for s in self.suite]))
        return out

    def _measure(self, batch: IterationBatch, rewards: Rewards, policy_stats: PPOStats,
                 judge_stats: PPOStats | None) -> dict[str, float]:
        """This iteration's metrics over the kept rollouts (sampled groups and accepted candidates)."""
        cfg, episodes, verdicts = self.cfg, batch.episodes, batch.judgement.verdicts
        kept = batch.per_episode(batch.kept)
        n_sampled = len(batch.sampled)
        out: dict[str, float] = {}
        if n_sampled:
            out[metrics.SUCCESS] = float(episodes.success[: n_sampled * batch.rollouts].float().mean())
        mask, outcome = episodes.mask[kept], episodes.outcome[kept]
        out.update(policy_measures(rewards.policy[kept], verdicts[kept], mask, rewards.lam, episodes.lengths[kept]))
        if cfg.policy.step_verdicts != "paper" and mask.any():    # the step part the policy was given
            given = (rewards.policy[kept] - outcome.unsqueeze(1)) * mask
            out[metrics.STEP_REWARD] = float(given.sum() / mask.sum())
        out.update(judge_error_structure(verdicts[kept], mask, outcome, episodes.oracle[kept]))
        out.update(judge_measures(verdicts[kept], mask, outcome, episodes.oracle[kept], int(batch.kept.sum()),
                                  batch.rollouts))
        if kept.any():       # every rollout can be a rejected candidate's: then there is no share
            out[metrics.POSITIVE_FRACTION] = float(episodes.success[kept].float().mean())
        if self.gate is not None:
            out[metrics.EFFECTIVE_LAMBDA] = rewards.lam
        out.update(self._pool_measures(batch, n_sampled))
        if policy_stats.samples:          # no samples, no update: the loss is undefined, not 0
            out[metrics.LOSS_POLICY] = policy_stats.loss
            out[metrics.LOSS_KL] = policy_stats.kl
        if judge_stats is not None and judge_stats.samples:
            out[metrics.LOSS_JUDGE] = judge_stats.loss
        # shares of everything produced: every real step rolled out, each judged m times
        out.update(role_health("policy", policy_stats, episodes.env_steps))
        if judge_stats is not None:       # a frozen judge is no trained role: no health keys
            judged = episodes.groups if cfg.judge.kind == "tests" else episodes.env_steps
            out.update(role_health("judge", judge_stats, judged * verdicts.shape[-1]))
        out.update(self.backend.text_measures(episodes, batch.judgement))
        out[metrics.ENV_STEPS] = float(self.env_steps)
        return out

    def _pool_measures(self, batch: IterationBatch, n_sampled: int) -> dict[str, float]:
        out: dict[str, float] = {}
        diffs = self.pool.difficulties()
        if len(diffs):
            out[metrics.DIFFICULTY_MEAN], out[metrics.DIFFICULTY_MIN], out[metrics.DIFFICULTY_MAX] = \
                float(diffs.mean()), float(diffs.min()), float(diffs.max())
        out[metrics.ACCEPTED] = float(sum(d.accepted for d in batch.decisions))
        out[metrics.REJECTED] = float(sum(not d.accepted for d in batch.decisions))
        out[metrics.PENDING] = float(len(self.pool.pending))
        if n_sampled:
            out[metrics.IN_BAND] = float(np.mean([self.cfg.env.low <= a <= self.cfg.env.high
                                                  for a in batch.group_acc[:n_sampled]]))
        return out

    # -- what the Runner asks between iterations (interfaces.RunLoop) ------------------------------
    def budget_spent(self) -> bool:
        return budget_reached(self.cfg.run.env_step_budget, self.env_steps)

    def set_interrupt(self, interrupted: Callable[[], bool]) -> None:
        """`interrupted()` is asked while the executor waits on workers: True cancels the
        outstanding work (Interrupted is raised, and this iteration must not be committed)."""
        self.executor.interrupted = interrupted

    def pending_events(self) -> list[tuple[str, dict]]:
        """Events of an iteration that never completed (a worker restarted before it failed)."""
        return self.executor.take_events()

    def task_rows(self, live: bool) -> list[dict]:
        """The pool's rows: all live ones (a resume rewrites them), else those changed since asked."""
        return self.pool.live_rows() if live else self.pool.take_dirty_rows()

    def close(self) -> None:
        self.executor.close()

    # -- manual override ---------------------------------------------------------------------------
    def set_override(self, d: float | None) -> list[dict]:
        self.pool.set_override(d, self.iteration, self.rng)
        return self.pool.take_dirty_rows()

    # -- checkpoint state --------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"iteration": self.iteration, "env_steps": self.env_steps, **self.backend.state_dict(),
                "torch_rng": self.gen.get_state(), "np_rng": json.dumps(self.rng.bit_generator.state),
                "pool": self.pool.state_dict(), "mu_hat": self.gate.mu_hat if self.gate else None}

    def load_state_dict(self, s: dict) -> None:
        self.iteration, self.env_steps = int(s["iteration"]), int(s["env_steps"])
        self.backend.load_state_dict(s)
        self.executor.weights_changed()
        self.gen.set_state(s["torch_rng"].cpu())   # map_location may have moved it
        self.rng.bit_generator.state = json.loads(s["np_rng"])
        self.pool.load_state_dict(s["pool"])
        if self.gate is not None and s.get("mu_hat") is not None:
            self.gate.mu_hat = float(s["mu_hat"])
