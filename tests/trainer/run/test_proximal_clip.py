"""``algo.proximal_clip``, the decoupled objective: the ratio of a group sampled by an older
policy is taken against the policy at the start of the step, and each token is weighted by
``pi_step_start / pi_sampler`` through the rollout correction (truncated at
``algo.rollout_is_cap``). On-policy groups train exactly as without it. Which policy the ratio
and the weights use, per setting and mode (asynchronous runs default to it)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.trainer.algo.batch import pack_batch, use_proximal_policy
from verimath.trainer.algo.correction import rollout_weights
from verimath.trainer.algo.loss import dapo_policy_loss
from verimath.trainer.config import AlgoConfig
from verimath.trainer.core.groups import Group


def _groups(rng, n: int, g: int, stored: list[bool], engine: bool) -> list[Group]:
    out = []
    for i in range(n):
        responses = [list(rng.integers(3, 90, size=rng.integers(1, 5))) for _ in range(g)]
        group = Group(f"p{i}", [5, 6], responses, np.zeros(g), np.arange(g) == 0,
                      np.zeros(g, dtype=bool))
        if engine:
            group.logprobs = [-rng.random(len(r)) for r in responses]
        if stored[i]:
            group.old_logprobs = [-rng.random(len(r)) - 1.0 for r in responses]
        out.append(group)
    return out


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), stored=st.lists(st.booleans(), min_size=1, max_size=4),
       engine=st.booleans(), cap=st.sampled_from([0.0, 1.0, 2.0]))
def test_each_token_is_weighted_by_the_step_start_over_its_sampler(seed, stored, engine, cap):
    rng = np.random.default_rng(seed)
    groups = _groups(rng, len(stored), 3, stored, engine)
    batch = pack_batch(groups, np.zeros((len(groups), 3)), pad_id=0, device="cpu")
    proximal = -torch.rand(batch.mask.shape, dtype=torch.float32)  # (N, S-1)
    use_proximal_policy(batch, groups, proximal)
    assert batch.old_logp is proximal  # the ratio's reference: the policy at the step start
    m = batch.response_mask.bool()
    for i, g in enumerate(groups):
        rows = np.flatnonzero(batch.group == i)
        sampler = g.old_logprobs if g.old_logprobs is not None else g.logprobs
        for j, r in enumerate(rows):
            want = proximal[r][m[r]] if sampler is None else torch.tensor(sampler[j])
            torch.testing.assert_close(batch.behaviour_logp[r][m[r]], want.float())
    mode, cap = AlgoConfig(proximal_clip=True, rollout_is_cap=cap).correction(0)
    assert mode == "token-truncate" and cap == (cap or math.inf)  # untruncated when unset
    w, _ = rollout_weights(batch.old_logp, batch.behaviour_logp, batch.mask, mode=mode, cap=cap)
    expected = torch.exp(proximal - batch.behaviour_logp).clamp(max=cap)
    torch.testing.assert_close(w[m], expected[m])
    assert (w[m] <= cap + 1e-6).all() and (w[m] > 0).all()
    fresh = torch.from_numpy(~np.isin(batch.group, np.flatnonzero(stored)))
    if not engine:  # on-policy rows: weight exactly 1, so the loss is the plain one
        assert torch.equal(w[m & fresh[:, None]], torch.ones(int((m & fresh[:, None]).sum())))


def test_a_stale_token_by_hand():
    # sampled at log-prob -1.5; the policy at the step start gives -1.0, the updated one -0.9
    logp, proximal, sampler = (torch.tensor([[x]]) for x in (-0.9, -1.0, -1.5))
    adv, mask = torch.tensor([1.0]), torch.ones(1, 1)
    plain, _ = dapo_policy_loss(logp.requires_grad_(), sampler, adv, mask)
    # against the sampler: r = e^0.6 = 1.822 > 1.28, clipped: -1.28 and no gradient
    assert plain.item() == pytest.approx(-1.28)
    weight = torch.exp(proximal - sampler)  # e^0.5
    decoupled, _ = dapo_policy_loss(logp, proximal, adv, mask, is_weights=weight)
    # against the step start: r = e^0.1 = 1.105, inside the range: -e^0.5 * e^0.1 = -e^0.6
    assert decoupled.item() == pytest.approx(-math.exp(0.6), rel=1e-6)
    decoupled.backward()
    assert logp.grad.item() == pytest.approx(-math.exp(0.6), rel=1e-6)  # d(-w r)/d logp


@pytest.mark.parametrize(("settings", "async_steps", "want"), [
    ({}, 0, (False, "none")),  # synchronous: as before
    ({}, 1, (True, "token-truncate", 2.0)),  # asynchronous: the measured default
    ({"proximal_clip": False}, 1, (False, "none")),  # the sampler, as before the default
    ({"proximal_clip": True}, 0, (True, "token-truncate", math.inf)),  # decoupled, untruncated
    ({"rollout_is_cap": 3.0}, 0, (False, "token-truncate", 3.0)),  # an old engine config
    ({"rollout_correction": "sequence-mask"}, 1, (True, "sequence-mask", 2.0)),
    ({"rollout_correction": "token-mask", "rollout_is_cap": 4.0, "proximal_clip": False}, 2,
     (False, "token-mask", 4.0)),
    ({"rollout_correction": "none"}, 1, (True, "none")),  # recompute only: no weight
])
def test_which_policy_and_weights_each_setting_gives(settings, async_steps, want):
    algo = AlgoConfig(**settings)
    mode, cap = algo.correction(async_steps)
    assert algo.uses_proximal(async_steps) == want[0] and mode == want[1]
    if len(want) == 3:
        assert cap == want[2]


def test_a_bad_correction_names_the_setting():
    with pytest.raises(ValueError, match="algo.rollout_correction.*token-truncate"):
        AlgoConfig(rollout_correction="token_truncate")


@pytest.mark.parametrize("mode", ["token-truncate", "sequence-mask"])
def test_on_a_steps_first_update_the_proximal_per_update_is_the_one_per_step(mode):
    """``algo.proximal_policy=update`` reads the proximal log-probs off the update's own
    forward pass: before any update of the step they are the step start's, so the first update
    equals the decoupled one computed with the extra forward pass."""
    import copy

    from verimath.trainer.algo.batch import sequence_logprobs
    from verimath.trainer.algo.correction import rollout_weights
    from verimath.trainer.algo.update import LossSettings, update_on_mini_batch
    from verimath.trainer.model.tiny import make_char_tokenizer, make_tiny_model

    rng = np.random.default_rng(0)
    groups = _groups(rng, 3, 4, [True, True, True], engine=False)
    for g in groups:
        g.rewards = rng.normal(size=4)
    model = make_tiny_model(make_char_tokenizer(), hidden_size=16, num_layers=1, num_heads=2,
                            seed=0)
    adv = np.stack([(g.rewards - g.rewards.mean()) / g.rewards.std() for g in groups])
    batch = pack_batch(groups, adv, pad_id=0, device="cpu")
    start = sequence_logprobs(model, batch, micro_batch_size=4, temperature=1.0)
    use_proximal_policy(batch, groups, start)  # behaviour_logp: the samplers'
    sampler = batch.behaviour_logp.clone()
    results = []
    for per_update in (False, True):
        b = copy.copy(batch)
        if per_update:
            b.old_logp, b.is_weights = sampler, None
        else:
            b.old_logp, b.is_weights = start, rollout_weights(start, sampler, b.mask, mode=mode,
                                                              cap=1.5)[0]
        m = copy.deepcopy(model)
        opt = torch.optim.SGD(m.parameters(), lr=0.5)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
        settings_ = LossSettings(eps_low=0.2, eps_high=0.28, dual_clip=None,
                                 aggregation="token-mean", kl_coef=0.0, temperature=1.0,
                                 per_update_correction=(mode, 1.5) if per_update else None)
        metrics = update_on_mini_batch(m, opt, sched, b, np.arange(len(b)), settings=settings_,
                                       micro_batch_size=5, grad_clip=0.0)
        results.append((m, metrics))
    (a, ma), (b_, mb) = results
    for p, q in zip(a.parameters(), b_.parameters()):
        torch.testing.assert_close(p, q, atol=1e-6, rtol=1e-5)
    assert ma["loss/policy"] == pytest.approx(mb["loss/policy"], abs=1e-6)
    assert 0 < mb["rollout/is_weight_mean"] and mb["clip/frac_low"] == mb["clip/frac_high"] == 0


def test_the_proximal_policy_setting_is_checked():
    with pytest.raises(ValueError, match="algo.proximal_policy"):
        AlgoConfig(proximal_policy="epoch")
