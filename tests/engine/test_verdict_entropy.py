"""judge.verdict_entropy (not in the paper): a bonus on the entropy of P(+1) against P(−1) at each
verdict the judge samples, over every verdict of the groups it trains on — the remedy for a judge
that settles on one answer for every step (unanimous steps get no consistency gradient)."""
from __future__ import annotations

import pytest
import torch
from torch.nn import functional

from rla_engine import metrics
from rla_engine.config import ConfigError, build
from rla_engine.llm.completion_rows import CompletionRows
from rla_engine.llm.judge import verdict_position, verdict_tokens
from rla_engine.loop.embedded import verdict_scores
from rla_engine.loop.ppo import PPOSettings, binary_entropy, distribution_entropy, ppo_update
from rla_engine.loop.trainer import Trainer
from rla_engine.models.networks import JudgeNet


@pytest.fixture(autouse=True)
def _model_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("RLA_MODEL_CACHE", str(tmp_path_factory.getbasetemp() / "models"))


def test_the_binary_entropy_is_the_verdicts_and_peaks_at_a_coin_flip():
    a = torch.linspace(-8, 8, 33)
    two = torch.stack([functional.logsigmoid(a), functional.logsigmoid(-a)], -1)
    assert torch.allclose(binary_entropy(a), distribution_entropy(two), atol=1e-6)
    assert float(binary_entropy(torch.tensor(0.0))) == pytest.approx(0.6931, abs=1e-4)


def test_the_option_is_checked_and_off_in_the_papers_form():
    assert build(preset="tiny").judge.verdict_entropy == 0
    with pytest.raises(ConfigError) as e:
        build(preset="tiny", sets=["judge.verdict_entropy=-1"])
    assert e.value.key == "judge.verdict_entropy"


def _collapsed_judge() -> tuple[JudgeNet, torch.Tensor]:
    torch.manual_seed(0)
    net = JudgeNet(2, 2, hidden=16)      # input width 2·2 + 2 = 6
    with torch.no_grad():            # says −1 to everything: P(+1) ≈ 0.007
        net.net[-1].bias.fill_(-5.0)
    return net, torch.randn(64, 6)


def _entropy_after_update(coef: float) -> tuple[float, float]:
    net, x = _collapsed_judge()
    verdicts = -torch.ones(64, dtype=torch.int8)
    with torch.no_grad():
        before = float(binary_entropy(net(x)).mean())
    opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
    settings = PPOSettings(4, 16, 0.2, 0.01, sample_entropy_coef=coef)
    # unanimous steps: the consistency reward is 0 on every verdict, so only the bonus can move it
    ppo_update(net, opt, lambda i: verdict_scores(net, x[i], verdicts[i], 1.0, bonus=coef > 0),
               torch.zeros(64), settings, torch.Generator().manual_seed(0), "judge")
    with torch.no_grad():
        return before, float(binary_entropy(net(x)).mean())


def test_the_bonus_moves_a_collapsed_judge_that_the_consistency_reward_leaves_alone():
    before, with_bonus = _entropy_after_update(0.5)
    _, without = _entropy_after_update(0.0)
    assert without == pytest.approx(before, rel=0.05)       # zero advantages: nothing to learn
    assert with_bonus > 2 * before                           # the bonus pulls P(+1) back from 0


def _judged_counts(*sets: str) -> list[int]:
    tr = Trainer(build(preset="tiny", sets=["judge.m=1", "judge.profile=paper", *sets]), torch.device("cpu"))
    counts: list[int] = []
    update = tr.backend.update_judge

    def capture(roll, judgement, index, advantages):
        counts.append(len(advantages))
        return update(roll, judgement, index, advantages)
    tr.backend.update_judge = capture      # type: ignore[method-assign]
    for _ in range(4):
        tr.step()
    return counts


def test_with_the_bonus_the_judge_trains_on_every_verdict_of_its_band_unanimous_ones_included():
    # m = 1: every step is unanimous, so the paper's form trains on none of them
    paper = _judged_counts()
    assert paper and all(c == 0 for c in paper)
    assert max(_judged_counts("judge.verdict_entropy=0.1")) > 0


def test_a_run_with_the_bonus_trains_its_judge_on_its_whole_band():
    def run(*sets: str) -> list[dict]:
        tr = Trainer(build(preset="tiny", sets=["judge.m=1", "judge.lr=0.01", "judge.profile=paper", *sets]),
                     torch.device("cpu"))
        return [tr.step().metrics for _ in range(6)]
    paper, bonus = run(), run("judge.verdict_entropy=1.0")
    shares = [r[metrics.JUDGE_TRAINED_SHARE] for r in bonus if metrics.JUDGE_TRAINED_SHARE in r]
    assert shares and max(shares) > 0 and not any(r.get(metrics.JUDGE_TRAINED_SHARE, 0) for r in paper)
    assert [r.get(metrics.LOSS_JUDGE) for r in bonus] != [r.get(metrics.LOSS_JUDGE) for r in paper]


# ---------------------------------------------------------------- a language-model judge

def test_a_language_model_judges_verdict_token_is_found_where_the_box_is_opened():
    cfg = build(preset="llm-tiny", sets=["judge.verdict_entropy=0.1"])
    tok = Trainer(cfg, torch.device("cpu")).backend.judge_tok
    tokens = verdict_tokens(tok)
    assert tokens is not None
    opens = tokens[0]
    for text, verdict in (("fine. \\boxed{1}", 1), ("no \\boxed{-1}", -1), ("\\boxed{1} no: \\boxed{-1}.", -1)):
        out = tok(text, add_special_tokens=False)["input_ids"]
        k = verdict_position(out, verdict, tokens)
        assert out[k] == tokens[1 if verdict > 0 else 2] and out[k - len(opens):k] == opens
        assert verdict_position(out, -verdict, tokens) == -1     # the other verdict is not in the last box
    assert verdict_position(tok("no box", add_special_tokens=False)["input_ids"], 0, tokens) == -1
    # the box read is the last one: an earlier −1 is not where a +1 verdict was decided
    out = tok("\\boxed{-1} or \\boxed{+1}", add_special_tokens=False)["input_ids"]
    assert verdict_position(out, -1, tokens) == -1


def test_a_language_model_judges_bonus_is_the_entropy_between_its_two_verdict_tokens_with_a_gradient():
    tr = Trainer(build(preset="llm-tiny", sets=["judge.verdict_entropy=0.1"]), torch.device("cpu"))
    model, tok = tr.backend.judge_lm, tr.backend.judge_tok
    tokens = verdict_tokens(tok)
    assert tokens is not None
    _, good, bad = tokens
    prompt = tok("Is this step good?", add_special_tokens=False)["input_ids"]
    outputs = [tok(t, add_special_tokens=False)["input_ids"] for t in ("ok \\boxed{1}", "bad \\boxed{-1}", "hm")]
    where = [verdict_position(o, v, tokens) for o, v in zip(outputs, (1, -1, 0))]
    rows = CompletionRows([prompt] * 3, outputs, ((good, bad), where))
    width = max(len(o) for o in outputs)
    model.train()
    scores = rows.scores(model, torch.arange(3), 0.7, width)
    assert scores.bonus is not None and scores.bonus.shape == (3,)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt + outputs[0][:where[0]]])).logits[0, -1] / 0.7
        logp = torch.log_softmax(logits.float(), -1)
    assert float(scores.bonus[0].detach()) == pytest.approx(float(binary_entropy(logp[good] - logp[bad])), abs=1e-4)
    assert float(scores.bonus[2].detach()) == 0.0                      # an unreadable sample has no verdict token
    assert CompletionRows([prompt], [outputs[0]]).scores(model, torch.arange(1), 0.7, width).bonus is None
    scores.bonus.sum().backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


def test_a_language_model_run_with_the_bonus_takes_a_step():
    tr = Trainer(build(preset="llm-tiny", sets=["judge.verdict_entropy=0.1"]), torch.device("cpu"))
    assert tr.step().metrics


def test_a_stored_run_from_before_the_option_reads_as_the_papers_form_in_comparisons():
    from rla_engine.config import current_settings
    assert current_settings({"judge.m": 3})["judge.verdict_entropy"] == 0.0
    assert current_settings({"judge.m": 3, "judge.verdict_entropy": 0.2})["judge.verdict_entropy"] == 0.2
    assert "judge.verdict_entropy" not in current_settings({"policy.lam": 1.0})   # no judge section: not a run's
