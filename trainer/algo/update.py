"""One optimizer update on a mini-batch, with exact token-level normalization.

For each mini-batch the number of loss tokens ``N`` (and responses ``S``) is counted over
the whole mini-batch first; every micro-batch loss is divided by that global count and the
micro-batch gradients add up, so the update equals the one computed on the mini-batch in
one piece, however it is split into micro-batches.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import torch
from verimath.trainer.algo.batch import TrainBatch, forward_logprobs, trimmed
from verimath.trainer.algo.correction import rollout_weights
from verimath.trainer.algo.loss import dapo_policy_loss, kl_penalty, select_tokens
from verimath.trainer.core.distributed import Comm

TOKEN_WEIGHTED = ("clip/frac_low", "clip/frac_high", "clip/frac_dual", "clip/frac_cov",
                  "clip/frac_high_rare", "policy/approx_kl")
SUMMED = ("loss/policy", "loss/kl", *TOKEN_WEIGHTED, "policy/entropy",
          "rollout/is_weight_mean", "rollout/is_bounded_frac")
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
    options: Mapping[str, float] = field(default_factory=dict)
    """The policy loss's own numbers (``AlgoConfig.loss_options``: the covariance selection's
    ``cov_fraction``, ``cov_low``, ``cov_high``, and ``kl_cov_coef``)."""
    per_update_correction: tuple[str, float] | None = None
    """``(mode, C)`` of the rollout correction when the proximal policy is the policy at the
    start of each update (``algo.proximal_policy=update``): ``batch.old_logp`` then holds the
    samplers' log-probs, the ratio is taken against the update's own detached log-probs and
    each token is weighted by ``pi_update_start / pi_sampler``; None: the ratio is taken
    against ``batch.old_logp``, weighted by ``batch.is_weights``."""
    seed: tuple[int, ...] = (0,)
    """Entropy of the random draws of the step's updates (Clip-Cov's pick), with the update's
    index: ``(optim.seed, step)``, so a resumed run draws the same."""


def covariance_tokens(batch: TrainBatch, rows: torch.Tensor, settings: LossSettings,
                      index: int) -> torch.Tensor | None:
    """The covariance selection of a loss that needs one (``clip-cov``, ``kl-cov``), made
    once over the mini-batch ``rows`` ``(n, S-1)`` from the log-probs the ratio is taken
    against (no extra forward pass; every micro-batch split sees the same tokens; with
    several ranks, over this rank's share); None for the other losses. ``index`` (the
    update's number in the step) seeds Clip-Cov's random pick with ``settings.seed``."""
    seed = np.random.SeedSequence([*settings.seed, index]).generate_state(1)[0]
    generator = torch.Generator().manual_seed(int(seed))
    return select_tokens(settings.policy_loss, batch.old_logp[rows], batch.adv[rows],
                         batch.mask[rows], settings.options, generator=generator)


def update_on_mini_batch(model, optimizer, scheduler, batch: TrainBatch, rows: np.ndarray,
                         *, settings: LossSettings, micro_batch_size: int, grad_clip: float,
                         comm: Comm = LOCAL, index: int = 0) -> dict[str, float]:
    """One optimizer update on the sequences ``rows`` (gradient accumulation; with several
    ranks, the token and sequence counts are those of all ranks together). Each token's loss
    is weighted by ``batch.is_weights`` when set (the rollout correction); ``index`` numbers
    the update within the step (it seeds the random draws of a loss that makes any).

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
    selected = covariance_tokens(batch, rows_all, settings, index)  # (n, S-1) or None
    with update_dropout(model):  # e.g. model.lora_dropout: in the update only
        for start in range(0, len(rows_all), micro_batch_size):
            rows = rows_all[start:start + micro_batch_size]
            ids, attention, cols = trimmed(batch, rows)
            m = batch.mask[rows, cols]  # (m, w-1)
            logp, entropy = forward_logprobs(  # (m, w-1) each
                model, ids, attention, temperature=settings.temperature, with_entropy=True,
                chunk_size=settings.chunk_size, positions=m)
            old, weights = _reference_and_weights(batch, rows, cols, logp, m, settings, sums,
                                                  num_tokens)
            loss, metrics = dapo_policy_loss(
                logp, old, batch.adv[rows], m, eps_low=settings.eps_low,
                eps_high=settings.eps_high, dual_clip=settings.dual_clip,
                policy_loss=settings.policy_loss, options=settings.options,
                selected=None if selected is None else
                selected[start:start + micro_batch_size, cols],
                is_weights=weights, **counts)
            if settings.kl_coef > 0:
                kl = kl_penalty(logp, batch.ref_logp[rows, cols], m, **counts)
                loss = loss + settings.kl_coef * kl
                _add(sums, "loss/kl", float(kl.detach()))
            # FSDP averages gradients over ranks; the global token mean needs their sum
            (loss * comm.world if comm.enabled else loss).backward()
            _add(sums, "loss/policy", metrics["loss/policy"])
            n = metrics["policy/tokens"]
            for key in TOKEN_WEIGHTED:
                if key in metrics:  # clip/frac_cov: the covariance losses only
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


def _reference_and_weights(batch: TrainBatch, rows, cols, logp: torch.Tensor, m: torch.Tensor,
                           settings: LossSettings, sums: dict[str, float], num_tokens: float
                           ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The log-probs a micro-batch's ratio is taken against and its tokens' weights: those of
    the step (``batch.old_logp``, ``batch.is_weights``), or, with a proximal policy per update,
    the update's own detached log-probs and the correction against the samplers' (adding the
    weights' token-weighted metrics to ``sums``)."""
    if settings.per_update_correction is None:
        return batch.old_logp[rows, cols], (None if batch.is_weights is None else
                                            batch.is_weights[rows, cols])
    mode, cap = settings.per_update_correction
    here = logp.detach()  # (m, w-1) the policy at the start of this update
    weights, weighed = rollout_weights(here, batch.old_logp[rows, cols], m, mode=mode, cap=cap)
    share = float(m.sum()) / max(num_tokens, 1.0)
    for key, value in weighed.items():
        _add(sums, key, value * share)
    return here, weights


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
