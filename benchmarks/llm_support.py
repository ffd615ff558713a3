"""Helpers of benchmarks/llm.py: the shared workload, the meters both sides are timed with, one
step of ours (the engine's own functions) and a TRL GRPOTrainer that runs ours between its steps.

Both sides are measured by the same instruments: `GenerateMeter` wraps `model.generate` (time and
new tokens; ours' sampling time is the whole `generation.sample` call, whose shared prompt prefill
runs before `generate`), `OptimizerMeter` times every `optimizer.step()` through torch's global optimizer hooks,
and a step is timed from its first instruction to the end of its optimizer step. Timers
synchronise the GPU first when the model is on one.
"""
from __future__ import annotations

import re
import tempfile
import time
import types
from dataclasses import dataclass, field

import numpy as np
import torch
from torch.optim import optimizer as torch_optimizer

from rla_engine.llm import completion_rows
from rla_engine.llm.backend import LLMBackend, adamw, ppo_settings
from rla_engine.llm.dialogue import split_lines
from rla_engine.llm.generation import Sampling, chat_ids, sample
from rla_engine.loop.ppo import PPOSettings
from rla_engine.tasks import load_family
from rla_engine.tasks.text_arithmetic import values

_BOXED = re.compile(r"\\boxed\{\s*(-?\d+)\s*\}")


def now(device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def reward(text: str, answer: int) -> float:
    """Outcome only: 1 when the first \\boxed{N} holds the right answer, else 0."""
    m = _BOXED.search(text)
    return float(m is not None and int(m.group(1)) == answer)


@dataclass
class Workload:
    instructions: list[str]
    answers: list[int]
    prompts: list[list[int]]      # chat-template token ids, one per task
    group: int                    # completions per prompt
    new_tokens: int               # completion length (min = max: no early stop)
    micro: int                    # sequences per forward/backward micro-batch

    @property
    def sequences(self) -> int:
        return len(self.prompts) * self.group


def workload(tok, n_prompts: int, group: int, new_tokens: int, micro: int, seed: int) -> Workload:
    """`n_prompts` text_arithmetic tasks at difficulty 0.3, as the engine's roll-outs prompt them."""
    fam = load_family("text_arithmetic")
    rng = np.random.default_rng(seed)
    tasks = [fam.sample(0.3, rng) for _ in range(n_prompts)]
    instructions = [fam.instruction(t) for t in tasks]
    prompts = [chat_ids(tok, [{"role": "user", "content": text}]) for text in instructions]
    return Workload(instructions, [values(t.params)[-1] for t in tasks], prompts, group, new_tokens, micro)


# ---------------------------------------------------------------- meters


class GenerateMeter:
    """Wraps one model's `generate`: seconds inside it and the new tokens it returned (up to and
    including an end-of-sequence token; padding after it is not counted)."""

    def __init__(self, model, eos: int | None, device: torch.device):
        self.seconds, self.tokens, self.device, self.eos = 0.0, 0, device, eos
        self.shape: tuple[int, int] = (0, 0)     # the last call's (rows, padded prompt width)
        inner = model.generate

        def generate(*args, **kwargs):
            width = kwargs["input_ids"].shape[1] if "input_ids" in kwargs else args[0].shape[1]
            t0 = now(self.device)
            out = inner(*args, **kwargs)
            self.seconds += now(self.device) - t0
            seqs = out if isinstance(out, torch.Tensor) else out.sequences
            self.tokens += self._count(seqs[:, width:])
            self.shape = (seqs.shape[0], width)
            return out
        model.generate = generate

    def _count(self, new: torch.Tensor) -> int:
        if self.eos is None:
            return new.numel()
        is_eos = new == self.eos
        first = torch.where(is_eos.any(1), is_eos.int().argmax(1) + 1, torch.full_like(is_eos[:, 0], new.shape[1],
                                                                                         dtype=torch.long))
        return int(first.sum())

    def reset(self) -> None:
        self.seconds, self.tokens = 0.0, 0


class OptimizerMeter:
    """Seconds spent in `optimizer.step()` of any optimizer (torch's global step hooks)."""

    def __init__(self, device: torch.device):
        self.seconds, self._t0, self.device = 0.0, 0.0, device
        torch_optimizer.register_optimizer_step_pre_hook(self._pre)
        torch_optimizer.register_optimizer_step_post_hook(self._post)

    def _pre(self, *_):
        self._t0 = now(self.device)

    def _post(self, *_):
        self.seconds += now(self.device) - self._t0


class ScoringMeter:
    """Seconds in the engine's `token_scores` as LLMBackend's update calls it (completion_rows), split into the no-grad
    old-log-probability pass and the forward passes that build the graph."""

    def __init__(self, device: torch.device):
        self.old = self.forward = 0.0
        inner = completion_rows.token_scores

        def scored(*args, **kwargs):
            t0 = now(device)
            out = inner(*args, **kwargs)
            dt = now(device) - t0
            if torch.is_grad_enabled():
                self.forward += dt
            else:
                self.old += dt
            return out
        completion_rows.token_scores = scored

    def reset(self) -> None:
        self.old = self.forward = 0.0


@dataclass
class Record:
    """One measured step of one side."""
    step_s: float
    gen_s: float
    gen_tokens: int
    train_tokens: int
    opt_s: float
    peak_bytes: int = 0
    parts: dict = field(default_factory=dict)      # ours only: old pass, forward, backward + rest

    @property
    def train_s(self) -> float:        # everything of the step but model.generate
        return self.step_s - self.gen_s


def start_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak(device: torch.device) -> int:
    return torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0


# ---------------------------------------------------------------- ours


class Ours:
    """One step of ours = `generation.sample` (all prompts × group in one batch) + outcome reward +
    `LLMBackend._ppo` (the engine's update path: log π_old, micro-batched forward/backward
    with gradient accumulation, clip, AdamW step), 1 epoch, one minibatch of every sequence."""

    def __init__(self, model, tok, wl: Workload, device: torch.device, seed: int, lr: float, scoring: ScoringMeter):
        self.model, self.tok, self.wl, self.device = model, tok, wl, device
        self.gen = torch.Generator().manual_seed(seed)
        self.opt = adamw(model, lr)                  # the engine's own optimiser
        self.how = Sampling(wl.new_tokens, temperature=1.0, top_p=1.0, batch_size=wl.sequences)
        self.settings = ppo_settings(1, wl.sequences, 0.2, 0.01, wl.micro)      # the engine's own
        self.backend = types.SimpleNamespace(gen=self.gen)    # what _ppo reads of self
        self.generated = GenerateMeter(model, tok.eos_token_id, device)
        self.scoring = scoring
        self.last: tuple[list[list[int]], list[list[int]], torch.Tensor] | None = None

    def advantages(self) -> torch.Tensor:
        """Random ±1 outcomes, balanced in each group, z-scored per group: never all zero."""
        g = self.wl.group
        rows = []
        for _ in self.wl.prompts:
            r = torch.tensor([1.0, -1.0] * (g // 2) + [1.0] * (g % 2))[torch.randperm(g, generator=self.gen)]
            rows.append((r - r.mean()) / r.std(unbiased=False).clamp(min=1e-8))
        return torch.cat(rows)

    def step(self, opt_meter: OptimizerMeter) -> Record:
        wl = self.wl
        self.generated.reset()
        self.scoring.reset()
        opt_meter.seconds = 0.0
        start_peak(self.device)
        t0 = now(self.device)
        answers = sample(self.model, self.tok, wl.prompts, self.how, self.gen, copies=wl.group)
        # sampling time is all of `sample`: the prompts' shared prefill runs before model.generate
        gen_s = now(self.device) - t0
        texts = self.tok.batch_decode(answers, skip_special_tokens=True)
        _ = [reward(t, wl.answers[i // wl.group]) for i, t in enumerate(texts)]  # outcome, as TRL's
        contexts = [wl.prompts[i // wl.group] for i in range(len(answers))]
        adv = self.advantages()
        self.update(contexts, answers, adv)
        step_s = now(self.device) - t0
        self.last = (contexts, answers, adv)
        parts = {"old pass": self.scoring.old, "forward": self.scoring.forward}
        return Record(step_s, gen_s, self.generated.tokens, sum(len(a) for a in answers),
                      opt_meter.seconds, peak(self.device), parts)

    def update(self, contexts: list[list[int]], targets: list[list[int]], adv: torch.Tensor,
               settings: PPOSettings | None = None) -> float:
        t0 = now(self.device)
        LLMBackend._ppo(self.backend, self.model, self.opt, settings or self.settings,  # type: ignore[arg-type]
                        contexts, targets, adv, 1.0, "policy")
        return now(self.device) - t0

    def line_update(self) -> tuple[float, int, int]:
        """The last step's completions cut into line steps as the real text_arithmetic loop cuts
        them (dialogue.split_lines: each line a sample, its context the prompt + earlier lines),
        each with its sequence's advantage, updated as the whole completions are: one epoch, one
        minibatch of every sample, micro-batches of M rows: (seconds, samples, token positions the
        samples would put through the model one by one)."""
        assert self.last is not None
        contexts, targets, adv = self.last
        ctx, tgt, a = [], [], []
        for c, t, v in zip(contexts, targets, adv.tolist()):
            before = list(c)
            for span in split_lines(self.tok, t):
                ctx.append(before)
                tgt.append(span)
                a.append(v)
                before = before + span
        positions = sum(len(c) + len(t) for c, t in zip(ctx, tgt))
        settings = ppo_settings(1, len(tgt), 0.2, 0.01, self.wl.micro)
        return self.update(ctx, tgt, torch.tensor(a), settings), len(tgt), positions


# ---------------------------------------------------------------- TRL


def trl_side(model, tok, wl: Workload, device: torch.device, dtype: torch.dtype, seed: int, lr: float,
             steps: int, opt_meter: OptimizerMeter, between):
    """A GRPOTrainer on `model` for `steps` steps of the same shape as ours; after each of its steps
    `between(record)` runs (ours, so that the two sides alternate). Returns TRL's records."""
    from datasets import Dataset
    from transformers import PrinterCallback, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    # plain Python types only: a column of mixed-type lists (task params) fails in pyarrow
    data = Dataset.from_dict({"prompt": [[{"role": "user", "content": s}] for s in wl.instructions],
                              "answer": wl.answers})

    def outcome(completions, answer, **_):
        return [reward(c[0]["content"] if isinstance(c, list) else c, a) for c, a in zip(completions, answer)]

    cuda = device.type == "cuda"
    args = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="rla-trl-"), use_cpu=not cuda, bf16=dtype == torch.bfloat16,
        fp16=False, report_to=[], logging_strategy="no", save_strategy="no", disable_tqdm=True, seed=seed,
        num_generations=wl.group, max_completion_length=wl.new_tokens, temperature=1.0, top_p=1.0,
        generation_kwargs={"min_new_tokens": wl.new_tokens},
        per_device_train_batch_size=wl.micro, gradient_accumulation_steps=wl.sequences // wl.micro,
        max_steps=steps, learning_rate=lr, lr_scheduler_type="constant",
        gradient_checkpointing=cuda)           # as ours: activation checkpointing on CUDA only
    meter = GenerateMeter(model, tok.eos_token_id, device)
    records: list[Record] = []

    class Alternate(TrainerCallback):
        t0 = 0.0

        def on_step_begin(self, *_, **__):
            meter.reset()
            opt_meter.seconds = 0.0
            start_peak(device)
            self.t0 = now(device)

        def on_step_end(self, *_, **__):
            step_s = now(device) - self.t0
            records.append(Record(step_s, meter.seconds, meter.tokens, meter.tokens, opt_meter.seconds,
                                  peak(device)))
            between(records[-1])

    trainer = GRPOTrainer(model=model, processing_class=tok, reward_funcs=outcome, args=args, train_dataset=data,
                          callbacks=[Alternate()])
    trainer.remove_callback(PrinterCallback)     # its end-of-training summary line
    trainer.train()
    return records, meter.shape
