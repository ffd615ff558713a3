"""Prompts that begin alike are encoded once (rla_engine/llm/prompt_cache.py): the runs chosen
encode the fewest tokens, and what `sample` answers is what one left-padded `generate` over the
whole prompts answers, greedy or sampled from the same seed, with copies or without."""
import itertools
import random

import pytest
import torch

from rla_engine.config import build
from rla_engine.llm.generation import Sampling, _trim, chat_ids, sample
from rla_engine.llm.prompt_cache import encode, left_padded, shared_runs
from rla_engine.loop.trainer import Trainer


@pytest.fixture(autouse=True)
def _model_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("RLA_MODEL_CACHE", str(tmp_path_factory.getbasetemp() / "models"))


def encoded(prompts, runs):
    return sum(k + sum(len(p) - 1 - k for p in prompts[i:j]) for i, j, k in runs)


def test_runs_share_what_prompts_have_in_common_and_keep_their_order():
    task = list(range(100, 140))
    same = [*task, 1, 2, 3]
    prompts = [same, same, same, [*task, 7, 8], [5] * 30, [*[5] * 20, 6], [*task, 9]]
    runs = shared_runs(prompts, least=16)
    assert [(i, j) for i, j, _ in runs] == [(0, 4), (4, 6), (6, 7)]
    # identical prompts alone would share all but their last token; with the fourth, the task
    assert dict(((i, j), k) for i, j, k in runs) == {(0, 4): 40, (4, 6): 20, (6, 7): 40}
    assert shared_runs([same, same], least=16) == [(0, 2, 42)]
    # below `least` shared tokens a second forward is not worth it: each prompt alone
    assert shared_runs([[1] * 10 + [2], [1] * 10 + [3]], least=16) == [(0, 1, 10), (1, 2, 10)]


def test_the_runs_chosen_encode_the_fewest_tokens():
    rng = random.Random(3)
    for _ in range(200):
        n = rng.randint(1, 6)
        stems = [[rng.randint(0, 2) for _ in range(rng.randint(0, 6))] for _ in range(2)]
        prompts = [rng.choice(stems) + [rng.randint(0, 2) for _ in range(rng.randint(1, 4))] for _ in range(n)]
        runs = shared_runs(prompts, least=2)
        assert [i for i, _, _ in runs] == [0, *[j for _, j, _ in runs[:-1]]] and runs[-1][1] == n
        for i, j, k in runs:
            assert all(p[:k] == prompts[i][:k] and len(p) > k for p in prompts[i:j])
        fewest = min(encoded(prompts, every) for every in _all_runs(prompts, 2))
        assert encoded(prompts, runs) == fewest, (prompts, runs)


def _all_runs(prompts, least):
    """Every way to cut the prompts into runs, each sharing as much as its prompts allow."""
    n = len(prompts)
    for cuts in itertools.product([0, 1], repeat=n - 1):
        bounds = [0, *[i + 1 for i, c in enumerate(cuts) if c], n]
        runs = []
        for i, j in itertools.pairwise(bounds):
            group = prompts[i:j]
            k = min(len(p) - 1 for p in group)
            for a, b in itertools.pairwise(group):
                k = min(k, next((x for x, (u, v) in enumerate(zip(a, b)) if u != v), min(len(a), len(b))))
            if j - i > 1 and k < least:
                break
            runs.append((i, j, k))
        else:
            yield runs


def plain_generate(model, tok, prompts, how, copies, seed):
    """One left-padded `generate` over every prompt, copies repeated: what sharing must equal."""
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    ids, att = left_padded([p for p in prompts for _ in range(copies)], pad)
    kw = {"max_new_tokens": how.max_new_tokens, "pad_token_id": pad, "eos_token_id": tok.eos_token_id}
    if how.greedy:
        kw.update(do_sample=False, temperature=None, top_p=None, top_k=None)
    else:
        kw.update(do_sample=True, temperature=how.temperature, top_p=how.top_p, top_k=None)
    torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=torch.Generator().manual_seed(seed))))
    seqs = model.generate(input_ids=ids, attention_mask=att, **kw)
    return [_trim(row, tok.eos_token_id, pad) for row in seqs[:, ids.shape[1]:].tolist()]


@pytest.mark.parametrize("lora", [0, 4])
def test_sampling_with_shared_prompts_answers_as_whole_prompts_do(lora):
    """A judge-like call: steps of one task (long shared beginning, rests of different lengths),
    a prompt that shares nothing between them, and a task's roll-outs (one prompt repeated)."""
    if lora:
        pytest.importorskip("peft")
    tr = Trainer(build(preset="llm-tiny", sets=["task.family=text_arithmetic", f"lm.lora_rank={lora}"]),
                 torch.device("cpu"))
    model, tok = tr.backend.judge_lm, tr.backend.judge_tok
    task = "You judge one step of an agent. Task: Ann has 3 pens and gets 4 more pens. Earlier steps:"
    texts = [task + " none", task + " value = 7, then value = 9 and more", "x", task + " value = 7", "y", "y", "y"]
    prompts = [chat_ids(tok, [{"role": "user", "content": t}]) for t in texts]
    runs = shared_runs(prompts)
    assert len(runs) == 4 and runs[0][:2] == (0, 2) and runs[-1][:2] == (4, 7)
    for how, copies in itertools.product([Sampling(10, greedy=True), Sampling(12, temperature=1.0, top_p=0.95)],
                                         [1, 3]):
        shared = sample(model, tok, prompts, how, torch.Generator().manual_seed(5), copies=copies)
        assert shared == plain_generate(model, tok, prompts, how, copies, seed=5), (how, copies)
        assert len(shared) == len(prompts) * copies
        # tiny-random's greedy answers are all alike; sampled ones tell every row apart
        assert how.greedy or len(set(map(tuple, shared))) == len(shared)


@pytest.mark.parametrize("copies", [1, 3])
def test_the_shared_cache_gives_each_prompt_the_logits_of_its_whole_prompt(copies):
    """The strict check behind the one above (whose tiny-random samples barely depend on the
    logits' last digits): the next-token logits from `encode`'s cache equal those of one
    left-padded forward over the whole prompts."""
    tr = Trainer(build(preset="llm-tiny", sets=["task.family=text_arithmetic"]), torch.device("cpu"))
    model, tok = tr.backend.judge_lm, tr.backend.judge_tok
    task = "You judge one step of an agent. Task: Ann has 3 pens and gets 4 more pens. Earlier steps:"
    texts = [task + " none", task + " value = 7, then value = 9 and more", "x", "y", "y"]
    prompts = [chat_ids(tok, [{"role": "user", "content": t}]) for t in texts]
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    with torch.no_grad():
        ids, att, cache = encode(model, prompts, copies, pad, shared_runs(prompts))
        pos = (att.cumsum(-1) - 1)[:, -1:]
        shared = model(input_ids=ids[:, -1:], attention_mask=att, position_ids=pos, **cache).logits[:, -1]
        whole_ids, whole_att = left_padded([p for p in prompts for _ in range(copies)], pad)
        whole_pos = (whole_att.cumsum(-1) - 1).clamp(min=0)
        whole = model(input_ids=whole_ids, attention_mask=whole_att, position_ids=whole_pos).logits[:, -1]
    assert torch.allclose(shared, whole, atol=1e-5), (shared - whole).abs().max()
    assert (whole[0] - whole[copies]).abs().max() > 1e-3      # the prompts' logits differ: the check can fail
