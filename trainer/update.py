"""From kept groups to optimizer updates: batch building, old log-probs, the update epochs.

Shapes: ``N`` sequences (kept groups x G), ``S`` packed length (prompt + response),
``S - 1`` next-token positions. The loss mask is 1 on response tokens only (EOS included),
zeroed for truncated responses when overlong filtering is on.

Exact token-level normalization under gradient accumulation: for each mini-batch the
number of loss tokens ``n_tok`` (and responses ``n_seq``) is counted over the whole
mini-batch first; every micro-batch loss is divided by that global count and the
micro-batch gradients add up, so the update equals the one computed on the mini-batch in
one piece, however it is split.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from verimath.trainer.advantages import group_advantages
from verimath.trainer.episodes import Group
from verimath.trainer.loss import dapo_policy_loss, kl_penalty, overlong_filter_mask
from verimath.trainer.rollout import pack_sequences, token_logprobs


@dataclass
class TrainBatch:
    """All sequences of one RL step, on the training device."""

    input_ids: torch.Tensor  # (N, S)
    attention_mask: torch.Tensor  # (N, S)
    mask: torch.Tensor  # (N, S-1) float, loss tokens
    adv: torch.Tensor  # (N,)
    group: np.ndarray  # (N,) index of the group each sequence belongs to
    old_logp: torch.Tensor | None = None  # (N, S-1)
    ref_logp: torch.Tensor | None = None  # (N, S-1)

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])


def make_train_batch(groups: list[Group], *, pad_id: int, adv_eps: float,
                     overlong_filtering: bool, device) -> TrainBatch:
    """Advantages per group (``(P, G)``, see ``group_advantages``), then packed sequences."""
    rewards = np.stack([g.rewards for g in groups])  # (P, G)
    adv = group_advantages(rewards, eps=adv_eps).reshape(-1)  # (P*G,)
    prompts = [g.prompt_ids for g in groups for _ in g.response_ids]
    responses = [r for g in groups for r in g.response_ids]
    truncated = torch.from_numpy(np.concatenate([g.truncated for g in groups]))  # (N,)
    ids, attention, mask = pack_sequences(prompts, responses, pad_id=pad_id)
    mask = overlong_filter_mask(mask, truncated, enabled=overlong_filtering)
    group = np.repeat(np.arange(len(groups)), [len(g.response_ids) for g in groups])
    return TrainBatch(ids.to(device), attention.to(device), mask.to(device),
                      torch.tensor(adv, dtype=torch.float32, device=device), group)


def _trimmed(batch: TrainBatch, rows) -> tuple[torch.Tensor, torch.Tensor, slice]:
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
        ids, attention, cols = _trimmed(batch, rows)
        out[rows, cols] = token_logprobs(model, ids, attention, temperature=temperature,
                                         chunk_size=chunk_size,
                                         positions=batch.mask[rows, cols]).float()
    return out


def mini_batches(num_groups: int, groups_per_batch: int, rng: np.random.Generator) -> list:
    """A shuffled partition of group indices into mini-batches of ``groups_per_batch``."""
    order = rng.permutation(num_groups)
    return [order[i:i + groups_per_batch] for i in range(0, num_groups, groups_per_batch)]


@dataclass(frozen=True)
class LossSettings:
    """The loss switches, unpacked from the config by the loop."""

    eps_low: float
    eps_high: float
    dual_clip: float | None
    aggregation: str
    kl_coef: float
    temperature: float
    chunk_size: int = 0
    """Positions per output-head chunk in ``token_logprobs``; 0 computes full logits."""


def update_on_mini_batch(model, optimizer, scheduler, batch: TrainBatch, group_ids,
                         *, settings: LossSettings, micro_batch_size: int,
                         grad_clip: float) -> dict[str, float]:
    """One optimizer update on the sequences of ``group_ids`` (gradient accumulation)."""
    rows_all = torch.from_numpy(np.flatnonzero(np.isin(batch.group, group_ids)))
    mask = batch.mask[rows_all]  # (n, S-1)
    num_tokens = float(mask.sum())
    num_sequences = float((mask.sum(dim=1) > 0).sum())
    optimizer.zero_grad(set_to_none=True)
    sums: dict[str, float] = {}
    for start in range(0, len(rows_all), micro_batch_size):
        rows = rows_all[start:start + micro_batch_size]
        ids, attention, cols = _trimmed(batch, rows)
        m = batch.mask[rows, cols]  # (m, w-1)
        logp, entropy = token_logprobs(model, ids, attention, temperature=settings.temperature,
                                       with_entropy=True, chunk_size=settings.chunk_size,
                                       positions=m)  # (m, w-1) each
        loss, metrics = dapo_policy_loss(
            logp, batch.old_logp[rows, cols], batch.adv[rows], m,
            eps_low=settings.eps_low, eps_high=settings.eps_high, dual_clip=settings.dual_clip,
            aggregation=settings.aggregation, num_tokens=num_tokens, num_sequences=num_sequences)
        if settings.kl_coef > 0:
            kl = kl_penalty(logp, batch.ref_logp[rows, cols], m, aggregation=settings.aggregation,
                            num_tokens=num_tokens, num_sequences=num_sequences)
            loss = loss + settings.kl_coef * kl
            sums["loss/kl"] = sums.get("loss/kl", 0.0) + float(kl.detach())
        loss.backward()
        n = metrics["policy/tokens"]
        sums["loss/policy"] = sums.get("loss/policy", 0.0) + metrics["loss/policy"]
        for key in ("clip/frac_low", "clip/frac_high", "clip/frac_dual", "policy/approx_kl"):
            sums[key] = sums.get(key, 0.0) + metrics[key] * n / max(num_tokens, 1.0)
        sums["policy/entropy"] = sums.get("policy/entropy", 0.0) + float(
            (entropy.detach() * m).sum()) / max(num_tokens, 1.0)
    params = [p for p in model.parameters() if p.requires_grad]
    norm = torch.nn.utils.clip_grad_norm_(params, grad_clip if grad_clip > 0 else float("inf"))
    sums["optim/grad_norm"] = float(norm)
    sums["optim/lr"] = float(optimizer.param_groups[0]["lr"])
    optimizer.step()
    scheduler.step()
    sums["compute/trained_tokens"] = num_tokens
    return sums


def mean_metrics(records: list[dict[str, float]]) -> dict[str, float]:
    """Average update metrics over the updates of a step (token counts are summed)."""
    if not records:
        return {}
    out = {k: float(np.mean([r[k] for r in records if k in r])) for k in records[0]}
    out["compute/trained_tokens"] = float(sum(r["compute/trained_tokens"] for r in records))
    out["optim/updates"] = float(len(records))
    return out
