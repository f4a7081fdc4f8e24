"""The tensors of one RL step: kept groups packed into a :class:`TrainBatch`, their log-probs
under a model, and the mini-batches the update epochs walk.

Shapes: ``N`` sequences (kept groups x G), ``S`` packed length (prompt + response),
``S - 1`` next-token positions. ``mask`` is 1 on response tokens (EOS included).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from verimath.trainer.episodes import Group
from verimath.trainer.logprobs import pack_sequences, token_logprobs


@dataclass
class TrainBatch:
    """All sequences of one RL step, on the training device."""

    input_ids: torch.Tensor  # (N, S)
    attention_mask: torch.Tensor  # (N, S)
    mask: torch.Tensor  # (N, S-1) float, loss tokens
    response_mask: torch.Tensor  # (N, S-1) float, every response token (before any filter)
    adv: torch.Tensor  # (N,)
    truncated: torch.Tensor  # (N,) bool, cut at max_new_tokens
    group: np.ndarray  # (N,) index of the group each sequence belongs to
    old_logp: torch.Tensor | None = None  # (N, S-1)
    ref_logp: torch.Tensor | None = None  # (N, S-1)
    behaviour_logp: torch.Tensor | None = None  # (N, S-1), from the rollout engine

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])


def pack_batch(groups: list[Group], adv: np.ndarray, *, pad_id: int, device) -> TrainBatch:
    """Pack the groups' ``prompt + response`` sequences; ``adv`` ``(P, G)`` is per response."""
    prompts = [g.prompt_ids for g in groups for _ in g.response_ids]
    responses = [r for g in groups for r in g.response_ids]
    truncated = torch.from_numpy(np.concatenate([g.truncated for g in groups]))  # (N,)
    ids, attention, mask = pack_sequences(prompts, responses, pad_id=pad_id)
    group = np.repeat(np.arange(len(groups)), [len(g.response_ids) for g in groups])
    adv = torch.tensor(np.asarray(adv).reshape(-1), dtype=torch.float32, device=device)
    mask = mask.to(device)
    batch = TrainBatch(ids.to(device), attention.to(device), mask, mask.clone(), adv,
                       truncated.to(device), group)
    if all(g.logprobs is not None for g in groups):
        batch.behaviour_logp = response_values(
            [lp for g in groups for lp in g.logprobs], batch.response_mask)
    return batch


def response_values(per_response: list, response_mask: torch.Tensor) -> torch.Tensor:
    """Scatter one array of per-token values per response onto the ``(N, S-1)`` positions
    where ``response_mask`` is 1 (every response token, in order; one array per row)."""
    flat = torch.as_tensor(np.concatenate([np.asarray(v, dtype=np.float32)
                                           for v in per_response]), device=response_mask.device)
    if flat.numel() != int(response_mask.sum()):
        raise ValueError(f"{flat.numel()} per-token values for {int(response_mask.sum())} "
                         "response tokens: one value per sampled token is needed")
    return torch.zeros_like(response_mask).masked_scatter(response_mask.bool(), flat)


def trimmed(batch: TrainBatch, rows) -> tuple[torch.Tensor, torch.Tensor, slice]:
    """Rows of the batch cut to their longest sequence (less padding per micro-batch)."""
    width = int(batch.attention_mask[rows].sum(dim=1).max())
    return batch.input_ids[rows, :width], batch.attention_mask[rows, :width], slice(0, width - 1)


@torch.no_grad()
def sequence_logprobs(model, batch: TrainBatch, *, micro_batch_size: int,
                      temperature: float, chunk_size: int = 0) -> torch.Tensor:
    """Log-probs ``(N, S-1)`` of the batch under ``model`` (old policy or reference), on the
    loss tokens only (0 elsewhere); ``chunk_size`` as in ``token_logprobs``."""
    out = torch.zeros_like(batch.mask)
    for start in range(0, len(batch), micro_batch_size):
        rows = torch.arange(start, min(start + micro_batch_size, len(batch)))
        ids, attention, cols = trimmed(batch, rows)
        out[rows, cols] = token_logprobs(model, ids, attention, temperature=temperature,
                                         chunk_size=chunk_size,
                                         positions=batch.mask[rows, cols]).float()
    return out


def mini_batches(group: np.ndarray, groups_per_batch: int, rng: np.random.Generator, *,
                 by: str = "group") -> list[np.ndarray]:
    """Row indices of each mini-batch; ``group`` ``(N,)`` maps rows to groups.

    ``by="group"``: a shuffled partition of the groups, ``groups_per_batch`` whole groups
    each. ``by="sequence"``: the same number of mini-batches, ``ceil(P / groups_per_batch)``,
    made of the shuffled sequences of all groups, so each update sees samples of every
    prompt (advantages stay those of each sequence's group: they are computed before).
    """
    num_groups = int(group.max()) + 1 if len(group) else 0
    if by == "group":
        order = rng.permutation(num_groups)
        return [np.flatnonzero(np.isin(group, order[i:i + groups_per_batch]))
                for i in range(0, len(order), groups_per_batch)]
    if by == "sequence":
        parts = -(-num_groups // groups_per_batch)  # ceil
        return [np.sort(rows) for rows in np.array_split(rng.permutation(len(group)), parts)]
    raise ValueError(f"by must be 'group' or 'sequence', got {by!r}")
