"""Contract tests of every registered task family (DESIGN §3), then family specifics.

The generic tests only go through `family_names()` / `load_family()`, so a new family is
checked without touching this file.
"""
import itertools
import json
import math
import zlib

import numpy as np
import pytest
import torch

from rla_engine.tasks import arithmetic, load_family

from engine_support import cheap_families, play
from rla_engine.tasks.base import HELD_OUT_SEEDS, TRAIN_SEEDS, Task

FAMILIES = cheap_families("tensor")
TIERS = [0.1, 0.3, 0.5, 0.7, 0.9]
EPS = 0.35          # exploration of the scripted policy; one value for every family


def _tasks(family, ds, seed=0, held_out=False):
    rng = np.random.default_rng(seed)
    return [family.sample(float(d), rng, held_out=held_out) for d in ds]


def _fingerprint(family, task):
    desc = dict(family.describe(task))
    desc.pop("difficulty", None)
    return json.dumps(desc, sort_keys=True)


def _random_policy(family, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return lambda env: torch.randint(0, family.n_actions, (env.n,), generator=gen)


def _noisy_greedy(family, eps, seed=0):
    gen = torch.Generator().manual_seed(seed)

    def act(env):
        rand = torch.randint(0, family.n_actions, (env.n,), generator=gen)
        explore = torch.rand(env.n, generator=gen) < eps
        return torch.where(explore, rand, env.oracle_action())
    return act


def _critic_from_play(family, task, seed):
    """A critic dict built from real info rows of a random rollout of the task."""
    env = family.make_env([task], 1)
    env.reset()
    log = play(env, _random_policy(family, seed))
    return family.critic(task, [(i, info[0].tolist()) for i, (active, _, _, info) in enumerate(log) if active[0]])


@pytest.mark.parametrize("name", FAMILIES)
def test_family_runs_to_completion(name):
    fam = load_family(name)
    assert len(fam.info_names) == fam.info_dim and fam.n_actions >= 2 and fam.obs_dim > 0
    tasks = _tasks(fam, [0.0, 0.3, 0.6, 1.0])
    env = fam.make_env(tasks, 3)
    assert env.n == 12
    obs = env.reset()
    assert obs.shape == (12, fam.obs_dim) and obs.dtype == torch.float32 and torch.isfinite(obs).all()
    assert env.active.dtype == torch.bool and env.active.all()
    steps = torch.zeros(env.n, dtype=torch.long)
    for active, obs, oracle, info in play(env, _random_policy(fam)):
        assert obs.shape == (12, fam.obs_dim) and obs.dtype == torch.float32 and torch.isfinite(obs).all()
        assert oracle.shape == (12,) and oracle.dtype == torch.int8
        assert set(oracle.tolist()) <= {1, -1}
        assert info.shape == (12, fam.info_dim) and info.dtype == torch.int32
        # finished episodes ignore the action: label +1, zero info
        assert (oracle[~active] == 1).all() and (info[~active] == 0).all()
        steps += active
    assert not env.active.any(), "an episode outlived max_steps"
    assert env.success.dtype == torch.bool and env.success.shape == (12,)
    assert (steps >= 1).all() and (steps <= env.max_steps).all()


@pytest.mark.parametrize("name", FAMILIES)
def test_deterministic(name):
    fam = load_family(name)
    a, b = _tasks(fam, np.linspace(0, 1, 8), seed=7), _tasks(fam, np.linspace(0, 1, 8), seed=7)
    assert [(t.params, t.seed) for t in a] == [(t.params, t.seed) for t in b]
    # the instance comes from (params, seed) alone, not from a cache
    rebuilt = [Task.from_json(name, json.loads(json.dumps(t.to_json()))) for t in a]
    assert [fam.describe(t) for t in a] == [fam.describe(t) for t in rebuilt]
    logs = []
    for tasks in (a, rebuilt):
        env = fam.make_env(tasks, 2)
        first = env.reset()
        logs.append([first] + [x for _, obs, oracle, info in play(env, _random_policy(fam, 3))
                               for x in (obs, oracle, info)] + [env.success])
    assert all(torch.equal(x, y) for x, y in zip(*logs))


@pytest.mark.parametrize("name", FAMILIES)
def test_sample_hits_difficulty(name):
    fam = load_family(name)
    rng = np.random.default_rng(1)
    for d in np.linspace(0, 1, 41):
        for _ in range(5):
            task = fam.sample(float(d), rng)
            got = fam.difficulty(task.params)
            assert 0.0 <= got <= 1.0
            assert abs(got - d) <= 0.05, (d, task.params)
            assert fam.validate(task) is None
            assert TRAIN_SEEDS[0] <= task.seed < TRAIN_SEEDS[1]


@pytest.mark.parametrize("name", FAMILIES)
def test_mutate_bounded_valid_fresh(name):
    fam = load_family(name)
    rng = np.random.default_rng(2)      # the stream that drew the tasks: mutate must still not reuse a seed
    moved = 0
    for i, task in enumerate(_tasks(fam, np.linspace(0, 1, 30), seed=2)):
        critic = _critic_from_play(fam, task, i)
        d0 = fam.difficulty(task.params)
        for direction, sign in (("harder", 1), ("easier", -1)):
            variant = fam.mutate(task, direction, critic, rng)
            assert variant.family == name and fam.validate(variant) is None
            assert variant.seed != task.seed and TRAIN_SEEDS[0] <= variant.seed < TRAIN_SEEDS[1]
            delta = fam.difficulty(variant.params) - d0
            assert sign * delta >= -1e-9 and abs(delta) <= 0.15 + 1e-9, (task.params, direction, variant.params)
            if 1e-9 < d0 < 1 - 1e-9:       # room both ways: it must really move
                assert sign * delta > 1e-9, (task.params, direction, critic)
                moved += 1
    assert moved > 40


@pytest.mark.parametrize("name", FAMILIES)
def test_validate_rejects_malformed(name):
    fam = load_family(name)
    good = _tasks(fam, [0.5])[0]
    assert fam.validate(good) is None
    for bad in (Task(name, {}, good.seed),
                Task(name, {**good.params, "bogus": 1}, good.seed),
                Task(name, dict(good.params), -1),
                Task(name, dict(good.params), HELD_OUT_SEEDS[1])):
        reason = fam.validate(bad)
        assert isinstance(reason, str) and reason


@pytest.mark.parametrize("name", FAMILIES)
def test_held_out_never_overlaps_training(name):
    fam = load_family(name)
    ds = np.random.default_rng(3).random(1000)   # 10^6 train × held-out pairs per family
    train, held = _tasks(fam, ds, seed=4), _tasks(fam, ds, seed=5, held_out=True)
    assert all(HELD_OUT_SEEDS[0] <= t.seed < HELD_OUT_SEEDS[1] for t in held)
    assert not {t.seed for t in train} & {t.seed for t in held}
    assert not {_fingerprint(fam, t) for t in train} & {_fingerprint(fam, t) for t in held}


@pytest.mark.parametrize("name", FAMILIES)
def test_scripted_success_falls_with_difficulty(name):
    fam = load_family(name)
    rates = []
    for d in TIERS:
        env = fam.make_env(_tasks(fam, [d] * 200, seed=int(d * 100)), 4)
        env.reset()
        play(env, _noisy_greedy(fam, EPS, seed=int(d * 100)))
        rates.append(float(env.success.float().mean()))
    assert all(a > b for a, b in itertools.pairwise(rates)), rates
    assert rates[0] > 0.3 and rates[-1] < rates[0] - 0.15, rates


# --- gridworld ---------------------------------------------------------------------------------

MOVES = {0: (0, -1), 1: (0, 1), 2: (-1, 0), 3: (1, 0)}


def _wall_at(desc, x, y):
    n = desc["size"]
    return not (0 <= x < n and 0 <= y < n) or desc["walls"][y][x] == "#"


def test_gridworld_wall_blocks():
    fam = load_family("gridworld")
    for task in _tasks(fam, np.linspace(0.2, 0.8, 20), seed=8):
        desc = fam.describe(task)
        sx, sy = desc["start"]
        blocked = [a for a, (dx, dy) in MOVES.items() if _wall_at(desc, sx + dx, sy + dy)]
        if blocked:
            break
    else:
        pytest.fail("no start next to a wall")
    env = fam.make_env([task], 2)
    obs0 = env.reset()
    action = torch.full((2,), blocked[0])
    for _ in range(2):           # twice: the position is still the start the second time
        obs, oracle, info = env.step(action)
        assert info[:, :4].tolist() == [[sx, sy, blocked[0], 1]] * 2
        assert (oracle == -1).all()
        assert torch.equal(obs[:, :29], obs0[:, :29])    # same crop and goal features: not moved
    assert env.active.all()


def test_gridworld_observation_layout():
    fam = load_family("gridworld")
    task = _tasks(fam, [0.6], seed=14)[0]
    desc, n = fam.describe(task), fam.describe(task)["size"]
    (sx, sy), (gx, gy) = desc["start"], desc["goal"]
    env = fam.make_env([task], 1)
    obs = env.reset()[0].tolist()
    crop = [(dx, dy) for dy in range(-2, 3) for dx in range(-2, 3) if (dx, dy) != (0, 0)]
    assert obs[:24] == [float(_wall_at(desc, sx + dx, sy + dy)) for dx, dy in crop]
    assert obs[24:29] == pytest.approx([(gx - sx) / n, (gy - sy) / n, np.sign(gx - sx), np.sign(gy - sy),
                                        (abs(gx - sx) + abs(gy - sy)) / (2 * n)])
    assert obs[29:33] == [0, 0, 0, 0] and len(obs) == 33
    action = int(env.oracle_action()[0])
    obs = env.step(torch.tensor([action]))[0][0].tolist()
    back = {0: 1, 1: 0, 2: 3, 3: 2}[action]
    assert obs[29 + back] == 1.0 and sum(obs[29:33]) == 1.0     # the cell it came from


def test_gridworld_goal_ends_episode_and_budget():
    from rla_engine.tasks.gridworld import budget_for, layout
    fam = load_family("gridworld")
    tasks = _tasks(fam, np.linspace(0, 1, 12), seed=9)
    env = fam.make_env(tasks, 2)
    env.reset()
    shortest = torch.tensor([layout(t).distance for t in tasks]).repeat_interleave(2)
    for task in tasks:
        shortest_path = layout(task).distance
        assert fam.describe(task)["budget"] == math.ceil(1.5 * shortest_path) + 4 == budget_for(shortest_path)
    steps = torch.zeros(env.n, dtype=torch.long)
    for active, _, oracle, _ in play(env, lambda e: e.oracle_action()):
        assert (oracle == 1).all()
        steps += active
    assert env.success.all() and not env.active.any()
    assert torch.equal(steps, shortest)


def test_gridworld_critic_focus_and_mutation():
    fam = load_family("gridworld")
    task = Task("gridworld", {"size": 9, "wall_density": 0.1, "distance": 0.5}, 123)
    rng = np.random.default_rng(0)
    walls = fam.critic(task, [(0, [1, 1, 0, 1, 0, 0]), (3, [1, 1, 0, 1, 0, 1]), (4, [2, 1, 3, 0, 1, 0])])
    assert walls["focus"] == "walls" and walls["blocked"] == 2 and walls["n"] == 3
    harder = fam.mutate(task, "harder", walls, rng)
    assert harder.params["wall_density"] > 0.1 and harder.params["size"] == 9
    easier = fam.mutate(task, "easier", walls, rng)
    assert easier.params["wall_density"] < 0.1
    assert fam.critic(task, [(2, [1, 1, 0, 0, 1, 0])])["focus"] == "distance"
    assert fam.critic(task, [])["focus"] == "size"
    assert fam.mutate(task, "harder", {"focus": "size"}, rng).params["size"] > 9
    # the focus knob at its bound: another one moves instead
    top = Task("gridworld", {"size": 9, "wall_density": 0.3, "distance": 0.5}, 5)
    assert fam.difficulty(fam.mutate(top, "harder", walls, rng).params) > fam.difficulty(top.params)


def test_gridworld_validate_rejects_out_of_range():
    fam = load_family("gridworld")
    for params in ({"size": 4, "wall_density": 0.1, "distance": 0.5},
                   {"size": 9.5, "wall_density": 0.1, "distance": 0.5},
                   {"size": 9, "wall_density": 0.5, "distance": 0.5},
                   {"size": 9, "wall_density": 0.1, "distance": 1.5}):
        assert isinstance(fam.validate(Task("gridworld", params, 1)), str)


# --- arithmetic --------------------------------------------------------------------------------

def _chain(desc):
    """The running values a right chain writes."""
    value, chain = desc["start"], []
    for op, v in zip(desc["ops"], desc["operands"]):
        value = {"+": value + v, "-": value - v, "*": value * v}[op] % 10
        chain.append(value)
    return chain


def test_arithmetic_right_values_always_succeed():
    fam = load_family("arithmetic")
    tasks = _tasks(fam, np.linspace(0, 1, 20), seed=10)
    env = fam.make_env(tasks, 1)
    obs = env.reset()
    values, offsets = [], []
    for task in tasks:
        desc = fam.describe(task)
        chain = _chain(desc)
        assert chain[-1] == desc["answer"]
        # the action is the digit added to the running value: "+ a" is a, "− a" is −a, "× m" prev·(m−1)
        offsets.append([(b - a) % 10 for a, b in zip([desc["start"], *chain], chain)] + [0] * (8 - len(chain)))
        values.append(chain + [0] * (8 - len(chain)))
    offsets, values = torch.tensor(offsets), torch.tensor(values)
    for t in range(env.max_steps):
        active = env.active.clone()
        assert torch.equal(env.oracle_action()[active], offsets[active, t])
        obs, oracle, info = env.step(offsets[:, t])
        assert (oracle[active] == 1).all()
        assert torch.equal(info[active, 3], values[active, t])          # info speaks of the written value
        assert torch.equal(obs[active, :10].argmax(1), values[active, t])   # so does the observation
    assert env.success.all() and not env.active.any()


def test_arithmetic_oracle_uses_own_previous_value():
    fam = load_family("arithmetic")
    task = Task("arithmetic", {"ops": ["+", "+"]}, 11)
    desc = fam.describe(task)
    (a, b), start = desc["operands"], desc["start"]
    wrong = (start + a + 1) % 10
    env = fam.make_env([task], 1)
    env.reset()
    _, oracle0, info0 = env.step(torch.tensor([(a + 1) % 10]))
    assert oracle0.tolist() == [-1]
    assert info0[0].tolist() == [0, 0, a, wrong, start]
    assert env.oracle_action().tolist() == [b]
    _, oracle1, info1 = env.step(torch.tensor([b]))
    assert oracle1.tolist() == [1]              # right given what it wrote before …
    assert info1[0].tolist() == [1, 0, b, (wrong + b) % 10, wrong]
    assert not env.active.any() and not env.success.any()   # … but the chain's answer is wrong


def test_arithmetic_success_needs_every_digit():
    """A wrong digit followed by one that puts the chain back on the answer is a failure: judging
    the last digit alone let a wrong chain succeed one time in ten."""
    fam = load_family("arithmetic")
    task = Task("arithmetic", {"ops": ["+", "+"]}, 11)
    (a, b) = fam.describe(task)["operands"]
    env = fam.make_env([task], 1)
    env.reset()
    env.step(torch.tensor([(a + 1) % 10]))
    _, oracle, _ = env.step(torch.tensor([(b - 1) % 10]))     # ends on the answer, wrong on the way
    assert oracle.tolist() == [-1] and not env.active.any()
    assert not env.success.any()


def test_arithmetic_observation_has_no_position():
    """The same (running value, op, operand) looks the same at any step of any chain, so the policy
    computes the digit instead of memorising a path per task."""
    fam = load_family("arithmetic")
    tasks = [t for t in _tasks(fam, np.linspace(0, 1, 200), seed=14) if len(t.params["ops"]) >= 2]
    env = fam.make_env(tasks, 1)
    seen = {}
    obs = env.reset()
    for t in range(env.max_steps):
        active = env.active.clone()
        for row, (o, act) in enumerate(zip(obs, active)):
            if act:
                key = tuple(o.nonzero().flatten().tolist())
                seen.setdefault(key, set()).add((t, len(tasks[row].params["ops"])))
        obs, *_ = env.step(env.oracle_action())
    assert obs.shape[1] == fam.obs_dim == 33
    assert max(len(v) for v in seen.values()) > 1 and all(len(k) == 2 for k in seen)


def test_arithmetic_instance_per_rollout():
    """Rollout r plays instance r of the task's seed: rollout 0 is the task's own instance (what
    describe shows and held-out evaluation plays), the others are other numbers of the same shape
    from the same half of the seed space — so a deterministic policy that knows only some digits
    gets a mixed group, and acc measures the chain shape rather than one memorised instance."""
    fam = load_family("arithmetic")
    rollouts = 8
    for held_out in (False, True):
        for task in _tasks(fam, [0.3, 0.6], seed=15, held_out=held_out):
            env = fam.make_env([task], rollouts)
            obs = env.reset()
            desc = fam.describe(task)
            assert obs[0, :10].argmax().item() == desc["start"]
            firsts = {tuple(o.nonzero().flatten().tolist()) for o in obs}
            assert len(firsts) > 1                        # the rollouts do not share their numbers
            again = fam.make_env([Task.from_json("arithmetic", task.to_json())], rollouts)
            assert torch.equal(again.reset(), obs)        # … and depend on (params, seed) alone
            for inst in arithmetic.instances(task, rollouts)[1:]:
                bit = zlib.crc32(f"{inst['start']}|{''.join(task.params['ops'])}|"
                                 f"{','.join(map(str, inst['operands']))}".encode()) & 1
                assert bit == int(held_out)               # training and held-out instances never mix
    # a policy that always adds the operand knows "+" and nothing else: on chains mixing "+" with
    # "−" its success depends on the numbers (a "− 0" or "− 5" is still right), not all-or-nothing
    task = Task("arithmetic", {"ops": ["+", "-"]}, 16)
    env = fam.make_env([task] * 8, rollouts)
    obs = env.reset()
    for _ in range(env.max_steps):
        obs, *_ = env.step(obs[:, 10:30].argmax(1) % 10)     # units 10..29: "+ 0".."+ 9", "− 0".."− 9"
    acc = env.success.view(8, rollouts).float().mean(1)
    assert ((acc > 0) & (acc < 1)).any()


def test_arithmetic_critic_and_mutation():
    fam = load_family("arithmetic")
    task = Task("arithmetic", {"ops": ["+", "*", "-", "*"]}, 12)
    critic = fam.critic(task, [(1, [1, 2, 3, 0, 4]), (3, [3, 2, 7, 1, 1]), (2, [2, 1, 5, 0, 0])])
    assert critic["focus"] == "*" and critic["*"] == 2 and critic["-"] == 1 and critic["n"] == 3
    rng = np.random.default_rng(0)
    harder = fam.mutate(task, "harder", critic, rng)
    assert harder.params["ops"].count("*") == 3 and len(harder.params["ops"]) == 5
    easier = fam.mutate(task, "easier", critic, rng)
    assert easier.params["ops"].count("*") == 1
    full = Task("arithmetic", {"ops": ["+"] * 4 + ["*"] * 4}, 13)
    swapped = fam.mutate(full, "harder", {"focus": "*"}, rng)
    assert len(swapped.params["ops"]) == 8 and swapped.params["ops"].count("*") == 5
    for params in ({"ops": []}, {"ops": ["+"] * 9}, {"ops": ["/"]}, {"ops": "+-"}):
        assert isinstance(fam.validate(Task("arithmetic", params, 1)), str)


def test_keyrooms_a_door_opens_only_with_its_key():
    from rla_engine.tasks import keyroom_layout as kl
    lay = kl.make(9, 2, 0.1, np.random.default_rng(3), held_out=False)
    nxt = kl.transitions(lay)
    right = 3
    for j, door in enumerate(lay.doors):
        west = door - 1                         # the cell before the door is always open
        assert nxt[0 * kl.CELLS + west, right] % kl.CELLS == west            # no key: blocked
        with_key = (1 << j) * kl.CELLS + west
        assert nxt[with_key, right] == (1 << j) * kl.CELLS + door          # key j opens door j
    key = lay.keys[0]                           # stepping on a key picks it up
    came_from = next(s for s in range(kl.STATES) if s // kl.CELLS == 0 and key in nxt[s] % kl.CELLS)
    assert nxt[came_from][nxt[came_from] % kl.CELLS == key][0] // kl.CELLS == 1
    assert kl.solve(nxt, lay.goal)[lay.start] < kl.UNREACHABLE


def test_keyrooms_compass_follows_key_door_goal_along_a_solution():
    fam = load_family("keyrooms")
    task = next(t for t in _tasks(fam, np.linspace(0.5, 0.9, 20), seed=4) if t.params["doors"] == 2)
    env = fam.make_env([task], 1)
    obs = env.reset()
    kinds, keys = [int(obs[0, 82:85].argmax())], []
    while env.active.any():
        obs, oracle, info = env.step(env.oracle_action())
        assert oracle.item() == 1
        kinds.append(int(obs[0, 82:85].argmax()))
        keys.append(int(info[0, 5]))
    assert env.success.all()
    phases = [k for i, k in enumerate(kinds) if i == 0 or k != kinds[i - 1]]
    assert phases == [0, 1, 0, 1, 2]            # key 0, door 0, key 1, door 1, goal
    assert keys == sorted(keys) and keys[-1] == 2
    desc = fam.describe(task)
    assert sum(row.count("D") for row in desc["walls"]) == 2 and sum(row.count("k") for row in desc["walls"]) == 2


def test_keyrooms_finds_a_layout_where_the_first_placements_all_fail():
    # this draw ran out of attempts when each wall draw had one placement: a run failed on it
    from rla_engine.tasks import keyroom_layout as kl
    lay = kl.make(13, 1, 0.14784496039356215, np.random.default_rng(1948324906), held_out=False)
    assert kl.solve(kl.transitions(lay), lay.goal)[lay.start] < kl.UNREACHABLE
