"""The namespaced metrics of one RL step (see the README's metric list).

With several ranks the rollout counts are summed over ranks before the rates are taken, so
rank 0 logs the numbers of the whole step (the update metrics are reduced in the update); the
``curriculum/`` metrics are those of rank 0's own problem stream.
"""

from __future__ import annotations

import numpy as np
import torch
from verimath.rewards.batch import RULES
from verimath.rewards.extraction.final_answer import PATHS
from verimath.trainer.algo.batch import TrainBatch
from verimath.trainer.algo.dynamic_sampling import SamplingStats
from verimath.trainer.algo.loss import k3_estimate
from verimath.trainer.rollout.episodes import Group, RoundStats


@torch.no_grad()
def engine_mismatch(batch: TrainBatch, comm) -> dict[str, float]:
    """How far the rollout engine's log-probs are from the trainer's recomputed old
    log-probs on the sampled loss tokens of all ranks: mean absolute difference and the k3
    estimate of KL(engine || trainer); {} when the engine gave none (on any rank)."""
    local = [0.0, 0.0, 0.0]
    if batch.behaviour_logp is not None:
        diff = (batch.old_logp - batch.behaviour_logp)[batch.mask.bool()]  # log pi_old - pi_eng
        local = [float(diff.abs().sum()), float(k3_estimate(diff).sum()), diff.numel()]
    ready, abs_sum, k3_sum, tokens = comm.all_sum([batch.behaviour_logp is not None, *local])
    if ready < comm.world or tokens == 0:
        return {}
    return {"rollout/logp_abs_diff": abs_sum / tokens, "rollout/kl_engine_trainer": k3_sum / tokens}


def path_shares(rounds: RoundStats, comm) -> dict[str, float]:
    """Share of the step's generated responses (all ranks) whose answer each extraction path
    found (``reward/path_<name>``) and whose reward each rule decided (``reward/rule_<name>``);
    every path and rule is present, and each family sums to 1. {} when nothing was generated."""
    counts = comm.all_sum([rounds.paths.count(p) for p in PATHS] +
                          [rounds.rules.count(r) for r in RULES])
    paths, rules = counts[:len(PATHS)], counts[len(PATHS):]
    if paths.sum() == 0:
        return {}
    out = {f"reward/path_{p}": float(n / paths.sum()) for p, n in zip(PATHS, paths)}
    out.update({f"reward/rule_{r}": float(n / rules.sum()) for r, n in zip(RULES, rules)})
    return out


def step_metrics(sampling: SamplingStats, rounds: RoundStats, update: dict[str, float],
                 kept: list[Group], *, comm, seconds_update: float, seconds_step: float
                 ) -> dict[str, float]:
    """The record of one step: compute, sampling, time, reward, length, then the update's."""
    lengths = np.asarray(rounds.lengths if rounds.lengths else [0])
    kept_rewards = [float(g.rewards.mean()) for g in kept]
    tokens, responses, correct, truncated, kept_sum, n_kept, reward_sum, right_tokens = (
        comm.all_sum([rounds.generated_tokens, rounds.responses, rounds.correct,
                      rounds.truncated, float(np.sum(kept_rewards)), len(kept_rewards),
                      rounds.reward_sum, rounds.correct_tokens]))
    wrong = responses - correct
    longest = comm.all_sum(np.eye(comm.world)[comm.rank] * lengths.max()).max()
    out = {
        "compute/generated_tokens": float(tokens),
        "compute/trained_tokens": update.get("compute/trained_tokens", 0.0),
        **sampling.as_metrics(),
        "time/generate": rounds.seconds_generate,
        "time/score": rounds.seconds_score,
        "time/update": seconds_update,
        "time/step": seconds_step,
        "reward/accuracy": correct / max(responses, 1),
        "reward/kept_mean": kept_sum / n_kept if n_kept else 0.0,
        "reward/mean": reward_sum / max(responses, 1),
        "length/mean": tokens / responses if responses else 0.0,
        "length/max": float(longest),
        "length/correct_mean": right_tokens / correct if correct else 0.0,
        "length/wrong_mean": (tokens - right_tokens) / wrong if wrong else 0.0,
        "length/truncated_frac": truncated / max(responses, 1),
        **path_shares(rounds, comm),
        **dict(rounds.curriculum),  # the latest value of each key
    }
    out.update({k: v for k, v in update.items() if k != "compute/trained_tokens"})
    return out
