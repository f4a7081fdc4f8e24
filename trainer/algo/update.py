"""One optimizer update on a mini-batch, with exact token-level normalization.

For each mini-batch the number of loss tokens ``N`` (and responses ``S``) is counted over
the whole mini-batch first; every micro-batch loss is divided by that global count and the
micro-batch gradients add up, so the update equals the one computed on the mini-batch in
one piece, however it is split into micro-batches.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import numpy as np
import torch
from verimath.trainer.algo.batch import TrainBatch, forward_logprobs, trimmed
from verimath.trainer.algo.loss import dapo_policy_loss, kl_penalty
from verimath.trainer.core.distributed import Comm

TOKEN_WEIGHTED = ("clip/frac_low", "clip/frac_high", "clip/frac_dual", "policy/approx_kl")
SUMMED = ("loss/policy", "loss/kl", *TOKEN_WEIGHTED, "policy/entropy")
"""Update metrics that are each rank's share of a global value."""
LOCAL = Comm()


class UpdateOnlyDropout(torch.nn.Module):
    """Dropout that applies only inside :func:`update_dropout`, whatever the module's
    train/eval mode, so that rollouts and the old and reference log-probs never see it
    (LoRA's ``model.lora_dropout``)."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p, self.active = p, False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.dropout(x, self.p, training=True) if self.active else x


@contextlib.contextmanager
def update_dropout(model: torch.nn.Module):
    """Every :class:`UpdateOnlyDropout` of ``model`` on for the duration (the forward and
    backward passes of an update, activation recomputation included)."""
    switches = [m for m in model.modules() if isinstance(m, UpdateOnlyDropout)]
    for m in switches:
        m.active = True
    try:
        yield
    finally:
        for m in switches:
            m.active = False


@dataclass(frozen=True)
class LossSettings:
    """The loss switches, unpacked from the config by the step."""

    eps_low: float
    eps_high: float
    """``eps_high > eps_low`` is DAPO's clip-higher."""
    dual_clip: float | None
    aggregation: str
    """A name of ``verimath.trainer.algo.aggregation.AGGREGATIONS``; ``token-mean`` is DAPO's."""
    kl_coef: float
    temperature: float
    chunk_size: int = 0
    """Positions per output-head chunk in ``token_logprobs``; 0 computes full logits."""
    policy_loss: str = "clip"
    """A name of ``verimath.trainer.algo.loss.POLICY_LOSSES``."""
    horizon: int | None = None
    """The constant of the ``seq-mean-token-sum-norm`` aggregation (``max_new_tokens``)."""
    rollout_is_cap: float = 0.0
    """Truncated importance sampling against the rollout engine: each token's loss is
    weighted by ``min(pi_old / pi_engine, cap)``; 0 disables it."""


def is_weights(batch: TrainBatch, rows, cols, cap: float) -> torch.Tensor | None:
    """Truncated importance weights ``min(exp(old_logp - behaviour_logp), cap)`` ``(m, w-1)``
    for rollouts sampled by an engine whose log-probs differ from the trainer's."""
    if cap <= 0 or batch.behaviour_logp is None:
        return None
    log_w = batch.old_logp[rows, cols] - batch.behaviour_logp[rows, cols]
    return torch.exp(log_w.clamp(max=float(np.log(cap))))


def update_on_mini_batch(model, optimizer, scheduler, batch: TrainBatch, rows: np.ndarray,
                         *, settings: LossSettings, micro_batch_size: int, grad_clip: float,
                         comm: Comm = LOCAL) -> dict[str, float]:
    """One optimizer update on the sequences ``rows`` (gradient accumulation; with several
    ranks, the token and sequence counts are those of all ranks together).

    A non-finite gradient norm (a NaN or inf loss or gradient on any rank) skips the
    optimizer step (``optim/skipped`` is 1); the schedule still advances."""
    rows_all = torch.from_numpy(np.asarray(rows, dtype=np.int64))
    mask = batch.mask[rows_all]  # (n, S-1)
    num_tokens, num_sequences = (float(c) for c in comm.all_sum(
        [float(mask.sum()), float((mask.sum(dim=1) > 0).sum())]))
    counts = {"num_tokens": num_tokens, "num_sequences": num_sequences,
              "aggregation": settings.aggregation, "horizon": settings.horizon}
    optimizer.zero_grad(set_to_none=True)
    sums: dict[str, float] = {}
    with update_dropout(model):  # e.g. model.lora_dropout: in the update only
        for start in range(0, len(rows_all), micro_batch_size):
            rows = rows_all[start:start + micro_batch_size]
            ids, attention, cols = trimmed(batch, rows)
            m = batch.mask[rows, cols]  # (m, w-1)
            logp, entropy = forward_logprobs(  # (m, w-1) each
                model, ids, attention, temperature=settings.temperature, with_entropy=True,
                chunk_size=settings.chunk_size, positions=m)
            loss, metrics = dapo_policy_loss(
                logp, batch.old_logp[rows, cols], batch.adv[rows], m, eps_low=settings.eps_low,
                eps_high=settings.eps_high, dual_clip=settings.dual_clip,
                policy_loss=settings.policy_loss,
                is_weights=is_weights(batch, rows, cols, settings.rollout_is_cap), **counts)
            if settings.kl_coef > 0:
                kl = kl_penalty(logp, batch.ref_logp[rows, cols], m, **counts)
                loss = loss + settings.kl_coef * kl
                _add(sums, "loss/kl", float(kl.detach()))
            # FSDP averages gradients over ranks; the global token mean needs their sum
            (loss * comm.world if comm.enabled else loss).backward()
            _add(sums, "loss/policy", metrics["loss/policy"])
            n = metrics["policy/tokens"]
            for key in TOKEN_WEIGHTED:
                _add(sums, key, metrics[key] * n / max(num_tokens, 1.0))
            _add(sums, "policy/entropy", float((entropy.detach() * m).sum()) / max(num_tokens, 1.0))
    if comm.enabled:  # each rank holds its share of every sum: add them up
        keys = [k for k in SUMMED if k in sums]  # the same keys on every rank
        sums.update(zip(keys, comm.all_sum([sums.get(k, 0.0) for k in keys]).tolist()))
    params = [p for p in model.parameters() if p.requires_grad]
    norm = torch.nn.utils.clip_grad_norm_(params, grad_clip if grad_clip > 0 else float("inf"))
    norm = float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)  # all ranks
    sums["optim/grad_norm"] = norm
    sums["optim/lr"] = float(optimizer.param_groups[0]["lr"])
    sums["optim/skipped"] = 0.0 if math.isfinite(norm) else 1.0
    if math.isfinite(norm):
        optimizer.step()
    else:
        optimizer.zero_grad(set_to_none=True)
    scheduler.step()
    sums["compute/trained_tokens"] = num_tokens
    return sums


def _add(sums: dict[str, float], key: str, value: float) -> None:
    sums[key] = sums.get(key, 0.0) + value


def mean_metrics(records: list[dict[str, float]]) -> dict[str, float]:
    """Average update metrics over the updates of a step (token counts and skipped updates
    are summed)."""
    if not records:
        return {}
    out = {k: float(np.mean([r[k] for r in records if k in r])) for k in records[0]}
    for key in ("compute/trained_tokens", "optim/skipped"):
        if key in records[0]:
            out[key] = float(sum(r[key] for r in records))
    out["optim/updates"] = float(len(records))
    return out
