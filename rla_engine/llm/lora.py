"""Optional LoRA adapters on a loaded causal LM (peft), and the weights a checkpoint must keep.

With LoRA only the small adapter matrices train, so the optimizer state and the checkpoint are a
few MB instead of the whole model; the frozen base is rebuilt from its source on resume. Without
LoRA the checkpoint has to hold the full state dict, which adapter_state then returns.
"""
from __future__ import annotations

from typing import Any

from rla_engine.errors import InputError
from rla_engine.llm import deps

# The projections of Llama-style blocks (Llama, SmolLM2, Qwen2, Mistral): attention and MLP.
_LLAMA_LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def apply_lora(model, rank: int, alpha: float, dropout: float, target_modules: str | list[str] = "auto"):
    """The model wrapped by peft with LoRA adapters (rank r, scale alpha / r); base weights frozen.

    target_modules="auto": every attention and MLP projection of a Llama-style block that the model
    has; for another architecture, every nn.Linear except the output head. Raises MissingPackage
    (one line with the pip command) when peft is not installed, InputError on bad numbers.
    """
    deps.require("LoRA", "peft")
    from peft import LoraConfig, get_peft_model

    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise InputError(f"LoRA rank must be an int >= 1, got {rank!r}")
    if not alpha > 0:
        raise InputError(f"LoRA alpha must be > 0, got {alpha!r}")
    if not 0.0 <= dropout < 1.0:
        raise InputError(f"LoRA dropout must be in [0, 1), got {dropout!r}")
    targets = _auto_targets(model) if target_modules == "auto" else list(target_modules)
    if not targets:
        raise InputError("LoRA found no linear layers to adapt in this model")
    config = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout, target_modules=targets,
                        bias="none", task_type="CAUSAL_LM")
    return get_peft_model(model, config)


def _auto_targets(model) -> list[str]:
    import torch

    names = {name.rsplit(".", 1)[-1] for name, module in model.named_modules()
             if isinstance(module, torch.nn.Linear)}
    llama = [n for n in _LLAMA_LINEARS if n in names]
    return llama or sorted(names - {"lm_head"})


def has_lora(model) -> bool:
    return hasattr(model, "peft_config")


def adapter_state(model) -> dict[str, Any]:
    """What a checkpoint keeps: the LoRA weights when the model has adapters, else the whole state
    dict. Detached copies on the CPU, so saving them does not race the next update and a
    checkpoint written on a GPU loads on a machine without one."""
    if has_lora(model):
        from peft import get_peft_model_state_dict

        state = get_peft_model_state_dict(model)
    else:
        state = model.state_dict()
    return {k: v.detach().to("cpu", copy=True) for k, v in state.items()}


def load_adapter_state(model, state: dict[str, Any]) -> None:
    """Put back what adapter_state returned, onto a model built the same way (same source, same
    LoRA settings). A key of the state that the model does not have is an error, not a silent skip."""
    if has_lora(model):
        from peft import get_peft_model_state_dict, set_peft_model_state_dict

        expected = set(get_peft_model_state_dict(model))
        if set(state) != expected:
            extra, lacking = sorted(set(state) - expected), sorted(expected - set(state))
            raise InputError(f"LoRA state does not fit this model: {len(extra)} unknown key(s) {extra[:3]}, "
                             f"{len(lacking)} missing {lacking[:3]}")
        result = set_peft_model_state_dict(model, state)
        unexpected = getattr(result, "unexpected_keys", [])
        if unexpected:
            raise InputError(f"LoRA state does not fit this model: unexpected keys {unexpected[:3]}")
        return
    if any("lora_" in k for k in state):
        raise InputError("this state holds LoRA adapters, but the model has none: apply_lora first")
    model.load_state_dict(state, strict=True)
