"""The DAPO training loop, in one function: :func:`train`.

DAPO (Yu et al. 2025, arXiv 2503.14476) is GRPO plus four techniques. Where they live:

1. **Clip-Higher** (decoupled ``eps_low``/``eps_high``): ``loss.clipped_surrogate`` via
   ``loss.dapo_policy_loss``; switch ``algo.clip_higher``.
2. **Dynamic sampling** (keep groups with ``0 < #correct < G``, generate more rounds up to
   ``algo.max_gen_rounds``): ``advantages.informative_groups`` and
   ``sampling.collect_informative``; switch ``algo.dynamic_sampling``.
3. **Token-level policy-gradient loss** (token-mean over the whole optimizer step, exact
   under micro-batching): ``loss.aggregate_loss`` with the global token count from
   ``update.update_on_mini_batch``; switch ``algo.token_level_loss``.
4. **Overlong reward shaping**: filtering in ``loss.overlong_filter_mask`` (switch
   ``algo.overlong_filtering``), soft punishment in ``verimath.rewards.overlong_penalty``
   applied by the env (switch ``reward.overlong_punishment``).

One RL step: collect informative groups (rollouts + scoring), advantages per group, old
log-probs in a forward pass, ``ppo_epochs`` x mini-batches of updates, metrics, and a
checkpoint every ``logging.save_every`` steps. See ``run.py`` for setup and the run directory.
"""

from __future__ import annotations

import time

import numpy as np
from verimath.trainer.run import Run, step_metrics
from verimath.trainer.sampling import collect_informative
from verimath.trainer.update import (
    make_train_batch,
    mean_metrics,
    mini_batches,
    sequence_logprobs,
    update_on_mini_batch,
)


def train(run: Run) -> dict:
    """Run RL steps ``run.start_step .. optim.steps`` on a prepared :class:`Run`; returns the
    summary (also written to ``summary.json``)."""
    cfg = run.config
    algo = cfg.algo
    for step in range(run.start_step, cfg.optim.steps):
        rng = np.random.default_rng([cfg.optim.seed, step])  # mini-batch order, resumable
        t0 = time.perf_counter()
        kept, sampling = collect_informative(  # DAPO 2: dynamic sampling
            run.episodes.next_round, target_groups=algo.train_prompts,
            max_rounds=algo.max_gen_rounds, filter=algo.dynamic_sampling)
        rounds = run.episodes.pop_stats()
        if sampling.note:
            run.say(f"step {step + 1}: {sampling.note}")
        t1 = time.perf_counter()
        updates = []
        if kept:
            batch = make_train_batch(kept, pad_id=run.pad_id, adv_eps=algo.adv_eps,
                                     overlong_filtering=algo.overlong_filtering,  # DAPO 4
                                     device=run.device)
            forward = {"temperature": run.temperature, "micro_batch_size": algo.micro_batch_size,
                       "chunk_size": algo.logprob_chunk_size}
            batch.old_logp = sequence_logprobs(run.model, batch, **forward)
            if run.ref_model is not None:  # optional KL: the model RL started from
                batch.ref_logp = sequence_logprobs(run.ref_model, batch, **forward)
            for _ in range(algo.ppo_epochs):
                for group_ids in mini_batches(len(kept), algo.mini_batch_prompts, rng):
                    updates.append(update_on_mini_batch(  # DAPO 1 and 3 inside the loss
                        run.model, run.optimizer, run.scheduler, batch, group_ids,
                        settings=run.loss_settings, micro_batch_size=algo.micro_batch_size,
                        grad_clip=cfg.optim.grad_clip))
        t2 = time.perf_counter()
        metrics = step_metrics(sampling, rounds, mean_metrics(updates), kept,
                               seconds_update=t2 - t1, seconds_step=t2 - t0)
        run.log_step(step + 1, metrics)
    return run.finish()
