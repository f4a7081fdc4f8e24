"""Log-probabilities and entropy of tokens: the one implementation the trainer uses.

Everything that scores tokens goes through :func:`logprobs_from_logits`: the old
(behaviour) log-probs, the policy's log-probs and entropy in the update, the KL reference,
the warm start's cross-entropy and the rollout engines' checks. For logits ``z`` (at least
float32) divided by the sampling temperature ``tau``::

    logp[t] = z[t, y_t] / tau - logsumexp(z[t] / tau)
    H[t]    = logsumexp(z[t] / tau) - sum_v softmax(z[t] / tau)_v * z[t, v] / tau

``-inf`` logits (banned tokens) contribute 0 to ``H`` and have a zero gradient.

:func:`token_logprobs` applies it to a causal LM: ``(B, S)`` packed ``prompt + response``
ids (:func:`pack_sequences`) give ``(B, S - 1)`` next-token log-probs. With
``chunk_size > 0`` the forward is memory-bounded: hidden states from the base model, then
the output head over at most ``chunk_size`` positions at a time, so a 150k vocabulary and
20k-token responses never build a full ``(B, S, V)`` logits tensor.
"""

from __future__ import annotations

import torch

__all__ = ["compute_dtype", "entropy_from_logits", "logprobs_from_logits", "pack_sequences",
           "token_logprobs"]


def compute_dtype(t: torch.Tensor) -> torch.dtype:
    """float32 at least (bf16 log-probs lose the ratio); float64 is kept for tests."""
    return torch.promote_types(t.dtype, torch.float32)


def _logp_and_entropy(logits, targets, temperature: float, with_entropy: bool):
    """``(logp or None, entropy or None)``: the kernel behind every public function."""
    z = logits.to(compute_dtype(logits)) / temperature  # (..., V)
    log_norm = torch.logsumexp(z, dim=-1)  # (...)
    logp = None
    if targets is not None:
        logp = z.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1) - log_norm  # (...)
    if not with_entropy:
        return logp, None
    p = torch.softmax(z, dim=-1)
    # banned tokens (p == 0, z == -inf) would give 0 * -inf: count them as 0 instead
    safe_z = torch.where(p > 0, z, torch.zeros((), dtype=z.dtype, device=z.device))
    return logp, log_norm - (p * safe_z).sum(-1)  # (...)


def logprobs_from_logits(logits: torch.Tensor, tokens: torch.Tensor, *,
                         temperature: float = 1.0) -> torch.Tensor:
    """Log-probabilities of ``tokens`` ``(...)`` under ``logits`` ``(..., V)``: ``(...)``.

    ``log_softmax(logits / temperature)[..., tokens]``, computed as ``z[token] -
    logsumexp(z)`` without materialising the full log-softmax. Align first: in a causal LM
    the logits at position ``t`` score the token at ``t + 1``.
    """
    if logits.shape[:-1] != tokens.shape:
        raise ValueError(
            f"logits {tuple(logits.shape)} and tokens {tuple(tokens.shape)} disagree: "
            "need logits (..., V) and tokens (...) with the same leading shape"
        )
    return _logp_and_entropy(logits, tokens, temperature, False)[0]


def entropy_from_logits(logits: torch.Tensor, *, temperature: float = 1.0,
                        chunk_size: int | None = None) -> torch.Tensor:
    """Entropy in nats of ``softmax(logits / temperature)`` over the last axis: ``(...)``.

    ``chunk_size`` bounds the temporary memory to ``chunk_size x V`` floats by processing
    that many positions at a time (useful under ``torch.no_grad()`` with a large vocabulary).
    """
    if logits.dim() < 1 or logits.shape[-1] == 0:
        raise ValueError(
            f"logits need a non-empty vocabulary axis, got shape {tuple(logits.shape)}"
        )
    if chunk_size is None:
        return _logp_and_entropy(logits, None, temperature, True)[1]
    if int(chunk_size) != chunk_size or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer or None, got {chunk_size!r}")
    flat = logits.reshape(-1, logits.shape[-1])  # (B*T, V)
    parts = [_logp_and_entropy(flat[i:i + chunk_size], None, temperature, True)[1]
             for i in range(0, flat.shape[0], chunk_size)]
    out = torch.cat(parts) if parts else flat.new_zeros(0, dtype=compute_dtype(flat))
    return out.reshape(logits.shape[:-1])


def pack_sequences(prompt_ids, response_ids, *, pad_id: int):
    """Right-padded ``prompt + response`` batches for a training forward pass.

    Returns ``input_ids`` ``(B, S)``, ``attention_mask`` ``(B, S)`` and ``response_mask``
    ``(B, S - 1)``: position ``t`` of the mask is 1 when token ``t + 1`` is a response token,
    aligned with the log-probs of :func:`token_logprobs` (logits at ``t`` predict ``t + 1``).
    """
    if len(prompt_ids) != len(response_ids):
        raise ValueError(f"{len(prompt_ids)} prompts but {len(response_ids)} responses")
    width = max(len(p) + len(r) for p, r in zip(prompt_ids, response_ids))
    ids = torch.full((len(prompt_ids), width), pad_id, dtype=torch.long)
    attention = torch.zeros_like(ids)
    response_mask = torch.zeros((len(prompt_ids), width - 1), dtype=torch.float32)
    for i, (p, r) in enumerate(zip(prompt_ids, response_ids)):
        seq = list(p) + list(r)
        ids[i, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        attention[i, : len(seq)] = 1
        response_mask[i, len(p) - 1 : len(seq) - 1] = 1.0
    return ids, attention, response_mask


def token_logprobs(model, input_ids, attention_mask, *, temperature: float = 1.0,
                   with_entropy: bool = False, chunk_size: int = 0, positions=None):
    """Log-probability of each next token under ``model``: ``(B, S) -> (B, S - 1)``.

    ``logp[b, t]`` scores ``input_ids[b, t + 1]`` under ``softmax(logits[b, t] /
    temperature)`` (see the module docstring), so that old and new log-probs describe the
    distribution the rollouts were drawn from. With ``with_entropy`` also returns the
    per-position entropy ``(B, S - 1)``.

    ``positions`` (``(B, S - 1)``, bool or 0/1) restricts the work to those positions
    (typically the response mask); the others are returned as 0. ``chunk_size > 0`` bounds
    memory: the base model yields hidden states, and the output head is applied to at most
    ``chunk_size`` positions at a time, each chunk recomputed in the backward pass
    (``torch.utils.checkpoint``), so peak memory is ``O(chunk_size * V)`` and gradients equal
    the unchunked ones. Models without a separable head (no ``get_output_embeddings()`` or
    base model, or a logit soft-cap/scale in their config) use the full-logits path.
    """
    split = _split_head(model) if chunk_size > 0 else None
    if split is None:
        logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1]
        logp, entropy = _logp_and_entropy(logits, input_ids[:, 1:], temperature, with_entropy)
        if positions is not None:
            keep = positions.bool()
            logp = torch.where(keep, logp, torch.zeros_like(logp))
            entropy = None if entropy is None else torch.where(keep, entropy,
                                                               torch.zeros_like(entropy))
        return (logp, entropy) if with_entropy else logp
    base, head = split
    hidden = base(input_ids=input_ids, attention_mask=attention_mask,
                  use_cache=False).last_hidden_state[:, :-1]  # (B, S-1, H)
    keep = (torch.ones(hidden.shape[:2], dtype=torch.bool, device=hidden.device)
            if positions is None else positions.bool())
    logp, entropy = _chunked_logprobs(head, hidden[keep], input_ids[:, 1:][keep],
                                      temperature, with_entropy, chunk_size)  # (n,) each
    out = hidden.new_zeros(keep.shape, dtype=logp.dtype).masked_scatter(keep, logp)
    if not with_entropy:
        return out
    return out, hidden.new_zeros(keep.shape, dtype=logp.dtype).masked_scatter(keep, entropy)


def _split_head(model):
    """``(base_model, output_head)`` when logits are exactly ``head(base(...).hidden)``."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    base = getattr(model, getattr(model, "base_model_prefix", "") or "", None)
    config = getattr(model, "config", None)
    scaled = any(getattr(config, key, None) not in (None, 1, 1.0)
                 for key in ("final_logit_softcapping", "logit_scale", "logits_scaling",
                             "output_multiplier_scale"))
    if head is None or base is None or base is model or scaled:
        return None
    return base, head


def _chunked_logprobs(head, hidden, targets, temperature: float, with_entropy: bool,
                      chunk_size: int):
    """Log-probs (and entropy) of ``n`` positions, ``hidden`` ``(n, H)``, in chunks."""
    from torch.utils.checkpoint import checkpoint

    def one_chunk(h, y):
        logp, entropy = _logp_and_entropy(head(h), y, temperature, with_entropy)
        return (logp,) if entropy is None else (logp, entropy)

    recompute = torch.is_grad_enabled() and (
        hidden.requires_grad or any(p.requires_grad for p in head.parameters()))
    parts = []
    for start in range(0, max(hidden.shape[0], 1), chunk_size):  # n = 0: one empty chunk
        h, y = hidden[start:start + chunk_size], targets[start:start + chunk_size]
        parts.append(checkpoint(one_chunk, h, y, use_reentrant=False) if recompute
                     else one_chunk(h, y))
    logp = torch.cat([p[0] for p in parts])  # (n,)
    return logp, (torch.cat([p[1] for p in parts]) if with_entropy else None)
