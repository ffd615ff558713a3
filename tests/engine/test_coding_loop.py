"""The coding setting through the whole loop (judge.kind = tests): programs run in the sandbox,
the test generator's tests parsed and run, rewards equal to the pure reference, the measures,
the samples event, a kill and a resume. Scripted programs and tests (policy.source = scripted,
judge.source = oracle: diagnostics whose correctness is known) stand in for a model that can
code; tiny-random plays the learned roles."""
import math

import pytest
import torch

from rla_engine import metrics, rewards
from rla_engine.config import ConfigError, build
from rla_engine.llm import generated_tests
from rla_engine.loop.trainer import Trainer
from rla_engine.store import open_store
from rla_engine.tasks import coding_run
from rla_engine.vocabulary import EventKind

from engine_support import killed_then_resumed, only_run, rla

SCRIPTED = ("policy.source=scripted", "judge.source=oracle", "env.proposer=procedural")


@pytest.fixture(autouse=True)
def _model_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("RLA_MODEL_CACHE", str(tmp_path_factory.getbasetemp() / "models"))


def coding(*sets):
    return build(preset="llm-code-tiny", sets=list(sets))


def comparable(by_iteration):
    return {it: {k: v for k, v in m.items() if not metrics.is_machine_key(k)} for it, m in by_iteration.items()}


def test_a_scripted_run_through_rla_run_measures_the_tests_and_resumes_exactly_after_a_kill(tmp_path):
    """`rla run` end to end: every iteration has the test generator's figures and the executions'
    shares; the samples show each program's ground truth and generated tests; a run killed after
    an iteration and resumed stores exactly what an uninterrupted one does."""
    sets = [a for s in (*SCRIPTED, "eval.every=3") for a in ("--set", s)]
    straight = rla("run", "--preset", "llm-code-tiny", *sets, "--iterations", "3", "--seed", "3",
                   db=tmp_path / "a.db", timeout=240)
    assert straight.returncode == 0, straight.stderr
    store = open_store(tmp_path / "a.db")
    run = only_run(store)
    by_it = store.metrics_by_iteration(run["id"])
    assert sorted(by_it) == [1, 2, 3]
    for values in by_it.values():
        shares = [values[metrics.exec_status_key(s)] for s in metrics.EXEC_STATUSES]
        assert math.isclose(sum(shares), 1.0), shares
        assert values[metrics.SANDBOX_ERRORS] == 0 and values[metrics.NO_PROGRAM] == 0
        assert values[metrics.TEST_PARSE_FAILURES] == 0       # scripted tests are written in the official format
        assert values[metrics.EXEC_SECONDS] > 0
    # even odds of right and wrong programs and tests: over 3 iterations both kinds are there
    assert any(v[metrics.exec_status_key("ok")] > 0 for v in by_it.values())
    assert any(v[metrics.exec_status_key("wrong_answer")] > 0 for v in by_it.values())
    assert any(0 <= v.get(metrics.SYN_UT_ACC, -1) < 1 for v in by_it.values())
    events = store.events(run["id"])
    sandbox = [e["payload"] for e in events if e["kind"] == EventKind.SANDBOX]
    assert len(sandbox) == 1 and sandbox[0]["level"] == "bubblewrap" and sandbox[0]["require"] == "isolated"
    assert all(g["holds"] for g in sandbox[0]["guarantees"])
    trajectories = [t for e in events if e["kind"] == EventKind.SAMPLES for t in e["payload"]["trajectories"]]
    for t in trajectories:
        truth, tests = t["ground_truth"], t["unit_tests"]
        assert (truth["passed"] == truth["total"]) == t["success"] and truth["total"] >= 4
        assert len(tests) == 4 and all(u["readable"] and u["result"] in metrics.EXEC_STATUSES for u in tests)
        assert "```python" in t["turns"][0]["steps"][0]["text"]

    resumed = killed_then_resumed(tmp_path / "b.db", "--preset", "llm-code-tiny", *sets, "--iterations", "3",
                                  "--seed", "3", timeout=240)
    assert comparable(resumed) == comparable(by_it)


def test_an_iterations_rewards_equal_the_pure_reference():
    """The trainer's policy advantages and test-generator rewards, recomputed per task with
    rla_engine.rewards from what the sandbox reported (docs/coding.md)."""
    tr = Trainer(coding(*SCRIPTED, "rollout.rollouts_per_task=5", "rollout.tasks_per_iter=4", "task.pool_size=4"),
                 torch.device("cpu"))
    batch = tr._sample_and_roll_out(1)
    batch.judgement = tr._judge(batch.episodes)
    tr._decide_candidates(batch)
    got = tr._rewards(batch)
    ep, judgement, r = batch.episodes, batch.judgement, batch.rollouts
    assert isinstance(judgement, generated_tests.TestsJudgement)
    trained_tests = 0
    for g in range(ep.groups):
        rows = range(g * r, (g + 1) * r)
        ratios = [float(ep.graded()[b]) for b in rows]
        assert ratios == pytest.approx([s[0].info["passed"] / s[0].info["total"] for s in ep.steps[g * r:(g + 1) * r]])
        expected = rewards.coding_policy_rewards(ratios)
        assert torch.allclose(got.policy_advantages[g * r:(g + 1) * r, 0], torch.tensor(expected), atol=1e-6)
        correct = [bool(ep.success[b]) for b in rows]
        passes = [[None if res == "" else res == "ok" for res in test] for test in judgement.results[g]]
        tests = rewards.unit_test_rewards(passes, correct)
        if tests is None or not rewards.coding_policy_trained(correct):
            assert not got.judge[g * r].any()
        else:
            trained_tests += 1
            assert torch.allclose(got.judge[g * r, 0], torch.tensor(tests, dtype=torch.float32), atol=1e-6)
        assert not got.judge[g * r + 1:(g + 1) * r].any()      # one cell per group holds its tests' rewards
    # what the Ray executor does with two judge workers: each judges its part, the parts are joined
    half = ep.groups // 2
    parts = [generated_tests.judge_from_texts(tr.family, ep.part(lo, hi), judgement.texts[lo:hi])
             for lo, hi in ((0, half), (half, ep.groups))]
    joined = tr.backend.join_judgements(parts, [0, half * r])
    assert torch.equal(joined.verdicts, judgement.verdicts) and joined.cells == judgement.cells
    assert joined.results == judgement.results and joined.tests == judgement.tests
    assert [joined.flat(b, 0) for b in range(len(ep.steps))] == [b // r for b in range(len(ep.steps))]
    # the environment model's critic: each generated test of a task with its pass rate over the task's programs
    notes = tr.backend.critic_notes(ep, judgement, torch.arange(r), torch.zeros(r, dtype=torch.long))
    assert [n["pass_rate"] for n in notes] == [sum(x == "ok" for x in res) / r if test else None
                                              for test, res in zip(judgement.tests[0], judgement.results[0])]
    assert trained_tests        # the seeded draw holds a group in the band: the test generator's case is checked


def test_a_learned_test_generator_is_trained_on_the_tests_it_wrote(monkeypatch):
    """Scripted programs, the tiny judge LM as the test generator: its samples (here, texts a real
    generator could write: right and wrong tests) are parsed, run, rewarded and trained on."""
    cfg = coding("policy.source=scripted", "env.proposer=procedural", "rollout.rollouts_per_task=5",
                 "judge.ppo_epochs=1")
    tr = Trainer(cfg, torch.device("cpu"))
    tok = tr.backend.judge_tok
    script = tr.backend.script
    assert script is not None

    def sample(model, tokenizer, prompts, how, gen, copies=1):
        # one test per copy: the scripted generator's right and wrong tests, as tokens
        tasks = [t for t in tr._current_tasks for _ in range(copies)]
        return [tok(script.test(t), add_special_tokens=False)["input_ids"] for t in tasks]

    real_judge = generated_tests.judge_tests

    def judge_tests(family, model, tokenizer, ep, m, how, gen):
        tr._current_tasks = [ep.tasks[g * ep.rollouts] for g in range(ep.groups)]
        return real_judge(family, model, tokenizer, ep, m, how, gen)

    monkeypatch.setattr(generated_tests, "sample", sample)
    monkeypatch.setattr("rla_engine.llm.backend.judge_tests", judge_tests)
    before = [p.detach().clone() for p in tr.backend.judge_lm.parameters()]
    trained = []
    while len(trained) < 4 and not any(trained):    # a group in the band is likely at once, certain soon
        values = tr.step().metrics
        trained.append(values.get(metrics.JUDGE_TRAINED_SHARE, 0.0))
        assert values[metrics.TEST_PARSE_FAILURES] == 0
        assert values.get(metrics.LOSS_JUDGE) is not None or not trained[-1]
    assert max(trained) > 0, trained
    assert any(not torch.equal(a, b) for a, b in zip(before, tr.backend.judge_lm.parameters()))


def test_a_tiny_model_writing_programs_and_tests_runs_the_whole_loop():
    """tiny-random as policy and test generator: nothing it writes is a program or a readable test,
    and the loop says so instead of failing."""
    tr = Trainer(coding("policy.max_new_tokens=8", "judge.max_new_tokens=8"), torch.device("cpu"))
    values = tr.step().metrics
    assert values[metrics.NO_PROGRAM] == 1.0 and values[metrics.TEST_PARSE_FAILURES] == 1.0
    assert values[metrics.SUCCESS] == 0.0 and metrics.exec_status_key("ok") not in values


@pytest.mark.parametrize("sets, key", [
    (["task.family=keyrooms", "policy.model_path=", "judge.kind=tests"], "judge.kind"),
    (["judge.unanimous=batch"], "judge.unanimous"),
    (["policy.step_verdicts=failures"], "policy.step_verdicts"),
    (["policy.source=scripted"], "env.proposer"),
    (["task.family=text_arithmetic", "judge.kind=steps", "policy.source=scripted", "env.proposer=procedural"],
     "policy.source"),
])
def test_options_that_would_be_ignored_are_refused_naming_the_field(sets, key):
    with pytest.raises(ConfigError) as e:
        coding(*sets)
    assert e.value.key == key


def test_the_ground_truth_of_a_task_is_what_its_reference_prints():
    """The scripted programs' ground truth: the sandbox agrees with the trusted reference run in-process."""
    tr = Trainer(coding(*SCRIPTED), torch.device("cpu"))
    task = tr.pool.active[0].task
    runs = tr.family.run_programs([tr.family.reference(task)], [coding_run.tests_of(task.params)], 2.0)
    assert [e.status.value for e in runs[0]] == ["ok"] * len(coding_run.tests_of(task.params))


def test_a_machine_without_isolation_refuses_a_coding_run_before_it_exists(tmp_path, monkeypatch):
    """sandbox.require = isolated (the default) where only rlimits work: one line naming what to do,
    and no run row; with sandbox.require = any the run starts and records the level it ran under."""
    from rla_engine import launch
    from rla_engine.sandbox import Isolation, SandboxUnavailable, pool
    monkeypatch.setattr(pool, "probe", lambda refresh=False: Isolation("process", [("no network", False, "none")]))
    with pytest.raises(SandboxUnavailable, match=r"sandbox\.require = isolated.*install bubblewrap"):
        launch.start_run(tmp_path / "x.db", "r", coding(*SCRIPTED, "run.iterations=1"), out=lambda _: None)
    assert not (tmp_path / "x.db").exists() or not open_store(tmp_path / "x.db").list_runs()
    assert launch.start_run(tmp_path / "y.db", "r", coding(*SCRIPTED, "run.iterations=1", "sandbox.require=any"),
                            out=lambda _: None) == 0
    sandbox = [e["payload"] for e in open_store(tmp_path / "y.db").events("r") if e["kind"] == EventKind.SANDBOX]
    assert [s["level"] for s in sandbox] == ["process"] and sandbox[0]["guarantees"][0]["holds"] is False
