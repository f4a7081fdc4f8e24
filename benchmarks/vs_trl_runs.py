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
    python benchmarks/vs_trl_runs.py trl --model DIR --seed 0 --steps 100 --every 10 --result run.json

A run writes one JSON record (see :func:`record`) that ``bench_vs_trl.py`` reads.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

PRESET = "tiny"


def load_avg() -> float:
    """The 1-minute load average of the machine (what else was running)."""
    return os.getloadavg()[0]


def base_config(overrides=()):
    from verimath.trainer import load_config

    return load_config(PRESET, list(overrides))


def eval_kwargs(cfg, k: int) -> dict:
    """The arguments of the trainer's own held-out evaluation (``evaluate_heldout``), with
    ``k`` samples per problem."""
    return dict(k=k, temperature=cfg.rollout.temperature, top_p=cfg.rollout.top_p,
                max_new_tokens=cfg.rollout.max_new_tokens, template=cfg.model.prompt_template,
                use_chat_template=cfg.model.use_chat_template,
                answer_style=cfg.reward.answer_style, mode=cfg.reward.mode,
                timeout=cfg.reward.timeout, batch_size=cfg.eval.batch_size, seed=cfg.eval.seed)


def heldout(cfg):
    from verimath.trainer.rollout.episodes import heldout_problems

    d = cfg.data
    return heldout_problems(family=d.family, level=d.level, seed=cfg.eval.seed,
                            count=cfg.eval.num_problems, skip_containing=d.skip_containing)


class Clock:
    """Wall time and CPU time (this process, all its threads) of training alone: evaluation
    pauses both. With one torch thread the CPU time is what the wall time would be on an
    idle machine, whatever else shares the CPUs."""

    def __init__(self) -> None:
        self.t0, self.c0 = time.perf_counter(), time.process_time()
        self.paused = self.paused_cpu = 0.0
        self.points: list[dict] = []

    def elapsed(self) -> tuple[float, float]:
        return (time.perf_counter() - self.t0 - self.paused,
                time.process_time() - self.c0 - self.paused_cpu)

    def checkpoint(self, step: int, tokens: int, evaluate) -> dict:
        """Record ``(step, wall, cpu, tokens)`` and the held-out metrics ``evaluate()``
        returns."""
        (wall, cpu), t, c = self.elapsed(), time.perf_counter(), time.process_time()
        metrics = evaluate()
        self.paused += time.perf_counter() - t
        self.paused_cpu += time.process_time() - c
        point = {"step": step, "wall_s": wall, "cpu_s": cpu, "tokens": int(tokens),
                 "avg": _avg(metrics), "greedy": metrics["eval/greedy"], "load": load_avg()}
        self.points.append(point)
        print(f"  step {step:4d}  wall {wall:7.1f}s  cpu {cpu:7.1f}s  tokens {tokens:>9,}  "
              f"avg {point['avg']:.3f}  greedy {point['greedy']:.3f}  load {point['load']:.1f}",
              flush=True)
        return metrics


def _avg(metrics: dict) -> float:
    return next(v for key, v in metrics.items() if key.startswith("eval/avg@"))


def warm_up_scoring(cfg) -> None:
    """Score one response with the overlong penalty before the clock starts, so that neither
    trainer's wall time holds the one-time JIT compilation of the penalty kernel."""
    from verimath.rewards import score_batch

    r = cfg.reward
    score_batch(["Answer: 1"], ["1"], lengths=[9], max_length=cfg.rollout.max_new_tokens,
                cache_length=r.overlong_buffer, style=r.answer_style, mode=r.mode)


def start_point(metrics: dict, load: float) -> dict:
    return {"step": 0, "wall_s": 0.0, "cpu_s": 0.0, "tokens": 0, "avg": _avg(metrics),
            "greedy": metrics["eval/greedy"], "load": load}


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


# ---------------------------------------------------------------------------- TRL

class CountingReward:
    """The verimath TRL reward, counting what TRL generated: completion tokens (EOS
    included, as verimath counts them), groups by outcome, and the seconds spent scoring."""

    def __init__(self, reward, group_size: int) -> None:
        self.reward, self.group_size = reward, group_size
        self.__name__ = reward.__name__
        self.tokens = self.responses = 0
        self.seconds = 0.0
        self.groups = {"generated": 0, "informative": 0, "all_correct": 0, "all_wrong": 0}

    def __call__(self, completions, **kwargs):
        t = time.perf_counter()
        rewards = self.reward(completions, **kwargs)
        self.seconds += time.perf_counter() - t
        ids = kwargs["completion_ids"]
        self.tokens += sum(len(x) for x in ids)
        self.responses += len(ids)
        # correct: +1 plus a penalty in [-1, 0]; wrong: -1 plus the penalty
        correct = (np.asarray(rewards) >= -0.5).reshape(-1, self.group_size)  # (P, G)
        n = correct.sum(axis=1)
        self.groups["generated"] += len(n)
        self.groups["all_correct"] += int((n == self.group_size).sum())
        self.groups["all_wrong"] += int((n == 0).sum())
        self.groups["informative"] += int(((n > 0) & (n < self.group_size)).sum())
        return rewards


def training_dataset(cfg, seed: int, count: int, excluded: set[str]):
    """The first ``count`` problems of the training stream ``seed`` (the one ``verimath
    train`` draws with ``data.seed=seed``), held-out prompts excluded, as TRL rows
    ``{"prompt": the model-facing text, "answer": gold}``."""
    from datasets import Dataset
    from verimath.envs import format_prompt
    from verimath.envs.generators import generate
    from verimath.trainer.rollout.episodes import ExcludingGenerator

    d = cfg.data
    generator = ExcludingGenerator(d.family, excluded, skip_containing=d.skip_containing)
    rows = []
    for index in range(count):
        problem = generate(generator, seed, index, d.level)
        rows.append({"prompt": format_prompt(problem, cfg.model.prompt_template),
                     "answer": problem.answer})
    return Dataset.from_list(rows)


def trl_config(cfg, seed: int, steps: int, out: Path):
    """GRPOConfig matching the tiny preset: loss ``dapo``, clip-higher, truncated
    completions masked, no KL, 32 prompts x 16 per generation round split into
    ``train_prompts / mini_batch_prompts`` optimizer updates, same LR, warm-up, schedule,
    AdamW settings and sampling."""
    from trl import GRPOConfig

    r, a, o = cfg.rollout, cfg.algo, cfg.optim
    updates = a.train_prompts // a.mini_batch_prompts  # 4 per round
    per_update = r.gen_prompts * r.group_size // updates  # 128 sequences
    return GRPOConfig(
        output_dir=str(out), seed=seed, data_seed=seed, use_cpu=True, report_to=[],
        disable_tqdm=True, save_strategy="no", logging_steps=updates * 10,
        per_device_train_batch_size=per_update, gradient_accumulation_steps=1,
        steps_per_generation=updates, num_iterations=a.ppo_epochs,
        num_generations=r.group_size, max_completion_length=r.max_new_tokens,
        temperature=r.temperature, top_p=r.top_p, top_k=0,
        loss_type="dapo", epsilon=a.eps_low, epsilon_high=a.eps_high,
        mask_truncated_completions=a.overlong_filtering, beta=0.0, scale_rewards="group",
        learning_rate=o.lr, lr_scheduler_type=o.schedule, warmup_steps=o.warmup_steps,
        weight_decay=o.weight_decay, adam_beta1=o.betas[0], adam_beta2=o.betas[1],
        max_grad_norm=o.grad_clip, max_steps=steps * updates * a.ppo_epochs,
        dataloader_num_workers=0, shuffle_dataset=True, log_completions=False,
        # float32 and no recomputation, as verimath on a CPU (TRL's defaults are bf16
        # autocast and gradient checkpointing, several times slower for this model)
        bf16=False, fp16=False, gradient_checkpointing=False,
    )


def run_trl(model_dir: str, seed: int, steps: int, every: int, k: int, out: Path) -> dict:
    """TRL's GRPOTrainer from ``model_dir`` with the same settings; held-out points every
    ``every`` generation rounds (4 optimizer steps each), timed without them."""
    import torch
    from transformers import AutoModelForCausalLM, TrainerCallback
    from trl import GRPOTrainer
    from verimath.rewards import make_trl_reward
    from verimath.trainer.evaluation.evaluate import evaluate
    from verimath.trainer.model.policy import load_tokenizer
    from verimath.trainer.rollout.engine import HFRolloutEngine

    torch.set_num_threads(1)
    cfg = base_config([f"data.seed={seed}"])
    tokenizer = load_tokenizer(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    problems = heldout(cfg)
    dataset = training_dataset(cfg, seed, steps * cfg.rollout.gen_prompts,
                               {p.prompt for p in problems})
    r = cfg.reward
    reward = CountingReward(make_trl_reward(
        "answer", style=r.answer_style, mode=r.mode, timeout=r.timeout,
        max_length=cfg.rollout.max_new_tokens, cache_length=r.overlong_buffer),
        cfg.rollout.group_size)
    updates = cfg.algo.train_prompts // cfg.algo.mini_batch_prompts * cfg.algo.ppo_epochs
    kwargs = eval_kwargs(cfg, k)
    timing = {"generate_and_score": 0.0, "generate": 0.0}
    trl_logs: list[dict] = []

    def evaluate_now():
        before = timing["generate"]
        try:
            return evaluate(HFRolloutEngine(model, tokenizer), tokenizer, problems, **kwargs)
        finally:
            timing["generate"] = before  # evaluation's own generate calls are not training

    class Checkpoints(TrainerCallback):
        def on_train_begin(self, args, state, control, **_):
            self.clock = Clock()

        def on_step_end(self, args, state, control, **_):
            rounds, done = divmod(state.global_step, updates)
            if done == 0 and (rounds % every == 0 or state.global_step >= args.max_steps):
                self.clock.checkpoint(rounds, reward.tokens, evaluate_now)

        def on_log(self, args, state, control, logs=None, **_):
            numbers = {k: v for k, v in (logs or {}).items() if isinstance(v, (int, float))}
            trl_logs.append({"round": state.global_step / updates, **numbers})

    warm_up_scoring(cfg)
    load0 = load_avg()
    start = start_point(evaluate_now(), load0)
    checkpoints = Checkpoints()
    trainer = GRPOTrainer(model=model, reward_funcs=[reward], args=trl_config(cfg, seed, steps, out),
                          train_dataset=dataset, processing_class=tokenizer,
                          callbacks=[checkpoints])
    _time_method(trainer, "_generate_and_score_completions", timing, "generate_and_score")
    _time_method(trainer.model, "generate", timing, "generate")
    trainer.train()
    points = [start] + checkpoints.clock.points
    wall = points[-1]["wall_s"]
    profile = {"generate": timing["generate"], "score": reward.seconds,
               "logp_and_advantages": timing["generate_and_score"] - timing["generate"]
               - reward.seconds}
    profile["update"] = wall - timing["generate_and_score"]
    details = {"groups": dict(reward.groups), "responses": reward.responses,
               "logs": trl_logs}
    return record("trl", seed, [], points, profile, details)


def _time_method(owner, name: str, timing: dict, key: str) -> None:
    method = getattr(owner, name)

    def timed(*args, **kwargs):
        t = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            timing[key] += time.perf_counter() - t

    setattr(owner, name, timed)


# ---------------------------------------------------------------------------- record

def record(trainer: str, seed: int, overrides: list[str], points: list[dict], profile: dict,
           details: dict) -> dict:
    """The JSON record of one run: ``points`` (step, wall_s, cpu_s, tokens, avg, greedy, load) from
    step 0 to the end, the time profile (seconds), and trainer-specific details."""
    return {"trainer": trainer, "seed": seed, "overrides": overrides, "points": points,
            "wall_s": points[-1]["wall_s"], "cpu_s": points[-1].get("cpu_s"),
            "tokens": points[-1]["tokens"],
            "profile": profile, "details": details,
            "load_mean": float(np.mean([p["load"] for p in points]))}


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
