# One command sets everything up and runs the main job; one sets up and runs the tests.
#   make run    -> the embedded default: a tiny model trained with DAPO on a CPU
#   make test   -> the whole test suite (plus ruff)
#   make bench  -> the benchmarks in benchmarks/ (BENCH_ARGS=--quick for a short run); those
#                  that need the real datasets ($VERIMATH_DATA_DIR) say so and are skipped
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# torch is installed first and pinned here: on a CPU machine that has the 2.13.0 CPU wheel at
# hand this is fast; a GPU machine gets the PyPI build. Override with `make TORCH=torch`.
TORCH ?= torch==2.13.0
STAMP := $(VENV)/.installed

.PHONY: setup run test lint bench clean

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
	$(BIN)/python benchmarks/bench_envs.py $(BENCH_ARGS)
	$(BIN)/python benchmarks/bench_prep.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
