"""A model folder screened before its weights are read, and a failed load put in one line.

A model folder is input like any other, and a hostile or damaged one (a size that is not a number,
weights of other shapes, a pickled weights file, a config that would build a model larger than
the machine) must end a run with one line that names the field and the reason (exit code 2), not
with a traceback from the depths of transformers, nor with the kernel killing the process for
memory. `screen` reads what a load reads first, cheaply: config.json, the model built on the meta
device (shapes, no memory), and the weights files' headers (safetensors) or their pickle through
torch.load(weights_only=True) onto the meta device (no tensor data). It reports only what it is
sure a load would fail on; anything else it leaves to the load, whose exception `explain` turns
into one line.

Nothing from a folder ever runs: configs and tokenizers load with trust_remote_code=False, and a
pickle is only ever read by torch's weights-only unpickler, which refuses anything but tensors.
"""
from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path
from typing import Any

from rla_engine.llm import deps

# config.json fields that size the model: each must be a whole number ≥ 1 (or absent, or null).
_SIZES = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
          "head_dim", "vocab_size", "max_position_embeddings", "n_embd", "n_layer", "n_head", "n_inner",
          "n_positions", "d_model", "num_layers", "num_heads", "ffn_dim", "num_local_experts", "num_experts")
# Fields that count modules: even on the meta device each layer is Python objects, so a count like
# 10**9 would exhaust memory while the model is being built. The largest open models have ~130.
_COUNTS = ("num_hidden_layers", "n_layer", "num_layers", "num_local_experts", "num_experts")
MAX_COUNT = 4096
_SHOWN = 80          # characters of a config value shown in a message


class Refused(ValueError):
    """A model folder that would not load; str() is the one-line reason."""


def screen(folder: Path) -> None:
    """Refused (one line) if a load of `folder` would fail on its config, its size or its weights'
    shapes; None if nothing is known against it. Reads no tensor data."""
    doc = _config(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # a load's warnings are not the user's business here
        model = _meta_model(folder, doc)
        _fits_memory(model)
        _weights_fit(folder, model)


def explain(e: BaseException, file: str = "a weights file") -> str:
    """One line for an exception from loading a model (what it is about, then its first line);
    `file` names the weights file being read, where the caller knows it."""
    import pickle

    if isinstance(e, Refused):
        return str(e)
    text = str(e).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if isinstance(e, pickle.UnpicklingError) or text.startswith("Weights only load failed"):
        detail = next((ln for ln in lines[1:] if not ln.startswith(("Please file", "Check the", "WeightsUnpickler"))),
                      "")
        return (f"{file} holds pickled objects other than tensors, which torch.load(weights_only=True) "
                f"refuses (nothing in it was run){': ' + detail[:200] if detail else ''}")
    if isinstance(e, MemoryError):
        return "the model does not fit in this machine's memory (MemoryError)"
    if "ignore_mismatched_sizes" in text or "size mismatch" in text:
        return f"weights do not fit the model: {(lines or [''])[0][:300]}"
    if type(e).__name__.startswith("StrictDataclass"):     # huggingface_hub's config checks: 2 lines
        return f"config.json: {' '.join(lines)[:300]}"
    first = lines[0] if lines else ""
    if first.endswith(":") and len(lines) > 1:              # a heading whose substance is the next line
        first = f"{first} {lines[1]}"
    return f"{type(e).__name__}: {first[:300]}" if first else type(e).__name__


# ---------------------------------------------------------------- config


def _config(folder: Path) -> dict:
    try:
        doc = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise Refused(f"config.json is unreadable ({e})") from None
    if not isinstance(doc, dict):
        raise Refused("config.json is not a JSON object")
    for key in _SIZES:
        value = doc.get(key)
        if value is None:
            continue
        shown = repr(value)[:_SHOWN]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Refused(f"config.json {key} = {shown} is not a number")
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            raise Refused(f"config.json {key} = {shown} is not a whole number")
        if value < 1:
            raise Refused(f"config.json {key} = {shown} must be at least 1")
        if key in _COUNTS and value > MAX_COUNT:
            raise Refused(f"config.json {key} = {shown} is more than {MAX_COUNT}: not a model this machine "
                          "could build")
    return doc


def _meta_model(folder: Path, doc: dict) -> Any:
    """The model config.json describes, built on the meta device: its parameters' shapes, no memory."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    kw = {"local_files_only": True, "trust_remote_code": False}
    try:
        config = AutoConfig.from_pretrained(folder, **kw)
    except Exception as e:     # any failure to read a config is the folder's: one line, exit code 2
        raise Refused(explain(e) if explain(e).startswith("config.json") else f"config.json: {explain(e)}") \
            from None
    try:
        with torch.device("meta"):
            return AutoModelForCausalLM.from_config(config, trust_remote_code=False)
    except Exception as e:
        raise Refused(f"config.json describes no model transformers can build "
                      f"(model_type {str(doc.get('model_type'))[:_SHOWN]!r}): {explain(e)}") from None


def _fits_memory(model) -> None:
    """A load holds every parameter in this machine's memory at least once (at ≥ 2 bytes each):
    a model larger than the memory would only be killed by the kernel, without a word."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):       # not on Linux/BSD: no figure to compare with
        return
    n = sum(p.numel() for p in model.parameters())
    if 2 * n > memory:
        raise Refused(f"config.json describes a model of {n:,} parameters ({2 * n / 2**30:,.1f} GiB even at 16 "
                      f"bits), more than this machine's memory ({memory / 2**30:,.1f} GiB)")


# ---------------------------------------------------------------- weights


def weight_files(folder: Path) -> list[Path]:
    """The weights files a load reads, in the order transformers prefers them: safetensors first,
    one file or the shards its index names."""
    for single, index in (("model.safetensors", "model.safetensors.index.json"),
                          ("pytorch_model.bin", "pytorch_model.bin.index.json")):
        if (folder / single).is_file():
            return [folder / single]
        if (folder / index).is_file():
            return _shards(folder, index)
    return []


def _shards(folder: Path, index: str) -> list[Path]:
    try:
        doc = json.loads((folder / index).read_text(encoding="utf-8"))
        names = sorted(set(doc["weight_map"].values()))
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise Refused(f"{index} is not a weights index ({type(e).__name__}: {str(e)[:200]})") from None
    for name in names:
        # a shard is a file beside the index: never a path that leads out of the folder
        if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
            raise Refused(f"{index} names a shard {str(name)[:_SHOWN]!r} that is not a file name in the folder")
        if not (folder / name).is_file():
            raise Refused(f"{index} names a shard {name!r} that the folder does not hold")
    return [folder / name for name in names]


def _shapes(file: Path) -> dict[str, tuple[int, ...]]:
    """Each tensor's shape in a weights file, without its data."""
    if file.suffix == ".safetensors":
        from safetensors import safe_open

        try:    # the header only: safetensors checks its length against the file before parsing it
            with safe_open(str(file), framework="pt") as f:
                return {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}
        except Exception as e:      # transformers reads it with the same safe_open, and would fail alike
            raise Refused(f"{explain(e)} ({file.name} is not a readable safetensors file)") from None
    import torch

    try:
        state = torch.load(file, map_location="meta", weights_only=True, mmap=True)
    except RuntimeError as e:
        if "mmap" not in str(e):
            raise Refused(f"{file.name} cannot be read: {explain(e, file.name)}") from None
        try:       # an old (non-zip) torch.save file cannot be memory-mapped: read it whole
            state = torch.load(file, map_location="meta", weights_only=True)
        except Exception as e2:
            raise Refused(_unreadable(file, e2)) from None
    except Exception as e:
        raise Refused(_unreadable(file, e)) from None
    if not isinstance(state, dict):
        raise Refused(f"{file.name} holds a {type(state).__name__}, not a dictionary of tensors")
    return {str(k): tuple(v.shape) for k, v in state.items() if hasattr(v, "shape")}


def _unreadable(file: Path, e: BaseException) -> str:
    why = explain(e, file.name)
    return why if why.startswith(file.name) else f"{file.name} cannot be read: {why}"


def _weights_fit(folder: Path, model) -> None:
    """Each tensor of the weights files that the model has by name has the model's shape."""
    own = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    prefix = getattr(model, "base_model_prefix", "") or ""
    wrong: list[str] = []
    for file in weight_files(folder):
        shapes = _shapes(file)
        for key, shape in shapes.items():
            # transformers matches a checkpoint of the bare model to the model with a head and back
            name = next((n for n in (key, f"{prefix}.{key}", key.removeprefix(f"{prefix}.")) if n in own), None)
            if name is not None and own[name] != shape:
                wrong.append(f"{key} is {list(shape)} in {file.name} but {list(own[name])} in the model "
                             "config.json describes")
    if wrong:
        more = f" (and {len(wrong) - 1} more tensors)" if len(wrong) > 1 else ""
        raise Refused(f"weights do not fit the model: {wrong[0]}{more}")


def check_tokenizer(folder: Path) -> None:
    from transformers import AutoTokenizer

    deps.require("a model's tokenizer", "transformers", "tokenizers")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            AutoTokenizer.from_pretrained(folder, local_files_only=True, trust_remote_code=False)
    except Exception as e:
        raise Refused(f"the tokenizer cannot be loaded: {explain(e)}") from None
