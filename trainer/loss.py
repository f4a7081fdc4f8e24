"""The DAPO policy loss and its pieces, as small pure torch functions.

Notation (shapes in the house vocabulary): ``B`` responses, ``T`` response tokens,
``logp``/``old_logp`` ``(B, T)`` per-token log-probabilities of the sampled tokens under
the current and the behaviour (old) policy, ``adv`` ``(B,)`` or ``(B, T)``, ``mask``
``(B, T)`` with 1 on tokens that enter the loss and 0 on padding (and on whole responses
removed by overlong filtering).

Per token (``r = exp(logp - old_logp)``, DAPO clip-higher with ``eps_low``/``eps_high``)::

    l = -min(r * A, clip(r, 1 - eps_low, 1 + eps_high) * A)        # the PPO surrogate
    l = min(l, -c * A)   where A < 0 and dual_clip = c > 1            # optional dual clip

Aggregation (``aggregate_loss``)::

    token-mean          L = sum_{i,t} m_it l_it / N            N = tokens in the optimizer step
    seq-mean-token-mean L = sum_i [sum_t m_it l_it / sum_t m_it] / S
                                                               S = responses with >= 1 token

DAPO's token-level loss is ``token-mean``; ``seq-mean-token-mean`` is plain GRPO and is
kept for ablations. ``N`` and ``S`` count the *whole* optimizer step (all micro-batches
and data-parallel ranks); pass them as ``num_tokens``/``num_sequences`` and sum the
micro-batch losses (gradients add up exactly to those of the full batch). When omitted
they default to the local counts, which is right for a single micro-batch. Data-parallel
wrappers (DDP, FSDP) *average* gradients over ranks; with global counts the per-rank
losses must be *summed*, so multiply each rank's loss by the world size before
``backward()``.

Masked positions never matter: their values may be anything, even ``-inf``/``NaN``
(they are replaced before any arithmetic), so padding cannot leak NaN into gradients.
"""

from __future__ import annotations

import math

import torch

__all__ = [
    "AGGREGATIONS",
    "aggregate_loss",
    "clipped_surrogate",
    "dapo_policy_loss",
    "entropy_from_logits",
    "kl_penalty",
    "overlong_filter_mask",
    "token_logprobs",
]

AGGREGATIONS = ("token-mean", "seq-mean-token-mean")
# exp(20) ~ 5e8: ratios beyond this are numerical accidents; clamping keeps them finite.
_MAX_LOG_RATIO = 20.0


def _check_bt(name: str, tensor: torch.Tensor, shape: torch.Size) -> None:
    if tensor.shape != shape:
        raise ValueError(
            f"{name} must have shape (B, T) = {tuple(shape)}, got {tuple(tensor.shape)}"
        )


def _compute_dtype(t: torch.Tensor) -> torch.dtype:
    """float32 at least (bf16 log-probs lose the ratio), float64 kept for tests."""
    return torch.promote_types(t.dtype, torch.float32)


def _float_mask(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return mask.to(dtype) if mask.dtype != dtype else mask


def _masked_log_ratio(logp, old_logp, mask) -> torch.Tensor:
    dtype = _compute_dtype(logp)
    keep = mask.bool()
    delta = logp.to(dtype) - old_logp.to(dtype)
    delta = torch.where(keep, delta, torch.zeros((), dtype=dtype, device=delta.device))
    return delta.clamp(-_MAX_LOG_RATIO, _MAX_LOG_RATIO)  # (B, T)


def _broadcast_adv(adv: torch.Tensor, keep: torch.Tensor, dtype) -> torch.Tensor:
    shape = keep.shape
    if adv.dim() == 1 and adv.shape[0] == shape[0]:
        return adv.detach().to(dtype)[:, None]  # (B, 1)
    if adv.shape != shape:
        raise ValueError(
            f"adv must have shape (B,) = ({shape[0]},) or (B, T) = {tuple(shape)}, "
            f"got {tuple(adv.shape)}"
        )
    zero = torch.zeros((), dtype=dtype, device=adv.device)
    return torch.where(keep, adv.detach().to(dtype), zero)  # (B, T)


def clipped_surrogate(
    ratio: torch.Tensor,
    adv: torch.Tensor,
    *,
    eps_low: float = 0.2,
    eps_high: float = 0.28,
    dual_clip: float | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Per-token clipped surrogate *loss* (to minimise) and where each clip is active.

    ``l = max(-A r, -A clip(r, 1 - eps_low, 1 + eps_high))``, then for ``A < 0`` with a
    dual clip ``c``: ``l = min(l, -c A)``. ``ratio`` and ``adv`` broadcast together.

    Returns ``(loss, active)`` where ``active`` holds bool tensors ``low`` (``A < 0`` and
    ``r < 1 - eps_low``), ``high`` (``A > 0`` and ``r > 1 + eps_high``) and ``dual``
    (``A < 0`` and ``r > c``); on those tokens the gradient of ``l`` is exactly zero.
    """
    unclipped = -adv * ratio
    clipped = -adv * ratio.clamp(1.0 - eps_low, 1.0 + eps_high)
    loss = torch.maximum(unclipped, clipped)
    active = {
        "low": (adv < 0) & (ratio < 1.0 - eps_low),
        "high": (adv > 0) & (ratio > 1.0 + eps_high),
    }
    if dual_clip is not None:
        dual = (adv < 0) & (ratio > dual_clip)
        loss = torch.where(dual, -adv * dual_clip, loss)
        active["dual"] = dual
    else:
        active["dual"] = torch.zeros_like(active["low"])
    return loss, active


def aggregate_loss(
    values: torch.Tensor,
    mask: torch.Tensor,
    *,
    aggregation: str = "token-mean",
    num_tokens: float | int | None = None,
    num_sequences: float | int | None = None,
) -> torch.Tensor:
    """Reduce per-token values ``(B, T)`` to the scalar loss of this micro-batch.

    See the module docstring for the two formulas. ``num_tokens`` (token-mean) and
    ``num_sequences`` (seq-mean-token-mean) are the counts of the whole optimizer step;
    ``None`` means the local count. A count of 0 gives a zero loss (still differentiable).
    """
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    m = _float_mask(mask, values.dtype)
    zero = torch.zeros((), dtype=values.dtype, device=values.device)
    masked = torch.where(mask.bool(), values, zero) * m  # padding may hold NaN/inf
    if aggregation == "token-mean":
        local = m.sum()
        denom = _denominator(num_tokens, local, "num_tokens", "masked tokens")
        return masked.sum() / denom
    row_tokens = m.sum(dim=1)  # (B,)
    row_mean = masked.sum(dim=1) / row_tokens.clamp(min=1.0)  # (B,)
    local = (row_tokens > 0).sum().to(values.dtype)
    denom = _denominator(num_sequences, local, "num_sequences", "responses with a token")
    return row_mean.sum() / denom


def _denominator(count, local: torch.Tensor, name: str, what: str) -> torch.Tensor:
    if count is None:
        return local.clamp(min=1.0)
    count = float(count)
    if not math.isfinite(count) or count < 0:
        raise ValueError(f"{name} must be a finite count >= 0, got {count}")
    if count + 1e-6 < float(local):
        raise ValueError(
            f"{name}={count:g} is smaller than the {int(local)} {what} in this micro-batch; "
            f"{name} must count the whole optimizer step (all micro-batches and ranks)"
        )
    return local.new_tensor(max(count, 1.0))


def _check_logp_shapes(logp, other_name: str, other, mask) -> None:
    """``logp`` is ``(B, T)`` and ``other`` (old or reference log-probs) and ``mask`` match it."""
    if logp.dim() != 2:
        raise ValueError(f"logp must have shape (B, T), got {tuple(logp.shape)}")
    _check_bt(other_name, other, logp.shape)
    _check_bt("mask", mask, logp.shape)


def _validate(logp, old_logp, mask, eps_low, eps_high, dual_clip) -> None:
    _check_logp_shapes(logp, "old_logp", old_logp, mask)
    if not (0.0 <= eps_low < 1.0):
        raise ValueError(f"eps_low must be in [0, 1), got {eps_low}")
    if not eps_high >= 0.0:
        raise ValueError(f"eps_high must be >= 0, got {eps_high}")
    if dual_clip is not None and not dual_clip > 1.0:
        raise ValueError(f"dual_clip must be > 1 (it bounds -A * ratio for A < 0), got {dual_clip}")


def dapo_policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    *,
    eps_low: float = 0.2,
    eps_high: float = 0.28,
    dual_clip: float | None = None,
    num_tokens: float | int | None = None,
    aggregation: str = "token-mean",
    num_sequences: float | int | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """DAPO's clip-higher surrogate with token-level aggregation: ``(loss, metrics)``.

    ``loss`` is a 0-dim tensor with gradient w.r.t. ``logp`` only (``old_logp`` and
    ``adv`` are treated as constants). Naive GRPO is ``eps_high=eps_low=0.2,
    aggregation="seq-mean-token-mean"``. Formulas and counting conventions are in the
    module docstring.

    Metrics (python floats over this micro-batch's masked tokens; 0 for fractions and
    NaN for ratio statistics when it has no token):
    ``loss/policy`` (this micro-batch's share: with global counts, the shares of all
    micro-batches sum to the step's loss); ``clip/frac_low``, ``clip/frac_high``, ``clip/frac_dual`` (fraction
    of tokens whose gradient the clip removes); ``policy/approx_kl`` (mean of the k3
    estimator ``(r - 1) - log r`` of KL(old || new), >= 0); ``policy/ratio_mean``,
    ``policy/ratio_max``, ``policy/ratio_min``; ``policy/tokens`` (masked tokens, to
    weight micro-batch metrics when averaging them).
    """
    _validate(logp, old_logp, mask, eps_low, eps_high, dual_clip)
    log_ratio = _masked_log_ratio(logp, old_logp.detach(), mask)  # (B, T)
    ratio = torch.exp(log_ratio)  # (B, T)
    a = _broadcast_adv(adv, mask.bool(), ratio.dtype)  # (B, 1) or (B, T)
    per_token, active = clipped_surrogate(
        ratio, a, eps_low=eps_low, eps_high=eps_high, dual_clip=dual_clip
    )
    loss = aggregate_loss(
        per_token, mask, aggregation=aggregation, num_tokens=num_tokens, num_sequences=num_sequences
    )
    metrics = _policy_metrics(loss, ratio, log_ratio, active, mask.bool())
    return loss, metrics


@torch.no_grad()
def _policy_metrics(loss, ratio, log_ratio, active, keep) -> dict[str, float]:
    n = int(keep.sum())
    out = {"loss/policy": float(loss), "policy/tokens": float(n)}
    if n == 0:
        out.update({f"clip/frac_{k}": 0.0 for k in ("low", "high", "dual")})
        out.update({f"policy/ratio_{k}": math.nan for k in ("mean", "max", "min")})
        out["policy/approx_kl"] = 0.0
        return out
    for key, hit in active.items():
        out[f"clip/frac_{key}"] = float((hit & keep).sum()) / n
    r = ratio[keep]
    out["policy/approx_kl"] = float(((r - 1.0) - log_ratio[keep]).mean())
    out["policy/ratio_mean"] = float(r.mean())
    out["policy/ratio_max"] = float(r.max())
    out["policy/ratio_min"] = float(r.min())
    return out


def overlong_filter_mask(
    mask: torch.Tensor, truncated: torch.Tensor, *, enabled: bool = True
) -> torch.Tensor:
    """DAPO overlong filtering: zero the loss mask of every truncated response.

    ``mask`` ``(B, T)``, ``truncated`` ``(B,)`` bool (response cut at the length limit
    without EOS). Returns a new mask of ``mask``'s dtype; ``enabled=False`` returns
    ``mask`` unchanged (the switch for ablations).
    """
    if mask.dim() != 2:
        raise ValueError(f"mask must have shape (B, T), got {tuple(mask.shape)}")
    if truncated.shape != mask.shape[:1]:
        raise ValueError(
            f"truncated must have shape (B,) = ({mask.shape[0]},), got {tuple(truncated.shape)}"
        )
    if not enabled:
        return mask
    keep = ~truncated.to(device=mask.device, dtype=torch.bool)[:, None]  # (B, 1)
    if mask.dtype == torch.bool:
        return mask & keep
    return mask * keep.to(mask.dtype)


def kl_penalty(
    logp: torch.Tensor,
    ref_logp: torch.Tensor,
    mask: torch.Tensor,
    *,
    aggregation: str = "token-mean",
    num_tokens: float | int | None = None,
    num_sequences: float | int | None = None,
) -> torch.Tensor:
    """KL(pi_theta || pi_ref) with the k3 estimator, aggregated like the policy loss.

    Per token ``k3 = exp(d) - d - 1`` with ``d = ref_logp - logp`` (samples come from the
    policy): unbiased, always >= 0, zero iff the log-probs agree. The gradient flows into
    ``logp`` only. Add ``beta * kl_penalty(...)`` to the policy loss; DAPO itself uses no
    KL term (``beta = 0``). Counting conventions are those of ``aggregate_loss``.
    """
    _check_logp_shapes(logp, "ref_logp", ref_logp, mask)
    d = -_masked_log_ratio(logp, ref_logp.detach(), mask)  # (B, T)
    k3 = torch.expm1(d) - d
    return aggregate_loss(
        k3, mask, aggregation=aggregation, num_tokens=num_tokens, num_sequences=num_sequences
    )


def _entropy_rows(z: torch.Tensor) -> torch.Tensor:
    z = z.to(_compute_dtype(z))
    if not (torch.is_grad_enabled() and z.requires_grad):
        return torch.special.entr(torch.softmax(z, dim=-1)).sum(dim=-1)  # faster, no grad
    # entr'(0) is infinite: zero log p of banned tokens (p == 0) *before* multiplying,
    # so that no 0 * -inf reaches the backward pass.
    logq = torch.log_softmax(z, dim=-1)
    p = logq.exp()
    safe_logq = torch.where(p > 0, logq, torch.zeros((), dtype=logq.dtype, device=logq.device))
    return -(p * safe_logq).sum(dim=-1)


def entropy_from_logits(logits: torch.Tensor, *, chunk_size: int | None = None) -> torch.Tensor:
    """Entropy of the softmax over the last axis: ``(B, T, V) -> (B, T)``, in nats.

    ``H = -sum_v p_v log p_v`` with ``log p = log_softmax(z)``, computed in at least
    float32 so that large logits neither overflow nor lose precision; ``-inf`` logits
    (banned tokens) contribute 0, as ``p log p -> 0``. Any leading shape works.

    ``chunk_size`` bounds the temporary memory to ``chunk_size x V`` floats by
    processing that many positions at a time (useful under ``torch.no_grad()`` with a
    150k vocabulary; with autograd every chunk's activations are kept anyway).
    """
    if logits.dim() < 1 or logits.shape[-1] == 0:
        raise ValueError(
            f"logits need a non-empty vocabulary axis, got shape {tuple(logits.shape)}"
        )
    if chunk_size is None:
        return _entropy_rows(logits)
    if int(chunk_size) != chunk_size or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer or None, got {chunk_size!r}")
    flat = logits.reshape(-1, logits.shape[-1])  # (B*T, V)
    parts = [_entropy_rows(flat[i : i + chunk_size]) for i in range(0, flat.shape[0], chunk_size)]
    out = torch.cat(parts) if parts else flat.new_zeros(0, dtype=_compute_dtype(flat))
    return out.reshape(logits.shape[:-1])


def token_logprobs(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Log-probabilities of the given tokens: logits ``(B, T, V)``, tokens ``(B, T)`` ->
    ``(B, T)``, i.e. ``log_softmax(logits)[b, t, tokens[b, t]]``.

    Computed as ``z[token] - logsumexp(z)`` in at least float32, without materialising
    the full ``(B, T, V)`` log-softmax. Align first: the logits at position ``t`` score
    the token at ``t + 1`` in a causal LM (``logits[:, :-1]`` with ``ids[:, 1:]``).
    """
    if logits.shape[:-1] != tokens.shape:
        raise ValueError(
            f"logits {tuple(logits.shape)} and tokens {tuple(tokens.shape)} disagree: "
            "need logits (..., V) and tokens (...) with the same leading shape"
        )
    z = logits.to(_compute_dtype(logits))
    picked = z.gather(-1, tokens.long().unsqueeze(-1)).squeeze(-1)  # (B, T)
    return picked - torch.logsumexp(z, dim=-1)
