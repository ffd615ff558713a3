"""A role trained in half precision keeps float32 weights and computes in bfloat16 under autocast
(AdamW's small steps would round away in bfloat16 weights); a role that only generates keeps its
weights in bfloat16. Checked on the CPU, where autocast to bfloat16 works as on CUDA."""
from __future__ import annotations

import pytest
import torch

from rla_engine.llm.generation import compute_in, token_scores
from rla_engine.llm.sources import TINY_RANDOM, load_model


@pytest.fixture(autouse=True)
def _model_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("RLA_MODEL_CACHE", str(tmp_path_factory.getbasetemp() / "models"))


def test_a_generating_role_keeps_half_precision_weights():
    model, _ = load_model(TINY_RANDOM, device="cpu", dtype="bfloat16", trainable=False)
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    assert getattr(model, "rla_compute_dtype", None) is None


def test_a_trained_role_computes_in_bfloat16_over_float32_weights():
    model, _ = load_model(TINY_RANDOM, device="cpu", dtype="bfloat16", trainable=True)
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    prompt, answer = [5, 6, 7, 8], [9, 10, 11]
    with compute_in(model):
        logits = model(input_ids=torch.tensor([prompt + answer])).logits
    assert logits.dtype == torch.bfloat16
    scores = token_scores(model, [prompt], [answer], 1.0, len(answer))
    scores.logp.sum().backward()
    assert all(p.grad is None or p.grad.dtype == torch.float32 for p in model.parameters())


def test_an_adamw_step_in_bfloat16_compute_moves_the_weights_by_its_learning_rate():
    """Adam's first step moves every weight with a gradient by about lr; in bfloat16 weights a step
    of 1e-6 on a weight above ~2.5e-4 would round to nothing."""
    from rla_engine.llm.backend import adamw
    model, _ = load_model(TINY_RANDOM, device="cpu", dtype="bfloat16", trainable=True)
    lr = 1e-6
    opt = adamw(model, lr)
    before = [p.detach().clone() for p in model.parameters()]
    token_scores(model, [[5, 6, 7, 8]], [[9, 10, 11]], 1.0, 3).logp.sum().backward()
    opt.step()
    moved = torch.cat([(p.detach() - b).abs().flatten() for p, b in zip(model.parameters(), before)
                       if p.grad is not None])
    big = torch.cat([b.abs().flatten() for p, b in zip(model.parameters(), before) if p.grad is not None]) > 1e-2
    assert 0.5 * lr < float(moved[big].median()) < 1.5 * lr
