"""The optional packages of the language-model layer, and the switch that keeps it offline.

Importing this module sets HF_HUB_OFFLINE=1 (and the older TRANSFORMERS_OFFLINE=1) for the whole
process. Every load here already passes local_files_only=True, but some code paths of transformers
and peft resolve files on their own (a tokenizer's extra files, a GGUF's config, a generation
config): the variables make those fail at once instead of waiting on a network this machine
does not have, or fetching weights nobody asked for. huggingface_hub reads the variable once, when
it is first imported, so every module of this package imports this one before it imports
transformers, peft or huggingface_hub (they are imported lazily, inside functions); if the hub
library was already imported by someone else, its cached constant is switched as well.
"""
from __future__ import annotations

import importlib.util
import os
import sys

from rla_engine.errors import InputError

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
if "huggingface_hub.constants" in sys.modules:
    sys.modules["huggingface_hub.constants"].HF_HUB_OFFLINE = True  # type: ignore[attr-defined]

# What to tell a user to install for each optional module (import name -> pip command).
PIP = {
    "transformers": "pip install 'transformers>=4.46' tokenizers safetensors",
    "tokenizers": "pip install tokenizers",
    "safetensors": "pip install safetensors",
    "gguf": "pip install gguf accelerate",     # transformers reads a GGUF file only with both
    "peft": "pip install peft",
}


class MissingPackage(InputError):
    """An optional package that the asked-for model or feature needs is not installed."""


def missing(purpose: str, *modules: str) -> str | None:
    """None if every module is importable, else one line naming the first missing one and its pip
    command. find_spec only looks the module up: nothing heavy is imported."""
    for name in modules:
        if importlib.util.find_spec(name) is None:
            return f"{purpose} needs the Python package {name!r}, which is not installed: {PIP[name]}"
    return None


def require(purpose: str, *modules: str) -> None:
    reason = missing(purpose, *modules)
    if reason:
        raise MissingPackage(reason)
