"""The built-in "tiny-random" model: a small Llama with random weights and a tokenizer trained here.

Why it exists: the language-model code paths (chat prompts, generation, log-probabilities, PPO on
tokens, checkpoints) must be testable on any machine in seconds, with no download. Nothing about
it is meant to be good at a task. Everything is deterministic (fixed corpus, fixed seeds), so two
machines build the same weights and token ids; the built folder is cached under
`<model cache>/tiny-random-v1` and loaded like any local Hugging Face folder afterwards.
Change TINY_KEY whenever anything below changes what is built.
"""
from __future__ import annotations

from pathlib import Path

from rla_engine.llm import deps
from rla_engine.llm.cache import build_once

TINY_KEY = "tiny-random-v1"
SEED = 20240917
PAD, BOS, EOS, IM_START = "<|pad|>", "<|endoftext|>", "<|im_end|>", "<|im_start|>"
SPECIALS = [PAD, BOS, EOS, IM_START]          # ids 0..3, in this order
VOCAB_SIZE = 512                               # 256 byte symbols + 4 specials + up to 252 merges

# ChatML, as SmolLM2 and Qwen use it: the same prompt-building code serves both.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

# The BPE is trained on this text, so its merges favour what the loop's prompts look like (task
# statements, digits, judge verdicts); any other text still round-trips through the byte symbols.
_CORPUS = """\
You are a careful assistant. Solve the task step by step, one step per line.
The agent is at row 3, column 4 of a 7 by 7 grid. The goal is at row 0, column 6.
Move up, down, left or right. Pick up the key, then open the door, then reach the goal.
Add the numbers 48 + 275 = 323. Subtract 1000 - 1 = 999. Multiply 12 * 12 = 144.
Step 1: 17 + 25 = 42. Step 2: 42 + 58 = 100. The answer is 100.
Is this step correct? Think about it, then give your verdict as \\boxed{1} or \\boxed{-1}.
The step is correct, so the verdict is \\boxed{1}. The step is wrong: \\boxed{-1}.
Rewrite the task so that it is harder, or easier, but keep it solvable and well formed.
0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 20 25 32 50 64 99 100 128 256 512 1024 2048
the of and to in is it that for on with as was be this are by at from or have an which
"""


def tiny_random_folder() -> Path:
    """The cached tiny-random folder (config, weights, tokenizer, generation config), built on the
    first call (about a second on a CPU)."""
    deps.require("the tiny-random model", "transformers", "tokenizers", "safetensors")
    return build_once(TINY_KEY, build_tiny)


def build_tokenizer():
    """A byte-level BPE trained in-process, wrapped as a transformers fast tokenizer.

    Byte-level means every string maps to tokens and back exactly (newlines, digits, braces,
    backslashes, any Unicode); clean_up_tokenization_spaces is off so decoding adds nothing.
    No BOS is added to encodings (as SmolLM2), padding is on the left (decoder-only generation).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE, min_frequency=2, special_tokens=SPECIALS, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(_CORPUS.splitlines(), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=BOS, eos_token=EOS, pad_token=PAD,
        additional_special_tokens=[IM_START], padding_side="left",
        clean_up_tokenization_spaces=False, chat_template=CHAT_TEMPLATE, model_max_length=1024)


def build_tiny(folder: Path) -> None:
    """Write the tiny-random model and tokenizer into `folder` (save_pretrained format)."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    tokenizer = build_tokenizer()
    ids = {name: tokenizer.convert_tokens_to_ids(name) for name in (PAD, BOS, EOS)}
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=1024,
        tie_word_embeddings=True, pad_token_id=ids[PAD], bos_token_id=ids[BOS], eos_token_id=ids[EOS])
    # fork_rng: the fixed seed makes the weights reproducible without moving the caller's RNG.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        pad_token_id=ids[PAD], bos_token_id=ids[BOS], eos_token_id=ids[EOS])
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
