"""Batch building and the update step: advantages per group, overlong filtering, mini-batches,
and gradient accumulation that does not depend on the micro-batch size."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.trainer.algo.advantages import group_advantages
from verimath.trainer.algo.batch import mini_batches, pack_batch, sequence_logprobs
from verimath.trainer.algo.loss import overlong_filter_mask
from verimath.trainer.algo.update import LossSettings, mean_metrics, update_on_mini_batch
from verimath.trainer.core.groups import Group
from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model

TOKENIZER = make_char_tokenizer()


def _group(rng, g=4, truncate_first=False):
    responses = [list(rng.integers(3, 90, size=rng.integers(1, 6))) for _ in range(g)]
    correct = rng.random(g) < 0.5
    truncated = np.zeros(g, dtype=bool)
    truncated[0] = truncate_first
    return Group("p", list(rng.integers(3, 90, size=rng.integers(1, 5))), responses,
                 np.where(correct, 1.0, -1.0), correct, truncated)


def make_train_batch(groups, *, pad_id, adv_eps, overlong_filtering, device):
    """What rl_step does with the kept groups before the old log-probs."""
    adv = group_advantages(np.stack([g.rewards for g in groups]), eps=adv_eps)  # (P, G)
    batch = pack_batch(groups, adv, pad_id=pad_id, device=device)
    batch.mask = overlong_filter_mask(batch.mask, batch.truncated, enabled=overlong_filtering)
    return batch


def test_advantages_are_per_group_and_filtering_zeroes_truncated_rows():
    g1 = Group("a", [5], [[6, 1], [7, 1]], np.array([1.0, -1.0]), np.array([True, False]),
               np.array([False, False]))
    g2 = Group("b", [5, 6], [[8, 8, 8], [9, 1]], np.array([-1.0, 1.0]),
               np.array([False, True]), np.array([True, False]))
    batch = make_train_batch([g1, g2], pad_id=0, adv_eps=0.0, overlong_filtering=True,
                             device="cpu")
    assert batch.adv.tolist() == [1.0, -1.0, -1.0, 1.0]
    assert batch.group.tolist() == [0, 0, 1, 1]
    assert batch.mask.sum(dim=1).tolist() == [2.0, 2.0, 0.0, 2.0]  # row 2 was truncated
    unfiltered = make_train_batch([g1, g2], pad_id=0, adv_eps=0.0, overlong_filtering=False,
                                  device="cpu")
    assert unfiltered.mask.sum(dim=1).tolist() == [2.0, 2.0, 3.0, 2.0]


@given(st.integers(1, 20), st.integers(1, 20), st.integers(2, 4))
def test_mini_batches_partition_the_rows_into_whole_groups(n, per, g):
    group = np.repeat(np.arange(n), g)  # (N,)
    parts = mini_batches(group, -(-n // per), np.random.default_rng(0))  # ceil(n / per) parts
    assert sorted(np.concatenate(parts).tolist()) == list(range(n * g))
    for rows in parts:
        groups = set(group[rows].tolist())
        assert len(groups) <= per and len(rows) == g * len(groups)  # whole groups only


def _setup(seed):
    rng = np.random.default_rng(seed)
    groups = [_group(rng, truncate_first=bool(i % 2)) for i in range(3)]
    model = make_tiny_model(TOKENIZER, hidden_size=16, num_layers=1, num_heads=2, seed=seed)
    batch = make_train_batch(groups, pad_id=0, adv_eps=1e-6, overlong_filtering=True,
                             device="cpu")
    batch.old_logp = sequence_logprobs(model, batch, micro_batch_size=4, temperature=1.0)
    batch.old_logp = batch.old_logp + 0.05 * torch.randn_like(batch.old_logp)  # ratios != 1
    return model, batch


def _one_update(model, batch, micro, aggregation, chunk_size=0, **loss):
    model = copy.deepcopy(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    settings_ = LossSettings(eps_low=0.2, eps_high=0.28, dual_clip=None, aggregation=aggregation,
                             kl_coef=0.0, temperature=1.0, chunk_size=chunk_size, **loss)
    metrics = update_on_mini_batch(model, optimizer, scheduler, batch, np.arange(len(batch)),
                                   settings=settings_, micro_batch_size=micro, grad_clip=0.0)
    return model, metrics


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 1000), micro=st.integers(1, 7),
       aggregation=st.sampled_from(["token-mean", "seq-mean-token-mean"]))
def test_micro_batch_size_does_not_change_the_update(seed, micro, aggregation):
    model, batch = _setup(seed)
    whole, m_whole = _one_update(model, batch, len(batch), aggregation)
    split, m_split = _one_update(model, batch, micro, aggregation)
    for p, q in zip(whole.parameters(), split.parameters()):
        torch.testing.assert_close(p, q, atol=1e-6, rtol=1e-5)
    assert m_whole["loss/policy"] == pytest.approx(m_split["loss/policy"], abs=1e-6)
    assert m_whole["optim/grad_norm"] == pytest.approx(m_split["optim/grad_norm"], rel=1e-4)
    assert m_whole["compute/trained_tokens"] == float(batch.mask.sum())


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 1000), micro=st.integers(1, 7),
       loss=st.sampled_from([("gspo", {}), ("clip-cov", {"cov_fraction": 0.2}),
                             ("kl-cov", {"cov_fraction": 0.2, "kl_cov_coef": 0.5})]),
       mode=st.sampled_from(["token-mask", "sequence-truncate"]), per_update=st.booleans())
def test_new_losses_and_rollout_weights_do_not_depend_on_the_micro_batch_size(seed, micro,
                                                                              loss, mode,
                                                                              per_update):
    from verimath.trainer.algo.correction import rollout_weights

    model, batch = _setup(seed)
    behaviour = batch.old_logp + 0.3 * torch.randn_like(batch.old_logp)
    batch.is_weights, _ = rollout_weights(batch.old_logp, behaviour, batch.mask, mode=mode,
                                          cap=1.5)
    name, options = loss
    kw = {"policy_loss": name, "options": options, "seed": (seed, 1)}
    if per_update:  # the weights come from each micro-batch's own forward pass
        batch.old_logp, batch.is_weights = behaviour, None
        kw["per_update_correction"] = (mode, 1.5)
    whole, m_whole = _one_update(model, batch, len(batch), "token-mean", **kw)
    split, m_split = _one_update(model, batch, micro, "token-mean", **kw)
    for p, q in zip(whole.parameters(), split.parameters()):
        torch.testing.assert_close(p, q, atol=1e-6, rtol=1e-5)
    assert m_whole["loss/policy"] == pytest.approx(m_split["loss/policy"], abs=1e-6)
    if name != "gspo":  # the same tokens were selected, however the rows were split
        assert m_whole["clip/frac_cov"] == pytest.approx(m_split["clip/frac_cov"], abs=1e-9)
        assert m_whole["clip/frac_cov"] > 0


def test_sequence_logprobs_do_not_depend_on_micro_batch_size():
    model, batch = _setup(3)
    a = sequence_logprobs(model, batch, micro_batch_size=1, temperature=0.8)
    b = sequence_logprobs(model, batch, micro_batch_size=100, temperature=0.8)
    torch.testing.assert_close(a * batch.mask, b * batch.mask, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("chunk_size", [1, 3, 1000])
def test_chunked_head_gives_the_same_old_logprobs_and_update(chunk_size):
    model, batch = _setup(11)
    plain = sequence_logprobs(model, batch, micro_batch_size=4, temperature=0.8)
    chunked = sequence_logprobs(model, batch, micro_batch_size=4, temperature=0.8,
                                chunk_size=chunk_size)
    torch.testing.assert_close(chunked, plain, atol=1e-6, rtol=1e-5)
    assert (chunked[batch.mask == 0] == 0).all()  # only loss tokens are computed
    whole, m_whole = _one_update(model, batch, 4, "token-mean")
    split, m_split = _one_update(model, batch, 4, "token-mean", chunk_size=chunk_size)
    for p, q in zip(whole.parameters(), split.parameters()):
        torch.testing.assert_close(p, q, atol=1e-6, rtol=1e-5)
    for key in ("loss/policy", "optim/grad_norm", "policy/entropy"):
        assert m_split[key] == pytest.approx(m_whole[key], rel=1e-5, abs=1e-7), key


def test_mean_metrics_sums_tokens_and_counts_updates():
    out = mean_metrics([{"loss/policy": 1.0, "compute/trained_tokens": 10.0},
                        {"loss/policy": 3.0, "compute/trained_tokens": 5.0}])
    assert out == {"loss/policy": 2.0, "compute/trained_tokens": 15.0, "optim/updates": 2.0}
    assert mean_metrics([]) == {}


def test_kl_term_is_added_when_asked():
    model, batch = _setup(5)
    batch.ref_logp = batch.old_logp - 0.1  # a reference that disagrees with the policy
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    settings_ = LossSettings(eps_low=0.2, eps_high=0.28, dual_clip=None,
                             aggregation="token-mean", kl_coef=0.5, temperature=1.0)
    metrics = update_on_mini_batch(model, optimizer, scheduler, batch, np.arange(len(batch)),
                                   settings=settings_, micro_batch_size=4, grad_clip=1.0)
    assert metrics["loss/kl"] > 0


@given(st.integers(1, 12), st.integers(1, 12), st.integers(2, 5), st.integers(0, 10**6))
def test_sequence_mini_batches_mix_groups_and_keep_each_groups_advantage(n, per, g, seed):
    rng = np.random.default_rng(seed)
    groups = [_group(rng, g=g) for _ in range(n)]
    adv = group_advantages(np.stack([x.rewards for x in groups]), eps=1e-6)  # (P, G)
    batch = pack_batch(groups, adv, pad_id=0, device="cpu")
    parts = mini_batches(batch.group, -(-n // per), np.random.default_rng(seed), by="sequence")
    assert len(parts) == -(-n // per)  # as many updates as whole-group mini-batches
    assert sorted(np.concatenate(parts).tolist()) == list(range(n * g))
    assert max(map(len, parts)) - min(map(len, parts)) <= 1
    position = np.tile(np.arange(g), n)  # row -> index within its group
    for rows in parts:
        expected = adv[batch.group[rows], position[rows]]
        np.testing.assert_allclose(batch.adv[rows].numpy(), expected, rtol=1e-6)
