"""RLAnything engine: policy, generative step judge and an adapting task pool in one loop.

The torch-free public API (config, tasks registry, paths, store, client, metrics) is what the
console imports; the training code under `loop/`, `models/` and the family environments load
torch and are only imported by the engine process.
"""
__version__ = "0.1.0"
