"""One DAPO step, top to bottom: :func:`rl_step`.

DAPO (Yu et al. 2025, arXiv 2503.14476) is GRPO plus four techniques; each is visible at its
call site below, behind its own switch:

1. **Clip-Higher**: ``eps_high > eps_low`` in the clipped surrogate
   (``loss.clipped_surrogate``); switch ``algo.clip_higher``.
2. **Dynamic sampling**: generation rounds until ``algo.train_prompts`` groups with
   ``0 < #correct < G`` are held (``dynamic_sampling.collect_informative``); switch
   ``algo.dynamic_sampling``. Later rounds are sized to what is missing
   (``algo.adaptive_rounds``) and informative groups beyond the target are trained on at the
   next step (``algo.max_staleness``) rather than thrown away.
3. **Token-level loss**: the ``token-mean`` aggregation over the whole mini-batch, exact under
   micro-batching (``aggregation.token_mean``); switch ``algo.token_level_loss``.
4. **Overlong reward shaping**: truncated responses leave the loss
   (``loss.overlong_filter_mask``, switch ``algo.overlong_filtering``); the soft length
   penalty is added to the reward by the env (``verimath.rewards.overlong_penalty``, switch
   ``reward.overlong_punishment``).
"""

from __future__ import annotations

import time

import numpy as np
import torch
from verimath.trainer.advantages import group_advantages
from verimath.trainer.batch import (
    TrainBatch,
    mini_batches,
    pack_batch,
    response_values,
    sequence_logprobs,
)
from verimath.trainer.dynamic_sampling import SamplingStats, collect_informative, fresh_groups
from verimath.trainer.episodes import Group, RoundStats
from verimath.trainer.loss import overlong_filter_mask
from verimath.trainer.state import TrainState
from verimath.trainer.update import LossSettings, mean_metrics, update_on_mini_batch


def rl_step(state: TrainState) -> dict[str, float]:
    """Step ``state.step`` (0-based): rollouts, advantages, updates; returns its metrics."""
    cfg, algo = state.config, state.config.algo
    rng = np.random.default_rng([cfg.optim.seed, state.step])  # mini-batch order, resumable
    t0 = time.perf_counter()
    carried = fresh_groups(state.surplus, [state.step - g.step for g in state.surplus],
                           algo.max_staleness)
    groups, surplus, sampling = collect_informative(  # DAPO 2: dynamic sampling
        state.episodes.next_round, target_groups=algo.train_prompts,
        max_rounds=algo.max_gen_rounds, round_prompts=cfg.rollout.gen_prompts,
        filter=algo.dynamic_sampling, adaptive=algo.adaptive_rounds, margin=algo.round_margin,
        min_round_prompts=algo.min_round_prompts, carried=carried)
    for g in groups + surplus:
        g.step = state.step if g.step is None else g.step  # new groups are this step's
    buffer = {"sampling/stale_dropped": float(len(state.surplus) - len(carried)),
              "sampling/staleness_mean": float(np.mean([state.step - g.step for g in groups]))
              if groups else 0.0}
    state.surplus = surplus if algo.max_staleness > 0 else []
    rounds = state.episodes.pop_stats()
    if sampling.note:
        state.echo(f"step {state.step + 1}: {sampling.note}")
    t1 = time.perf_counter()
    updates, mismatch, forward = [], {}, {"temperature": cfg.rollout.temperature,
                            "micro_batch_size": algo.micro_batch_size,
                            "chunk_size": algo.logprob_chunk_size}
    if groups:
        rewards = np.stack([g.rewards for g in groups])  # (P, G) correctness + length penalty
        adv = group_advantages(rewards, eps=algo.adv_eps)  # (P, G): (r - mean) / (std + eps)
        batch = pack_batch(groups, adv, pad_id=state.pad_id, device=state.device)
        batch.mask = overlong_filter_mask(batch.mask, batch.truncated,  # DAPO 4: filtering
                                          enabled=algo.overlong_filtering)
        batch.old_logp = sequence_logprobs(state.model, batch, **forward)  # pi_old, (N, S-1)
        use_sampling_policy(batch, groups)  # a group from an earlier step: the pi that sampled it
        keep_sampling_policy(state.model, state.surplus, pad_id=state.pad_id,
                             device=state.device, **forward)
        if state.ref_model is not None:  # optional KL: the model RL started from
            batch.ref_logp = sequence_logprobs(state.ref_model, batch, **forward)
        mismatch = engine_mismatch(batch)  # vLLM vs trainer log-probs on the sampled tokens
        eps_low, eps_high = algo.clip_range
        settings = LossSettings(
            eps_low=eps_low, eps_high=eps_high,  # DAPO 1: clip-higher, eps_high > eps_low
            aggregation=algo.aggregation,  # DAPO 3: token-level loss, "token-mean"
            dual_clip=algo.dual_clip, kl_coef=algo.kl_coef, policy_loss=algo.policy_loss,
            temperature=cfg.rollout.temperature, chunk_size=algo.logprob_chunk_size,
            horizon=cfg.rollout.max_new_tokens, rollout_is_cap=algo.rollout_is_cap)
        for _ in range(algo.ppo_epochs):
            for rows in mini_batches(batch.group, algo.mini_batch_prompts, rng,
                                     by=algo.mini_batch_by):
                updates.append(update_on_mini_batch(
                    state.model, state.optimizer, state.scheduler, batch, rows,
                    settings=settings, micro_batch_size=algo.micro_batch_size,
                    grad_clip=cfg.optim.grad_clip))
        state.engine.sync_weights(state.model)  # the next rollouts sample the new policy
    t2 = time.perf_counter()
    return step_metrics(sampling, rounds, {**mean_metrics(updates), **mismatch, **buffer}, groups,
                        seconds_update=t2 - t1, seconds_step=t2 - t0)


def use_sampling_policy(batch: TrainBatch, groups: list[Group]) -> None:
    """Overwrite the old log-probs of groups kept from an earlier step with those of the
    policy that sampled them (stored when they were generated), so their importance ratio
    is ``pi_theta / pi_sampler``."""
    for i, g in enumerate(groups):
        if g.old_logprobs is not None:
            rows = np.flatnonzero(batch.group == i)
            batch.old_logp[rows] = response_values(g.old_logprobs, batch.response_mask[rows])


@torch.no_grad()
def keep_sampling_policy(model, groups: list[Group], *, pad_id: int, device, **forward) -> None:
    """Store, in each surplus group that has none yet, the log-probs of its responses under
    ``model`` (the policy that sampled them, before this step's update)."""
    new = [g for g in groups if g.old_logprobs is None]
    if not new:
        return
    zero = np.zeros((len(new), len(new[0].response_ids)))
    batch = pack_batch(new, zero, pad_id=pad_id, device=device)
    logp = sequence_logprobs(model, batch, **forward)  # (N, S-1)
    for i, g in enumerate(new):
        rows = np.flatnonzero(batch.group == i)
        g.old_logprobs = [logp[r][batch.mask[r].bool()].cpu().numpy() for r in rows]


@torch.no_grad()
def engine_mismatch(batch) -> dict[str, float]:
    """How far the rollout engine's log-probs are from the trainer's recomputed old
    log-probs on the sampled tokens: mean absolute difference and the k3 estimate of
    KL(engine || trainer); {} when the engine gave none (the HF engine samples the policy
    itself)."""
    if batch.behaviour_logp is None:
        return {}
    keep = batch.mask.bool()
    diff = (batch.old_logp - batch.behaviour_logp)[keep]  # log pi_old - log pi_engine
    if diff.numel() == 0:
        return {}
    return {"rollout/logp_abs_diff": float(diff.abs().mean()),
            "rollout/kl_engine_trainer": float((diff.exp() - 1 - diff).mean())}


def step_metrics(sampling: SamplingStats, rounds: RoundStats, update: dict[str, float],
                 kept: list[Group], *, seconds_update: float, seconds_step: float
                 ) -> dict[str, float]:
    """The namespaced record of one RL step (see the README's metric list)."""
    lengths = np.asarray(rounds.lengths if rounds.lengths else [0])
    out = {
        "compute/generated_tokens": float(rounds.generated_tokens),
        "compute/trained_tokens": update.get("compute/trained_tokens", 0.0),
        **sampling.as_metrics(),
        "time/generate": rounds.seconds_generate,
        "time/score": rounds.seconds_score,
        "time/update": seconds_update,
        "time/step": seconds_step,
        "reward/accuracy": rounds.correct / max(rounds.responses, 1),
        "reward/kept_mean": float(np.mean([g.rewards.mean() for g in kept])) if kept else 0.0,
        "length/mean": float(lengths.mean()),
        "length/max": float(lengths.max()),
        "length/truncated_frac": rounds.truncated / max(rounds.responses, 1),
    }
    out.update({k: v for k, v in update.items() if k != "compute/trained_tokens"})
    return out
