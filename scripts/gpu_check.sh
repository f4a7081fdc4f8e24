#!/usr/bin/env bash
# GPU check, a few minutes on one NVIDIA GPU: sets up .venv (torch's CUDA build, vLLM,
# verimath), then runs scripts/gpu_check.py: the tiny preset with the HF and vLLM engines
# (held-out accuracy before and after RL), one bf16 FSDP2 update of a Qwen2.5-0.5B-shaped
# model built from its config (chunked log-probs; MFU against the GPU's dense bf16 peak; peak
# memory beside the estimate), and generation tokens/s of HF vs vLLM. It prints one table.
#   scripts/gpu_check.sh                          # everything
#   scripts/gpu_check.sh --parts update --json gpu_check.json   # options of gpu_check.py
# Offline, it runs with what .venv already holds; without a GPU, gpu_check.py runs tiny sizes
# and names each row it skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
else
  echo "gpu_check.sh: no NVIDIA GPU visible; the GPU rows will be skipped" >&2
fi
test -x .venv/bin/python || python3 -m venv .venv
if ! .venv/bin/python -c "import vllm" 2>/dev/null; then
  # vLLM first: it pins the torch build it was compiled for, and `make setup` keeps the torch
  # it finds.
  .venv/bin/python -m pip install -q vllm \
    || echo "gpu_check.sh: could not install vLLM; its rows will be skipped" >&2
fi
make setup TORCH=torch
if nvidia-smi -L >/dev/null 2>&1 && ! .venv/bin/python -c \
    "import sys, torch; sys.exit(not torch.cuda.is_available())"; then
  echo "gpu_check.sh: the torch in .venv cannot use the GPU (a CPU build?); reinstall it:" \
    ".venv/bin/python -m pip install --force-reinstall torch" >&2
fi
exec .venv/bin/python scripts/gpu_check.py "$@"
