"""LoRA on a loaded model and the checkpoint state (rla_engine/llm/lora.py), on tiny-random.

Skipped when transformers or peft is not installed; the missing-peft error itself is tested in
test_llm_sources.py.
"""
from __future__ import annotations

import pytest

pytest.importorskip("transformers")
pytest.importorskip("peft")
torch = pytest.importorskip("torch")
# peft asks transformers a deprecated question on every wrap: their conversation, not ours
pytestmark = pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")

from rla_engine.errors import InputError  # noqa: E402
from rla_engine.llm.lora import adapter_state, apply_lora, has_lora, load_adapter_state  # noqa: E402
from rla_engine.llm.sources import TINY_RANDOM, load_model  # noqa: E402


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RLA_MODEL_CACHE", str(tmp_path_factory.mktemp("models")))
        yield


def _tiny(trainable=True):
    return load_model(TINY_RANDOM, device="cpu", dtype="float32", trainable=trainable)


def _lora_model():
    model, tok = _tiny()
    return apply_lora(model, rank=4, alpha=8, dropout=0.0), tok


def test_auto_targets_every_projection_and_only_adapters_train(model_cache):
    model, tok = _lora_model()
    assert has_lora(model)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    for proj in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"):
        assert any(f"{proj}.lora_A" in n for n in trainable)
    ids = tok("17 + 25 = 42", return_tensors="pt")["input_ids"]
    model(input_ids=ids, labels=ids).loss.backward()
    assert all(p.grad is not None for n, p in model.named_parameters() if "lora_B" in n)


def test_adapter_state_holds_only_the_adapters_and_round_trips(model_cache):
    model, tok = _lora_model()
    state = adapter_state(model)
    assert state and all("lora_" in k for k in state)
    assert all(v.device.type == "cpu" for v in state.values())
    n_adapter = sum(v.numel() for v in state.values())
    assert n_adapter < sum(p.numel() for p in model.parameters()) / 10
    ids = tok("x = 3", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.add_(0.5)                      # B starts at 0: move it so the adapters change the output
        changed = model(ids).logits
        saved = adapter_state(model)
        for n, p in model.named_parameters():
            if "lora_" in n:
                p.zero_()
        assert not torch.equal(model(ids).logits, changed)
        fresh, _ = _lora_model()
        load_adapter_state(fresh, saved)
        assert torch.allclose(fresh(ids).logits, changed)


def test_a_state_that_does_not_fit_is_refused(model_cache):
    model, _ = _lora_model()
    state = adapter_state(model)
    state["base_model.model.bogus.lora_A.weight"] = torch.zeros(1)
    with pytest.raises(InputError, match="does not fit"):
        load_adapter_state(model, state)
    plain, _ = _tiny()
    with pytest.raises(InputError, match="apply_lora first"):
        load_adapter_state(plain, adapter_state(model))


def test_without_lora_the_state_is_the_whole_model(model_cache):
    model, tok = _tiny()
    state = adapter_state(model)
    assert set(state) == set(model.state_dict())
    other, _ = _tiny()
    with torch.no_grad():
        for p in other.parameters():
            p.add_(0.01)
    load_adapter_state(other, state)
    ids = tok("x", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        assert torch.equal(model(ids).logits, other(ids).logits)


@pytest.mark.parametrize(("kw", "words"), [
    ({"rank": 0}, "rank must be"), ({"alpha": 0}, "alpha must be"), ({"dropout": 1.0}, "dropout must be"),
    ({"target_modules": []}, "no linear layers"),
])
def test_bad_lora_settings_are_input_errors(model_cache, kw, words):
    model, _ = _tiny()
    args = {"rank": 4, "alpha": 8, "dropout": 0.0, **kw}
    with pytest.raises(InputError, match=words):
        apply_lora(model, **args)
