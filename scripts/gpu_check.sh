#!/usr/bin/env bash
# GPU check, a few minutes on one NVIDIA GPU: scripts/gpu_check.py (one bf16 FSDP2 update of a
# Qwen2.5-0.5B-shaped model: MFU, peak memory beside the estimate; generation tokens/s of HF
# vs vLLM; the tiny preset synchronous and with rollout.async_steps=1; the tiny preset with
# the HF and vLLM engines, held-out accuracy before and after RL). One table, also as JSON.
#
# Connected machine: sets up .venv (torch's CUDA build, vLLM, verimath), then runs.
#   scripts/gpu_check.sh                                   # everything
#   scripts/gpu_check.sh --parts update --json out.json    # options of gpu_check.py
# Air-gapped node whose Python has a CUDA torch and transformers (vLLM optional): no torch,
# transformers or vLLM is installed; verimath and its few other dependencies come from a
# wheel folder prepared on a connected machine, into .venv-node (--system-site-packages: the
# node's torch is the one used).
#   scripts/gpu_check.sh --prepare-wheels WHEELS [--python-version 3.12] [--node-freeze FILE]
#   scripts/gpu_check.sh --offline WHEELS [--python /path/to/python3] [gpu_check.py options]
# (or VERIMATH_WHEELS=WHEELS, VERIMATH_PYTHON=...). --node-freeze takes `python3 -m pip freeze`
# of the node: the folder then leaves out what the node has and matches its numpy.
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=${VERIMATH_WHEELS:-}
PY=${VERIMATH_PYTHON:-python3}
NODE_VENV=${VERIMATH_NODE_VENV:-.venv-node}
if [ "${1:-}" = --prepare-wheels ]; then
  shift
  if [ $# -lt 1 ]; then
    echo "usage: scripts/gpu_check.sh --prepare-wheels DIR [--python-version X.Y]" \
      "[--node-freeze FILE] [--platform TAG] [--max-mib 64]" >&2
    exit 2
  fi
  exec "$PY" scripts/wheelhouse.py prepare "$@"
fi
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --offline) WHEELS=${2:?--offline needs the wheel folder}; shift 2 ;;
    --offline=*) WHEELS=${1#*=}; shift ;;
    --python) PY=${2:?--python needs an interpreter}; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
else
  echo "gpu_check.sh: no NVIDIA GPU visible; the GPU rows will be skipped" >&2
fi
# node: a wheel folder and a Python with torch and transformers; setup: no wheel folder
mode=$("$PY" scripts/wheelhouse.py mode --python "$PY" ${WHEELS:+--wheels "$WHEELS"}) || exit 2
if [ "$mode" = node ]; then
  "$PY" scripts/wheelhouse.py install "$WHEELS" --venv "$NODE_VENV" --python "$PY" >/dev/null
  exec "$NODE_VENV/bin/python" scripts/gpu_check.py --mode "offline ($PY, $WHEELS)" \
    ${args[@]+"${args[@]}"}
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
exec .venv/bin/python scripts/gpu_check.py --mode setup ${args[@]+"${args[@]}"}
