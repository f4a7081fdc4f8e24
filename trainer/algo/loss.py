"""The DAPO policy loss and its pieces, as small pure torch functions.

Notation (shapes in the house vocabulary): ``B`` responses, ``T`` response tokens,
``logp``/``old_logp`` ``(B, T)`` per-token log-probabilities of the sampled tokens under
the current and the behaviour (old) policy, ``adv`` ``(B,)`` or ``(B, T)``, ``mask``
``(B, T)`` with 1 on tokens that enter the loss and 0 on padding (and on whole responses
removed by overlong filtering).

Policy losses are chosen by name from :data:`POLICY_LOSSES` (a new variant is one function
plus one ``@register_policy_loss`` line). Per token, with ``r = exp(logp - old_logp)``,
``sg`` a stop-gradient and ``A`` the advantage:

    clip      l = -min(r A, clip(r, 1 - eps_low, 1 + eps_high) A)   PPO; DAPO clip-higher
              l = min(l, -c A)   where A < 0 and dual_clip = c > 1   optional dual clip
    cispo     l = -sg(clip(r, 1 - eps_low, 1 + eps_high)) A log r   clipped IS weight: every
                                                                     token keeps a gradient
    gspo      s_i = exp(mean_t log r_it)   (sequence ratio, length-normalized)
              l = -min(s A, clip(s, 1 - eps_low, 1 + eps_high) A) with s = sg(s_i) r / sg(r)
    clip-cov  l = clip's l, with sg on the covariance-selected tokens (no gradient there)
    kl-cov    l = -r A + beta |log r| on the covariance-selected tokens, -r A elsewhere

GSPO (Zheng et al. 2025, "Group Sequence Policy Optimization", arXiv 2507.18071) takes one
importance ratio per response, the geometric mean of its token ratios, and clips it per
response; the token form above (the paper's GSPO-token with ``A_it = A_i``) has the value and
the gradient of the sequence objective ``-min(s_i A_i, clip(s_i) A_i)`` when the token losses
of a response are averaged (``seq-mean-token-mean``, the paper's aggregation); with DAPO's
``token-mean`` a response weighs by its length, as every other loss here does. The paper
clipped at ``eps_low = 3e-4``, ``eps_high = 4e-4``: a sequence ratio moves far less than a
token ratio. Clip-Cov and KL-Cov (Cui et al. 2025, "The Entropy Mechanism of Reinforcement
Learning for Reasoning Language Models", arXiv 2505.22617) act on a few tokens chosen by the
centred covariance of log-probability and advantage, ``(logp_t - mean logp)(A_t - mean A)``
(:func:`covariance_selection`): the tokens through which an update lowers the policy's entropy
most. Clip-Cov picks ``max(1, floor(fraction N))`` of the tokens whose covariance lies in
``(low, high)`` at random and stops their gradient; KL-Cov takes the same number with the
largest covariance and adds ``beta |log r|`` to them, without any clip. The defaults follow
verl's ``core_algos`` (fraction ``2e-4``, bounds ``(1, 5)``, ``beta = 1``), sized for batches
of millions of tokens.

The per-token values are reduced by an aggregation of ``verimath.trainer.algo.aggregation``
(``token-mean`` is DAPO's token-level loss; ``seq-mean-token-mean`` is GRPO's), with the
counts of the whole optimizer step. Data-parallel wrappers (DDP, FSDP) *average* gradients
over ranks; with global counts the per-rank losses must be *summed*, so multiply each rank's
loss by the world size before ``backward()``.

Masked positions never matter: their values may be anything, even ``-inf``/``NaN``
(they are replaced before any arithmetic), so padding cannot leak NaN into gradients.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import torch
from verimath.trainer.algo.aggregation import AGGREGATIONS, aggregate_loss
from verimath.trainer.config.choices import POLICY_LOSS_NAMES, add_name
from verimath.trainer.core.logprobs import compute_dtype

__all__ = [
    "AGGREGATIONS",
    "POLICY_LOSSES",
    "aggregate_loss",
    "cispo_surrogate",
    "clip_cov_surrogate",
    "clipped_surrogate",
    "covariance_selection",
    "dapo_policy_loss",
    "gspo_surrogate",
    "kl_cov_surrogate",
    "kl_penalty",
    "overlong_filter_mask",
    "register_policy_loss",
    "select_tokens",
]

POLICY_LOSSES: dict[str, Callable] = {}
SELECTING: dict[str, str] = {}
"""Losses that act on covariance-selected tokens, and how they pick them (``top`` or
``random``): :func:`dapo_policy_loss` (or the update, once per mini-batch) hands them the
selection as ``selected``."""


def register_policy_loss(name: str, *, selects: str | None = None):
    """Decorator: register ``fn(ratio, adv, *, eps_low, eps_high, dual_clip, **terms) ->
    (per-token loss, active)``; ``active`` maps ``low``/``high``/``dual`` (and optionally
    ``cov``) to bool tensors marking the tokens where that bound or selection applies
    (reported as ``clip/frac_*``). ``terms`` are keyword tensors and numbers a loss may use and
    otherwise ignores (``**_``): ``log_ratio`` and ``mask`` ``(B, T)``, ``selected`` (the
    covariance-selected tokens, for a loss registered with ``selects="top"`` or ``"random"``)
    and the loss's own options (``algo`` settings such as ``kl_cov_coef``)."""
    if selects not in (None, "top", "random"):
        raise ValueError(f"selects must be None, 'top' or 'random', got {selects!r}")

    def register(fn):
        POLICY_LOSSES[name] = fn
        if selects is not None:
            SELECTING[name] = selects
        add_name(POLICY_LOSS_NAMES, name)  # the config accepts it
        return fn
    return register

RARE_PROB = 0.2
"""Below this sampling probability a token is rare (``clip/frac_high_rare``): the DAPO paper
found the tokens its symmetric upper clip stopped all below it."""

# exp(20) ~ 5e8: ratios beyond this are numerical accidents; clamping keeps them finite.
_MAX_LOG_RATIO = 20.0


def _check_bt(name: str, tensor: torch.Tensor, shape: torch.Size) -> None:
    if tensor.shape != shape:
        raise ValueError(
            f"{name} must have shape (B, T) = {tuple(shape)}, got {tuple(tensor.shape)}"
        )


def _masked_log_ratio(logp, old_logp, mask) -> torch.Tensor:
    dtype = compute_dtype(logp)
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


def _no_dual(name: str, dual_clip) -> None:
    if dual_clip is not None:
        raise ValueError(f"dual_clip applies to the clip policy loss only, not {name}; "
                         "set it to None")


@register_policy_loss("clip")
def clipped_surrogate(
    ratio: torch.Tensor,
    adv: torch.Tensor,
    *,
    eps_low: float = 0.2,
    eps_high: float = 0.28,
    dual_clip: float | None = None,
    **_,
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


@register_policy_loss("cispo")
def cispo_surrogate(
    ratio: torch.Tensor,
    adv: torch.Tensor,
    *,
    eps_low: float = 0.2,
    eps_high: float = 0.28,
    dual_clip: float | None = None,
    **_,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Per-token CISPO loss (MiniMax-M1, arXiv 2506.13585): the clipped importance weight
    ``w = clip(r, 1 - eps_low, 1 + eps_high)`` is a constant and every token keeps the
    gradient ``-w * A * d log pi``. Written as ``-A * sg(w / r) * r`` so that its value is
    ``-A * w`` and it needs the ratio only. ``active`` marks where ``w`` was clipped (the
    gradient there is scaled, not removed). ``dual_clip`` does not apply (must be None)."""
    _no_dual("cispo", dual_clip)
    weight = ratio.clamp(1.0 - eps_low, 1.0 + eps_high)
    loss = -adv * (weight / ratio).detach() * ratio
    active = {"low": ratio < 1.0 - eps_low, "high": ratio > 1.0 + eps_high}
    active["dual"] = torch.zeros_like(active["low"])
    return loss, active


@register_policy_loss("gspo")
def gspo_surrogate(
    ratio: torch.Tensor,
    adv: torch.Tensor,
    *,
    log_ratio: torch.Tensor,
    mask: torch.Tensor,
    eps_low: float = 0.2,
    eps_high: float = 0.28,
    dual_clip: float | None = None,
    **_,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Per-token GSPO loss (Zheng et al. 2025, arXiv 2507.18071), in its token form.

    The sequence ratio ``s_i = exp(sum_t m_it log r_it / sum_t m_it)`` ``(B, 1)`` is the
    length-normalized likelihood ratio of response ``i``; each token carries
    ``s_it = sg(s_i) * r_it / sg(r_it)`` (value ``s_i``, gradient ``s_i d log pi_it``) and
    ``l_it = max(-A s_it, -A clip(s_it, 1 - eps_low, 1 + eps_high))``. The clip decision is
    the same for every token of a response. ``log_ratio`` holds ``log r`` with 0 on masked
    positions and ``mask`` is the bool loss mask, both ``(B, T)``. ``active``: ``low``/``high``
    on every token of a response whose sequence ratio is clipped. No dual clip."""
    _no_dual("gspo", dual_clip)
    count = mask.sum(dim=1, keepdim=True).clamp(min=1).to(log_ratio.dtype)  # (B, 1)
    seq_log = (log_ratio * mask).sum(dim=1, keepdim=True) / count  # (B, 1) log s_i
    token_form = torch.exp(seq_log.detach() + log_ratio - log_ratio.detach())  # (B, T)
    loss, active = clipped_surrogate(token_form, adv, eps_low=eps_low, eps_high=eps_high)
    return loss, active


@torch.no_grad()
def covariance_selection(
    logp: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    *,
    fraction: float,
    low: float = -math.inf,
    high: float = math.inf,
    pick: str = "top",
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """The tokens Clip-Cov / KL-Cov act on, a bool ``(B, T)``.

    Over the ``N`` loss tokens, ``cov_t = (logp_t - mean logp)(A_t - mean A)`` (means over the
    loss tokens; ``adv`` ``(B,)`` or ``(B, T)``); the candidates are the tokens with
    ``low < cov_t < high``, and ``k = max(1, floor(fraction N))`` of them are chosen: the ``k``
    largest covariances (``pick="top"``, KL-Cov; ties by position) or ``k`` at random
    (``pick="random"``, Clip-Cov; drawn with ``generator``). Fewer candidates than ``k``: all
    of them. No loss token: nothing."""
    if not 0 < fraction <= 1:
        raise ValueError(f"the covariance-selected fraction must be in (0, 1], got {fraction}")
    if not low < high:
        raise ValueError(f"the covariance bounds need low < high, got ({low}, {high})")
    if pick not in ("top", "random"):
        raise ValueError(f"pick must be 'top' or 'random', got {pick!r}")
    _check_bt("mask", mask, logp.shape)
    keep = mask.bool()
    chosen = torch.zeros_like(keep)
    n = int(keep.sum())
    if n == 0:
        return chosen
    a = _broadcast_adv(adv, keep, torch.float64).expand_as(logp)
    lp = logp.detach().to(torch.float64)
    cov = (lp - lp[keep].mean()) * (a - a[keep].mean())  # (B, T)
    candidates = torch.nonzero((keep & (cov > low) & (cov < high)).reshape(-1))[:, 0]
    k = min(max(1, int(fraction * n)), candidates.numel())
    if pick == "top":
        order = torch.argsort(-cov.reshape(-1)[candidates], stable=True)
    else:
        order = torch.randperm(candidates.numel(), generator=generator)
    chosen.view(-1)[candidates[order[:k].to(candidates.device)]] = True
    return chosen


@register_policy_loss("clip-cov", selects="random")
def clip_cov_surrogate(
    ratio: torch.Tensor,
    adv: torch.Tensor,
    *,
    selected: torch.Tensor,
    eps_low: float = 0.2,
    eps_high: float = 0.28,
    dual_clip: float | None = None,
    **_,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Clip-Cov (Cui et al. 2025, arXiv 2505.22617): the clipped surrogate, with the tokens
    of ``selected`` (bool, broadcastable) detached: their loss keeps its value, their gradient
    is zero. ``active["cov"]`` marks the selected tokens that the clip had not already
    removed. With nothing selected it is :func:`clipped_surrogate`."""
    loss, active = clipped_surrogate(ratio, adv, eps_low=eps_low, eps_high=eps_high,
                                     dual_clip=dual_clip)
    clipped = active["low"] | active["high"] | active["dual"]
    cov = selected.bool() & ~clipped
    active["cov"] = cov
    return torch.where(cov, loss.detach(), loss), active


@register_policy_loss("kl-cov", selects="top")
def kl_cov_surrogate(
    ratio: torch.Tensor,
    adv: torch.Tensor,
    *,
    log_ratio: torch.Tensor,
    selected: torch.Tensor,
    kl_cov_coef: float = 1.0,
    dual_clip: float | None = None,
    **_,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """KL-Cov (Cui et al. 2025, arXiv 2505.22617): the unclipped surrogate ``-A r`` on every
    token plus ``kl_cov_coef * |log r|`` on the ``selected`` tokens, which holds the tokens
    that lower the entropy most near the policy the ratio is taken against. No clip applies
    (``eps_low``/``eps_high`` are ignored; ``active`` has no ``low``/``high`` token)."""
    _no_dual("kl-cov", dual_clip)
    if not kl_cov_coef >= 0:
        raise ValueError(f"kl_cov_coef must be >= 0, got {kl_cov_coef}")
    sel = selected.bool()
    loss = -adv * ratio + kl_cov_coef * sel * log_ratio.abs()
    none = torch.zeros_like(sel)
    return loss, {"low": none, "high": none, "dual": none, "cov": sel}


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
    policy_loss: str = "clip",
    horizon: float | int | None = None,
    is_weights: torch.Tensor | None = None,
    selected: torch.Tensor | None = None,
    options: Mapping[str, float] | None = None,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """DAPO's clip-higher surrogate with token-level aggregation: ``(loss, metrics)``.

    ``loss`` is a 0-dim tensor with gradient w.r.t. ``logp`` only (``old_logp``, ``adv``
    and ``is_weights`` are constants). Naive GRPO is ``eps_high=eps_low=0.2,
    aggregation="seq-mean-token-mean"``. ``policy_loss`` names an entry of
    :data:`POLICY_LOSSES`, ``aggregation`` one of ``AGGREGATIONS`` (``horizon`` is the
    constant of ``seq-mean-token-sum-norm``). ``is_weights`` ``(B, T)`` multiplies each
    token's loss (the rollout correction of ``verimath.trainer.algo.correction``); None is
    all ones. ``options`` are the loss's own numbers (``cov_fraction``, ``cov_low``,
    ``cov_high`` for the covariance selection, ``kl_cov_coef``). A loss that acts on
    covariance-selected tokens (``clip-cov``, ``kl-cov``) takes ``selected`` (bool ``(B, T)``)
    when given (the update selects once per mini-batch, so that micro-batches agree), else
    selects here among this call's tokens, from the detached ``logp`` (``generator`` draws
    Clip-Cov's random pick).

    Metrics (python floats over this micro-batch's masked tokens; 0 for fractions and
    NaN for ratio statistics when it has no token):
    ``loss/policy`` (this micro-batch's share: with global counts, the shares of all
    micro-batches sum to the step's loss); ``clip/frac_low``, ``clip/frac_high``,
    ``clip/frac_dual`` (fraction of tokens where that clip bound applies; for ``clip``
    their gradient is removed), ``clip/frac_high_rare`` (for losses with an upper bound: the
    tokens at it whose sampling probability was below :data:`RARE_PROB`, as a fraction of all
    tokens), ``clip/frac_cov`` for the covariance losses (the selected
    tokens); ``policy/approx_kl`` (mean of the k3 estimator ``(r - 1) - log r`` of
    KL(old || new), >= 0); ``policy/ratio_mean``, ``policy/ratio_max``, ``policy/ratio_min``;
    ``policy/tokens`` (masked tokens, to weight micro-batch metrics when averaging them).
    """
    surrogate = POLICY_LOSSES.get(policy_loss)
    if surrogate is None:
        raise ValueError(f"policy_loss must be one of {sorted(POLICY_LOSSES)}, got {policy_loss!r}")
    _validate(logp, old_logp, mask, eps_low, eps_high, dual_clip)
    keep = mask.bool()
    log_ratio = _masked_log_ratio(logp, old_logp.detach(), mask)  # (B, T)
    ratio = torch.exp(log_ratio)  # (B, T)
    a = _broadcast_adv(adv, keep, ratio.dtype)  # (B, 1) or (B, T)
    opts = dict(options or {})
    if policy_loss in SELECTING:
        if selected is None:
            selected = select_tokens(policy_loss, logp, adv, mask, opts, generator=generator)
        _check_bt("selected", selected, logp.shape)
        selected = selected.bool() & keep
    per_token, active = surrogate(ratio, a, eps_low=eps_low, eps_high=eps_high,
                                  dual_clip=dual_clip, log_ratio=log_ratio, mask=keep,
                                  selected=selected, **opts)  # (B, T)
    if is_weights is not None:
        _check_bt("is_weights", is_weights, logp.shape)
        per_token = per_token * is_weights.detach().to(per_token.dtype)
    loss = aggregate_loss(per_token, mask, aggregation=aggregation, num_tokens=num_tokens,
                          num_sequences=num_sequences, horizon=horizon)
    metrics = _policy_metrics(loss, ratio, log_ratio, active, keep)
    if "high" in active:  # the tokens the upper clip exists to hold back (SPEC: clip-higher)
        rare = keep & (old_logp.detach() < math.log(RARE_PROB))
        metrics["clip/frac_high_rare"] = (float((active["high"] & rare).sum()) / metrics[
            "policy/tokens"] if metrics["policy/tokens"] else 0.0)
    return loss, metrics


def select_tokens(policy_loss: str, logp: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor,
                  options: Mapping[str, float], *, generator: torch.Generator | None = None
                  ) -> torch.Tensor | None:
    """The covariance selection of ``policy_loss`` (None for a loss that selects nothing),
    with its options ``cov_fraction`` (default ``2e-4``), ``cov_low``/``cov_high`` (default
    unbounded)."""
    pick = SELECTING.get(policy_loss)
    if pick is None:
        return None
    return covariance_selection(logp, adv, mask, fraction=options.get("cov_fraction", 2e-4),
                                low=options.get("cov_low", -math.inf),
                                high=options.get("cov_high", math.inf), pick=pick,
                                generator=generator)


@torch.no_grad()
def _policy_metrics(loss, ratio, log_ratio, active, keep) -> dict[str, float]:
    n = int(keep.sum())
    out = {"loss/policy": float(loss), "policy/tokens": float(n)}
    if n == 0:
        out.update({f"clip/frac_{k}": 0.0 for k in active})
        out.update({f"policy/ratio_{k}": math.nan for k in ("mean", "max", "min")})
        out["policy/approx_kl"] = 0.0
        return out
    for key, hit in active.items():
        out[f"clip/frac_{key}"] = float((hit & keep).sum()) / n
    r = ratio[keep]
    out["policy/approx_kl"] = float(k3_estimate(log_ratio[keep]).mean())
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
    horizon: float | int | None = None,
) -> torch.Tensor:
    """KL(pi_theta || pi_ref) with the k3 estimator, aggregated like the policy loss.

    Per token ``k3 = exp(d) - d - 1`` with ``d = ref_logp - logp`` (samples come from the
    policy): unbiased, always >= 0, zero iff the log-probs agree. The gradient flows into
    ``logp`` only. Add ``beta * kl_penalty(...)`` to the policy loss; DAPO itself uses no
    KL term (``beta = 0``). Counting conventions are those of ``aggregate_loss``.
    """
    _check_logp_shapes(logp, "ref_logp", ref_logp, mask)
    d = -_masked_log_ratio(logp, ref_logp.detach(), mask)  # (B, T)
    return aggregate_loss(k3_estimate(d), mask, aggregation=aggregation, num_tokens=num_tokens,
                          num_sequences=num_sequences, horizon=horizon)


def k3_estimate(log_ratio: torch.Tensor) -> torch.Tensor:
    """Per-sample k3 estimate of KL(p || q) from ``log_ratio = log q(x) - log p(x)`` with
    ``x ~ p``: ``exp(d) - 1 - d``, elementwise; unbiased, >= 0, zero where ``q = p``. The
    KL penalty, ``policy/approx_kl`` and the engine/trainer mismatch all use it."""
    return torch.expm1(log_ratio) - log_ratio
