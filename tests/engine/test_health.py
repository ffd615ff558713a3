"""Training health: the PPO update's clip fraction, approximate KL, entropy and gradient
norm, the trained shares, and a language model's answer lengths, cut answers and unreadable
verdicts — on ppo_update itself, on the backends, and stored by real `rla run` processes."""
import copy
import math

import pytest
import torch
from torch import nn

from rla_engine import metrics
from rla_engine.config import build
from rla_engine.llm import generation
from rla_engine.llm.backend import LLMBackend
from rla_engine.llm.dialogue import TextEpisodes, TextStep
from rla_engine.llm.generation import Sampling, was_cut
from rla_engine.llm.judge import TextJudgement
from rla_engine.loop import ppo
from rla_engine.loop.embedded import action_scores, verdict_scores
from rla_engine.loop.health import role_health
from rla_engine.loop.ppo import PPOSettings, PPOStats, Scores, distribution_entropy, ppo_update
from rla_engine.loop.trainer import Trainer
from rla_engine.models.networks import JudgeNet, PolicyNet
from rla_engine.store import open_store

from engine_support import TINY, rla

N, OBS, ACTIONS = 24, 5, 4
FRACTIONS = {metrics.POLICY_CLIP_FRACTION, metrics.POLICY_TRAINED_SHARE, metrics.JUDGE_CLIP_FRACTION,
             metrics.JUDGE_TRAINED_SHARE, metrics.TRUNCATED_SHARE, metrics.JUDGE_UNREADABLE_SHARE}


def _policy_problem(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    net = PolicyNet(OBS, ACTIONS, hidden=16)
    obs = torch.randn(N, OBS, generator=g)
    actions = torch.randint(0, ACTIONS, (N,), generator=g)
    adv = torch.randn(N, generator=g)
    return net, (lambda i: action_scores(net, obs[i], actions[i], 1.0)), adv, (obs, actions)


def _update(net, log_prob, adv, epochs=1, minibatch=N, lr=1e-2, reuse=False, max_grad_norm=1.0):
    settings = PPOSettings(epochs, minibatch, 0.2, 0.01, max_grad_norm=max_grad_norm, reuse_first_pass=reuse)
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    return ppo_update(net, opt, log_prob, adv, settings, torch.Generator().manual_seed(0), "policy")


def _policy_update(**kw) -> PPOStats:
    net, log_prob, adv, _ = _policy_problem()
    return _update(net, log_prob, adv, **kw)


# -- ppo_update --------------------------------------------------------------------------------------
def test_the_scorings_are_the_networks_log_probabilities_bit_for_bit():
    """The embedded update scores through action_scores / verdict_scores: the loss (hence every
    pinned metric) stays exactly what PolicyNet.log_prob / JudgeNet.log_prob gave."""
    g = torch.Generator().manual_seed(1)
    policy, judge = PolicyNet(OBS, ACTIONS, 16), JudgeNet(OBS, ACTIONS, 16)
    obs, actions = torch.randn(N, OBS, generator=g), torch.randint(0, ACTIONS, (N,), generator=g)
    x, v = torch.randn(N, judge.in_dim, generator=g), torch.randint(0, 2, (N,), generator=g) * 2 - 1
    assert torch.equal(action_scores(policy, obs, actions, 0.7).logp, policy.log_prob(obs, actions, 0.7))
    assert torch.equal(verdict_scores(judge, x, v, 0.7).logp, judge.log_prob(x, v, 0.7))


@pytest.mark.parametrize("reuse", [False, True])
def test_one_epoch_over_one_minibatch_clips_nothing_and_has_no_kl(reuse):
    """The only minibatch is scored before any step: every ratio is 1."""
    stats = _policy_update(reuse=reuse)
    assert stats.samples == N and stats.clip_fraction == 0.0
    if reuse:
        assert stats.kl == 0.0
    else:                     # a separate pass over the samples in another order may round apart
        assert abs(stats.kl) < 1e-12


def test_several_epochs_with_a_large_step_clip_and_move_away():
    stats = _policy_update(epochs=4, minibatch=8, lr=2.0)
    assert 0.0 < stats.clip_fraction <= 1.0
    assert stats.kl > 1e-3


def test_the_gradient_norm_is_torchs_total_norm_before_clipping():
    net, log_prob, adv, (obs, actions) = _policy_problem()
    by_hand = copy.deepcopy(net)
    s = action_scores(by_hand, obs, actions, 1.0)
    # at ratio 1 the loss's gradient is −mean(adv · ∇log π) (the k3 term's gradient is 0 there)
    (-(torch.exp(s.logp - s.logp.detach()) * adv).mean()).backward()
    expected = torch.sqrt(sum((p.grad ** 2).sum() for p in by_hand.parameters()))
    stats = _update(net, log_prob, adv, reuse=True, max_grad_norm=1e-4)
    assert expected > 1e-3          # far above the clip: the value is the norm before clipping
    assert stats.grad_norm == pytest.approx(float(expected), rel=1e-5)


def test_the_gradient_norm_is_the_mean_over_the_optimiser_steps(monkeypatch):
    norms = []
    real = nn.utils.clip_grad_norm_

    def spy(params, max_norm):
        norms.append(float(real(params, max_norm)))
        return torch.tensor(norms[-1])
    monkeypatch.setattr(ppo.nn.utils, "clip_grad_norm_", spy)
    stats = _policy_update(epochs=3, minibatch=8, lr=0.5)
    assert len(norms) == 9 and len(set(norms)) > 1
    assert stats.grad_norm == pytest.approx(sum(norms) / len(norms), rel=1e-12)


def test_the_entropy_is_that_of_the_distributions_before_the_update():
    """A uniform policy over 4 actions has entropy ln 4, a uniform verdict ln 2 — measured before the
    update moves them."""
    net, log_prob, adv, _ = _policy_problem()
    _zero_last_layer(net)
    assert _update(net, log_prob, adv, epochs=3, minibatch=8, lr=1.0).entropy == pytest.approx(math.log(ACTIONS))
    judge = JudgeNet(OBS, ACTIONS, 16)
    _zero_last_layer(judge)
    x, v = torch.randn(N, judge.in_dim), torch.randint(0, 2, (N,)) * 2 - 1
    stats = _update(judge, lambda i: verdict_scores(judge, x[i], v[i], 1.0), torch.randn(N))
    assert stats.entropy == pytest.approx(math.log(2))


def _zero_last_layer(net: PolicyNet | JudgeNet) -> None:
    """Every output logit 0: a uniform distribution."""
    with torch.no_grad():
        for p in list(net.net.parameters())[-2:]:       # the last layer's weight and bias
            p.zero_()


def test_token_samples_count_tokens_not_samples():
    """Clip fraction and entropy of token samples are over the real tokens (padding excluded): the
    training pass moves the first 6 samples' ratios to e, outside 1 ± 0.2, and no other."""
    width, vocab, moved = 6, 5, 6
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(N, width, vocab, generator=g) * 2
    logits[:, :, 0] = -math.inf           # an impossible token adds 0 to the entropy, never nan
    logp = torch.log_softmax(logits, -1)
    tokens = torch.randint(1, vocab, (N, width), generator=g)
    mask = torch.arange(width)[None, :] < torch.randint(1, width + 1, (N, 1), generator=g)
    net = nn.Linear(1, 1)                 # a parameter for the loss's gradient to reach
    passes: list[int] = []

    def log_prob(i):
        lp = logp[i].gather(-1, tokens[i].unsqueeze(-1)).squeeze(-1) + 0 * net.weight.sum()
        if passes:                        # the training pass, after the no-grad pass of log π_old
            lp = lp + (i < moved).float().unsqueeze(-1)
        passes.append(len(i))
        return Scores(torch.where(mask[i], lp, 0.0), mask[i], lambda: distribution_entropy(logp[i]))
    stats = _update(net, log_prob, torch.randn(N, generator=g))
    assert passes == [N, N]
    assert stats.clip_fraction == float(mask[:moved].sum()) / float(mask.sum())
    p = logp.exp()
    per_token = -(torch.where(p > 0, p * logp, 0.0)).sum(-1)
    assert math.isfinite(stats.entropy)
    assert stats.entropy == pytest.approx(float(per_token[mask].mean()), rel=1e-6)


def test_health_is_written_only_for_a_role_that_trained():
    assert role_health("policy", PPOStats(), 0) == {}
    assert role_health("judge", PPOStats(), 40) == {metrics.JUDGE_TRAINED_SHARE: 0.0}
    trained = PPOStats(0.1, 0.02, 10, clip_fraction=0.25, entropy=math.nan, grad_norm=math.inf)
    out = role_health("policy", trained, 40)
    assert out == {metrics.POLICY_CLIP_FRACTION: 0.25, metrics.POLICY_APPROX_KL: 0.02,
                   metrics.POLICY_TRAINED_SHARE: 0.25}     # non-finite values are left out, not stored


def test_a_frozen_judge_is_no_trained_role():
    values = Trainer(build(preset="tiny", sets=["judge.train=false"], seed=3), torch.device("cpu")).step().metrics
    assert metrics.POLICY_TRAINED_SHARE in values
    assert not set(metrics.JUDGE_HEALTH) & set(values)


# -- a language model --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def model_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("models"))


def test_a_language_models_update_measures_from_its_own_forwards(model_cache, monkeypatch):
    """One epoch over one minibatch: one forward per micro-batch (no pass added for the measures),
    ratio 1 on every token, and the entropy of the sampled tokens' distributions before the step."""
    monkeypatch.setenv("RLA_MODEL_CACHE", model_cache)
    tr = Trainer(build(preset="llm-tiny", sets=["policy.minibatch_size=512", "policy.max_new_tokens=6"]),
                 torch.device("cpu"))
    backend = tr.backend
    assert isinstance(backend, LLMBackend)
    ep = backend.collect([tr.pool.active[0].task], 4)
    chosen = [s for steps in ep.steps for s in steps]
    model, temperature = backend.policy, tr.cfg.rollout.temperature
    expected = _token_entropy(copy.deepcopy(model), chosen, temperature)
    calls = []
    model.register_forward_hook(lambda *_: calls.append(1))
    # rows scored whole: a shared prompt would add its own forward (tests/engine/test_completion_rows.py)
    monkeypatch.setattr(generation, "keeps_cache", lambda model: False)
    stats = backend.update_policy(ep, ep.mask, torch.randn(len(chosen)), None)
    assert stats.samples == len(chosen)
    assert len(calls) == math.ceil(len(chosen) / tr.cfg.lm.micro_batch_size)
    assert stats.clip_fraction == 0.0 and stats.kl == 0.0
    assert stats.entropy == pytest.approx(expected, rel=1e-4)
    assert stats.grad_norm > 0


def _token_entropy(model, steps, temperature: float) -> float:
    """Mean entropy of softmax(logits / T) over the steps' tokens, one plain forward per step."""
    total = count = 0.0
    with torch.no_grad():
        for s in steps:
            ids = torch.tensor([s.context + s.tokens])
            logits = model(input_ids=ids).logits[0, len(s.context) - 1:-1].float() / temperature
            p = torch.softmax(logits, -1)
            total += float(-(p * torch.log_softmax(logits, -1)).sum())
            count += len(s.tokens)
    return total / count


class _Tok:
    eos_token_id = 9

    def decode(self, ids, skip_special_tokens=False):
        return "".join("\n" if i == 7 else "x" for i in ids)


def test_an_answer_is_cut_when_it_fills_max_new_tokens_without_ending():
    how = Sampling(3)
    assert not was_cut([1, 2], how, _Tok())
    assert was_cut([1, 2, 3], how, _Tok())
    assert not was_cut([1, 2, 9], how, _Tok())                 # ended on its last allowed token
    assert was_cut([1, 2, 7], how, _Tok())                     # a newline ends only a one-line answer
    assert not was_cut([1, 2, 7], Sampling(3, stop_at_newline=True), _Tok())


def test_text_measures_count_answers_not_steps(model_cache, monkeypatch):
    """An answer split into several steps (one per line) is one answer; unreadable verdicts are
    shared over the judged steps' samples."""
    monkeypatch.setenv("RLA_MODEL_CACHE", model_cache)
    tr = Trainer(build(preset="llm-tiny", sets=["policy.max_new_tokens=4"]), torch.device("cpu"))
    assert isinstance(tr.backend, LLMBackend)
    eos = tr.backend.tok.eos_token_id

    def step(tokens):
        return TextStep([1], tokens, "")
    # episode 0: turn 0 is one answer of 4 tokens in two lines (cut), turn 1 ends with eos;
    # episode 1: one answer of 2 tokens
    steps = [[step([5, 6]), step([7, 8]), step([5, eos])], [step([5, 6])]]
    mask = torch.tensor([[True, True, True], [True, False, False]])
    ep = TextEpisodes(1, 2, mask=mask, oracle=torch.zeros(2, 3, dtype=torch.int8),
                      success=torch.zeros(2, dtype=torch.bool), steps=steps, turn_of=[[0, 0, 1], [0]])
    verdicts = torch.zeros(2, 3, 2, dtype=torch.int8)       # 0: unreadable (and padding)
    verdicts[0] = torch.tensor([[1, 0], [-1, 1], [0, 0]])
    verdicts[1, 0] = torch.tensor([1, 1])
    cells = [(0, 0), (0, 1), (0, 2), (1, 0)]
    judgement = TextJudgement(verdicts, cells, [[]] * 4, [[[]] * 2] * 4, [[""] * 2] * 4)
    assert tr.backend.text_measures(ep, judgement) == {
        metrics.COMPLETION_LENGTH_MEAN: 8 / 3, metrics.COMPLETION_LENGTH_MAX: 4.0,
        metrics.TRUNCATED_SHARE: 1 / 3, metrics.JUDGE_UNREADABLE_SHARE: 3 / 8}


# -- stored by `rla run`, printed by `rla show` --------------------------------------------------------
def _in_range(key: str, v: float) -> bool:
    if key in FRACTIONS:
        return 0.0 <= v <= 1.0
    return v >= 0.0           # entropies, gradient norms, lengths; the k3 KL is never negative


def _shown(out: str) -> dict[str, str]:
    return {parts[0]: parts[1] for line in out.splitlines() if len(parts := line.split()) == 2}


def test_a_tiny_run_stores_the_health_of_both_roles(tmp_path):
    db = tmp_path / "h.db"
    res = rla("run", *TINY, "--run-id", "h", "--iterations", "4", "--set", "eval.every=100", db=db)
    assert res.returncode == 0, res.stderr[-3000:]
    by_it = open_store(db).metrics_by_iteration("h")
    assert sorted(by_it) == [1, 2, 3, 4]
    stored = {k for values in by_it.values() for k in values}
    assert set(metrics.POLICY_HEALTH + metrics.JUDGE_HEALTH) <= stored
    assert not stored & set(metrics.TEXT_HEALTH)
    for values in by_it.values():
        assert all(_in_range(k, v) for k, v in values.items() if k.startswith(metrics.HEALTH_PREFIX)), values
        # trained shares every iteration; an update's measures exactly when it has a loss
        assert metrics.POLICY_TRAINED_SHARE in values and metrics.JUDGE_TRAINED_SHARE in values
        for loss, keys in ((metrics.LOSS_POLICY, metrics.POLICY_HEALTH), (metrics.LOSS_JUDGE, metrics.JUDGE_HEALTH)):
            update_keys = set(keys) - {metrics.POLICY_TRAINED_SHARE, metrics.JUDGE_TRAINED_SHARE}
            assert all((k in values) == (loss in values) for k in update_keys), values
    shown = _shown(rla("show", "h", db=db).stdout)
    assert set(metrics.POLICY_HEALTH + metrics.JUDGE_HEALTH) <= set(shown)


def test_an_llm_run_stores_answer_lengths_cut_answers_and_unreadable_verdicts(tmp_path, model_cache, monkeypatch):
    """max_new_tokens = 2: every answer is 2 tokens long and cut (the seeded run's answers never
    end on an end-of-sequence token)."""
    monkeypatch.setenv("RLA_MODEL_CACHE", model_cache)      # the `rla` process inherits it
    db = tmp_path / "lm.db"
    # one iteration and the smallest final evaluation: the process's start is most of its time
    res = rla("run", "--preset", "llm-tiny", "--run-id", "lm", "--iterations", "1", "--set", "policy.max_new_tokens=2",
              "--set", "judge.max_new_tokens=4", "--set", "eval.tasks_per_tier=1", "--set", "eval.tiers=[0.1]",
              db=db, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    values = open_store(db).metrics_by_iteration("lm")[1]
    assert set(metrics.TEXT_HEALTH) <= set(values)
    assert values[metrics.COMPLETION_LENGTH_MEAN] == values[metrics.COMPLETION_LENGTH_MAX] == 2.0
    assert values[metrics.TRUNCATED_SHARE] == 1.0
    assert 0.0 <= values[metrics.JUDGE_UNREADABLE_SHARE] <= 1.0
    assert metrics.POLICY_TRAINED_SHARE in values and metrics.JUDGE_TRAINED_SHARE in values
    assert set(metrics.TEXT_HEALTH) <= set(_shown(rla("show", "lm", db=db).stdout))

