"""One RLAnything iteration (SPEC §2), in order: sample, roll out, judge, decide candidates,
rewards, update policy then judge, adapt the pool, evaluate, measure."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .. import metrics
from ..config import Config
from ..tasks import load_family
from ..tasks.task import Task
from ..vocabulary import EventKind
from . import curriculum
from .advantages import (judge_rewards, normalize_per_step, oracle_verdicts, outcome_balanced_weights,
                         step_rewards, transformed_step_rewards, unanimous_steps_against_the_batch)
from .backend import Episodes, Judgement, Proposal, VariantRequest, make_backend
from .evaluation import held_out_suite
from .executor import make_executor
from .gate import MuGate
from .no_dynamo import skip_dynamo_import
from .health import role_health
from .measures import balance_mu, judge_error_structure, judge_measures, policy_measures
from .pool import TaskPool

MAX_CRITIC_STEPS = 64
MAX_CRITIC_NOTES = 4      # steps told in words to a language-model environment model


@dataclass
class IterationResult:
    iteration: int
    metrics: dict[str, float]
    events: list[tuple[str, dict]]
    task_rows: list[dict]
    env_steps: int
    wall_s: float
    timings: dict[str, float] = field(default_factory=dict)


def limit_threads(family, device: torch.device) -> None:
    """The embedded networks are small: one intra-op thread is ~2.5x faster than two on a 2-core
    machine (no spin-waiting) and keeps float reductions in a fixed order."""
    if device.type == "cpu" and family.kind == "tensor":
        torch.set_num_threads(1)


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("run.device = 'cuda' but no CUDA device is available")
    return torch.device(name)


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

    # -- one iteration ---------------------------------------------------------------------
    def step(self, final: bool = False) -> IterationResult:
        cfg, pool, clock = self.cfg, self.pool, time.perf_counter
        t0 = clock()
        it = self.iteration + 1
        n_rollouts = cfg.rollout.rollouts_per_task
        sampled, cands, tasks, roll = self._roll_out(it)
        final = final or self._spends_budget(roll.env_steps)
        t1 = clock()
        judgement = self._judge(roll)
        verdicts = judgement.verdicts
        t2 = clock()

        acc = roll.group_acc().cpu().tolist()
        n_s = len(sampled)
        events: list[tuple[str, dict]] = []
        decisions = [pool.decide(slot, acc[n_s + i], it) for i, slot in enumerate(cands)]
        for d in decisions:
            events.append((EventKind.VARIANT_ACCEPTED if d.accepted else EventKind.VARIANT_REJECTED,
                           {"slot": d.slot, "version": d.record.version, "direction": d.record.direction,
                            "prev_acc": d.record.prev_acc, "new_acc": d.record.new_acc,
                            "difficulty": d.record.difficulty}))
        for i, slot in enumerate(sampled):
            pool.record_acc(slot, acc[i])
        keep = torch.tensor([True] * n_s + [d.accepted for d in decisions], device=self.device)
        trained = keep
        if cfg.env.strategy == "dapo":
            trained = keep & torch.tensor(curriculum.first_mixed(acc[:n_s], cfg.rollout.tasks_per_iter),
                                          device=self.device)
        acc_t = torch.tensor(acc, device=self.device)

        per_ep = lambda g: g.repeat_interleave(n_rollouts)   # noqa: E731 — group flag -> episode flag
        lam = self._lambda(verdicts, roll, per_ep(keep))
        R = step_rewards(roll.outcome, verdicts, roll.mask, lam)      # the judge's consistency reward reads it
        R_policy = R if cfg.policy.step_verdicts == "paper" else \
            transformed_step_rewards(roll.outcome, verdicts, roll.mask, lam, cfg.policy.step_verdicts)
        adv = normalize_per_step(R_policy, roll.mask, n_rollouts)
        jr = judge_rewards(R, verdicts)
        if cfg.judge.unanimous == "batch":
            jr = unanimous_steps_against_the_batch(R, verdicts, roll.mask, jr)
        jr = jr * roll.mask.unsqueeze(-1)
        in_band = (acc_t > cfg.policy.band_low) & (acc_t < cfg.policy.band_high)
        pol_groups = trained & (in_band | (cfg.policy.unanimous_groups & ((acc_t == 0) | (acc_t == 1))))
        jud_groups = trained & (acc_t >= cfg.judge.band_low) & (acc_t <= cfg.judge.band_high)
        t3 = clock()

        pol_sel = roll.mask & per_ep(pol_groups).unsqueeze(1) & (adv != 0)
        # the entropy bonus's states: every step rolled out but rejected candidates' (taken only when used)
        visited = roll.mask & per_ep(keep).unsqueeze(1) if cfg.policy.entropy_coef > 0 else None
        pol_stats = self.backend.update_policy(roll, pol_sel, adv[pol_sel], visited)
        jud_stats = None
        if cfg.judge.train and cfg.judge.source == "learned":      # an oracle replaces the judge: nothing learns
            jsel = (roll.mask & per_ep(jud_groups).unsqueeze(1)).unsqueeze(-1) & (jr != 0)
            b, t, j = jsel.nonzero(as_tuple=True)
            jadv = jr[b, t, j]
            if cfg.judge.weighting == "balanced":
                jadv = jadv * outcome_balanced_weights(roll.success[b])
            jud_stats = self.backend.update_judge(roll, judgement, (b, t, j), jadv)
        self.executor.weights_changed()
        t4 = clock()

        proposals: list[tuple[VariantRequest, Proposal]] = []
        if cfg.env.strategy == "rlanything":
            proposals = self._adapt(sampled, acc, roll, judgement, it)
            events += [(EventKind.VARIANT_INVALID, {"slot": r.slot, "direction": r.direction, "answer": answer,
                                                    "reason": reason})
                       for r, p in proposals for answer, reason in p.invalid]
        t5 = clock()
        values: dict[str, float] = {}
        if it % cfg.eval.every == 0 or final:
            values.update(self._evaluate())
        t6 = clock()

        self.iteration = it
        self.env_steps += roll.env_steps
        values.update(self._measure(roll, verdicts, R_policy, acc, keep, n_s, decisions, pol_stats, jud_stats, lam,
                                    judgement))
        if self.family.kind == "text":
            values[metrics.INVALID] = float(sum(len(p.invalid) for _, p in proposals))
        events += self.backend.episode_events(roll, judgement, tasks, sampled + cands, proposals, decisions)
        events = self.executor.take_events() + events
        wall = clock() - t0
        values[metrics.ITERATION_S] = wall
        values[metrics.ENV_STEPS_PER_S] = roll.env_steps / wall
        timings = {"rollout": t1 - t0, "judge": t2 - t1, "rewards": t3 - t2, "updates": t4 - t3,
                   "adaptation": t5 - t4, "eval": t6 - t5, "measures": clock() - t6}
        return IterationResult(it, values, events, pool.take_dirty_rows(), self.env_steps, wall, timings)

    # -- the verdicts -------------------------------------------------------------------------
    def _judge(self, roll: Episodes) -> Judgement:
        """The judge's verdicts, or with judge.source = "oracle" (a diagnostic) the family's oracle
        labels in their place (flipped at random with judge.oracle_noise); the judge never sees them."""
        j = self.cfg.judge
        if j.source == "learned":
            return self.executor.judge(roll, j.m)
        return self.backend.oracle_judgement(roll, oracle_verdicts(roll.oracle, roll.mask, j.m, j.oracle_noise,
                                                                   self.gen))

    # -- the env.strategy's tasks, rolled out ------------------------------------------------
    def _roll_out(self, it: int) -> tuple[list[int], list[int], list[Task], Episodes]:
        """The sampled slots, the pending candidates, their tasks in rollout order, and the rollouts.
        DAPO draws further slots until enough groups are mixed or the pool is used up; it never
        adapts, so no candidate follows the sampled groups."""
        pool, k = self.pool, self.cfg.rollout.tasks_per_iter
        sampled = self._draw(k, it)
        cands = pool.candidate_slots()
        tasks = [pool.active[s].task for s in sampled] + [pool.pending[s].task for s in cands]
        roll = self._collect(tasks)
        if self.cfg.env.strategy == "dapo" and not cands:
            left = [s for s in pool.free_slots() if s not in sampled]
            while left and not curriculum.enough_mixed(roll.group_acc().cpu().tolist(), k):
                more = sorted(int(s) for s in self.rng.choice(left, size=min(k, len(left)), replace=False))
                left = [s for s in left if s not in more]
                more_tasks = [pool.active[s].task for s in more]
                roll = self.backend.then(roll, self._collect(more_tasks))
                sampled, tasks = sampled + more, tasks + more_tasks
        pool.note_drawn(sampled, it)
        return sampled, cands, tasks, roll

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

    def _spends_budget(self, steps: int) -> bool:
        budget = self.cfg.run.env_step_budget
        return budget > 0 and self.env_steps + steps >= budget

    def budget_spent(self) -> bool:
        return self._spends_budget(0)

    def _lambda(self, verdicts: torch.Tensor, roll: Episodes, ep_keep: torch.Tensor) -> float:
        """λ in force this iteration: the configured one, scaled by the μ gate when it is on."""
        if self.gate is None:
            return self.cfg.policy.lam
        self.gate.update(balance_mu(verdicts[ep_keep], roll.mask[ep_keep], roll.outcome[ep_keep]))
        return self.cfg.policy.lam * self.gate.scale()

    def _adapt(self, sampled: list[int], acc: list[float], roll: Episodes, judgement: Judgement,
               it: int) -> list[tuple[VariantRequest, Proposal]]:
        """Ask the environment model for a variant of each triggering sampled slot, with critic
        feedback from the steps every verdict judged −1 (SPEC §5), all requests at once."""
        n = self.cfg.rollout.rollouts_per_task
        high_risk = (judgement.verdicts == -1).all(-1) & roll.mask
        requests = []
        for g, slot in enumerate(sampled):
            direction = self.pool.wants_variant(slot, acc[g])
            if direction is None:
                continue
            eps = slice(g * n, (g + 1) * n)
            b, t = high_risk[eps].nonzero(as_tuple=True)
            if self.cfg.env.critic == "random":     # as many steps, chosen without the judge
                b, t = self._random_steps(roll.mask[eps], len(b))
            b, t = b[:MAX_CRITIC_STEPS] + g * n, t[:MAX_CRITIC_STEPS]
            task = self.pool.active[slot].task
            critic = self.family.critic(task, self.backend.critic_steps(roll, judgement, b, t))
            critic.update({"acc": acc[g], "direction": direction})
            notes = self.backend.critic_notes(roll, judgement, b, t)
            if notes:
                critic["high_risk_steps"] = notes[:MAX_CRITIC_NOTES]
            requests.append(VariantRequest(slot, self.pool.roots[slot], task, direction, acc[g], critic))
        proposals = self.executor.propose(requests, self.cfg.env.tries, self.rng)
        for r, p in zip(requests, proposals):
            if p.task is not None:
                self.pool.add_pending(r.slot, p.task, r.direction, r.acc, r.critic, it)
        return list(zip(requests, proposals))

    def _random_steps(self, mask: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        real = mask.nonzero()
        pick = torch.as_tensor(np.sort(self.rng.choice(len(real), size=min(n, len(real)), replace=False)),
                               dtype=torch.long, device=mask.device)
        return real[pick, 0], real[pick, 1]

    def _measure(self, roll, verdicts, R, acc, keep, n_s, decisions, pol_stats, jud_stats,
                 lam, judgement) -> dict[str, float]:
        cfg = self.cfg
        n = cfg.rollout.rollouts_per_task
        ep_keep = keep.repeat_interleave(n)
        kept_groups = int(keep.sum())
        out: dict[str, float] = {}
        sampled_success = roll.success[: n_s * n]
        if n_s:
            out[metrics.SUCCESS] = float(sampled_success.float().mean())
        mask = roll.mask[ep_keep]
        out.update(policy_measures(R[ep_keep], verdicts[ep_keep], mask, lam, roll.lengths[ep_keep]))
        if cfg.policy.step_verdicts != "paper" and mask.any():    # the step part the policy was given
            given = (R[ep_keep] - roll.outcome[ep_keep].unsqueeze(1)) * mask
            out[metrics.STEP_REWARD] = float(given.sum() / mask.sum())
        out.update(judge_error_structure(verdicts[ep_keep], mask, roll.outcome[ep_keep], roll.oracle[ep_keep]))
        out.update(judge_measures(verdicts[ep_keep], mask, roll.outcome[ep_keep], roll.oracle[ep_keep],
                                  kept_groups, n))
        if ep_keep.any():       # every rollout can be a rejected candidate's: then there is no share
            out[metrics.POSITIVE_FRACTION] = float(roll.success[ep_keep].float().mean())
        if self.gate is not None:
            out[metrics.EFFECTIVE_LAMBDA] = lam
        diffs = self.pool.difficulties()
        if len(diffs):
            out[metrics.DIFFICULTY_MEAN], out[metrics.DIFFICULTY_MIN], out[metrics.DIFFICULTY_MAX] = \
                float(diffs.mean()), float(diffs.min()), float(diffs.max())
        out[metrics.ACCEPTED] = float(sum(d.accepted for d in decisions))
        out[metrics.REJECTED] = float(sum(not d.accepted for d in decisions))
        out[metrics.PENDING] = float(len(self.pool.pending))
        if n_s:
            out[metrics.IN_BAND] = float(np.mean([cfg.env.low <= a <= cfg.env.high for a in acc[:n_s]]))
        if pol_stats.samples:          # no samples, no update: the loss is undefined, not 0
            out[metrics.LOSS_POLICY] = pol_stats.loss
            out[metrics.LOSS_KL] = pol_stats.kl
        if jud_stats is not None and jud_stats.samples:
            out[metrics.LOSS_JUDGE] = jud_stats.loss
        # shares of everything produced: every real step rolled out, each judged m times
        out.update(role_health("policy", pol_stats, roll.env_steps))
        if jud_stats is not None:       # a frozen judge is no trained role: no health keys
            out.update(role_health("judge", jud_stats, roll.env_steps * verdicts.shape[-1]))
        out.update(self.backend.text_measures(roll, judgement))
        out[metrics.ENV_STEPS] = float(self.env_steps)
        return out

    def set_interrupt(self, interrupted) -> None:
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

    # -- manual override ---------------------------------------------------------------------
    def set_override(self, d: float | None) -> list[dict]:
        self.pool.set_override(d, self.iteration, self.rng)
        return self.pool.take_dirty_rows()

    # -- checkpoint state --------------------------------------------------------------------
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
