"""Loss aggregation: how per-token values become one scalar, chosen by name.

Each aggregation is one function registered under its name in :data:`AGGREGATIONS`; a new
one is a function plus a ``@register_aggregation("name")`` line. With ``m`` the loss mask
and ``l`` the per-token values ``(B, T)``::

    token-mean               L = sum_{i,t} m_it l_it / N          DAPO's token-level loss
    seq-mean-token-mean      L = sum_i [sum_t m_it l_it / sum_t m_it] / S        GRPO
    seq-mean-token-sum-norm  L = sum_{i,t} m_it l_it / (S * H)     Dr. GRPO (H constant)

``N`` counts the loss tokens and ``S`` the responses with at least one loss token, both over
the *whole* optimizer step (all micro-batches and data-parallel ranks): pass them as
``num_tokens``/``num_sequences`` and sum the micro-batch losses, and the gradients add up
exactly to those of the full batch. ``None`` means the local count (right for one
micro-batch). ``H`` (``horizon``) is a constant such as the generation budget
``max_new_tokens``, so Dr. GRPO's loss does not depend on how responses are batched.
Masked positions never matter: their values may be ``NaN``/``inf``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from verimath.trainer.config.choices import AGGREGATION_NAMES, add_name

__all__ = ["AGGREGATIONS", "aggregate_loss", "register_aggregation"]

AGGREGATIONS: dict[str, Callable[..., torch.Tensor]] = {}


def register_aggregation(name: str):
    """Decorator: register ``fn(masked, m, *, num_tokens, num_sequences, horizon)``, where
    ``masked`` is ``m * values`` with masked positions zeroed and ``m`` the float mask."""
    def register(fn):
        AGGREGATIONS[name] = fn
        add_name(AGGREGATION_NAMES, name)  # the config accepts it
        return fn
    return register


def aggregate_loss(values: torch.Tensor, mask: torch.Tensor, *, aggregation: str = "token-mean",
                   num_tokens: float | int | None = None,
                   num_sequences: float | int | None = None,
                   horizon: float | int | None = None) -> torch.Tensor:
    """Reduce per-token values ``(B, T)`` to the scalar loss of this micro-batch (see the
    module docstring). A count of 0 gives a zero loss (still differentiable)."""
    fn = AGGREGATIONS.get(aggregation)
    if fn is None:
        raise ValueError(f"aggregation must be one of {sorted(AGGREGATIONS)}, got {aggregation!r}")
    m = mask.to(values.dtype) if mask.dtype != values.dtype else mask
    zero = torch.zeros((), dtype=values.dtype, device=values.device)
    masked = torch.where(mask.bool(), values, zero) * m  # padding may hold NaN/inf
    return fn(masked, m, num_tokens=num_tokens, num_sequences=num_sequences, horizon=horizon)


@register_aggregation("token-mean")
def token_mean(masked, m, *, num_tokens=None, **_) -> torch.Tensor:
    """DAPO: every token of the step weighs the same, so long responses weigh more."""
    return masked.sum() / _denominator(num_tokens, m.sum(), "num_tokens", "masked tokens")


@register_aggregation("seq-mean-token-mean")
def seq_mean_token_mean(masked, m, *, num_sequences=None, **_) -> torch.Tensor:
    """GRPO: the mean over responses of each response's token mean."""
    row_tokens = m.sum(dim=1)  # (B,)
    row_mean = masked.sum(dim=1) / row_tokens.clamp(min=1.0)  # (B,)
    local = (row_tokens > 0).sum().to(masked.dtype)
    return row_mean.sum() / _denominator(num_sequences, local, "num_sequences",
                                         "responses with a token")


@register_aggregation("seq-mean-token-sum-norm")
def seq_mean_token_sum_norm(masked, m, *, num_sequences=None, horizon=None, **_) -> torch.Tensor:
    """Dr. GRPO: token sums over a constant horizon, so no length bias from the divisor."""
    if horizon is None or not horizon > 0:
        raise ValueError("seq-mean-token-sum-norm needs horizon > 0 (a constant such as "
                         f"max_new_tokens), got {horizon!r}")
    local = (m.sum(dim=1) > 0).sum().to(masked.dtype)
    count = _denominator(num_sequences, local, "num_sequences", "responses with a token")
    return masked.sum() / (count * float(horizon))


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
