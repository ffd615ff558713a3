"""Which backend learns for a task family: the embedded networks for a tensor family, language
models for a text family. Above both backends in the import graph (each imports backend.py), and
importing the language-model one only when asked for: an embedded run never loads transformers."""
from __future__ import annotations

import torch

from ..config import Config
from ..tasks.base import Family
from .backend import Backend


def make_backend(cfg: Config, family: Family, device: torch.device, gen: torch.Generator,
                 learners: bool = True) -> Backend:
    """Without `learners` (a Ray worker's replica) there are no optimisers: it only acts, with
    weights it is given."""
    if getattr(family, "kind", "tensor") == "text":
        from ..llm.backend import LLMBackend
        return LLMBackend(cfg, family, device, gen, learners)
    from .embedded import EmbeddedBackend
    return EmbeddedBackend(cfg, family, device, gen, learners)
