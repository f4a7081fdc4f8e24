"""Sampling in which every sequence draws from its own seeded RNG.

With torch's global RNG, the tokens sampled for one prompt depend on everything sampled
before it and on the other prompts of its batch. Here row ``r`` of a batch owns
``numpy.random.default_rng(SeedSequence([seed_r, j_r]))`` (``seed_r`` the prompt's seed,
``j_r`` the sample's index among that prompt's ``n`` copies) and draws one uniform number
per generated token from it. The token is then picked by inverse-CDF sampling from the
temperature-scaled, nucleus-truncated distribution::

    p = softmax(logits / T)                      sorted, descending
    keep the smallest prefix whose mass >= top_p (the first token always)
    token = first sorted index with cumsum(p_kept) > u * sum(p_kept),  u ~ U[0, 1)

So a prompt's samples are the same whatever it is batched with, whatever ran before, and
torch's global RNG is never read or advanced. (Up to floating point: a different batch
shape can change logits in their last bits, which very rarely moves a draw across a
boundary.)

:class:`SeededSampler` plugs this into ``transformers`` ``generate`` as a logits processor
that turns the logits into a one-hot choice (0 for the drawn token, ``-inf`` elsewhere),
run with ``do_sample=False`` so that ``generate``'s argmax takes the drawn token.
"""

from __future__ import annotations

import numpy as np
import torch
from transformers import LogitsProcessor


def row_rngs(seeds: list[tuple[int, int]]) -> list[np.random.Generator]:
    """One generator per ``(prompt_seed, sample_index)`` pair."""
    return [np.random.default_rng(np.random.SeedSequence([int(s), int(j)])) for s, j in seeds]


def inverse_cdf_sample(logits: torch.Tensor, u: torch.Tensor, *, temperature: float,
                       top_p: float) -> torch.Tensor:
    """Token ids ``(B,)`` drawn from ``logits`` ``(B, V)`` with uniforms ``u`` ``(B,)`` in [0, 1).

    Nucleus truncation keeps the smallest set of most likely tokens whose probability
    reaches ``top_p`` (ties in probability broken by token id); ``top_p=1`` keeps all.
    """
    if temperature <= 0 or not 0 < top_p <= 1:
        raise ValueError(f"need temperature > 0 and top_p in (0, 1], got {temperature}, {top_p}")
    probs = torch.softmax(logits.float() / temperature, dim=-1)  # (B, V)
    sorted_p, order = probs.sort(dim=-1, descending=True, stable=True)  # (B, V)
    sorted_p = sorted_p.double()
    mass_before = sorted_p.cumsum(dim=-1) - sorted_p  # (B, V)
    kept = torch.where(mass_before < top_p, sorted_p, torch.zeros_like(sorted_p))
    kept[:, 0] = sorted_p[:, 0]  # the most likely token always stays
    cum = kept.cumsum(dim=-1)  # (B, V)
    target = u.to(device=cum.device, dtype=cum.dtype).unsqueeze(-1) * cum[:, -1:]  # (B, 1)
    index = torch.searchsorted(cum, target, right=True).clamp(max=cum.shape[-1] - 1)  # (B, 1)
    return order.gather(-1, index).squeeze(-1)  # (B,)


class SeededSampler(LogitsProcessor):
    """A ``transformers`` logits processor that samples row ``r`` with its own RNG.

    Use with ``generate(..., do_sample=False, logits_processor=[SeededSampler(...)])``; the
    processor returns one-hot logits, so the argmax is the sampled token.
    """

    def __init__(self, seeds: list[tuple[int, int]], *, temperature: float, top_p: float):
        self.rngs = row_rngs(seeds)
        self.temperature, self.top_p = float(temperature), float(top_p)

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if scores.shape[0] != len(self.rngs):
            raise ValueError(f"SeededSampler has {len(self.rngs)} row seeds but the batch has "
                             f"{scores.shape[0]} rows")
        u = torch.tensor([rng.random() for rng in self.rngs], dtype=torch.float64)  # (B,)
        chosen = inverse_cdf_sample(scores, u, temperature=self.temperature, top_p=self.top_p)
        one_hot = torch.full_like(scores, float("-inf"))  # (B, V)
        return one_hot.scatter_(-1, chosen.unsqueeze(-1), 0.0)
