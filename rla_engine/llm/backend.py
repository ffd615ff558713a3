"""The language-model backend: policy, generative judge and environment model as causal LMs,
behind the same loop as the embedded networks (loop/backend.py).

Each role loads its own copy of its model (policy and judge are trained apart; the environment
model is frozen), on its own device and dtype. A step is a span of sampled tokens; the PPO of
SPEC §3 runs on token-level ratios, in micro-batches whose gradients accumulate per minibatch.
"""
from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import torch

from .. import metrics
from ..config import Config
from ..errors import InputError
from ..loop.backend import (Backend, Episodes, Judgement, Proposal, VariantRequest, connect_games,
                            procedural_proposals)
from ..loop.device import resolve_device
from ..loop.ppo import PPOSettings, PPOStats, ppo_update
from ..tasks.task import Task
from ..vocabulary import EventKind
from . import env_model, samples
from .code_measures import code_measures
from .completion_rows import CompletionRows
from .dialogue import TextEpisodes, join, play
from .generation import Sampling, was_cut
from .judge import (TextJudgement, join_judgements, judge, oracle_judgement, unreadable_share, verdict_position,
                    verdict_tokens)
from .lora import adapter_state, apply_lora, load_adapter_state
from .sources import ModelLoadError, load_model
from .scripted import Script
from .generated_tests import TestsJudgement, generated_test_notes, join_tests_judgements, judge_tests

NOTE_CHARS = 400


def _device(name: str, run_device: torch.device) -> str:
    """A role's device: empty is the run's (already resolved), anything else as sources reads it."""
    return str(run_device) if name == "" else str(resolve_device(name))


def _load(key: str, path: str, device: str, dtype: str, trainable: bool):
    """A role's model and tokenizer; one that cannot be loaded is invalid input that names the
    field (exit code 2, one line), not a crash."""
    try:
        return load_model(path, device=device, dtype=dtype, trainable=trainable)
    except ModelLoadError as e:
        raise InputError(f"invalid config: {key} = {path!r}: {e.reason}") from None


def adamw(model, lr: float) -> torch.optim.AdamW:
    """AdamW over the model's trainable parameters, with torch's fused kernel where it has one for
    their device: the same update in one pass over all tensors. On a CPU it steps SmolLM2's 135 M
    parameters 5-9× faster than the default per-tensor loop (benchmarks/llm.py)."""
    params = [q for q in model.parameters() if q.requires_grad]
    fused = all(q.device.type in ("cpu", "cuda") and q.dtype.is_floating_point for q in params)
    return torch.optim.AdamW(params, lr=lr, fused=fused or None)


def ppo_settings(epochs: int, minibatch_size: int, clip_eps: float, kl_beta: float,
                 micro_batch_size: int, sample_entropy_coef: float = 0.0) -> PPOSettings:
    """The PPO of a trained role: micro-batched, and log π_old from the first minibatch's own
    forward (a forward pass of a language model is what an update costs)."""
    return PPOSettings(epochs, minibatch_size, clip_eps, kl_beta, micro_batch_size=micro_batch_size,
                       reuse_first_pass=True, sample_entropy_coef=sample_entropy_coef)


def connect_sandbox(cfg: Config, family) -> list[tuple[str, dict]]:
    """A family that runs programs gets its sandbox pool as the run's settings say; the isolation in
    force is the run's first event. SandboxUnavailable (sandbox.require = isolated where bubblewrap
    does not work) stops the run before any program runs."""
    if not hasattr(family, "use_sandbox"):
        return []
    from ..sandbox import SandboxPool
    box = cfg.sandbox
    pool = SandboxPool(require=box.require, workers=box.workers or None)
    family.use_sandbox(pool, memory_mb=box.memory_mb, output_bytes=box.output_kb * 1024)
    iso = pool.isolation
    return [(EventKind.SANDBOX, {"level": iso.level, "require": box.require,
                                 "guarantees": [{"name": n, "holds": h, "how": how} for n, h, how in iso.guarantees]})]


def crashed_events(ep: TextEpisodes) -> list[tuple[str, dict]]:
    """An event per episode that ended because its environment failed inside it (a game's
    interpreter raised): the family ends such an episode as a failure and says why in the step's
    info; the run goes on."""
    out: list[tuple[str, dict]] = []
    for b, steps in enumerate(ep.steps):
        for k, step in enumerate(steps):
            if "crash" in step.info:
                out.append((EventKind.EPISODE_CRASHED, {"task": ep.tasks[b].to_json(), "episode": b, "step": k,
                                                        "command": step.text[:200], "error": str(step.info["crash"])}))
    return out


class LLMBackend(Backend):
    def __init__(self, cfg: Config, family, device: torch.device, gen: torch.Generator, learners: bool = True):
        self.cfg, self.family, self.gen = cfg, family, gen
        p, j, e, lm = cfg.policy, cfg.judge, cfg.env, cfg.lm
        self.policy, self.tok = _load("policy.model_path", p.model_path, _device(p.device, device), p.dtype,
                                      learners)
        self.judge_lm, self.judge_tok = _load("judge.model_path", j.model_path or p.model_path,
                                              _device(j.device, device), j.dtype, learners)
        if lm.lora_rank:
            self.policy = apply_lora(self.policy, lm.lora_rank, lm.lora_alpha, 0.0)
            self.judge_lm = apply_lora(self.judge_lm, lm.lora_rank, lm.lora_alpha, 0.0)
        self.env_lm = self.env_tok = None
        if e.strategy == "rlanything" and e.proposer == "procedural" and not family.has_procedural_model():
            raise InputError(f"invalid config: env.proposer = 'procedural': {family.name} has no procedural "
                             "environment model; must be auto or model")
        if e.strategy == "rlanything" and e.proposer != "procedural":
            self.env_lm, self.env_tok = _load("env.model_path", e.model_path or p.model_path,
                                              _device(e.device, device), e.dtype, False)
        if learners:     # a worker's replica acts and never learns
            self.policy_opt = adamw(self.policy, p.lr)
            self.judge_opt = adamw(self.judge_lm, j.lr)
        self.policy_ppo = ppo_settings(p.ppo_epochs, p.minibatch_size, p.clip_eps, p.kl_beta, lm.micro_batch_size)
        self.judge_ppo = ppo_settings(j.ppo_epochs, j.minibatch_size, j.clip_eps, j.kl_beta, lm.micro_batch_size,
                                      j.verdict_entropy)
        self.verdict_tokens = verdict_tokens(self.judge_tok) if j.verdict_entropy > 0 else None
        if j.verdict_entropy > 0 and self.verdict_tokens is None:
            raise InputError("invalid config: judge.verdict_entropy needs a judge whose tokenizer writes "
                             "\\boxed{1} and \\boxed{-1} alike up to the verdict's own token; this one does not")
        self.start_events = connect_sandbox(cfg, family)
        connect_games(cfg, family)
        scripted = p.source == "scripted" or (j.kind == "tests" and j.source == "oracle")
        self.script = Script(family, self.tok, gen) if scripted else None    # diagnostics (llm/scripted.py)
        batch = lm.generation_batch_size
        self.policy_how = Sampling(p.max_new_tokens, cfg.rollout.temperature, p.top_p,
                                   stop_at_newline=not (family.lines_are_steps or family.multiline_step),
                                   batch_size=batch)
        self.judge_how = Sampling(j.max_new_tokens, j.temperature, j.top_p, batch_size=batch)
        self.env_how = Sampling(e.max_new_tokens, e.temperature, 1.0, batch_size=batch)

    # -- roll-outs -------------------------------------------------------------------------
    def collect(self, tasks: list[Task], rollouts: int, *, greedy: bool = False) -> TextEpisodes:
        how = self.policy_how
        if greedy:
            how = Sampling(how.max_new_tokens, greedy=True, stop_at_newline=how.stop_at_newline,
                           batch_size=how.batch_size)
        writer = self.script.write if self.script is not None and self.cfg.policy.source == "scripted" else None
        return play(self.family, self.policy, self.tok, tasks, rollouts, how, None if greedy else self.gen, writer)

    def then(self, first: Episodes, more: Episodes) -> TextEpisodes:
        assert isinstance(first, TextEpisodes) and isinstance(more, TextEpisodes)
        return join(first, more)

    def judge(self, ep: Episodes, m: int) -> TextJudgement:
        assert isinstance(ep, TextEpisodes)
        if self.cfg.judge.kind == "tests" and self.script is not None and self.cfg.judge.source == "oracle":
            return self.script.judge(ep, m, self.judge_how)
        if self.cfg.judge.kind == "tests":
            return judge_tests(self.family, self.judge_lm, self.judge_tok, ep, m, self.judge_how, self.gen)
        return judge(self.judge_lm, self.judge_tok, ep, m, self.judge_how, self.gen)

    def oracle_judgement(self, ep: Episodes, verdicts: torch.Tensor) -> TextJudgement:
        assert isinstance(ep, TextEpisodes)
        return oracle_judgement(ep, verdicts)

    # -- updates -----------------------------------------------------------------------------
    def update_policy(self, ep: Episodes, steps: torch.Tensor, advantages: torch.Tensor,
                      visited: torch.Tensor | None) -> PPOStats:
        assert isinstance(ep, TextEpisodes)
        chosen = [ep.steps[b][t] for b, t in steps.nonzero().tolist()]
        return self._ppo(self.policy, self.policy_opt, self.policy_ppo, [s.context for s in chosen],
                         [s.tokens for s in chosen], advantages, self.cfg.rollout.temperature, "policy")

    def update_judge(self, ep: Episodes, judgement: Judgement, index: tuple[torch.Tensor, ...],
                     advantages: torch.Tensor) -> PPOStats:
        assert isinstance(judgement, TextJudgement)
        b, t, j = (x.tolist() for x in index)
        flat = [judgement.flat(bb, tt) for bb, tt in zip(b, t)]
        outputs = [judgement.outputs[k][jj] for k, jj in zip(flat, j)]
        verdicts = None
        if self.verdict_tokens is not None:       # judge.verdict_entropy is on
            said = judgement.verdicts[index].tolist()
            verdicts = (self.verdict_tokens[1:],
                        [verdict_position(out, v, self.verdict_tokens) for out, v in zip(outputs, said)])
        return self._ppo(self.judge_lm, self.judge_opt, self.judge_ppo, [judgement.prompts[k] for k in flat],
                         outputs, advantages, self.cfg.judge.temperature, "judge", verdicts)

    def _ppo(self, model, opt, settings: PPOSettings, contexts: list[list[int]], targets: list[list[int]],
             advantages: torch.Tensor, temperature: float, name: str,
             verdicts: tuple[tuple[int, int], list[int]] | None = None) -> PPOStats:
        if not targets:
            return PPOStats()
        width = max(1, max(len(t) for t in targets))
        device = next(model.parameters()).device
        adv = advantages.to(device)

        # a completion's line steps share one forward pass (completion_rows.py)
        rows = CompletionRows(contexts, targets, verdicts)

        def log_prob(idx: torch.Tensor):
            return rows.scores(model, idx, temperature, width)

        model.train()
        stats = ppo_update(model, opt, log_prob, adv, settings, self.gen, name, split=rows.micro_batches)
        model.eval()
        return stats

    # -- what the texts tell ---------------------------------------------------------------------
    def text_measures(self, ep: Episodes, judgement: Judgement) -> dict[str, float]:
        """The policy's answers (one per turn, however many steps it split into): their lengths in
        tokens and the share cut at max_new_tokens; the share of the judge's unreadable verdicts."""
        assert isinstance(ep, TextEpisodes) and isinstance(judgement, TextJudgement)
        answers = [[tok for _, span in turn for tok in span.tokens]
                   for steps, turns in zip(ep.steps, ep.turn_of)
                   for _, turn in itertools.groupby(zip(turns, steps), key=lambda pair: pair[0])]
        out: dict[str, float] = {}
        if answers and self.cfg.policy.source == "learned":     # a scripted answer's length says nothing
            lengths = [len(a) for a in answers]
            out[metrics.COMPLETION_LENGTH_MEAN] = sum(lengths) / len(lengths)
            out[metrics.COMPLETION_LENGTH_MAX] = float(max(lengths))
            out[metrics.TRUNCATED_SHARE] = sum(was_cut(a, self.policy_how, self.tok) for a in answers) / len(answers)
        if isinstance(judgement, TestsJudgement):
            out.update(code_measures(ep, judgement))
            return out
        unreadable = unreadable_share(judgement)
        if math.isfinite(unreadable):
            out[metrics.JUDGE_UNREADABLE_SHARE] = unreadable
        return out

    # -- the environment model ---------------------------------------------------------------
    def critic_steps(self, ep: Episodes, judgement: Judgement, b: torch.Tensor,
                     t: torch.Tensor) -> list[tuple[int, Any]]:
        assert isinstance(ep, TextEpisodes)
        return [(tt, ep.steps[bb][tt].info) for bb, tt in zip(b.tolist(), t.tolist())]

    def critic_notes(self, ep: Episodes, judgement: Judgement, b: torch.Tensor, t: torch.Tensor) -> list[dict]:
        assert isinstance(ep, TextEpisodes) and isinstance(judgement, TextJudgement)
        if isinstance(judgement, TestsJudgement):      # the group's generated tests and their pass rates
            return generated_test_notes(judgement, sorted({bb // ep.rollouts for bb in b.tolist()}), NOTE_CHARS)
        notes = []
        for bb, tt in zip(b.tolist(), t.tolist()):
            step = ep.steps[bb][tt]
            said = judgement.texts[judgement.flat(bb, tt)]
            notes.append({"step": tt, "text": step.text[:NOTE_CHARS], "environment": step.observation[:NOTE_CHARS],
                          "judge": [s[-NOTE_CHARS:] for s in said]})
        return notes

    def propose(self, requests: list[VariantRequest], tries: int, rng: np.random.Generator) -> list[Proposal]:
        if self.env_lm is None:
            return procedural_proposals(self.family, requests, tries, rng)
        return env_model.propose(self.family, self.env_lm, self.env_tok, requests, tries, self.env_how, self.gen)

    # -- what the console shows ----------------------------------------------------------------
    def episode_events(self, ep: Episodes, judgement: Judgement, tasks: list[Task], slots: list[int],
                       proposals: list[tuple[VariantRequest, Proposal]], decisions: list) -> list[tuple[str, dict]]:
        assert isinstance(ep, TextEpisodes) and isinstance(judgement, TextJudgement)
        started, self.start_events = self.start_events, []
        return [*started, *crashed_events(ep), samples.event(self.family, ep, judgement, slots, proposals, decisions)]

    # -- weights for workers, checkpoint state ------------------------------------------------
    def join_judgements(self, parts: list[Judgement], offsets: list[int]) -> TextJudgement:
        tests = [p for p in parts if isinstance(p, TestsJudgement)]
        if tests and len(tests) == len(parts):
            return join_tests_judgements(tests, offsets)
        text = [p for p in parts if isinstance(p, TextJudgement)]
        assert len(text) == len(parts)
        return join_judgements(text, offsets)

    def weights(self) -> dict:
        return {"policy": adapter_state(self.policy), "judge": adapter_state(self.judge_lm)}

    def load_weights(self, weights: dict) -> None:
        load_adapter_state(self.policy, weights["policy"])
        load_adapter_state(self.judge_lm, weights["judge"])

    # -- checkpoint state ----------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The trained weights (only the adapters when LoRA is on) and the optimisers."""
        return {"policy": adapter_state(self.policy), "judge": adapter_state(self.judge_lm),
                "policy_opt": self.policy_opt.state_dict(), "judge_opt": self.judge_opt.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        load_adapter_state(self.policy, state["policy"])
        load_adapter_state(self.judge_lm, state["judge"])
        self.policy_opt.load_state_dict(state["policy_opt"])
        self.judge_opt.load_state_dict(state["judge_opt"])
