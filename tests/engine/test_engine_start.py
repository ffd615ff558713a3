"""An engine's first update must not import torch's compiler (2.5-3 s of CPU on every `rla run`
and `rla resume`; an ablation starts dozens): the optimiser step runs without torch's wrapper,
and gives exactly what `optimizer.step()` gives."""
from __future__ import annotations

import subprocess
import sys

import torch

from rla_engine.loop.no_dynamo import optimiser_step


def test_a_step_without_the_wrapper_equals_optimizer_step():
    torch.manual_seed(0)
    nets = [torch.nn.Linear(5, 3) for _ in range(2)]
    nets[1].load_state_dict(nets[0].state_dict())
    opts = [torch.optim.AdamW(n.parameters(), lr=1e-2) for n in nets]
    x = torch.randn(8, 5)
    for _ in range(3):
        for net, opt in zip(nets, opts):
            opt.zero_grad()
            net(x).square().sum().backward()
        opts[0].step()
        optimiser_step(opts[1])
    assert torch.is_grad_enabled()
    for a, b in zip(nets[0].parameters(), nets[1].parameters()):
        assert torch.equal(a, b)
    assert opts[0].state_dict()["state"][0]["step"] == opts[1].state_dict()["state"][0]["step"] == 3


def test_training_iterations_never_import_the_compiler():
    code = ("import sys, torch\n"
            "from rla_engine.config import build\n"
            "from rla_engine.loop.trainer import Trainer\n"
            "from rla_engine import metrics\n"
            "tr = Trainer(build(preset='tiny'), torch.device('cpu'))\n"
            "trained = [metrics.LOSS_POLICY in tr.step().metrics for _ in range(4)]\n"
            "print(any(trained), 'torch._dynamo' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"]      # the policy was updated; the compiler never loaded
