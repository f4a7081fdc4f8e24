"""The training-run checks of ``scripts/gpu_check.py`` (``verimath train`` in a subprocess,
within the time budget) and whether vLLM runs here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from gpu_check_table import Budget, async_rows, skipped, step_means, vllm_skip

NO_VLLM = "VERIMATH_GPU_CHECK_NO_VLLM"
STOP_SECONDS = 20.0  # a run stopped at the end of the budget gets this long to exit
QUICK_TRAIN = ["optim.steps=2", "warmstart.steps=0", "eval.num_problems=4", "eval.k=1",
               "rollout.gen_prompts=4", "rollout.group_size=4", "algo.train_prompts=4",
               "algo.mini_batch_prompts=4", "algo.max_gen_rounds=1"]
# The async rows on a GPU: a shorter warm start and held-out set than the preset's; steps
# enough for a mean once the first is left out.
ASYNC_TRAIN = ["optim.steps=10", "warmstart.steps=200", "eval.num_problems=40"]


def has_vllm() -> bool:
    """vLLM importable here (``VERIMATH_GPU_CHECK_NO_VLLM=1`` says no, to try the skips)."""
    import importlib.util

    if os.environ.get(NO_VLLM, "") not in ("", "0"):
        return False
    return importlib.util.find_spec("vllm") is not None


def vllm_missing() -> str:
    """Why the vLLM rows are skipped here, or "" when they run (vLLM and a CUDA GPU)."""
    import torch

    return vllm_skip(has_vllm(), torch.cuda.is_available())


def train(run_dir: Path, overrides: list[str], quick: bool, budget: Budget):
    """``verimath train`` in a subprocess, stopped when the budget runs out; returns
    ``(seconds, None)``, or ``(seconds, result)`` with the result of a run that did not end
    well."""
    argv = [sys.executable, "-m", "verimath.trainer.cli", "train", "--output-dir", str(run_dir),
            "logging.progress=false", "logging.plot=false", *overrides]
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    try:
        _, err = process.communicate(timeout=budget.left())
    except subprocess.TimeoutExpired:
        # SIGTERM: the trainer stops its generator and engine processes, then exits
        process.terminate()
        try:
            process.communicate(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
        return time.perf_counter() - start, f"stopped: {budget.reason()}"
    seconds = time.perf_counter() - start
    # exit 3: the run finished but no group was informative, which the quick sizes (a few
    # steps from an unwarmed model) allow; a full run must train
    if process.returncode != 0 and not (quick and process.returncode == 3):
        return seconds, f"FAILED (exit {process.returncode}): {err.strip()[-300:]}"
    return seconds, None


def check_tiny(engine: str, quick: bool, workdir: Path,
               budget: Budget) -> list[tuple[str, str, str]]:
    """Train the tiny preset with one engine in a subprocess; read its summary.json."""
    label = f"tiny preset, {engine} engine"
    if engine == "vllm" and vllm_missing():
        return [skipped(label, vllm_missing())]
    if budget.spent(10):
        return [skipped(label, budget.reason())]
    run_dir = workdir / f"tiny-{engine}"
    seconds, bad = train(run_dir, [f"rollout.engine={engine}", *(QUICK_TRAIN if quick else [])],
                         quick, budget)
    if bad:
        return [(label, *bad.split(": ", 1))]
    s = json.loads((run_dir / "summary.json").read_text())
    before, after = s["heldout_acc_before_rl"], s["heldout_acc_after_rl"]
    verdict = "ran (too short to learn)" if quick else \
        "learns" if after > before else "does NOT learn"
    return [(label, f"{verdict}: {before:.1%} -> {after:.1%}",
             f"held-out avg@{s['eval_k']} on {s['heldout_problems']} problems; greedy "
             f"{s['heldout_greedy_acc_before_rl']:.1%} -> {s['heldout_greedy_acc_after_rl']:.1%}"
             f"; {s['rl_steps']} steps, {seconds:.0f} s{' (quick)' if quick else ''}")]


def check_async(quick: bool, workdir: Path, budget: Budget) -> list[tuple[str, str, str]]:
    """The same short run synchronous and with ``rollout.async_steps=1`` (HF engine)."""
    base = (QUICK_TRAIN + ["optim.steps=3"] if quick else ASYNC_TRAIN) + [
        "rollout.engine=hf", "eval.every=0", "logging.save_every=0"]
    means = []
    for k in (0, 1):
        label = f"async, hf engine, async_steps={k}"
        if budget.spent(10):
            return [skipped(label, budget.reason())]
        run_dir = workdir / f"async-{k}"
        _, bad = train(run_dir, [*base, f"rollout.async_steps={k}"], quick, budget)
        if bad:
            return [(label, *bad.split(": ", 1))]
        lines = (run_dir / "metrics.jsonl").read_text().splitlines()
        means.append(step_means([json.loads(line) for line in lines]))
    return async_rows(*means, async_steps=1)
