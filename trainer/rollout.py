"""Rollouts: the engine protocol, the Hugging Face engine, and log-probs of sampled tokens.

The protocol is token ids in, token ids out, so engines are interchangeable (transformers
``generate`` here, vLLM later): the trainer builds prompt ids (chat template included),
asks an engine for ``n`` samples of each, and gets a :class:`Rollouts` back::

    with HFRolloutEngine(model, tokenizer) as engine:
        out = engine.generate(prompt_ids, SamplingParams(temperature=1.0, max_new_tokens=16), n=8)
        out.response_ids[0], out.truncated[0], out.texts[0]

Conventions: ``response_ids[i]`` ends with the EOS id when the response finished, and has
exactly ``max_new_tokens`` ids without EOS when it was cut off (``truncated[i]`` True). The
EOS token is part of the response (the policy is trained to emit it). Sample ``i`` belongs to
prompt ``i // n``. The old log-probs DAPO needs come from :func:`token_logprobs`, a plain
forward pass of the policy over ``prompt + response`` (:func:`pack_sequences`). With
``chunk_size > 0`` that forward is memory-bounded: hidden states from the base model, then
the output head over a few response positions at a time, so a 150k vocabulary and 20k-token
responses never produce a full ``(B, T, V)`` logits tensor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class SamplingParams:
    """How to sample: ``greedy`` ignores temperature and top-p."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 256
    greedy: bool = False

    def __post_init__(self) -> None:
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")


@dataclass(frozen=True)
class Rollouts:
    """``B = len(prompt_ids) * n`` sampled responses; sample ``i`` answers prompt ``i // n``."""

    prompt_ids: list[list[int]]
    """Token ids of each sample's prompt (repeated ``n`` times)."""
    response_ids: list[list[int]]
    """Generated ids, EOS included when generation stopped on it, no padding."""
    texts: list[str]
    """Decoded responses without special tokens."""
    truncated: np.ndarray
    """``(B,)`` bool: hit ``max_new_tokens`` without emitting EOS."""

    @property
    def lengths(self) -> np.ndarray:
        """``(B,)`` response lengths in tokens (EOS counted)."""
        return np.array([len(r) for r in self.response_ids], dtype=np.int64)

    def __len__(self) -> int:
        return len(self.response_ids)


@runtime_checkable
class RolloutEngine(Protocol):
    """What the trainer needs from a generator of responses."""

    def generate(self, prompt_ids: list[list[int]], params: SamplingParams, *, n: int = 1
                 ) -> Rollouts:
        """``n`` samples of each prompt, in prompt-major order."""

    def sync_weights(self, model) -> None:
        """Make the engine sample from ``model``'s current weights (no-op when shared)."""

    def close(self) -> None:
        """Release the engine's resources; idempotent."""


class HFRolloutEngine:
    """Sampling with ``transformers`` ``generate`` on the policy itself (weights shared).

    Prompts are left-padded into batches of at most ``batch_size`` sequences (prompt
    copies included). Sampling draws from torch's global RNG, which the trainer seeds and
    checkpoints; with ``seeds`` (one per prompt) each sample draws from its own RNG instead
    (``verimath.trainer.seeded_sampling``), the same whatever the batching.
    """

    def __init__(self, model, tokenizer, *, batch_size: int = 512) -> None:
        if tokenizer.eos_token_id is None:
            raise ValueError("the tokenizer has no eos_token_id; responses could never finish")
        self.model, self.tokenizer, self.batch_size = model, tokenizer, int(batch_size)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None \
            else tokenizer.eos_token_id
        self.eos_ids = _eos_ids(model, tokenizer)
        self.closed = False

    def generate(self, prompt_ids, params: SamplingParams, *, n: int = 1,
                 seeds: list[int] | None = None) -> Rollouts:
        if self.closed:
            raise RuntimeError("HFRolloutEngine is closed")
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        if seeds is not None and len(seeds) != len(prompt_ids):
            raise ValueError(f"{len(seeds)} seeds for {len(prompt_ids)} prompts")
        expanded = [list(p) for p in prompt_ids for _ in range(n)]
        rows = None if seeds is None else [(s, j) for s in seeds for j in range(n)]
        responses: list[list[int]] = []
        for start in range(0, len(expanded), self.batch_size):
            end = start + self.batch_size
            responses += self._generate_batch(expanded[start:end], params,
                                              None if rows is None else rows[start:end])
        truncated = np.array(
            [len(r) >= params.max_new_tokens and r[-1] not in self.eos_ids for r in responses],
            dtype=bool,
        )
        texts = self.tokenizer.batch_decode(responses, skip_special_tokens=True)
        return Rollouts(expanded, responses, texts, truncated)

    def _generate_batch(self, prompts: list[list[int]], params: SamplingParams,
                        row_seeds=None) -> list[list[int]]:
        import torch

        device = next(self.model.parameters()).device
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(prompts), width), dtype=torch.long)
        for i, p in enumerate(prompts):  # left padding
            ids[i, width - len(p):] = torch.tensor(p, dtype=torch.long)
            attention[i, width - len(p):] = 1
        sample = {} if params.greedy else {  # top_k=0: no top-k cut (transformers' default 50)
            "temperature": params.temperature, "top_p": params.top_p, "top_k": 0}
        if row_seeds is not None and not params.greedy:  # argmax of one-hot seeded draws
            from verimath.trainer.seeded_sampling import SeededSampler

            sample = {"logits_processor": [SeededSampler(
                row_seeds, temperature=params.temperature, top_p=params.top_p)]}
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                out = self.model.generate(
                    input_ids=ids.to(device), attention_mask=attention.to(device),
                    do_sample=not params.greedy and row_seeds is None,
                    max_new_tokens=params.max_new_tokens,
                    pad_token_id=self.pad_id, eos_token_id=sorted(self.eos_ids),
                    **sample,
                )
        finally:
            self.model.train(was_training)
        return [_cut_at_eos(row, self.eos_ids) for row in out[:, width:].tolist()]

    def sync_weights(self, model) -> None:
        self.model = model  # generate() runs on the policy itself

    def close(self) -> None:
        self.closed = True
        self.model = None

    def __enter__(self) -> HFRolloutEngine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _eos_ids(model, tokenizer) -> set[int]:
    ids = {tokenizer.eos_token_id}
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(configured, int):
        ids.add(configured)
    elif configured:
        ids.update(int(i) for i in configured)
    return ids


def _cut_at_eos(row: list[int], eos_ids: set[int]) -> list[int]:
    for j, token in enumerate(row):
        if token in eos_ids:
            return row[: j + 1]
    return row


def pack_sequences(prompt_ids, response_ids, *, pad_id: int):
    """Right-padded ``prompt + response`` batches for a training forward pass.

    Returns ``input_ids`` ``(B, S)``, ``attention_mask`` ``(B, S)`` and ``response_mask``
    ``(B, S - 1)``: position ``t`` of the mask is 1 when token ``t + 1`` is a response token,
    aligned with the log-probs of :func:`token_logprobs` (logits at ``t`` predict ``t + 1``).
    """
    import torch

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

    ``logp[b, t] = log softmax(logits[b, t] / temperature)[input_ids[b, t + 1]]``, computed in
    float32 (the log-normalizer is a float32 ``logsumexp``). The sampling temperature is
    applied so that old and new log-probs describe the distribution the rollouts were drawn
    from. With ``with_entropy`` also returns the per-position entropy
    ``H[b, t] = logsumexp(z) - sum_v softmax(z)_v z_v`` (``z`` the scaled logits), ``(B, S - 1)``.

    ``positions`` (``(B, S - 1)``, bool or 0/1) restricts the work to those positions
    (typically the response mask); the others are returned as 0. ``chunk_size > 0`` bounds
    memory: the base model yields hidden states, and the output head is applied to at most
    ``chunk_size`` positions at a time, so no ``(B, S, V)`` logits tensor exists. Under
    autograd each chunk is recomputed in the backward pass (``torch.utils.checkpoint``), so
    peak memory is ``O(chunk_size * V)`` and gradients equal the unchunked ones. Models
    without a separable head (no ``get_output_embeddings()`` or base model, or a logit
    soft-cap/scale in their config) use the plain full-logits path.
    """
    import torch

    split = _split_head(model) if chunk_size > 0 else None
    if split is None:
        logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1]
        logp, entropy = _head_logprobs(logits, input_ids[:, 1:], temperature, with_entropy)
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
    out = hidden.new_zeros(keep.shape, dtype=torch.float32).masked_scatter(keep, logp)
    if not with_entropy:
        return out
    return out, hidden.new_zeros(keep.shape, dtype=torch.float32).masked_scatter(keep, entropy)


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


def _head_logprobs(logits, targets, temperature: float, with_entropy: bool):
    """``(logp, entropy or None)`` of ``targets`` ``(...)`` under ``logits`` ``(..., V)``."""
    import torch

    logits = logits.float() / temperature  # (..., V)
    log_norm = torch.logsumexp(logits, dim=-1)  # (...)
    logp = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - log_norm  # (...)
    if not with_entropy:
        return logp, None
    entropy = log_norm - (torch.softmax(logits, dim=-1) * logits).sum(-1)  # (...)
    return logp, entropy


def _chunked_logprobs(head, hidden, targets, temperature: float, with_entropy: bool,
                      chunk_size: int):
    """Log-probs (and entropy) of ``n`` positions, ``hidden`` ``(n, H)``, in chunks."""
    import torch
    from torch.utils.checkpoint import checkpoint

    def one_chunk(h, y):
        logp, entropy = _head_logprobs(head(h), y, temperature, with_entropy)
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
