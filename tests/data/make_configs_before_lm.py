"""Record configurations as the code before the `lm` section wrote them, for
tests/engine/test_config_layouts.py: proof that a stored run or a saved file of that layout loads
to the same settings for every role.

Back then `policy.*` held what every language-model role shares (LoRA rank and α, micro-batch,
generation batch) and the judge trained with the policy's PPO settings (epochs, minibatch, clip,
KL). This script must run against that code, so it reads `rla_engine.config` from the tree on
PYTHONPATH, not from its own:

    git worktree add /tmp/before-lm 29f8881
    PYTHONPATH=/tmp/before-lm .venv/bin/python tests/data/make_configs_before_lm.py
    git worktree remove /tmp/before-lm

It writes configs_before_lm/: stored.json (what the runs table held: `Config.to_dict()` of every
preset, the defaults and one language-model run with every moved setting off its default, each
beside the settings each role ran with), saved-llm-custom.toml (the console's Save TOML of that
run) and the llm presets as they shipped (files.json holds what each file ran with).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from rla_engine.config import Config, build, preset_names, presets_dir

OUT = Path(__file__).resolve().parent / "configs_before_lm"
CUSTOM = ["policy.lora_rank=4", "policy.lora_alpha=8.0", "policy.micro_batch_size=4",
          "policy.generation_batch_size=16", "policy.ppo_epochs=3", "policy.minibatch_size=32",
          "policy.clip_eps=0.3", "policy.kl_beta=0.05"]
SHIPPED = ["llm-tiny", "llm-smol"]


def effective(cfg: Config) -> dict:
    """What each role ran with, read as llm/backend.py and loop/embedded.py read it back then."""
    p = cfg.policy
    trained = {"lora_rank": p.lora_rank, "lora_alpha": p.lora_alpha, "micro_batch_size": p.micro_batch_size,
               "generation_batch_size": p.generation_batch_size, "ppo_epochs": p.ppo_epochs,
               "minibatch_size": p.minibatch_size, "clip_eps": p.clip_eps, "kl_beta": p.kl_beta}
    return {"policy": trained, "judge": dict(trained), "env": {"generation_batch_size": p.generation_batch_size}}


def main() -> None:
    OUT.mkdir(exist_ok=True)
    configs = {"(defaults)": Config(), **{name: build(preset=name) for name in preset_names()},
               "llm-custom": build(preset="llm-tiny", sets=CUSTOM)}
    stored = {name: {"config": cfg.to_dict(), "effective": effective(cfg)} for name, cfg in configs.items()}
    (OUT / "stored.json").write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    (OUT / "saved-llm-custom.toml").write_text(configs["llm-custom"].to_toml(), encoding="utf-8")
    files = {"saved-llm-custom.toml": effective(configs["llm-custom"])}
    for name in SHIPPED:
        shutil.copyfile(str(presets_dir() / f"{name}.toml"), OUT / f"preset-{name}.toml")
        files[f"preset-{name}.toml"] = effective(build(config_file=OUT / f"preset-{name}.toml"))
    (OUT / "files.json").write_text(json.dumps(files, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
