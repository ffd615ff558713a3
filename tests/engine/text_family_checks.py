"""Contract checks every procedural text family (rla_engine/tasks/text_base.py) passes; the
family test files call them with their family, then test what is their own."""
import itertools
import json
import random
import subprocess
import sys

import numpy as np
import pytest

from rla_engine.tasks.task import HELD_OUT_SEEDS, TRAIN_SEEDS

GRID = [round(x, 2) for x in np.linspace(0, 1, 11)]


def check_difficulty_follows_the_target(fam, per_tier, seed):
    """Sampled tasks lie within 0.05 of the asked difficulty, and their mean rises with it."""
    rng = np.random.default_rng(seed)
    means = []
    for d in GRID:
        got = [fam.difficulty(fam.sample(d, rng).params) for _ in range(per_tier)]
        assert max(abs(g - d) for g in got) <= 0.05, (d, got)
        means.append(np.mean(got))
    assert all(b > a for a, b in itertools.pairwise(means))


def check_held_out_is_disjoint(fam, ds, n):
    """Held-out seeds and tasks never meet training ones (at the smallest task spaces)."""
    for d in ds:
        train = [fam.sample(d, np.random.default_rng(s)) for s in range(n)]
        held = [fam.sample(d, np.random.default_rng(s), held_out=True) for s in range(n)]
        assert all(TRAIN_SEEDS[0] <= t.seed < TRAIN_SEEDS[1] for t in train)
        assert all(HELD_OUT_SEEDS[0] <= t.seed < HELD_OUT_SEEDS[1] for t in held)
        keys = [{json.dumps(t.params, sort_keys=True) for t in ts} for ts in (train, held)]
        assert not keys[0] & keys[1]


def check_json_round_trip(fam, seed):
    """task_json → JSON text → from_json rebuilds the same valid task, with a training seed."""
    rng = np.random.default_rng(seed)
    for d in GRID:
        task = fam.sample(d, rng)
        back = fam.from_json(json.loads(json.dumps(fam.task_json(task))), task)
        assert back.params == task.params and back.family == fam.name and fam.validate(back) is None
        assert fam.difficulty(back.params) == fam.difficulty(task.params)
        assert TRAIN_SEEDS[0] <= back.seed < TRAIN_SEEDS[1]


def check_rejected(fam, data, root):
    """from_json raises a ValueError of one short line."""
    with pytest.raises(ValueError) as err:
        fam.from_json(data, root)
    msg = str(err.value)
    assert msg and "\n" not in msg and len(msg) < 600


def check_eval_sets(fam, per_tier):
    """The default eval sets: a held-out set per tier of distinct tasks, each valid and near its tier."""
    sets = fam.eval_sets([0.2, 0.8], per_tier, lambda d: np.random.default_rng(int(d * 10)))
    assert [s.tier for s in sets] == [0.2, 0.8] and all(len(s.tasks) == per_tier for s in sets)
    assert all(len({t.seed for t in s.tasks}) == per_tier for s in sets), "a tier repeats one task"
    for s in sets:
        for t in s.tasks:
            assert HELD_OUT_SEEDS[0] <= t.seed and fam.validate(t) is None
            assert abs(fam.difficulty(t.params) - s.tier) <= 0.05


def check_imports_without_torch(*modules):
    """Importing the modules loads no torch (a fresh interpreter)."""
    code = (f"import sys; import {', '.join(modules)}; "
            "assert 'torch' not in sys.modules, 'torch was imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


_ATOMS = [None, True, False, 0, -1, 1, 2, 3.5, 1e308, float("nan"), "", "x", 10**20, [], {},
          "kitchen", "fridge", "mug", "living room", "+", "*", "Mia", "apples"]


def _garble(v, rnd, depth=0):
    """`v` with one part dropped or replaced by another JSON value (recursing into containers)."""
    if isinstance(v, (dict, list)) and v and rnd.random() < 0.8:
        v = dict(v) if isinstance(v, dict) else list(v)
        k = rnd.choice(list(v)) if isinstance(v, dict) else rnd.randrange(len(v))
        r = rnd.random()
        if r < 0.2:
            del v[k]
        else:
            v[k] = _garble(v[k], rnd, depth + 1) if r < 0.6 else rnd.choice(_ATOMS)
        return v
    if depth < 3 and rnd.random() < 0.3:
        return {rnd.choice(["rooms", "goal", "at", "ops", "start", "name"]): _garble(None, rnd, depth + 1)}
    return rnd.choice(_ATOMS)


def check_from_json_never_crashes(fam, n, seed):
    """Garbled versions of sampled tasks: from_json raises ValueError or gives a task whose
    validate() answers; a valid one can be played and described. Nothing else ever raises."""
    rnd, rng = random.Random(seed), np.random.default_rng(seed)
    roots = [fam.sample(d, rng) for d in (0.0, 0.5, 1.0)]
    accepted = 0
    for i in range(n):
        root = roots[i % len(roots)]
        data = _garble(json.loads(json.dumps(fam.task_json(root))), rnd)
        try:
            task = fam.from_json(data, root)
        except ValueError:
            continue
        if fam.validate(task) is None:
            accepted += 1
            fam.describe(task)
            fam.start(task).respond([fam.instruction(task)[:20]])
    assert accepted > 0
