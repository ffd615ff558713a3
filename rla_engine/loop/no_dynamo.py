"""Start an engine without importing torch._dynamo, which it never uses.

torch's optimisers mark their methods not-to-be-compiled through torch._compile._disable_dynamo,
whose wrapper imports torch._dynamo the first time a marked method is called, to look up a
function that does the marking. That import is 2.3 s of CPU on a 2-core machine: more than a
`tiny` iteration, on every `rla run` and `rla resume` (an ablation starts dozens). The engine never
calls torch.compile, so the marking has nothing to guard against; giving each wrapped method the
cached value the wrapper would compute (the method itself, unmarked) skips the import. Language
models may still import it through transformers: this only stops the optimisers from doing so.

The step itself is wrapped twice more (torch 2.13): a profiler hook, and `_use_grad`, which imports
torch._dynamo on every call to place graph breaks for the compiler. `optimiser_step` runs the step
as that wrapper would outside torch.compile — grad mode off (these optimisers are not
differentiable) — without the import. The engine registers no optimiser hooks.
"""
from __future__ import annotations

import functools
import inspect

import torch
from torch import optim


@functools.cache
def skip_dynamo_import() -> int:
    """Mark the optimisers' wrapped methods as already looked up; returns how many (once a process)."""
    wrapper_code = torch._compile._disable_dynamo(lambda: None).__code__
    marked = 0
    for cls in (optim.Optimizer, optim.Adam, optim.AdamW, optim.SGD):
        for attr in vars(cls).values():
            fn = getattr(attr, "__wrapped__", None)
            if getattr(attr, "__code__", None) is wrapper_code and fn is not None \
                    and getattr(fn, "__dynamo_disable", None) is None:
                fn.__dynamo_disable = fn
                marked += 1
    return marked


def optimiser_step(optimizer: optim.Optimizer) -> None:
    """`optimizer.step()` without torch importing torch._dynamo (2.5 s of an engine's first update)."""
    assert not optimizer.defaults.get("differentiable", False)
    step = inspect.unwrap(type(optimizer).step)
    with torch.no_grad():
        step(optimizer)
