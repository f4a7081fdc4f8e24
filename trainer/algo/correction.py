"""Rollout correction: importance weights between the policy the loss's ratio is taken against
and the policy that actually sampled the tokens, chosen by name.

The clipped ratio of the loss is ``pi_theta / pi_old``. The tokens were sampled by a behaviour
policy ``mu``: the rollout engine (vLLM, whose numerics differ from the trainer's), or, for a
group generated at an earlier step (asynchronous rollouts, the surplus of dynamic sampling),
an older version of the policy. Each token's loss is then multiplied by a weight ``w`` made
from ``rho = pi_old / mu`` (a constant: no gradient flows through it). With ``C`` the bound
(``algo.rollout_is_cap``) and ``d_t = log pi_old(y_t) - log mu(y_t)`` on the loss tokens::

    none               w_t = 1
    token-truncate     w_t = min(exp(d_t), C)                          truncated IS (TIS)
    token-mask         w_t = exp(d_t) if exp(d_t) <= C else 0           masked IS
    sequence-truncate  w_t = min(exp(sum_s d_s), C)   for every token t of the response
    sequence-mask      w_t = exp(sum_s d_s) if exp(sum_s d_s) <= C else 0

These are TRL's ``vllm_importance_sampling_mode`` values (``token_truncate``, ``token_mask``,
``sequence_truncate``, ``sequence_mask``, bound ``vllm_importance_sampling_cap``; the sequence
ratio is the product of the token ratios) and verl's rollout correction (``rollout_is`` at
token or sequence level, truncated at ``rollout_is_threshold``; ``rollout_rs`` rejects, i.e.
masks, tokens or sequences outside a band). Truncation bounds the variance of the weight at
the cost of a bias toward ``pi_old``; masking drops the tokens (or whole responses) on which
the two policies disagree most and leaves the rest unbiased (Ionides 2008; Espeholt et al.
2018 for truncation; Yao et al. 2025, "Your efficient RL framework secretly brings you
off-policy RL training", for TIS against an inference engine). A masked token keeps its place
in the token counts of the aggregation (its loss is 0), so the counts stay exact under
micro-batching, as in TRL.

A new mode is one function ``fn(log_rho, mask, cap) -> w`` plus one
``@register_rollout_correction("name")`` line. ``log_rho`` is ``(B, T)`` with 0 on masked
positions, ``mask`` bool ``(B, T)``; ``cap`` may be ``inf`` (no bound). Log-weights are
clamped at +-20 before ``exp`` so that a bound of ``inf`` stays finite.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from verimath.trainer.config.choices import ROLLOUT_CORRECTION_NAMES, add_name

__all__ = ["ROLLOUT_CORRECTIONS", "register_rollout_correction", "rollout_weights"]

ROLLOUT_CORRECTIONS: dict[str, Callable[..., torch.Tensor]] = {}
_MAX_LOG_WEIGHT = 20.0  # exp(20) ~ 5e8


def register_rollout_correction(name: str):
    """Decorator: register ``fn(log_rho, mask, cap) -> weights (B, T)`` under ``name``."""
    def register(fn):
        ROLLOUT_CORRECTIONS[name] = fn
        add_name(ROLLOUT_CORRECTION_NAMES, name)  # the config accepts it
        return fn
    return register


def _log_bound(cap: float) -> float:
    return math.log(cap) if math.isfinite(cap) else _MAX_LOG_WEIGHT


def _sequence_log_rho(log_rho: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``sum_t d_t`` per response, broadcast back to its tokens, ``(B, T)``."""
    total = (log_rho * mask).sum(dim=1, keepdim=True)  # (B, 1)
    return total.clamp(-_MAX_LOG_WEIGHT, _MAX_LOG_WEIGHT).expand_as(log_rho)


@register_rollout_correction("none")
def no_correction(log_rho: torch.Tensor, mask: torch.Tensor, cap: float) -> torch.Tensor:
    """Every token weighs 1: the ratio's reference is trusted as the sampler."""
    return torch.ones_like(log_rho)


@register_rollout_correction("token-truncate")
def token_truncate(log_rho: torch.Tensor, mask: torch.Tensor, cap: float) -> torch.Tensor:
    """``min(rho_t, C)`` per token."""
    return torch.exp(log_rho.clamp(-_MAX_LOG_WEIGHT, _log_bound(cap)))


@register_rollout_correction("token-mask")
def token_mask(log_rho: torch.Tensor, mask: torch.Tensor, cap: float) -> torch.Tensor:
    """``rho_t``, or 0 where ``rho_t > C``."""
    kept = log_rho <= _log_bound(cap)
    weight = torch.exp(log_rho.clamp(-_MAX_LOG_WEIGHT, _MAX_LOG_WEIGHT))
    return torch.where(kept, weight, torch.zeros_like(weight))


@register_rollout_correction("sequence-truncate")
def sequence_truncate(log_rho: torch.Tensor, mask: torch.Tensor, cap: float) -> torch.Tensor:
    """``min(prod_t rho_t, C)`` on every token of the response."""
    return torch.exp(_sequence_log_rho(log_rho, mask).clamp(max=_log_bound(cap)))


@register_rollout_correction("sequence-mask")
def sequence_mask(log_rho: torch.Tensor, mask: torch.Tensor, cap: float) -> torch.Tensor:
    """``prod_t rho_t`` on every token of the response, or 0 for the whole response where
    the product exceeds ``C``."""
    total = _sequence_log_rho(log_rho, mask)
    return torch.where(total <= _log_bound(cap), torch.exp(total), torch.zeros_like(total))


@torch.no_grad()
def rollout_weights(old_logp: torch.Tensor, behaviour_logp: torch.Tensor, mask: torch.Tensor,
                    *, mode: str, cap: float) -> tuple[torch.Tensor, dict[str, float]]:
    """The weights ``(B, T)`` of correction ``mode`` (a name of :data:`ROLLOUT_CORRECTIONS`)
    for ``rho = pi_old / mu``, and their metrics over the loss tokens: ``rollout/is_weight_mean``
    and ``rollout/is_bounded_frac`` (share of tokens whose weight the bound changed: truncated
    or masked). ``old_logp``, ``behaviour_logp`` and ``mask`` are ``(B, T)``; the weights are 1
    on masked positions (they never enter the loss) and float32."""
    fn = ROLLOUT_CORRECTIONS.get(mode)
    if fn is None:
        raise ValueError(f"rollout correction must be one of {sorted(ROLLOUT_CORRECTIONS)}, "
                         f"got {mode!r}")
    if not cap >= 1.0:
        raise ValueError(f"the rollout correction bound must be >= 1 (or inf), got {cap}")
    for name, t in (("behaviour_logp", behaviour_logp), ("mask", mask)):
        if t.shape != old_logp.shape:
            raise ValueError(f"{name} must have the shape of old_logp {tuple(old_logp.shape)}, "
                             f"got {tuple(t.shape)}")
    keep = mask.bool()
    zero = torch.zeros((), dtype=torch.float32, device=old_logp.device)
    log_rho = torch.where(keep, old_logp.float() - behaviour_logp.float(), zero)  # (B, T)
    weights = torch.where(keep, fn(log_rho, keep, cap).float(), torch.ones_like(log_rho))
    n = int(keep.sum())
    if n == 0:
        return weights, {"rollout/is_weight_mean": 1.0, "rollout/is_bounded_frac": 0.0}
    unbounded = ROLLOUT_CORRECTIONS["token-truncate" if mode.startswith("token") else
                                    "sequence-truncate"](log_rho, keep, math.inf)
    changed = (weights - unbounded).abs() > 1e-6 * unbounded.clamp(min=1.0)
    if mode == "none":
        changed = torch.zeros_like(keep)
    return weights, {"rollout/is_weight_mean": float(weights[keep].mean()),
                     "rollout/is_bounded_frac": float((changed & keep).sum()) / n}
