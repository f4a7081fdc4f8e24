"""The TRL side of ``vs_trl_runs.py``: TRL's GRPOTrainer set up as the tiny preset (same
problem stream, reward, batch and optimizer), its generated tokens, groups and scoring time
counted by :class:`CountingReward`, held-out points taken by the shared :class:`Clock`."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from vs_trl_common import (
    Clock,
    base_config,
    eval_kwargs,
    heldout,
    load_avg,
    record,
    start_point,
    warm_up_scoring,
)


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
    from verimath.trainer.rollout.hf_engine import HFRolloutEngine

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
    trainer = GRPOTrainer(model=model, reward_funcs=[reward],
                          args=trl_config(cfg, seed, steps, out),
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
