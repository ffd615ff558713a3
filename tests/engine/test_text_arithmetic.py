"""The text arithmetic family (rla_engine/tasks/text_arithmetic.py): the text_base contract, the
per-line oracle, difficulty, held-out disjointness, the procedural environment model and the
defensive JSON parser."""
import json

import numpy as np
import pytest

from rla_engine.tasks import text_arithmetic
from rla_engine.tasks.task import TRAIN_SEEDS, Task
from rla_engine.tasks.text_arithmetic_parse import VMAX

import text_family_checks as checks

FAM = text_arithmetic.FAMILY
GRID = checks.GRID
MIA = {"name": "Mia", "item": "apples", "start": 5, "ops": [["+", 3], ["*", 2], ["-", 4]]}     # 8, 16, 12


def _task(params=MIA):
    return Task(FAM.name, json.loads(json.dumps(params)), TRAIN_SEEDS[0])


def correct_lines(params):
    """The scripted solver: the running values, then the boxed answer."""
    vals = text_arithmetic.values(params)
    return [f"value = {v}" for v in vals] + [f"\\boxed{{{vals[-1]}}}"]


def _play(lines, params=MIA):
    return FAM.start(_task(params)).respond(lines)


def test_scripted_solver_succeeds_across_difficulties():
    rng = np.random.default_rng(0)
    for d in GRID:
        for _ in range(3):
            task = FAM.sample(d, rng)
            assert FAM.validate(task) is None and FAM.turns(task) == 1
            lines = correct_lines(task.params)
            res = FAM.start(task).respond(lines)
            assert res.done and res.success and res.labels == [1] * len(lines)
            assert [i["kind"] for i in res.infos] == ["value"] * (len(lines) - 1) + ["answer"]
            assert [i["op"] for i in res.infos[:-1]] == [op for op, _ in task.params["ops"]]
            values = [task.params["start"], *text_arithmetic.values(task.params)]
            assert all(0 <= v <= VMAX for v in values)
            json.dumps(res.infos)


@pytest.mark.parametrize("lines, labels, success", [
    # a wrong value is −1; the next is judged from the written (wrong) value, as the embedded family does
    (["value = 8", "value = 15", "value = 11", "\\boxed{11}"], [1, -1, 1, -1], False),
    (["value = 8", "value = 16", "value = 12", "\\boxed{13}"], [1, 1, 1, -1], False),
    # a blank line or prose is a bad step but does not fail the episode
    (["value = 8", "", "value = 16", "value = 12", "\\boxed{12}"], [1, -1, 1, 1, 1], True),
    (["Let me think.", "value = 8", "value = 16", "value = 12", "\\boxed{12}"], [-1, 1, 1, 1, 1], True),
    # the line after the k-th value is the answer, boxed or not; anything after it is junk
    (["value = 8", "value = 16", "value = 12", "value = 12", "\\boxed{12}"], [1, 1, 1, 1, -1], True),
    (["value = 8", "value = 16", "value = 12", "value = 13"], [1, 1, 1, -1], False),
    (["value = 8", "value = 16", "value = 12", "\\boxed{12}", "done"], [1, 1, 1, 1, -1], True),
    (["value = 8", "value = 16", "value = 12", "\\boxed{12}", "\\boxed{13}"], [1, 1, 1, 1, -1], True),
    # without an answer line the k-th value is the answer; a line's last number is what it wrote
    (["value = 8", "value = 16", "value = 12"], [1, 1, 1], True),
    (["5 + 3 = 8", "8 * 2 = 16 apples", "So 16 - 4 = 12."], [1, 1, 1], True),
    # the answer alone is right but the derivation is missing
    (["\\boxed{12}"], [1], False),
    (["value = 8", "value = 16", "\\boxed{12}"], [1, 1, 1], False),
    # lenient formatting: case, spaces, markdown, a trailing period, text around the box
    (["Value = 8.", "**value=16**", "`value = 12`", "The answer is $\\boxed{ 12 }$."], [1, 1, 1, 1], True),
    # malformed numbers never raise
    (["value = eight", "value = 99999999999999999999", "value = -3", "\\boxed{twelve}"], [-1, -1, -1, -1], False),
    ([], [], False),
])
def test_line_labels(lines, labels, success):
    res = _play(lines)
    assert res.labels == labels and res.success is success and res.done
    assert len(res.infos) == len(lines)
    assert "12" not in res.observation          # the observation tells nothing of the outcome


def test_infos_name_the_operation():
    res = _play(["value = 8", "value = 15", "oops", "\\boxed{11}"])
    assert res.infos == [
        {"kind": "value", "op": "+", "index": 0, "right": True},
        {"kind": "value", "op": "*", "index": 1, "right": False},
        {"kind": "junk", "op": None, "index": None, "right": False},
        {"kind": "answer", "op": None, "index": None, "right": False}]


def test_respond_after_done_never_raises():
    ep = FAM.start(_task())
    assert ep.respond(correct_lines(MIA)).success
    again = ep.respond(["value = 8"])
    assert again.done and again.success and again.labels == [-1]


def test_instruction_and_describe():
    task = _task()
    text = FAM.instruction(task)
    assert "Mia has 5 apples." in text and "value = N" in text and "\\boxed{N}" in text and len(text) < 400
    desc = FAM.describe(task)
    assert desc["answer"] == 12 and desc["values"] == [8, 16, 12] and "Mia" in desc["text"]
    json.dumps(desc)
    hard = FAM.sample(1.0, np.random.default_rng(1))
    assert len(FAM.instruction(hard)) < 700


def test_difficulty_follows_the_target():
    checks.check_difficulty_follows_the_target(FAM, 6, seed=2)
    assert FAM.difficulty(MIA) == pytest.approx(0.5 * 2 / 7 + 0.3 * 0.5 / 0.75 + 0.2 * 0.0)


def test_held_out_tasks_are_disjoint_from_training_tasks():
    checks.check_held_out_is_disjoint(FAM, (0.0, 0.1), 60)        # the smallest problem spaces


def test_mutate_moves_difficulty_the_asked_way():
    rng = np.random.default_rng(3)
    for d in (0.1, 0.3, 0.5, 0.7, 0.9):
        for direction, sign in (("harder", 1), ("easier", -1)):
            task = FAM.sample(d, rng)
            critic = FAM.critic(task, list(enumerate(_play_wrong(task))))
            new = FAM.mutate(task, direction, critic, rng)
            delta = FAM.difficulty(new.params) - FAM.difficulty(task.params)
            assert 0 < sign * delta <= 0.15 + 1e-9, (d, direction, delta)
            assert FAM.validate(new) is None and new.params != task.params
            assert TRAIN_SEEDS[0] <= new.seed < TRAIN_SEEDS[1]
    with pytest.raises(ValueError):
        FAM.mutate(_task(), "sideways", {}, rng)


def _play_wrong(task):
    lines = correct_lines(task.params)
    lines[0] = "value = 1000"
    return FAM.start(task).respond(lines).infos


def test_mutate_works_on_the_critics_operator():
    rng = np.random.default_rng(4)
    plus = {"name": "Ben", "item": "coins", "start": 3, "ops": [["+", 2], ["+", 4], ["+", 1]]}
    harder = FAM.mutate(_task(plus), "harder", {"focus": "*"}, rng)
    assert any(op == "*" for op, _ in harder.params["ops"])
    mixed = {"name": "Ben", "item": "coins", "start": 3, "ops": [["*", 2], ["+", 4], ["*", 3], ["+", 1], ["-", 5]]}
    for _ in range(5):
        easier = FAM.mutate(_task(mixed), "easier", {"focus": "*"}, rng)
        muls = [n for op, n in easier.params["ops"] if op == "*"]
        assert len(muls) < 2 or max(muls) < 3        # one "*" fewer, or a smaller one
    # the edge: nothing harder than the top, yet always a fresh valid task within 0.15
    top = FAM.sample(1.0, rng)
    new = FAM.mutate(top, "harder", {"focus": "garbage"}, rng)
    assert FAM.validate(new) is None and new.params != top.params
    assert abs(FAM.difficulty(new.params) - FAM.difficulty(top.params)) <= 0.15


def test_critic_counts_operations():
    infos = _play(["value = 9", "value = 15", "hello", "\\boxed{3}"]).infos
    risky = [(i, info) for i, info in enumerate(infos)]
    out = FAM.critic(_task(), risky)
    assert out["ops"] == {"+": 1, "-": 0, "*": 1} and out["junk"] == 1 and out["answer"] == 1
    assert out["focus"] == "*" and out["n"] == 4 and out["steps"] == [0, 1, 2, 3]
    json.dumps(out)
    assert FAM.critic(_task(), [])["focus"] in ("+", "-", "*")


def test_json_round_trip():
    checks.check_json_round_trip(FAM, seed=5)
    assert "0..999" in FAM.variant_schema()


def test_from_json_is_lenient_where_the_intent_is_clear():
    got = FAM.from_json({"start": 5.0, "ops": [["×", 3], ["−", 2], ["x", 2]]}, _task()).params
    assert got == {"name": "Mia", "item": "apples", "start": 5, "ops": [["*", 3], ["-", 2], ["*", 2]]}


BAD = [
    None, [], "a story", 7, True, {},
    {"start": 5},                                                # missing ops
    {"ops": [["+", 1]]},                                         # missing start
    {**MIA, "start": -1}, {**MIA, "start": 1000}, {**MIA, "start": 10**30}, {**MIA, "start": float("nan")},
    {**MIA, "start": 2.5}, {**MIA, "start": "5"}, {**MIA, "start": True}, {**MIA, "start": None},
    {**MIA, "ops": []}, {**MIA, "ops": [["+", 1]] * 9}, {**MIA, "ops": "+3"}, {**MIA, "ops": {"+": 3}},
    {**MIA, "ops": [["/", 2]]}, {**MIA, "ops": [["+"]]}, {**MIA, "ops": [["+", 1, 2]]}, {**MIA, "ops": [[None, 1]]},
    {**MIA, "ops": [["+", 0]]}, {**MIA, "ops": [["*", 1]]}, {**MIA, "ops": [["*", 10]]}, {**MIA, "ops": [["+", -3]]},
    {**MIA, "ops": [["-", 6]]},                                  # 5 − 6 goes below 0
    {**MIA, "ops": [["*", 9], ["*", 9], ["*", 9]]},              # 3645 goes above 999
    {**MIA, "name": "Bob"}, {**MIA, "name": 3}, {**MIA, "item": "unicorns"}, {**MIA, "name": "x" * 10000},
    {**MIA, "answer": 12},                                       # unknown key
    {**MIA, "ops": [[["+"], 1]]}, {**MIA, "ops": [["+", [1]]]},
]



def test_from_json_never_crashes_on_garbled_tasks():
    checks.check_from_json_never_crashes(FAM, 600, seed=7)

@pytest.mark.parametrize("data", BAD, ids=range(len(BAD)))
def test_from_json_rejects_malformed_values(data):
    checks.check_rejected(FAM, data, _task())


def test_validate_reports_the_same_reasons():
    assert FAM.validate(_task()) is None
    assert "leaves 0..999" in FAM.validate(Task(FAM.name, {**MIA, "ops": [["-", 6]]}, 0))
    assert FAM.validate(Task("text_world", MIA, 0)) is not None


def test_eval_sets_default():
    checks.check_eval_sets(FAM, 3)


def test_text_families_import_without_torch():
    checks.check_imports_without_torch("rla_engine.tasks.text_arithmetic", "rla_engine.tasks.text_world")
