"""The not_finite alert names the key that failed (issue 34, finding 8): a real training step whose
judge gradient is NaN (its loss finite) raised an event naming `loss/policy`, sending a person to
the wrong learner's chart."""
from __future__ import annotations

import pytest
import torch

from rla_engine import metrics
from rla_engine.alerts import NOT_FINITE, RAISED, describe
from rla_engine.config import build
from rla_engine.loop.trainer import Trainer
from rla_engine.runner import Runner
from rla_engine.store import open_store
from rla_engine.vocabulary import EventKind


def _poison_gradients(net: torch.nn.Module) -> None:
    """Every gradient that flows back through `net` becomes NaN; its forward pass and loss stay finite."""
    for p in net.parameters():
        p.register_hook(lambda g: g * float("nan"))


@pytest.mark.parametrize("role, expected", [("judge", metrics.JUDGE_GRAD_NORM), ("policy", metrics.POLICY_GRAD_NORM)])
def test_a_nan_gradient_is_named_by_its_roles_key(tmp_path, role, expected):
    store = open_store(tmp_path / "h.db")
    cfg = build(preset="tiny", sets=["run.iterations=6"])
    tr = Trainer(cfg, torch.device("cpu"))
    store.create_run("r", name="nan grad", preset="", config=cfg.to_dict(), device="cpu")
    _poison_gradients(tr.backend.judge_net if role == "judge" else tr.backend.policy)
    assert Runner(store, "r", tr, 6, out=lambda s: None).run() == 1
    raised = [e["payload"] for e in store.events("r", kinds=[EventKind.ALERT])
              if e["payload"]["alert"] == NOT_FINITE and e["payload"]["state"] == RAISED]
    failed = store.events("r", kinds=[EventKind.FAILED])[0]["payload"]
    assert len(raised) == 1 and raised[0]["key"] == expected and raised[0]["quantity"] == expected, raised
    assert failed["quantity"] == expected and expected in describe(raised[0])
    assert expected in store.get_run("r")["error"]
