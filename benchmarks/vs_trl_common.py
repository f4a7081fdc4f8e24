"""What both runners of ``vs_trl_runs.py`` share: the tiny preset's config, the held-out
problems and evaluation arguments, the :class:`Clock` that times training without its
evaluations, the scoring warm-up, and the JSON :func:`record` of a run."""

from __future__ import annotations

import os
import time

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



def record(trainer: str, seed: int, overrides: list[str], points: list[dict], profile: dict,
           details: dict) -> dict:
    """The JSON record of one run: ``points`` (step, wall_s, cpu_s, tokens, avg, greedy, load) from
    step 0 to the end, the time profile (seconds), and trainer-specific details."""
    return {"trainer": trainer, "seed": seed, "overrides": overrides, "points": points,
            "wall_s": points[-1]["wall_s"], "cpu_s": points[-1].get("cpu_s"),
            "tokens": points[-1]["tokens"],
            "profile": profile, "details": details,
            "load_mean": float(np.mean([p["load"] for p in points]))}
