"""The RLAnything loop on real (tiny) runs: metrics, judge inputs, pool, override, checkpoints."""
import math

import pytest
import torch

from rla_engine import checkpoint
from rla_engine.config import build
from rla_engine import metrics
from rla_engine.loop import embedded as embedded_mod
from rla_engine.loop.trainer import Trainer
from rla_engine.models.networks import judge_input
from engine_support import cheap_families



def tiny(*sets, family="gridworld"):
    return build(preset="tiny", sets=[f"task.family={family}", *sets])


def without_perf(m):
    return {k: v for k, v in m.items() if not metrics.is_machine_key(k)}


@pytest.mark.parametrize("family", cheap_families("tensor"))
def test_every_metric_key_is_produced_and_finite(family):
    tr = Trainer(tiny(family=family), torch.device("cpu"))
    seen = set()
    for i in range(6):
        r = tr.step(final=i == 5)
        assert all(math.isfinite(v) for v in r.metrics.values())
        seen |= set(r.metrics)
    expected = set(metrics.ALL_FIXED) | {metrics.eval_tier_key(d) for d in tr.cfg.eval.tiers}
    assert expected <= seen, expected - seen
    assert tr.env_steps == r.metrics[metrics.ENV_STEPS] > 0


def test_each_iteration_stores_where_its_time_went():
    """The trainer's phases are stored as perf/seconds@<phase>: together they make up the
    iteration's time, so a slow iteration of any stored run can be taken apart."""
    tr = Trainer(tiny("eval.every=2"), torch.device("cpu"))
    phases = ["rollout", "judge", "rewards", "updates", "adaptation", "eval", "measures"]
    for i in range(2):
        m = tr.step().metrics
        seconds = {k.removeprefix(metrics.PHASE_PREFIX): v for k, v in m.items() if k.startswith(metrics.PHASE_PREFIX)}
        assert list(seconds) == phases and all(s >= 0 for s in seconds.values())
        total = sum(seconds.values())
        assert m[metrics.ITERATION_S] <= total <= m[metrics.ITERATION_S] + 0.05, (total, m[metrics.ITERATION_S])
        evaluated = metrics.EVAL_SUCCESS in m
        assert evaluated == (i == 1)
    assert seconds["eval"] > 0 and seconds["rollout"] > 0


def test_judge_sees_only_the_policys_view_and_the_action(monkeypatch):
    tr = Trainer(tiny(), torch.device("cpu"))
    seen = {}
    real_collect, real_sample = embedded_mod.collect, type(tr.backend.judge_net).sample

    def spy_collect(*a, **kw):
        seen["roll"] = real_collect(*a, **kw)
        return seen["roll"]

    def spy_sample(self, x, m, temperature, generator):
        seen["x"] = x.clone()
        return real_sample(self, x, m, temperature, generator)

    monkeypatch.setattr(embedded_mod, "collect", spy_collect)
    monkeypatch.setattr(type(tr.backend.judge_net), "sample", spy_sample)
    tr.step()
    roll, x = seen["roll"], seen["x"]
    fam = tr.family
    assert x.shape[1] == 2 * fam.obs_dim + fam.n_actions
    expected = judge_input(roll.obs[:, :-1], roll.obs[:, 1:], roll.actions, fam.n_actions)[roll.mask]
    assert torch.equal(x, expected)
    # the oracle label is not recoverable as a column of what the judge saw
    oracle = roll.oracle[roll.mask].float()
    for col in x.T:
        assert not torch.equal(col, oracle) and not torch.equal(col, (oracle + 1) / 2)


def test_frozen_judge_and_outcome_only_policy():
    tr = Trainer(tiny("judge.train=false", "policy.lam=0"), torch.device("cpu"))
    before = [p.clone() for p in tr.backend.judge_net.parameters()]
    for _ in range(3):
        r = tr.step()
        assert r.metrics[metrics.STEP_REWARD] == 0.0
        assert metrics.LOSS_JUDGE not in r.metrics
    assert all(torch.equal(a, b) for a, b in zip(before, tr.backend.judge_net.parameters()))


def test_fixed_pool_never_changes():
    tr = Trainer(tiny("env.strategy=fixed"), torch.device("cpu"))
    uids = [r.uid for r in tr.pool.active]
    for _ in range(5):
        r = tr.step()
        assert r.metrics[metrics.PENDING] == 0 and r.metrics[metrics.ACCEPTED] == 0
    assert [r.uid for r in tr.pool.active] == uids


def test_candidates_are_decided_and_replace_not_append():
    tr = Trainer(tiny("task.dataset_low=0", "task.dataset_high=0.05"), torch.device("cpu"))
    decided, pool_size = [], len(tr.pool.active)
    for _ in range(12):
        r = tr.step()
        decided += [e for e in r.events if e[0] in ("variant_accepted", "variant_rejected")]
        assert len(tr.pool.active) == pool_size
        for slot, cand in tr.pool.pending.items():
            assert cand.version == tr.pool.active[slot].version + 1
            assert cand.direction in ("harder", "easier")
    assert decided, "12 iterations on trivial tasks must ask for and decide variants"
    for kind, p in decided:
        from rla_engine.rewards import accept_candidate
        assert (kind == "variant_accepted") == accept_candidate(p["direction"], p["prev_acc"], p["new_acc"])


def test_override_sets_every_slot_and_suspends_adaptation():
    tr = Trainer(tiny("task.dataset_low=0", "task.dataset_high=0.05"), torch.device("cpu"))
    for _ in range(3):
        tr.step()
    versions = [r.version for r in tr.pool.active]
    rows = tr.set_override(0.7)
    assert not tr.pool.pending
    assert [r.version for r in tr.pool.active] == [v + 1 for v in versions]
    assert all(abs(r.difficulty - 0.7) <= 0.05 for r in tr.pool.active)
    assert any(row["status"] == "retired" for row in rows)
    for _ in range(4):
        r = tr.step()
        assert r.metrics[metrics.PENDING] == 0
        assert abs(r.metrics[metrics.DIFFICULTY_MEAN] - 0.7) <= 0.05
    tr.set_override(None)
    asked = sum(tr.step().metrics[metrics.PENDING] > 0 for _ in range(6))
    assert asked > 0, "automatic adaptation resumes after set_difficulty null"


def test_checkpoint_round_trip_continues_identically(tmp_path):
    cfg = tiny()
    a = Trainer(cfg, torch.device("cpu"))
    for _ in range(3):
        a.step()
    path = checkpoint.save(tmp_path, a.iteration, a.state_dict(), keep=2)
    b = Trainer(tiny(), torch.device("cpu"))
    b.load_state_dict(checkpoint.load(path))
    for _ in range(3):
        ra, rb = a.step(), b.step()
        assert without_perf(ra.metrics) == without_perf(rb.metrics)


def test_checkpoints_keep_the_last_n_and_leave_no_temporary_files(tmp_path):
    for it in range(1, 6):
        checkpoint.save(tmp_path, it, {"x": torch.zeros(2)}, keep=3)
    assert [checkpoint.iteration_of(p) for p in checkpoint.list_checkpoints(tmp_path)] == [3, 4, 5]
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in checkpoint.list_checkpoints(tmp_path)]
    assert checkpoint.load(checkpoint.latest(tmp_path))["x"].shape == (2,)


def test_policy_and_judge_train_only_on_groups_inside_their_bands(monkeypatch):
    counts = {"policy": [], "judge": []}
    real = embedded_mod.ppo_update

    def spy(net, opt, logp, adv, settings, gen, name, **kw):
        counts[name].append(adv.shape[0])
        return real(net, opt, logp, adv, settings, gen, name, **kw)

    monkeypatch.setattr(embedded_mod, "ppo_update", spy)
    # with 4 rollouts a group's accuracy is a multiple of 1/4, never 0.3: both bands are empty
    tr = Trainer(tiny("policy.band_low=0.3", "policy.band_high=0.31", "judge.band_low=0.3",
                      "judge.band_high=0.31"), torch.device("cpu"))
    for _ in range(3):
        tr.step()
    assert counts == {"policy": [0, 0, 0], "judge": [0, 0, 0]}
    assert metrics.LOSS_POLICY not in tr.step().metrics          # no update: no loss, not a flat 0
    counts["policy"].clear(), counts["judge"].clear()
    tr = Trainer(tiny("policy.band_low=0", "policy.band_high=1", "judge.band_low=0", "judge.band_high=1"),
                 torch.device("cpu"))
    for _ in range(3):
        tr.step()
    assert sum(counts["policy"]) > 0 and sum(counts["judge"]) > 0


def test_each_role_updates_with_its_own_ppo_settings(monkeypatch):
    used = {}
    real = embedded_mod.ppo_update

    def spy(net, opt, logp, adv, settings, gen, name, **kw):
        used[name] = settings
        return real(net, opt, logp, adv, settings, gen, name, **kw)

    monkeypatch.setattr(embedded_mod, "ppo_update", spy)
    tr = Trainer(tiny("policy.ppo_epochs=3", "policy.minibatch_size=64", "policy.clip_eps=0.3", "policy.kl_beta=0.5",
                      "judge.ppo_epochs=1", "judge.minibatch_size=32", "judge.clip_eps=0.1", "judge.kl_beta=0.0"),
                 torch.device("cpu"))
    tr.step()
    assert [(s.epochs, s.minibatch_size, s.clip_eps, s.kl_beta) for s in (used["policy"], used["judge"])] == \
           [(3, 64, 0.3, 0.5), (1, 32, 0.1, 0.0)]


@pytest.mark.parametrize("family", cheap_families("tensor"))
def test_entropy_bonus_reaches_states_of_groups_without_advantage(family):
    """policy.entropy_coef = 0 is the paper's loss: with both bands empty nothing trains the policy.
    With a bonus, the same run raises the policy's entropy on the states it visited — the bonus does
    not wait for a mixed group. The judge, with no samples and no bonus, stays as it was."""
    empty = ("policy.band_low=0.3", "policy.band_high=0.31", "judge.band_low=0.3", "judge.band_high=0.31")
    entropies = {}
    for coef in (0.0, 1.0):
        tr = Trainer(tiny(*empty, f"policy.entropy_coef={coef}", family=family), torch.device("cpu"))
        judge0 = [p.detach().clone() for p in tr.backend.judge_net.parameters()]
        policy0 = [p.detach().clone() for p in tr.backend.policy.parameters()]
        tasks = [r.task for r in tr.pool.active]
        roll = embedded_mod.collect(tr.backend.policy, tr.family, tasks, 4, temperature=1.0, generator=None,
                                   device=torch.device("cpu"))
        states = roll.obs[:, :-1][roll.mask]
        with torch.no_grad():
            before = float(tr.backend.policy.entropy(states).mean())
        for _ in range(5):
            tr.step()
        with torch.no_grad():
            entropies[coef] = (before, float(tr.backend.policy.entropy(states).mean()))
        assert all(torch.equal(a, b) for a, b in zip(judge0, tr.backend.judge_net.parameters()))
        moved = not all(torch.equal(a, b) for a, b in zip(policy0, tr.backend.policy.parameters()))
        assert moved == (coef > 0), coef
    before, after = entropies[1.0]
    assert after > before
