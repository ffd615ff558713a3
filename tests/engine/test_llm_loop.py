"""The language-model backend on real (tiny) models: one whole iteration of each text family and
its database rows, the PPO ratio's log-probabilities, checkpoints, and the environment model's
invalid answers. The models are `tiny-random` (built locally, random weights): these tests show
the path works, not that it learns."""
import json
import math

import pytest
import torch

from rla_engine import checkpoint, metrics
from rla_engine.config import build
from rla_engine.llm import backend as llm_backend
from rla_engine.llm import env_model
from rla_engine.llm.generation import Sampling, chat_ids, token_logprobs
from rla_engine.loop.backend import VariantRequest
from rla_engine.loop.trainer import Trainer
from rla_engine.runner import Runner
from rla_engine.store import open_store
from rla_engine.tasks import family_names, load_family
from rla_engine.vocabulary import EventKind

# textworld's whole iteration runs through `rla run` in test_textworld_loop.py (its games cost a
# second each to build: once is enough)
TEXT_FAMILIES = [f for f in family_names("text") if f != "textworld"]


@pytest.fixture(autouse=True)
def _model_cache(tmp_path_factory, monkeypatch):
    # one cache for the session: tiny-random is built once
    monkeypatch.setenv("RLA_MODEL_CACHE", str(tmp_path_factory.getbasetemp() / "models"))


def llm_tiny(*sets, family="text_arithmetic"):
    return build(preset="llm-tiny", sets=[f"task.family={family}", *sets])


def without_perf(m):
    return {k: v for k, v in m.items() if not metrics.is_machine_key(k)}


@pytest.mark.parametrize("family", TEXT_FAMILIES)
def test_one_whole_iteration_of_each_text_family_is_stored(tmp_path, family):
    """rollout → judge → candidates → rewards → policy and judge updates → variants, into SQLite."""
    # short answers and one easy eval task: tiny-random never finishes a text_world task, so every
    # episode plays its whole turn budget
    cfg = llm_tiny("run.iterations=2", "eval.every=2", "eval.tiers=[0.0]", "eval.tasks_per_tier=1",
                   "task.dataset_high=0.0", "policy.max_new_tokens=8", "judge.max_new_tokens=8", family=family)
    tr = Trainer(cfg, torch.device("cpu"))
    before = [p.detach().clone() for p in tr.backend.judge_lm.parameters()]
    store = open_store(tmp_path / "llm.db")
    store.create_run("r", name="llm", preset="llm-tiny", config=cfg.to_dict(), device="cpu",
                     first_tasks=tr.pool.take_dirty_rows())
    assert Runner(store, "r", tr, 2, out=lambda s: None).run() == 0
    by_it = store.metrics_by_iteration("r")
    assert sorted(by_it) == [1, 2]
    last = by_it[2]
    for key in (metrics.SUCCESS, metrics.REWARD, metrics.EPISODE_LENGTH, metrics.UNANIMITY,
                metrics.EVAL_SUCCESS, metrics.ENV_STEPS, metrics.INVALID):
        assert key in last and math.isfinite(last[key]), key
    samples = [e for e in store.events("r") if e["kind"] == EventKind.SAMPLES]
    assert len(samples) == 2
    traj = samples[-1]["payload"]["trajectories"][0]
    step = traj["turns"][0]["steps"][0]
    assert traj["task"] and len(step["verdicts"]) == cfg.judge.m == len(step["reasoning"])
    assert all(v in (-1, 0, 1) for v in step["verdicts"])
    # the judge's samples were trained on whenever some were selected
    if any(k == metrics.LOSS_JUDGE for m in by_it.values() for k in m):
        assert not all(torch.equal(a, b) for a, b in zip(before, tr.backend.judge_lm.parameters()))
    tasks = store.tasks("r")
    assert len([t for t in tasks if t["version"] == 0]) == cfg.task.pool_size


def test_the_ppo_ratio_uses_the_sampling_log_probabilities():
    """The log-probabilities the PPO ratio starts from are those of the sampled tokens under the
    sampling temperature: `generate`'s own raw logits, scored again by one forward pass."""
    tr = Trainer(llm_tiny(), torch.device("cpu"))
    model, tok = tr.backend.policy, tr.backend.tok
    prompt = chat_ids(tok, [{"role": "user", "content": "Write value = 3."}])
    temperature = 0.7
    torch.manual_seed(0)
    out = model.generate(input_ids=torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                         do_sample=True, temperature=temperature, top_p=0.9, top_k=None, max_new_tokens=12,
                         output_logits=True, return_dict_in_generate=True, pad_token_id=tok.pad_token_id)
    tokens = out.sequences[0, len(prompt):].tolist()
    raw = torch.stack(out.logits, 1)[0]                                  # [new tokens, V], before warping
    expected = torch.log_softmax(raw.float() / temperature, -1).gather(-1, torch.tensor(tokens)[:, None])[:, 0]
    with torch.no_grad():
        got, mask = token_logprobs(model, [prompt], [tokens], temperature, len(tokens) + 3)
    assert mask[0].tolist() == [True] * len(tokens) + [False] * 3
    assert torch.allclose(got[0, :len(tokens)], expected, atol=1e-4)


def test_a_resumed_run_continues_with_the_same_metrics(tmp_path):
    cfg = llm_tiny("run.iterations=2", "eval.every=1", "eval.tiers=[0.1]", "policy.max_new_tokens=12",
                   "judge.max_new_tokens=8")
    straight = Trainer(cfg, torch.device("cpu"))
    expected = [without_perf(straight.step().metrics) for _ in range(2)]
    first = Trainer(cfg, torch.device("cpu"))
    first.step()
    path = checkpoint.save(tmp_path, 1, first.state_dict(), keep=2)
    again = Trainer(cfg, torch.device("cpu"))
    again.load_state_dict(checkpoint.load(path))
    assert without_perf(again.step().metrics) == expected[1]


def test_the_checkpoint_holds_only_adapters_with_lora(tmp_path):
    pytest.importorskip("peft")
    tr = Trainer(llm_tiny("lm.lora_rank=4"), torch.device("cpu"))
    state = tr.backend.state_dict()
    assert state["policy"] and all("lora" in k for k in state["policy"])


def test_each_role_reads_its_own_settings_and_the_shared_lm_ones(monkeypatch):
    lora = []
    monkeypatch.setattr(llm_backend, "apply_lora", lambda model, rank, alpha, dropout: lora.append((rank, alpha))
                        or model)
    tr = Trainer(llm_tiny("lm.lora_rank=4", "lm.lora_alpha=8", "lm.micro_batch_size=3", "lm.generation_batch_size=5",
                          "judge.ppo_epochs=3", "judge.minibatch_size=7", "judge.clip_eps=0.1", "judge.kl_beta=0.5"),
                 torch.device("cpu"))
    b = tr.backend
    assert lora == [(4, 8.0), (4, 8.0)]          # policy and judge
    assert [(s.epochs, s.minibatch_size, s.clip_eps, s.kl_beta, s.micro_batch_size)
            for s in (b.policy_ppo, b.judge_ppo)] == [(1, 16, 0.2, 0.01, 3), (3, 7, 0.1, 0.5, 3)]
    assert b.policy_how.batch_size == b.judge_how.batch_size == b.env_how.batch_size == 5


def test_invalid_variants_are_rejected_counted_and_logged():
    fam = load_family("text_arithmetic")
    rng = __import__("numpy").random.default_rng(0)
    root = fam.sample(0.3, rng)
    good = json.dumps(fam.task_json(fam.sample(0.2, rng)))
    cases = {"no json here": "no JSON object", "{not json": "no JSON object", "[1, 2]": None, "{}": None}
    for answer, words in cases.items():
        task, reason = env_model.judge_answer(fam, answer, root)
        assert task is None and reason, answer
        if words:
            assert words in reason
    task, reason = env_model.judge_answer(fam, f"Here it is:\n```json\n{good}\n```", root)
    assert reason is None and task is not None and fam.validate(task) is None
    # a whole iteration: tiny-random answers garbage, so every request's tries are invalid
    tr = Trainer(llm_tiny("env.tries=2"), torch.device("cpu"))
    r = tr.step()
    invalid = [e for kind, e in r.events if kind == EventKind.VARIANT_INVALID]
    assert r.metrics[metrics.INVALID] == len(invalid)
    assert all(e["reason"] for e in invalid)
    requested = {e["slot"] for e in invalid}
    assert all(s not in tr.pool.pending for s in requested)


def test_the_environment_model_prompt_holds_the_root_task_and_the_critic():
    fam = load_family("text_arithmetic")
    rng = __import__("numpy").random.default_rng(1)
    root, now = fam.sample(0.2, rng), fam.sample(0.4, rng)
    critic = {"ops": {"+": 2}, "high_risk_steps": [{"step": 1, "text": "value = 9", "judge": ["wrong \\boxed{-1}"]}]}
    text = env_model.request_prompt(fam, VariantRequest(0, root, now, "easier", 0.1, critic))
    assert json.dumps(fam.task_json(root)) in text and json.dumps(fam.task_json(now)) in text
    assert "easier" in text and "wrong \\\\boxed{-1}" in text and fam.variant_schema() in text


def test_generation_is_reproducible_from_the_runs_generator():
    tr = Trainer(llm_tiny(), torch.device("cpu"))
    tok = tr.backend.tok
    prompts = [chat_ids(tok, [{"role": "user", "content": "count"}])] * 3
    how = Sampling(8, temperature=1.0)
    from rla_engine.llm.generation import sample
    a = sample(tr.backend.policy, tok, prompts, how, torch.Generator().manual_seed(5))
    b = sample(tr.backend.policy, tok, prompts, how, torch.Generator().manual_seed(5))
    assert a == b and len(a) == 3


@pytest.mark.parametrize("lora", [0, 4])
def test_copies_of_a_prompt_share_its_prefix_and_answer_as_the_prompt_repeated(lora):
    """m judge samples encode their prompt once; with prompts of different lengths (left padding)
    the greedy answers are those of each prompt asked m times over."""
    if lora:
        pytest.importorskip("peft")
    from rla_engine.llm.generation import sample
    tr = Trainer(llm_tiny(f"lm.lora_rank={lora}"), torch.device("cpu"))
    model, tok = tr.backend.judge_lm, tr.backend.judge_tok
    prompts = [chat_ids(tok, [{"role": "user", "content": text}])
               for text in ("value = 3", "a much longer prompt about apples, pears and the number 12", "x")]
    how = Sampling(10, greedy=True)
    shared = sample(model, tok, prompts, how, None, copies=3)
    repeated = sample(model, tok, [p for p in prompts for _ in range(3)], how, None)
    assert shared == repeated and len(shared) == 9


def test_a_family_without_a_procedural_model_refuses_env_proposer_procedural(monkeypatch):
    from rla_engine.errors import InputError
    from rla_engine.tasks.text_base import TextFamily
    fam = load_family("text_arithmetic")
    assert fam.has_procedural_model()
    monkeypatch.setattr(type(fam), "mutate", TextFamily.mutate)       # as a dataset family would have it
    assert not fam.has_procedural_model()
    with pytest.raises(InputError, match=r"env\.proposer"):
        Trainer(llm_tiny("env.proposer=procedural"), torch.device("cpu"))


def test_the_oracle_in_place_of_a_language_model_judge_is_readable_and_not_trained():
    """judge.source = oracle on a text family: the verdicts are the labels, the samples
    the console shows say so, and the judge model is not updated."""
    tr = Trainer(llm_tiny("judge.source=oracle"), torch.device("cpu"))
    before = [p.clone() for p in tr.backend.judge_lm.parameters() if p.requires_grad]
    result = tr.step()
    assert metrics.LOSS_JUDGE not in result.metrics
    after = [p for p in tr.backend.judge_lm.parameters() if p.requires_grad]
    assert all(torch.equal(a, b) for a, b in zip(before, after))
    samples = [p for kind, p in result.events if kind == EventKind.SAMPLES]
    steps = [s for t in samples[0]["trajectories"] for turn in t["turns"] for s in turn["steps"]]
    assert steps and all(r.startswith("(oracle") for s in steps for r in s["reasoning"])
    assert all(v == [s["oracle"]] * len(v) for s in steps for v in [s["verdicts"]])
