"""One DAPO step, top to bottom: :func:`rl_step`.

DAPO (Yu et al. 2025, arXiv 2503.14476) is GRPO plus four techniques behind five switches.
Three are read at their call site in :func:`rl_step`; two are resolved before the step, and
this list says exactly where:

1. **Clip-Higher**, ``algo.clip_higher``: resolved in ``AlgoConfig.clip_range``
   (``verimath.trainer.config``), which returns ``(eps_low, eps_high)`` when on and
   ``(eps_low, eps_low)`` when off; the step passes that pair to ``LossSettings`` (comment
   "DAPO 1") and the clipped surrogate (``loss.clipped_surrogate``) clips the ratio to
   ``[1 - eps_low, 1 + eps_high]``.
2. **Dynamic sampling**, ``algo.dynamic_sampling``: read at the call to
   ``dynamic_sampling.collect_informative`` (``filter=``, comment "DAPO 2"), which runs
   generation rounds until ``algo.train_prompts`` groups with ``0 < #correct < G`` are held.
   Later rounds are sized to what is missing (``algo.adaptive_rounds``) and informative
   groups beyond the target are trained on at the next step (``algo.max_staleness``) rather
   than thrown away.
3. **Token-level loss**, ``algo.token_level_loss``: resolved in ``AlgoConfig.aggregation``
   (``verimath.trainer.config``): ``algo.loss_aggregation`` when set, else ``token-mean``
   when on and GRPO's ``seq-mean-token-mean`` when off; the step passes the name to
   ``LossSettings`` (comment "DAPO 3"), and ``aggregation.token_mean`` is exact under
   micro-batching and across ranks.
4. **Overlong reward shaping**, two switches. ``algo.overlong_filtering`` is read at the call
   to ``loss.overlong_filter_mask`` (comment "DAPO 4"): truncated responses leave the loss.
   ``reward.overlong_punishment`` (the soft length penalty) is resolved when the episode
   source is built: ``verimath.trainer.run.setup`` gives the env ``max_length`` and
   ``cache_length`` only when it is on, the env's one ``verimath.rewards.score_batch`` call
   per round adds ``verimath.rewards.overlong_penalty`` to each response's correctness, and
   the sum arrives here as ``Group.rewards`` (the ``rewards`` array below).

With ``rollout.async_steps >= 1`` the episode source is
``verimath.trainer.rollout.async_source.AsyncEpisodeSource``: rounds come from a generator
process that samples the next steps while this one updates, every group tagged with the
policy version that sampled it (``Group.step``) and holding that policy's log-probs, so its
ratio is taken against them as for a surplus group; ``start_step``, ``after_collection`` and
``step_metrics`` are the source's hooks (no-ops in one process). ``algo.proximal_clip`` (on by
default in asynchronous runs: ``AlgoConfig.uses_proximal``) instead takes the ratio of such
groups against the policy at the start of the step (``batch.use_proximal_policy``), and the
rollout correction (``AlgoConfig.correction``, ``correction.rollout_weights``) weights every
token by that policy over the one that sampled it (the engine, or the older policy).

With several ranks (``verimath.trainer.core.distributed``) each rank runs this same function on
its share of the prompts; the collectives are inside dynamic sampling, the update's token
counts and the metrics, and :func:`balanced` pads every rank to the same number of groups so
that the sharded forward and backward passes run in step.
"""

from __future__ import annotations

import time

import numpy as np
import torch
from verimath.rewards.batch import RULES
from verimath.rewards.extraction.final_answer import PATHS
from verimath.trainer.algo.advantages import group_advantages
from verimath.trainer.algo.batch import (
    TrainBatch,
    keep_sampling_policy,
    mini_batches,
    pack_batch,
    sequence_logprobs,
    use_proximal_policy,
    use_sampling_policy,
)
from verimath.trainer.algo.correction import rollout_weights
from verimath.trainer.algo.dynamic_sampling import SamplingStats, collect_informative, fresh_groups
from verimath.trainer.algo.loss import k3_estimate, overlong_filter_mask
from verimath.trainer.algo.update import LossSettings, mean_metrics, update_on_mini_batch
from verimath.trainer.core.groups import Group, RoundStats
from verimath.trainer.core.state import TrainState


def rl_step(state: TrainState) -> dict[str, float]:
    """Step ``state.step`` (0-based): rollouts, advantages, updates; returns its metrics."""
    cfg, algo, comm = state.config, state.config.algo, state.comm
    rng = np.random.default_rng([cfg.optim.seed, state.step])  # mini-batch order, resumable
    t0 = time.perf_counter()
    state.episodes.start_step(state.step, state.model)  # async: version state.step of the policy
    carried = fresh_groups(state.surplus, [state.step - g.step for g in state.surplus],
                           algo.max_staleness + cfg.rollout.async_steps)
    groups, surplus, sampling = collect_informative(  # DAPO 2: dynamic sampling
        state.episodes.next_round, target_groups=algo.train_prompts,
        max_rounds=algo.max_gen_rounds, round_prompts=cfg.rollout.gen_prompts // comm.world,
        filter=algo.dynamic_sampling, adaptive=algo.adaptive_rounds, margin=algo.round_margin,
        min_round_prompts=algo.min_round_prompts, carried=carried, comm=comm)
    state.episodes.after_collection()  # async: the next rounds generate during the update
    ages = _tag_and_age(groups + surplus, state.step)
    extra = {"sampling/stale_dropped": float(len(state.surplus) - len(carried)),
             "sampling/staleness_mean": float(np.mean(ages[:len(groups)])) if groups else 0.0}
    state.surplus = surplus if algo.max_staleness > 0 else []
    if sampling.note:
        state.echo(f"step {state.step + 1}: {sampling.note}")
    t1, updates = time.perf_counter(), []
    if sampling.kept_groups:  # all ranks agree: the count is global
        fwd = {"temperature": cfg.rollout.temperature, "micro_batch_size": algo.micro_batch_size,
               "chunk_size": algo.logprob_chunk_size}
        padded = balanced(groups, state)
        rewards = np.stack([g.rewards for g in padded])  # (P, G) correctness + DAPO 4 penalty
        adv = group_advantages(rewards, eps=algo.adv_eps)  # (P, G): (r - mean) / (std + eps)
        batch = pack_batch(padded, adv, pad_id=state.pad_id, device=state.device)
        batch.mask = overlong_filter_mask(batch.mask, batch.truncated,  # DAPO 4: filtering
                                          enabled=algo.overlong_filtering)
        proximal = algo.uses_proximal(cfg.rollout.async_steps)
        per_update = proximal and algo.proximal_policy == "update"  # no forward pass for it
        proximal = proximal and not per_update
        forward = proximal or not _all_stored(padded, comm)
        batch.old_logp = (sequence_logprobs(state.model, batch, **fwd) if forward else
                          torch.zeros_like(batch.mask))  # pi_old, (N, S-1)
        step_start = batch.old_logp.clone() if proximal or per_update else None
        use_sampling_policy(batch, padded)  # a group from an earlier step: its sampler
        # engine vs trainer log-probs of the policy that sampled each group, all ranks
        extra.update(engine_mismatch(batch, comm))
        if step_start is not None:  # clip around pi_old, weight by pi_old / pi_sampler
            use_proximal_policy(batch, padded, step_start)
            if per_update:  # pi_old: each update's own; the updates weigh against the samplers
                batch.old_logp = batch.behaviour_logp
        keep_sampling_policy(state.model, balanced(state.surplus, state, new_only=True),
                             pad_id=state.pad_id, device=state.device, **fwd)
        if state.ref_model is not None:  # optional KL: the model RL started from
            batch.ref_logp = sequence_logprobs(state.ref_model, batch, **fwd)
        mode, cap = algo.correction(cfg.rollout.async_steps)
        if not per_update and mode != "none" and batch.behaviour_logp is not None:
            batch.is_weights, weighed = rollout_weights(batch.old_logp, batch.behaviour_logp,
                                                        batch.mask, mode=mode, cap=cap)
            extra.update(weighed)
        eps_low, eps_high = algo.clip_range
        settings = LossSettings(
            eps_low=eps_low, eps_high=eps_high,  # DAPO 1: clip_higher, in algo.clip_range
            aggregation=algo.aggregation,  # DAPO 3: token_level_loss, in algo.aggregation
            dual_clip=algo.dual_clip, kl_coef=algo.kl_coef, policy_loss=algo.policy_loss,
            temperature=cfg.rollout.temperature, chunk_size=algo.logprob_chunk_size,
            horizon=cfg.rollout.max_new_tokens, options=algo.loss_options,
            per_update_correction=(mode, cap) if per_update else None,
            seed=(cfg.optim.seed, state.step))
        parts = -(-sampling.kept_groups // algo.mini_batch_prompts)  # updates per epoch
        for _ in range(algo.ppo_epochs):
            for rows in mini_batches(batch.group, parts, rng, by=algo.mini_batch_by):
                updates.append(update_on_mini_batch(
                    state.model, state.optimizer, state.scheduler, batch, rows, comm=comm,
                    settings=settings, micro_batch_size=algo.micro_batch_size,
                    grad_clip=cfg.optim.grad_clip, index=len(updates)))
        for update in updates:  # a NaN/inf gradient skipped the update: count them in a row
            state.skipped_in_a_row = state.skipped_in_a_row + 1 if update["optim/skipped"] else 0
        push = state.engine.sync_weights(state.model)  # the next rollouts sample the new policy
        extra.update({"time/weight_push": push.seconds, "compute/weight_push_bytes": push.bytes})
    extra.update(state.episodes.step_metrics(groups))
    t2 = time.perf_counter()
    return step_metrics(sampling, state.episodes.pop_stats(), {**mean_metrics(updates), **extra},
                        groups, comm=comm, seconds_update=t2 - t1, seconds_step=t2 - t0)


def _all_stored(groups: list[Group], comm) -> bool:
    """True when every group of every rank holds the log-probs of the policy that sampled
    it (decided over all ranks, so that they run the same forward passes)."""
    stored = all(g.old_logprobs is not None for g in groups)
    return int(comm.all_sum([int(stored)])[0]) == comm.world


def _tag_and_age(groups: list[Group], step: int) -> np.ndarray:
    """Mark new groups as generated at ``step``; the age of each group in steps."""
    for g in groups:
        g.step = step if g.step is None else g.step
    return np.array([step - g.step for g in groups], dtype=np.float64)


def balanced(groups: list[Group], state: TrainState, *, new_only: bool = False) -> list[Group]:
    """``groups`` padded with empty groups (zero loss mask) up to the largest count on any
    rank, so that every rank runs the same number of forward and backward passes (FSDP's
    collectives run in step); one process returns the groups as they are. ``new_only``
    keeps only groups without stored sampling log-probs (for ``keep_sampling_policy``)."""
    mine = [g for g in groups if not new_only or g.old_logprobs is None]
    if not state.comm.enabled:
        return mine
    most = max(state.comm.gather_counts(len(mine)))
    g = state.config.rollout.group_size
    eos = state.tokenizer.eos_token_id
    return mine + [Group.padding_group(g, eos) for _ in range(most - len(mine))]


# The step's namespaced metrics. With several ranks the rollout counts are summed over ranks
# before the rates are taken, so rank 0 logs the numbers of the whole step (the update
# metrics are reduced in the update); the curriculum/ metrics are rank 0's own stream's.


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
