"""A completion's line steps scored through one forward pass give the log-probabilities and the
gradients of scoring each step on its own (tiny-random, each text family, with and without LoRA),
and a minibatch is cut into micro-batches of whole completions."""
from __future__ import annotations

import pytest
import torch

from rla_engine.config import build
from rla_engine.llm import generation
from rla_engine.llm.completion_rows import CompletionRows
from rla_engine.llm.generation import chat_ids, token_scores
from rla_engine.loop.trainer import Trainer
from rla_engine.tasks import family_names

TOLERANCE = 1e-6
LINE = 5


@pytest.fixture(autouse=True)
def _model_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("RLA_MODEL_CACHE", str(tmp_path_factory.getbasetemp() / "models"))


def line_steps(family: str, *sets: str):
    """A real rollout's steps (their prompts, and for text_world their turns) cut into lines of at
    most LINE tokens, as the loop cuts an answer at its newlines (a random model rarely writes one):
    (backend, contexts, targets)."""
    # the easiest tasks: a text_world game of few turns keeps the one-by-one reference cheap
    cfg = build(preset="llm-tiny", sets=[f"task.family={family}", "policy.max_new_tokens=16", "task.dataset_high=0.0",
                                         *sets])
    tr = Trainer(cfg, torch.device("cpu"))
    tasks = [tr.pool.active[0].task]     # one task's two rollouts: completions of several steps, shared prompts
    episodes = tr.backend.collect(tasks, 2)
    contexts, targets = [], []
    for step in (s for row in episodes.steps for s in row):
        for k in range(0, len(step.tokens), LINE):
            contexts.append(step.context + step.tokens[:k])
            targets.append(step.tokens[k:k + LINE])
    return tr.backend, contexts, targets


def loss_and_grads(model, scores, weights):
    """A PPO-like scalar (weighted mean of each sample's mean token log-probability) and its gradients."""
    model.zero_grad(set_to_none=True)
    per_sample = (scores.logp * scores.mask).sum(1) / scores.mask.sum(1)
    loss = (weights * per_sample).mean()
    loss.backward()
    return scores.logp.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
# textworld's dialogue has text_world's shape (one admissible command a turn, after the game's text and
# the command list); its real games' long texts make the one-by-one reference several times dearer
@pytest.mark.parametrize("family", [f for f in family_names("text") if f != "textworld"])
def test_one_pass_per_completion_gives_each_steps_gradients(family, lora, monkeypatch):
    if lora:
        pytest.importorskip("peft")
    backend, contexts, targets = line_steps(family, *(["lm.lora_rank=4"] if lora else []))
    rows = CompletionRows(contexts, targets)
    assert rows.rows < len(targets), "no completion of this rollout has two steps: nothing is shared"
    model = backend.policy
    model.train()
    n = len(targets)
    idx = torch.arange(n)
    width = max(map(len, targets))
    weights = torch.linspace(-1.0, 1.0, n)
    with monkeypatch.context() as m:      # the reference: every sample its own whole row
        m.setattr(generation, "keeps_cache", lambda model: False)
        one_by_one, expected = loss_and_grads(model, token_scores(model, contexts, targets, 0.7, width), weights)
    shared, got = loss_and_grads(model, rows.scores(model, idx, 0.7, width), weights)
    assert (one_by_one - shared).abs().max() <= TOLERANCE
    assert expected.keys() == got.keys() and expected
    assert max(float((expected[k] - got[k]).abs().max()) for k in expected) <= TOLERANCE


def test_the_samples_of_a_completion_meet_in_one_micro_batch():
    prompt_a, prompt_b = [1, 2, 3], [1, 2, 4]
    contexts = [prompt_a, [*prompt_a, 5], prompt_b, [*prompt_a, 5, 6], [*prompt_b, 7], [9]]
    targets = [[5], [6], [7], [8], [8], [9]]
    rows = CompletionRows(contexts, targets)
    assert rows.rows == 3                                # a's three lines, b's two, the lone sample
    assert rows.row_of[0] == rows.row_of[1] == rows.row_of[3] != rows.row_of[2] == rows.row_of[4]
    micros = rows.micro_batches(torch.tensor([4, 0, 5, 1, 2, 3]), 2)
    assert [m.tolist() for m in micros] == [[0, 1, 3, 4, 2], [5]]     # a's row, b's, then the lone one
    assert sorted(i for m in micros for i in m.tolist()) == list(range(6))


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_prompts_run_once_in_an_update_give_each_samples_gradients(lora, monkeypatch):
    """The judge's case: m outputs after each of several prompts that share their beginning (the
    steps of one task), with the verdict bonus. Run once per prompt (its cache shared, the gradient
    flowing back into it), the log-probabilities, the bonus and the gradients are those of whole
    rows."""
    if lora:
        pytest.importorskip("peft")
    backend, _, _ = line_steps("text_arithmetic", *(["lm.lora_rank=4"] if lora else []))
    task = "Ann has 3 pens. Ann gets 4 more pens. How many pens does Ann have now?"
    # two tasks' prompts of different lengths: two runs, the shorter left-padded in the shared
    # forward (whose pad queries attend to nothing), each with steps that share the task
    texts = [f"{task} Step: value = 7", f"{task} Step: value = 9, then more", "Bo has 2 cups. " * 9]
    prompts = [chat_ids(backend.tok, [{"role": "user", "content": t}]) for t in texts]
    m = 3
    g = torch.Generator().manual_seed(0)
    outputs = [torch.randint(5, 200, (int(torch.randint(2, 9, (1,), generator=g)),), generator=g).tolist()
               for _ in range(len(prompts) * m)]
    ctx = [list(prompts[k // m]) for k in range(len(outputs))]
    model = backend.policy
    model.train()
    width = max(map(len, outputs))
    weights = torch.linspace(-1.0, 1.0, len(outputs))
    runs = generation.shared_runs(sorted(ctx))
    assert len(runs) == 2 and runs[0][2] != runs[1][2], runs

    def scored(share):
        with monkeypatch.context() as mp:
            mp.setattr(generation, "keeps_cache", lambda model: share)
            s = token_scores(model, ctx, outputs, 0.7, width, two=(10, 11))
            bonus = s.bonus.detach().clone()
            return (*loss_and_grads(model, s, weights), bonus)

    whole, expected, whole_bonus = scored(False)
    shared, got, shared_bonus = scored(True)
    assert (whole - shared).abs().max() <= TOLERANCE and (whole_bonus - shared_bonus).abs().max() <= TOLERANCE
    assert expected.keys() == got.keys() and expected
    assert max(float((expected[k] - got[k]).abs().max()) for k in expected) <= TOLERANCE
