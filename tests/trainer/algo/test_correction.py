"""The rollout correction modes: hand-worked weights, the bounds and invariances of each mode,
and that the step's loss takes them."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import log_ratio_batches
from verimath.trainer.algo.correction import ROLLOUT_CORRECTIONS, rollout_weights
from verimath.trainer.algo.loss import dapo_policy_loss
from verimath.trainer.config.choices import ROLLOUT_CORRECTION_NAMES

MODES = ("token-truncate", "token-mask", "sequence-truncate", "sequence-mask")


def test_every_registered_mode_is_a_config_choice():
    assert sorted(ROLLOUT_CORRECTIONS) == sorted(ROLLOUT_CORRECTION_NAMES)


def _weights(rho: list[list[float]], mask: list[list[bool]], mode: str, cap: float):
    old = torch.zeros(len(rho), len(rho[0]), dtype=torch.float64)
    behaviour = -torch.log(torch.tensor(rho, dtype=torch.float64))  # old - behaviour = log rho
    w, metrics = rollout_weights(old, behaviour, torch.tensor(mask), mode=mode, cap=cap)
    return w.tolist(), metrics


@pytest.mark.parametrize(("mode", "cap", "want", "bounded"), [
    # rho = 3, 0.5 on the loss tokens (product 1.5), padding last
    ("none", 2.0, [1.0, 1.0, 1.0], 0.0),
    ("token-truncate", 2.0, [2.0, 0.5, 1.0], 0.5),
    ("token-mask", 2.0, [0.0, 0.5, 1.0], 0.5),
    ("sequence-truncate", 2.0, [1.5, 1.5, 1.0], 0.0),
    ("sequence-mask", 2.0, [1.5, 1.5, 1.0], 0.0),
    ("sequence-truncate", 1.2, [1.2, 1.2, 1.0], 1.0),
    ("sequence-mask", 1.2, [0.0, 0.0, 1.0], 1.0),
    ("token-truncate", math.inf, [3.0, 0.5, 1.0], 0.0),  # the untruncated decoupled weight
])
def test_weights_by_hand(mode, cap, want, bounded):
    (w,), metrics = _weights([[3.0, 0.5, 7.0]], [[True, True, False]], mode, cap)
    assert w == pytest.approx(want, rel=1e-6)
    assert metrics["rollout/is_bounded_frac"] == bounded
    assert metrics["rollout/is_weight_mean"] == pytest.approx(sum(want[:2]) / 2, rel=1e-6)


@settings(max_examples=40, deadline=None)
@given(log_ratio_batches(), st.sampled_from(MODES), st.sampled_from([1.0, 1.5, 2.0, 3.0]))
def test_bounds_of_each_mode(case, mode, cap):
    old, behaviour, mask = case
    w, _ = rollout_weights(old, behaviour, mask, mode=mode, cap=cap)
    assert torch.isfinite(w).all() and (w[~mask] == 1).all()  # padding never matters
    live = w[mask]
    assert (live >= 0).all() and (live <= cap * (1 + 1e-6)).all()
    rho = torch.exp(torch.where(mask, old - behaviour, torch.zeros_like(old)))
    if mode.startswith("sequence"):
        rho = torch.exp(torch.log(rho).sum(dim=1, keepdim=True)).expand_as(rho)
        for i in range(w.shape[0]):  # one weight per response
            assert torch.allclose(w[i][mask[i]], w[i][mask[i]][:1].expand(int(mask[i].sum())))
    under = mask & (rho <= cap * (1 - 1e-5))  # float32 weights: away from the bound
    torch.testing.assert_close(w[under], rho[under].float(), rtol=1e-5, atol=1e-6)
    over = mask & (rho > cap * (1 + 1e-5))
    want = 0.0 if mode.endswith("mask") else float(cap)
    assert torch.allclose(w[over], torch.full_like(w[over], want))


@settings(max_examples=40, deadline=None)
@given(log_ratio_batches(), st.sampled_from(("none", *MODES)))
def test_no_mismatch_means_weight_one(case, mode):
    old, _, mask = case
    w, metrics = rollout_weights(old, old.clone(), mask, mode=mode, cap=2.0)
    assert (w == 1).all() and metrics["rollout/is_bounded_frac"] == 0.0


@settings(max_examples=40, deadline=None)
@given(log_ratio_batches(), st.sampled_from(MODES), st.data())
def test_token_order_within_a_response_does_not_matter(case, mode, data):
    old, behaviour, mask = case
    perm = torch.tensor(data.draw(st.permutations(range(old.shape[1]))))
    w, _ = rollout_weights(old, behaviour, mask, mode=mode, cap=2.0)
    w2, _ = rollout_weights(old[:, perm], behaviour[:, perm], mask[:, perm], mode=mode, cap=2.0)
    torch.testing.assert_close(w2, w[:, perm], rtol=1e-6, atol=1e-6)


def test_bad_modes_and_bounds_say_so():
    z, m = torch.zeros(1, 2), torch.ones(1, 2, dtype=torch.bool)
    with pytest.raises(ValueError, match="rollout correction must be one of"):
        rollout_weights(z, z, m, mode="token_truncate", cap=2.0)
    with pytest.raises(ValueError, match=">= 1"):
        rollout_weights(z, z, m, mode="token-mask", cap=0.5)
    with pytest.raises(ValueError, match="shape"):
        rollout_weights(z, torch.zeros(1, 3), m, mode="token-mask", cap=2.0)


def test_the_loss_multiplies_each_token_by_its_weight():
    # a masked token (weight 0) keeps its place in the token count: the loss halves
    logp = torch.zeros(1, 2, dtype=torch.float64, requires_grad=True)
    weights, _ = rollout_weights(torch.zeros(1, 2), torch.tensor([[-math.log(3.0), 0.0]]),
                                 torch.ones(1, 2, dtype=torch.bool), mode="token-mask", cap=2.0)
    loss, _ = dapo_policy_loss(logp, logp.detach(), torch.tensor([1.0], dtype=torch.float64),
                               torch.ones(1, 2), is_weights=weights)
    assert loss.item() == pytest.approx(-0.5)
    loss.backward()
    assert logp.grad.tolist() == [[0.0, -0.5]]
