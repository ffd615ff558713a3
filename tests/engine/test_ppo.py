"""PPO-clip's log π_old: a separate no-grad pass, or (language models) the first minibatch's own
forward. Both must make the same update; the second must spare the pass."""
import copy

import pytest
import torch
from torch import nn

from rla_engine.loop.ppo import PPOSettings, ppo_update

N, WIDTH, VOCAB = 12, 5, 7


def _token_problem(seed: int):
    """A tiny 'language model': per-sample token logits from a linear map, token-level samples."""
    g = torch.Generator().manual_seed(seed)
    net = nn.Linear(4, WIDTH * VOCAB)
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    x = torch.randn(N, 4, generator=g)
    tokens = torch.randint(0, VOCAB, (N, WIDTH), generator=g)
    mask = torch.arange(WIDTH)[None, :] < torch.randint(1, WIDTH + 1, (N, 1), generator=g)
    adv = torch.randn(N, generator=g)
    calls = []

    def log_prob(idx: torch.Tensor):
        calls.append(len(idx))
        logits = net(x[idx]).view(len(idx), WIDTH, VOCAB)
        lp = torch.log_softmax(logits, -1).gather(-1, tokens[idx].unsqueeze(-1)).squeeze(-1)
        return torch.where(mask[idx], lp, torch.zeros_like(lp)), mask[idx]
    return net, log_prob, adv, calls


def _update(reuse: bool, minibatch: int, epochs: int):
    net, log_prob, adv, calls = _token_problem(3)
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    settings = PPOSettings(epochs, minibatch, 0.2, 0.05, micro_batch_size=4, reuse_first_pass=reuse)
    stats = ppo_update(net, opt, log_prob, adv, settings, torch.Generator().manual_seed(0), "policy")
    return net, stats, calls


@pytest.mark.parametrize("minibatch,epochs", [(12, 1), (8, 2), (4, 3)])
def test_reusing_the_first_pass_makes_the_same_update(minibatch, epochs):
    net_a, stats_a, _ = _update(False, minibatch, epochs)
    net_b, stats_b, _ = _update(True, minibatch, epochs)
    for a, b in zip(net_a.parameters(), net_b.parameters()):
        assert torch.allclose(a, b, atol=1e-6)
    assert stats_a.loss == pytest.approx(stats_b.loss, abs=1e-6)
    assert stats_a.kl == pytest.approx(stats_b.kl, abs=1e-7)


def test_one_minibatch_one_epoch_scores_each_sample_once_when_reusing():
    _, _, separate = _update(False, N, 1)
    _, _, reused = _update(True, N, 1)
    assert sum(separate) == 2 * N and sum(reused) == N       # 3 micro-batches of 4, with or without a pass


def test_the_update_moves_the_parameters():
    before = copy.deepcopy(_token_problem(3)[0])
    net, stats, _ = _update(True, 8, 2)
    assert stats.samples == N
    assert any(not torch.equal(a, b) for a, b in zip(before.parameters(), net.parameters()))
