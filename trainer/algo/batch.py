"""The tensors of one RL step: kept groups packed into a :class:`TrainBatch`, their log-probs
under a model, and the mini-batches the update epochs walk.

Shapes: ``N`` sequences (kept groups x G), ``S`` packed length (prompt + response),
``S - 1`` next-token positions. ``mask`` is 1 on response tokens (EOS included).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from verimath.trainer.core.distributed import FORWARD_METHOD
from verimath.trainer.core.groups import Group
from verimath.trainer.core.logprobs import pack_sequences, token_logprobs


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
    is_weights: torch.Tensor | None = None  # (N, S-1), the rollout correction's weights

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
    padding = torch.tensor([g.padding for g in groups for _ in g.response_ids], device=device)
    batch = TrainBatch(ids.to(device), attention.to(device), mask * ~padding[:, None], mask,
                       adv, truncated.to(device), group)
    if all(g.logprobs is not None or g.padding for g in groups):  # padding: masked out
        batch.behaviour_logp = response_values(
            [lp for g in groups for lp in (g.logprobs if not g.padding else
                                           [np.zeros(len(r)) for r in g.response_ids])],
            batch.response_mask)
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


def forward_logprobs(model, input_ids, attention_mask, **kwargs):
    """``token_logprobs`` of the policy; a model sharded with FSDP runs the memory-bounded
    (chunked) path through its registered forward method, which gathers its parameters."""
    method = getattr(model, FORWARD_METHOD, None)
    if method is not None and kwargs.get("chunk_size", 0) > 0:
        return method(input_ids, attention_mask, **kwargs)
    return token_logprobs(model, input_ids, attention_mask, **kwargs)


@torch.no_grad()
def sequence_logprobs(model, batch: TrainBatch, *, micro_batch_size: int,
                      temperature: float, chunk_size: int = 0) -> torch.Tensor:
    """Log-probs ``(N, S-1)`` of the batch under ``model`` (old policy or reference), on the
    loss tokens only (0 elsewhere); ``chunk_size`` as in ``token_logprobs``."""
    out = torch.zeros_like(batch.mask)
    for start in range(0, len(batch), micro_batch_size):
        rows = torch.arange(start, min(start + micro_batch_size, len(batch)))
        ids, attention, cols = trimmed(batch, rows)
        out[rows, cols] = forward_logprobs(model, ids, attention, temperature=temperature,
                                           chunk_size=chunk_size,
                                           positions=batch.mask[rows, cols]).float()
    return out


def mini_batches(group: np.ndarray, parts: int, rng: np.random.Generator, *,
                 by: str = "group") -> list[np.ndarray]:
    """Row indices of the ``parts`` mini-batches of one epoch; ``group`` ``(N,)`` maps rows
    to groups.

    ``by="group"``: a shuffled partition of the groups into ``parts`` sets of whole groups.
    ``by="sequence"``: a shuffled partition of all sequences, so each update sees samples of
    every prompt (advantages stay those of each sequence's group: they are computed before).
    The sizes differ by at most one group (or sequence).
    """
    if by == "group":
        num_groups = int(group.max()) + 1 if len(group) else 0
        return [np.flatnonzero(np.isin(group, chosen))
                for chosen in np.array_split(rng.permutation(num_groups), parts)]
    if by == "sequence":
        return [np.sort(rows) for rows in np.array_split(rng.permutation(len(group)), parts)]
    raise ValueError(f"by must be 'group' or 'sequence', got {by!r}")


def use_sampling_policy(batch: TrainBatch, groups: list[Group]) -> None:
    """Overwrite the old log-probs of groups kept from an earlier step with those of the
    policy that sampled them (stored when they were generated), so their importance ratio
    is ``pi_theta / pi_sampler``."""
    for i, g in enumerate(groups):
        if g.old_logprobs is not None:
            rows = np.flatnonzero(batch.group == i)
            batch.old_logp[rows] = response_values(g.old_logprobs, batch.response_mask[rows])


def use_proximal_policy(batch: TrainBatch, groups: list[Group], proximal: torch.Tensor) -> None:
    """The decoupled objective (``algo.proximal_clip``): the ratio is taken against
    ``proximal`` (the policy at the start of the step, ``(N, S-1)``) and each token weighted by
    ``pi_proximal / pi_sampler`` through ``behaviour_logp``. The sampler is the policy that
    sampled a group kept from an earlier step (its stored log-probs), else the rollout
    engine (its log-probs, when it reports them), else ``proximal`` itself (weight 1)."""
    sampler = (batch.behaviour_logp if batch.behaviour_logp is not None else proximal).clone()
    for i, g in enumerate(groups):
        if g.old_logprobs is not None:
            rows = np.flatnonzero(batch.group == i)
            sampler[rows] = response_values(g.old_logprobs, batch.response_mask[rows])
    batch.old_logp, batch.behaviour_logp = proximal, sampler


@torch.no_grad()
def keep_sampling_policy(model, groups: list[Group], *, pad_id: int, device, **forward) -> None:
    """Store, in each group that has none yet, the log-probs of its responses under
    ``model`` (the policy that sampled them, before this step's update): a surplus group
    trained at a later step is then compared with the policy that generated it."""
    new = [g for g in groups if g.old_logprobs is None]
    if not new:
        return
    zero = np.zeros((len(new), len(new[0].response_ids)))
    batch = pack_batch(new, zero, pad_id=pad_id, device=device)
    batch.mask = batch.response_mask  # padding groups too: every rank runs the same passes
    logp = sequence_logprobs(model, batch, **forward)  # (N, S-1)
    for i, g in enumerate(new):
        rows = np.flatnonzero(batch.group == i)
        g.old_logprobs = [logp[r][batch.response_mask[r].bool()].cpu().numpy() for r in rows]
