"""Pieces of the RL step: groups kept from an earlier step are trained against the policy
that sampled them, and survive a checkpoint as plain JSON."""

from __future__ import annotations

import copy
import json

import numpy as np
import torch
from verimath.trainer.algo.batch import pack_batch, sequence_logprobs
from verimath.trainer.core.groups import Group
from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model
from verimath.trainer.run.step import keep_sampling_policy, use_sampling_policy

TOKENIZER = make_char_tokenizer()
FORWARD = {"micro_batch_size": 3, "temperature": 0.7, "chunk_size": 0}


def _groups(seed, n=3, g=3):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        responses = [list(rng.integers(3, 90, size=rng.integers(1, 6))) for _ in range(g)]
        correct = np.arange(g) == 0
        truncated = np.zeros(g, dtype=bool)
        truncated[-1] = i == 1  # one truncated response: its mask row is filtered later
        out.append(Group(f"p{i}", list(rng.integers(3, 90, size=2)), responses,
                         np.where(correct, 1.0, -1.0), correct, truncated))
    return out


def test_a_carried_group_keeps_the_log_probs_of_the_policy_that_sampled_it():
    sampler = make_tiny_model(TOKENIZER, hidden_size=16, num_layers=1, num_heads=2, seed=0)
    later = copy.deepcopy(sampler)
    with torch.no_grad():
        for p in later.parameters():
            p.add_(0.05 * torch.randn_like(p))  # the policy after an update
    groups = _groups(1)
    keep_sampling_policy(sampler, groups[1:], pad_id=0, device="cpu", **FORWARD)
    assert groups[0].old_logprobs is None and all(g.old_logprobs for g in groups[1:])
    batch = pack_batch(groups, np.zeros((3, 3)), pad_id=0, device="cpu")
    batch.mask[batch.truncated] = 0  # overlong filtering must not shift the stored values
    batch.old_logp = sequence_logprobs(later, batch, **FORWARD)
    fresh = batch.old_logp.clone()
    use_sampling_policy(batch, groups)
    reference = sequence_logprobs(sampler, pack_batch(groups, np.zeros((3, 3)), pad_id=0,
                                                      device="cpu"), **FORWARD)
    carried = torch.from_numpy(np.isin(batch.group, [1, 2]))
    keep = batch.mask.bool() & carried[:, None]
    torch.testing.assert_close(batch.old_logp[keep], reference[keep], atol=1e-6, rtol=1e-5)
    assert not torch.allclose(fresh[keep], reference[keep], atol=1e-3)  # it did change
    own = batch.mask.bool() & ~carried[:, None]
    assert torch.equal(batch.old_logp[own], fresh[own])  # a fresh group keeps the new pi


def test_groups_round_trip_through_json_exactly():
    groups = _groups(2)
    sampler = make_tiny_model(TOKENIZER, hidden_size=16, num_layers=1, num_heads=2, seed=0)
    keep_sampling_policy(sampler, groups, pad_id=0, device="cpu", **FORWARD)
    groups[0].step = 4
    back = [Group.from_dict(json.loads(json.dumps(g.to_dict()))) for g in groups]
    for a, b in zip(groups, back):
        assert (a.problem_id, a.prompt_ids, a.response_ids, a.step) == \
            (b.problem_id, b.prompt_ids, b.response_ids, b.step)
        for x, y in [(a.rewards, b.rewards), (a.correct, b.correct), (a.truncated, b.truncated),
                     *zip(a.old_logprobs, b.old_logprobs)]:
            np.testing.assert_array_equal(x, y)
            assert x.dtype == y.dtype
