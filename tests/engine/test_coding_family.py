"""The coding family (rla_engine/tasks/coding*.py): the text_base contract, every template's
reference and wrong programs run in the real sandbox, scoring (sandbox errors not counted against
the program), the procedural environment model and the defensive JSON reader."""
import json

import numpy as np
import pytest

from rla_engine.sandbox import Execution, SandboxPool, Status
from rla_engine.tasks import coding, family_spec
from rla_engine.tasks.coding_run import extract_program
from rla_engine.tasks.coding_templates import draw_knobs, build_params
from rla_engine.tasks.task import TRAIN_SEEDS, Task

import text_family_checks as checks

FAM = coding.FAMILY


class CountingPool:
    """The real pool, counting its calls; `broken` job indices come back as sandbox errors."""

    def __init__(self, pool, broken=()):
        self.pool, self.broken, self.calls = pool, set(broken), 0

    def run(self, jobs):
        self.calls += 1
        out = self.pool.run(jobs)
        return [Execution(Status.SANDBOX_ERROR, b"", b"", 0.0, None, "slot lost") if i in self.broken else e
                for i, e in enumerate(out)]


@pytest.fixture(scope="module")
def pool():
    with SandboxPool() as p:        # isolated (bubblewrap): CI installs it
        FAM.use_sandbox(p)
        yield p


def _task(name, d, seed=0):
    t = coding.TEMPLATES[name]
    rng = np.random.default_rng(seed)
    params = build_params(t, draw_knobs(t, max(d, t.base), rng), rng)
    return Task(FAM.name, params, TRAIN_SEEDS[0])


def answer(program):
    return [f"Let me think.\n```python\n{program}```\nDone."]


SUM = "n = int(input())\na = list(map(int, input().split()))\n"


def _sum_task():
    t = coding.TEMPLATES["sum_extremes"]
    rng = np.random.default_rng(1)
    return Task(FAM.name, build_params(t, coding.Knobs(0.5, 0.5, 0, 0), rng), TRAIN_SEEDS[0])


def test_registered_as_a_text_family():
    spec = family_spec("coding")
    assert spec.kind == "text" and spec.load() is FAM and FAM.max_turns == 1 and not FAM.lines_are_steps
    assert len(coding.TEMPLATES) >= 10


def test_every_reference_passes_its_tests_in_the_sandbox(pool):
    tasks = [_task(name, d, seed=i) for i, name in enumerate(coding.TEMPLATES) for d in (0.0, 0.5, 1.0)]
    assert all(len(t.params["test_input"]) >= 4 and FAM.validate(t) is None for t in tasks)
    results = FAM.respond_all([FAM.start(t) for t in tasks], [answer(FAM.reference(t)) for t in tasks])
    for t, r in zip(tasks, results):
        assert r.success and r.score == 1.0 and r.labels == [1] and r.done, (t.params["template"], r.infos)


def test_every_wrong_program_fails_a_test(pool):
    rng = np.random.default_rng(2)
    tasks = [_task(name, 0.5, seed=i) for i, name in enumerate(coding.TEMPLATES)]
    wrong = [FAM.wrong_programs(t, rng, 2) for t in tasks]
    assert all(wrong), [t.params["template"] for t, w in zip(tasks, wrong) if not w]
    eps = [FAM.start(t) for t, ws in zip(tasks, wrong) for _ in ws]
    results = FAM.respond_all(eps, [answer(w) for ws in wrong for w in ws])
    assert all(not r.success and r.score < 1 and r.labels == [-1] for r in results)
    assert all(w != FAM.reference(t) for t, ws in zip(tasks, wrong) for w in ws)


@pytest.mark.parametrize("program, statuses, score", [
    (SUM + "print(sum(a))\n", {"ok"}, 1.0),
    (SUM + "print(sum(a) + (n > 1))\n", {"ok", "wrong_answer"}, None),      # an off-by-one on longer lists
    (SUM + "print(sum(a)\n", {"runtime_error"}, 0.0),                     # a syntax error
    (SUM + "while n == 1:\n    pass\nprint(sum(a))\n", {"timeout", "ok"}, None),   # loops on the one-number test
])
def test_respond_scores_the_tests_passed(pool, program, statuses, score):
    task = _sum_task()
    task.params["test_time_limit"] = 1.0          # the shortest limit: the timeout case costs 1 s
    r = FAM.start(task).respond(answer(program))
    info = r.infos[0]
    assert set(info["statuses"]) == statuses and info["total"] == len(task.params["test_input"])
    assert r.score == (score if score is not None else info["passed"] / info["total"]) and r.observation == \
        "Program received."
    assert r.success is (score == 1.0) and r.labels == [1 if score == 1.0 else -1]
    if score != 1.0:
        ff = info["first_failure"]
        assert ff["status"] != "ok" and len(ff["input"]) <= 201 and "expected" in ff and "got" in ff
    json.dumps(r.infos)


def test_no_code_block_runs_nothing():
    task = _sum_task()
    counting = CountingPool(None)
    FAM_alone = coding.CodingFamily()
    FAM_alone.use_sandbox(counting)
    for text in ("print(1)", "```py\nprint(1)\n```", ""):
        r = FAM_alone.start(task).respond([text])
        assert not r.success and r.score == 0.0 and set(r.infos[0]["statuses"]) == {"no_code"}
    assert counting.calls == 0
    assert extract_program("```python\na\n```\n```python\n b \n```") == "b"       # the last block, stripped


def test_sandbox_errors_are_not_counted_against_the_program(pool):
    task = _sum_task()
    fam = coding.CodingFamily()
    fam.use_sandbox(CountingPool(pool, broken={0, 1}))
    r = fam.start(task).respond(answer(SUM + "print(sum(a))\n"))
    assert r.success and r.score == 1.0 and r.infos[0]["sandbox_errors"] == 2 and r.labels == [1]
    n = len(task.params["test_input"])
    fam.use_sandbox(CountingPool(pool, broken=range(n)))
    r = fam.start(task).respond(answer(SUM + "print(sum(a))\n"))
    assert r.score is None and not r.success and r.labels == [0] and r.infos[0]["sandbox_errors"] == n


def test_respond_all_makes_one_sandbox_call_and_keeps_order(pool):
    task = _sum_task()
    fam = coding.CodingFamily()
    counting = CountingPool(pool)
    fam.use_sandbox(counting)
    programs = [SUM + "print(sum(a))\n", "no code here", SUM + "print(0)\n", SUM + "print(sum(a))\n"]
    eps = [fam.start(task) for _ in programs]
    res = fam.respond_all(eps, [answer(p) if p.startswith("n =") else [p] for p in programs])
    assert counting.calls == 1 and [r.success for r in res] == [True, False, False, True]
    assert res[1].infos[0]["has_code"] is False
    again = eps[0].respond(answer("print(1)"))              # after done: never raises, runs nothing
    assert again.done and again.success and again.labels == [-1] and counting.calls == 1
    runs = fam.run_programs(["print(input())", "print(2)"], [[("1\n", "1"), ("2\n", "2")], [("x", "3")]], 1.0)
    assert [[e.status.value for e in r] for r in runs] == [["ok", "ok"], ["wrong_answer"]] and counting.calls == 2
    # the test judge's path: responses, each on its own tests under its task's time limit
    runs = fam.run_responses([task] * 3, ["```python\nprint(input())\n```", "no program", "```python\nprint(7)```"],
                             [[("1\n", "1")], [("1\n", "1"), ("2\n", "2")], [("1\n", "1")]])
    assert [[e.status.value for e in r] for r in runs] == [["ok"], ["runtime_error"] * 2, ["wrong_answer"]]
    assert counting.calls == 3


def test_the_runs_settings_set_memory_and_output_limits(pool):
    fam = coding.CodingFamily()
    fam.use_sandbox(pool, memory_mb=256, output_bytes=1000)
    [[big], [fine]] = fam.run_programs(["print('x' * 5000)", "print('x' * 500)"], [[("", "")], [("", "x" * 500)]], 1)
    assert big.status.value == "output_limit" and fine.status.value == "ok"


def test_instruction_and_describe():
    task = _sum_task()
    text = FAM.instruction(task)
    assert task.params["question"] in text and "```python" in text and "input()" in text and "print()" in text
    desc = FAM.describe(task)
    assert desc["text"] == task.params["question"] and len(desc["tests"]) == 3 and desc["template"] == "sum_extremes"
    json.dumps(desc)


def test_difficulty_follows_the_target():
    checks.check_difficulty_follows_the_target(FAM, 4, seed=2)


def test_held_out_tasks_are_disjoint_from_training_tasks():
    checks.check_held_out_is_disjoint(FAM, (0.0, 0.1), 30)


def test_mutate_moves_difficulty_the_asked_way():
    rng = np.random.default_rng(3)
    for d in (0.1, 0.3, 0.5, 0.7, 0.9):
        for direction, sign in (("harder", 1), ("easier", -1)):
            task = FAM.sample(d, rng)
            new = FAM.mutate(task, direction, {"focus": str(rng.choice(["size", "edge", "twist", None]))}, rng)
            delta = FAM.difficulty(new.params) - FAM.difficulty(task.params)
            assert 0 < sign * delta <= 0.15 + 1e-9, (d, direction, delta)
            assert FAM.validate(new) is None and new.params != task.params
            assert new.params["template"] == task.params["template"] and TRAIN_SEEDS[0] <= new.seed < TRAIN_SEEDS[1]
    top = FAM.sample(1.0, rng)
    new = FAM.mutate(top, "harder", {}, rng)         # nothing harder: fresh tests, same difficulty
    assert FAM.validate(new) is None and new.params != top.params
    with pytest.raises(ValueError):
        FAM.mutate(top, "sideways", {}, rng)


def test_critic_names_the_failures():
    task = _sum_task()
    n = len(task.params["test_input"])
    slow = {"passed": 0, "total": n, "statuses": ["timeout"] * n}
    half = {"passed": n - 1, "total": n, "statuses": ["ok"] * (n - 1) + ["wrong_answer"]}
    out = FAM.critic(task, [(0, slow), (1, half)])
    assert out["focus"] == "size" and out["statuses"] == {"timeout": n, "ok": n - 1, "wrong_answer": 1}
    assert out["test_pass_rate"][-1] == 0.0 and out["test_pass_rate"][0] == 0.5 and out["solved"] == 0
    json.dumps(out)
    assert FAM.critic(task, [])["focus"] is None


def test_json_round_trip_and_rewrites():
    checks.check_json_round_trip(FAM, seed=5)
    task = _sum_task()
    data = FAM.task_json(task)
    assert set(data) == {"question", "test_method", "test_time_limit", "test_input", "test_output"}
    rewrite = FAM.from_json({**data, "question": data["question"] + " Be quick.", "test_time_limit": 99}, task)
    assert rewrite.params["knobs"] is None and FAM.difficulty(rewrite.params) is None
    assert rewrite.params["template"] == "sum_extremes" and rewrite.params["test_time_limit"] == 10.0
    assert FAM.validate(rewrite) is None
    assert FAM.from_json({**data, "test_time_limit": 0.2}, task).params["test_time_limit"] == 1.0


def _bad_cases():
    d = FAM.task_json(_sum_task())
    ins, outs = d["test_input"], d["test_output"]
    return [
        None, [], "a task", {},
        {**d, "test_input": ["x" * 20_000, *ins[1:]]},                       # a giant string
        {**d, "test_input": ["1\n5\n"] * 3000, "test_output": ["5\n"] * 3000},   # too many tests
        {**d, "test_input": [1, *ins[1:]]}, {**d, "test_output": [None, *outs[1:]]},   # not strings
        {**d, "test_input": ins[:-1]},                                        # lengths differ
        {**d, "test_input": ins[:3], "test_output": outs[:3]},                # fewer than 4 tests
        {**d, "test_time_limit": "4"}, {**d, "test_time_limit": float("nan")}, {**d, "test_time_limit": True},
        {**d, "test_time_limit": -1}, {**d, "test_time_limit": float("inf")},
        {**d, "test_method": "function"}, {**d, "question": ""}, {**d, "question": 5},
        {**d, "question": "q" * 5000}, {**d, "answer": 3}, {k: v for k, v in d.items() if k != "test_output"},
    ]


@pytest.mark.parametrize("case", range(21))
def test_from_json_rejects_malformed_values(case):
    bad = _bad_cases()
    assert len(bad) == 21
    checks.check_rejected(FAM, bad[case], _sum_task())


def test_validate_rejects_tests_that_tell_nothing():
    task = _sum_task()
    data = FAM.task_json(task)
    same = FAM.from_json({**data, "test_output": ["3\n"] * len(data["test_output"])}, task)
    assert "same output" in FAM.validate(same)
    dup = FAM.from_json({**data, "test_input": [data["test_input"][0]] * 2 + data["test_input"][2:]}, task)
    assert "different expected output" in FAM.validate(dup)
    tampered = Task(FAM.name, {**task.params, "test_output": ["0\n", *task.params["test_output"][1:]]}, 0)
    assert "not the template's" in FAM.validate(tampered)
    assert FAM.validate(Task("text_world", task.params, 0)) is not None


def test_from_json_never_crashes_on_garbled_tasks():
    checks.check_from_json_never_crashes(FAM, 300, seed=7)


def test_eval_sets_default():
    checks.check_eval_sets(FAM, 3)


def test_imports_without_torch():
    checks.check_imports_without_torch("rla_engine.tasks.coding")


def test_the_environment_models_prompt_cuts_long_tests_and_keeps_the_task_whole():
    """A long test is cut in the prompt (its length said); task_json and the rebuilt task keep it whole."""
    from rla_engine.llm.env_model import request_prompt
    from rla_engine.loop.backend import VariantRequest
    task = FAM.sample(1.0, np.random.default_rng(5))
    longest = max(task.params["test_input"], key=len)
    assert len(longest) > 100
    prompt = request_prompt(FAM, VariantRequest(0, task, task, "easier", 0.0, {}))
    assert longest not in prompt and f"… ({len(longest)} characters in all)" in prompt
    assert FAM.task_json(task)["test_input"] == task.params["test_input"]
