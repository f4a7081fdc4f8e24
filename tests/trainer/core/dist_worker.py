"""Run by ``torchrun`` (or plainly, as one process) from test_distributed.py.

    python dist_worker.py OUT_DIR

Writes to OUT_DIR, from every rank: ``update_rank<r>.pt`` (the full parameters after one
optimizer update on a fixed global batch, whose groups are dealt out to the ranks) and
``sampling_rank<r>.json`` (what dynamic sampling kept when the ranks see very different
shares of informative groups).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import torch
from verimath.trainer.algo.advantages import group_advantages
from verimath.trainer.algo.batch import pack_batch, sequence_logprobs
from verimath.trainer.algo.dynamic_sampling import collect_informative
from verimath.trainer.algo.update import LossSettings, update_on_mini_batch
from verimath.trainer.core.distributed import (
    close_distributed,
    full_parameters,
    init_distributed,
    shard_model,
)
from verimath.trainer.core.groups import Group
from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model

GROUPS, G = 6, 4


def fixed_groups() -> list[Group]:
    """The global batch: 6 groups of 4 responses of different lengths, one truncated."""
    rng = np.random.default_rng(7)
    out = []
    for i in range(GROUPS):
        responses = [list(rng.integers(3, 90, size=rng.integers(1, 7))) for _ in range(G)]
        correct = rng.random(G) < 0.5
        correct[0], correct[1] = True, False
        out.append(Group(f"p{i}", list(rng.integers(3, 90, size=3)), responses,
                         np.where(correct, 1.0, -1.0), correct, np.zeros(G, dtype=bool)))
    return out


def one_update(comm, out: Path) -> None:
    torch.manual_seed(0)
    tokenizer = make_char_tokenizer()
    model = make_tiny_model(tokenizer, hidden_size=32, num_layers=2, num_heads=2, seed=3)
    if comm.enabled:
        model = shard_model(model, comm, device=torch.device("cpu"),
                            activation_checkpointing=False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)
    groups = fixed_groups()
    adv = group_advantages(np.stack([g.rewards for g in groups]), eps=1e-6)  # (P, G)
    mine = list(range(comm.rank, GROUPS, comm.world))  # groups dealt out to the ranks
    batch = pack_batch([groups[i] for i in mine], adv[mine], pad_id=0, device="cpu")
    forward = {"temperature": 1.0, "micro_batch_size": 5, "chunk_size": 4}
    batch.old_logp = sequence_logprobs(model, batch, **forward) - 0.05  # ratios != 1
    settings = LossSettings(eps_low=0.2, eps_high=0.28, dual_clip=None,
                            aggregation="token-mean", kl_coef=0.0, temperature=1.0,
                            chunk_size=4)
    metrics = update_on_mini_batch(model, optimizer, scheduler, batch, np.arange(len(batch)),
                                   settings=settings, micro_batch_size=5, grad_clip=1.0,
                                   comm=comm)
    params = {name: t.clone() for name, t in full_parameters(model)}
    torch.save({"params": params, "metrics": metrics}, out / f"update_rank{comm.rank}.pt")


def uneven_sampling(comm, out: Path) -> None:
    """Rank 0 sees almost only informative groups, the others almost none."""
    rng = np.random.default_rng(comm.rank)
    rate = 0.9 if comm.rank == 0 else 0.1
    truth = {"generated": 0, "informative": 0}  # what this rank really saw

    def generate_round(index, num_prompts):
        correct = np.zeros((num_prompts, G), dtype=bool)
        informative = rng.random(num_prompts) < rate
        correct[informative, 0] = True
        truth["generated"] += num_prompts
        truth["informative"] += int(informative.sum())
        return [(comm.rank, index, i) for i in range(num_prompts)], correct

    kept, surplus, stats = collect_informative(
        generate_round, target_groups=10, max_rounds=3, round_prompts=4, adaptive=True,
        min_round_prompts=2, comm=comm)
    record = {"kept": len(kept), "surplus": len(surplus), "stats": stats.as_metrics(),
              "round_sizes": stats.round_sizes, **truth}
    (out / f"sampling_rank{comm.rank}.json").write_text(json.dumps(record))


if __name__ == "__main__":
    directory = Path(sys.argv[1])
    comm = init_distributed()
    try:
        one_update(comm, directory)
        uneven_sampling(comm, directory)
    finally:
        close_distributed()
    # Everything is written and the group is gone. Leave without the interpreter's teardown:
    # under pytest, about every other run one rank then aborted in C++ ("terminate called
    # without an active exception", no Python frame left; torch 2.13 CPU, gloo, FSDP2),
    # after its work was done. Not seen from `verimath train` ranks.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
