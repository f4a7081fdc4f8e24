"""One training run of ``bench_vs_trl.py``, in its own process: verimath or TRL from one
warm-started tiny model, with held-out checkpoints along the way.

Both trainers start from the same Hugging Face directory, train on the same procedural
problem stream (the tiny preset's: ``data.seed`` = the run's seed, held-out prompts
excluded), with the same prompt text, batch (32 prompts x 16), 4 updates per generation
round, clip range, learning rate and schedule, reward (the verimath TRL adapter with the
same overlong shaping) and one torch thread. Every ``every`` RL steps (one RL step = one
generation round = 4 optimizer updates) both models are scored by the same
``verimath.trainer.evaluation.evaluate.evaluate`` call on the same held-out problems with the same
seed; the clock stops while they are.

    python benchmarks/vs_trl_runs.py warmstart --out DIR
    python benchmarks/vs_trl_runs.py verimath --model DIR --seed 0 --steps 100 --every 10 \
        --result run.json [override ...]
    python benchmarks/vs_trl_runs.py trl --model DIR --seed 0 --steps 100 --every 10 --result
    run.json

A run writes one JSON record (see :func:`record`) that ``bench_vs_trl.py`` reads.

The TRL run lives in ``vs_trl_trl.py``, what both runs share (config, clock, record) in
``vs_trl_common.py``; this script puts its folder on ``sys.path`` to import them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vs_trl_common import (  # noqa: E402
    PRESET,
    Clock,
    base_config,
    load_avg,
    record,
    start_point,
    warm_up_scoring,
)
from vs_trl_trl import run_trl  # noqa: E402

# ---------------------------------------------------------------------------- warm start

def warmstart(out: Path) -> Path:
    """The tiny preset's supervised warm start, run once (``verimath train optim.steps=0``);
    returns its Hugging Face model directory ``out/model``."""
    model = out / "model"
    if (model / "config.json").is_file():
        return model
    run = out / "run"
    if run.exists():
        shutil.rmtree(run)
    cmd = [sys.executable, "-m", "verimath.trainer.cli", "train", "--config", PRESET,
           "--output-dir", str(run), "optim.steps=0", "logging.progress=false",
           "logging.plot=false"]
    subprocess.run(cmd, check=True)
    (final,) = sorted((run / "checkpoints").glob("step_*"))[-1:]
    shutil.copytree(final / "model", model)
    return model


# ---------------------------------------------------------------------------- verimath

def run_verimath(model_dir: str, seed: int, steps: int, every: int, k: int, run_dir: Path,
                 overrides: list[str]) -> dict:
    """``verimath train`` (the tiny preset from ``model_dir``), held-out points every ``every``
    steps through the trainer's own evaluation, timed without it."""
    from verimath.trainer import open_state
    from verimath.trainer.run.loop import train

    cfg = base_config([f"model.path={model_dir}", f"optim.steps={steps}", f"optim.seed={seed}",
                       f"data.seed={seed}", f"eval.k={k}", f"eval.every={every}",
                       "logging.progress=false", "logging.plot=false",
                       "logging.save_every=0", *overrides])
    if run_dir.exists():
        shutil.rmtree(run_dir)
    loop = train.__globals__  # the training loop's module: it evaluates through this name
    if "evaluate_heldout" not in loop:
        raise RuntimeError("the training loop no longer calls evaluate_heldout(state); update "
                           "run_verimath to time its held-out evaluation")
    warm_up_scoring(cfg)
    load0 = load_avg()
    original = loop["evaluate_heldout"]
    with open_state(cfg, run_dir, echo=lambda s: None) as state:
        points = [start_point(state.record.before, load0)]
        clock = Clock()

        def timed_evaluation(s):
            return clock.checkpoint(s.step, s.record.generated_tokens, lambda: original(s))

        loop["evaluate_heldout"] = timed_evaluation
        try:
            train(state)
        finally:
            loop["evaluate_heldout"] = original
    steps_metrics = [json.loads(line) for line in
                     (run_dir / "metrics.jsonl").read_text().splitlines()]
    steps_metrics = [m for m in steps_metrics if "time/step" in m]
    return record("verimath", seed, overrides, points + clock.points,
                  verimath_profile(steps_metrics, clock.points[-1]["wall_s"]),
                  verimath_details(steps_metrics))


def verimath_profile(steps: list[dict], wall: float) -> dict:
    """Seconds spent generating, scoring and updating (old log-probs included), and the
    rest of the wall time (metrics, loop)."""
    out = {key: float(sum(m[f"time/{key}"] for m in steps)) for key in
           ("generate", "score", "update")}
    out["other"] = wall - sum(out.values())
    return out


def verimath_details(steps: list[dict]) -> dict:
    def mean(key):
        values = [m[key] for m in steps if key in m]
        return float(np.mean(values)) if values else None

    keys = ("sampling/rounds", "sampling/generated_groups", "sampling/informative_groups",
            "sampling/kept_groups", "sampling/carried_groups", "sampling/surplus_groups",
            "sampling/staleness_mean", "sampling/all_correct_groups", "sampling/hit_cap",
            "length/mean", "length/truncated_frac", "optim/grad_norm", "policy/entropy",
            "clip/frac_low", "clip/frac_high", "policy/approx_kl", "reward/accuracy")
    out = {key: mean(key) for key in keys}
    out["trained_tokens"] = float(sum(m["compute/trained_tokens"] for m in steps))
    sizes = [m.get("sampling/round_sizes") for m in steps[:5]]
    out["round_sizes_first_steps"] = [s for s in sizes if s is not None]
    quarter = max(1, len(steps) // 4)
    out["reward/accuracy_by_quarter"] = [
        float(np.mean([m["reward/accuracy"] for m in steps[i:i + quarter]]))
        for i in range(0, len(steps), quarter)]
    out["generated_groups_by_quarter"] = [
        float(np.mean([m["sampling/generated_groups"] for m in steps[i:i + quarter]]))
        for i in range(0, len(steps), quarter)]
    return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The runner's arguments; config overrides may follow the options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("warmstart", "verimath", "trl"))
    parser.add_argument("--out", type=Path, help="warmstart: the folder to build it in")
    parser.add_argument("--model", help="the warm-started Hugging Face model directory")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--result", type=Path)
    parser.add_argument("overrides", nargs="*", help="verimath config overrides")
    return parser.parse_intermixed_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.what == "warmstart":
        print(warmstart(args.out))
        return 0
    work = args.result.with_suffix("")
    if args.what == "verimath":
        result = run_verimath(args.model, args.seed, args.steps, args.every, args.k, work,
                              args.overrides)
    else:
        result = run_trl(args.model, args.seed, args.steps, args.every, args.k, work)
    args.result.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
