"""The DAPO policy loss, overlong filtering, the KL term and the entropy."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from verimath.trainer.algo.loss import (
    aggregate_loss,
    dapo_policy_loss,
    k3_estimate,
    kl_penalty,
    overlong_filter_mask,
)
from verimath.trainer.core.logprobs import entropy_from_logits, logprobs_from_logits

F64 = torch.float64
AGGS = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm")
HORIZON = 9  # the constant of seq-mean-token-sum-norm (Dr. GRPO), >= any T drawn below


# Zero, or large enough that products with ratios and 1/N never underflow.
adv_values = st.one_of(st.just(0.0), st.floats(1e-3, 2.0), st.floats(-2.0, -1e-3))


@st.composite
def batches(draw, max_b=5, max_t=7, per_token_adv=None):
    """A float64 batch: logp, old_logp (ratios within about e^+-1.2), adv, mask."""
    b, t = draw(st.integers(1, max_b)), draw(st.integers(1, max_t))
    logp = draw(hnp.arrays(np.float64, (b, t), elements=st.floats(-6, -0.01)))
    delta = draw(hnp.arrays(np.float64, (b, t), elements=st.floats(-1.2, 1.2)))
    if per_token_adv is None:
        per_token_adv = draw(st.booleans())
    adv_shape = (b, t) if per_token_adv else (b,)
    adv = draw(hnp.arrays(np.float64, adv_shape, elements=adv_values))
    mask = draw(hnp.arrays(np.bool_, (b, t)))
    return {
        "logp": torch.tensor(logp, dtype=F64),
        "old_logp": torch.tensor(logp - delta, dtype=F64),
        "adv": torch.tensor(adv, dtype=F64),
        "mask": torch.tensor(mask),
    }


clip_options = st.fixed_dictionaries(
    {
        "eps_low": st.sampled_from([0.0, 0.1, 0.2]),
        "eps_high": st.sampled_from([0.2, 0.28, 0.5]),
        "dual_clip": st.sampled_from([None, 1.5, 3.0]),
    }
)


def loss_and_grad(batch, **kw):
    kw.setdefault("horizon", HORIZON)
    logp = batch["logp"].clone().requires_grad_(True)
    loss, metrics = dapo_policy_loss(logp, batch["old_logp"], batch["adv"], batch["mask"], **kw)
    (grad,) = torch.autograd.grad(loss, logp, allow_unused=True)
    return loss.detach(), torch.zeros_like(logp) if grad is None else grad, metrics


def reference_loss(batch, *, eps_low=0.2, eps_high=0.28, dual_clip=None, aggregation="token-mean",
                   policy_loss="clip"):
    """Plain Python loops over floats: the formulas of the module docstring."""
    logp, old = batch["logp"].tolist(), batch["old_logp"].tolist()
    adv, mask = batch["adv"].tolist(), batch["mask"].tolist()
    row_sums, row_counts = [], []
    for i in range(len(logp)):
        s, n = 0.0, 0
        for t in range(len(logp[i])):
            if not mask[i][t]:
                continue
            a = adv[i][t] if isinstance(adv[i], list) else adv[i]
            r = math.exp(logp[i][t] - old[i][t])
            clipped_r = min(max(r, 1 - eps_low), 1 + eps_high)
            term = -min(r * a, clipped_r * a) if policy_loss == "clip" else -a * clipped_r
            if dual_clip is not None and a < 0:
                term = min(term, -dual_clip * a)
            s, n = s + term, n + 1
        row_sums.append(s)
        row_counts.append(n)
    if aggregation == "token-mean":
        return sum(row_sums) / max(sum(row_counts), 1)
    if aggregation == "seq-mean-token-sum-norm":
        return sum(row_sums) / (max(sum(n > 0 for n in row_counts), 1) * HORIZON)
    means = [s / n for s, n in zip(row_sums, row_counts) if n > 0]
    return sum(means) / max(len(means), 1)


# --- hand-worked examples -------------------------------------------------------------


def test_hand_worked_clip_low_and_unclipped():
    # log-ratio -0.3 everywhere: r = e^-0.3 = 0.7408 < 0.8 = 1 - eps_low.
    # Row 0 (A = +1): min(r, 0.8) = r is the pessimistic term -> loss -r, not clipped.
    # Row 1 (A = -1): min(-r, -0.8) = -0.8 -> loss 0.8, clipped (zero gradient).
    logp = torch.zeros(2, 3, dtype=F64, requires_grad=True)
    loss, m = dapo_policy_loss(
        logp, logp.detach() + 0.3, torch.tensor([1.0, -1.0], dtype=F64), torch.ones(2, 3)
    )
    r = math.exp(-0.3)
    assert loss.item() == pytest.approx((3 * -r + 3 * 0.8) / 6, rel=1e-12)
    assert m["clip/frac_low"] == 0.5 and m["clip/frac_high"] == 0.0
    assert m["policy/ratio_mean"] == pytest.approx(r, rel=1e-12)
    assert m["policy/approx_kl"] == pytest.approx((r - 1) + 0.3, rel=1e-9)
    loss.backward()
    np.testing.assert_allclose(logp.grad[0].numpy(), [-r / 6] * 3, rtol=1e-12)
    np.testing.assert_array_equal(logp.grad[1].numpy(), [0.0, 0.0, 0.0])


def test_hand_worked_clip_high_and_dual_clip():
    # r = e^1 = 2.718: A = +2 is clipped at 1.28 (loss -2.56); A = -1 with dual clip c = 2
    # gives min(max(2.718, 1.28), 2) = 2 (loss 2, dual clip active).
    logp = torch.ones(2, 1, dtype=F64)
    old = torch.zeros(2, 1, dtype=F64)
    loss, m = dapo_policy_loss(
        logp, old, torch.tensor([2.0, -1.0], dtype=F64), torch.ones(2, 1), dual_clip=2.0
    )
    assert loss.item() == pytest.approx((-2.0 * 1.28 + 2.0) / 2, rel=1e-12)
    assert (m["clip/frac_high"], m["clip/frac_dual"], m["clip/frac_low"]) == (0.5, 0.5, 0.0)


def test_hand_worked_rare_tokens_at_the_upper_clip():
    # Four tokens, all A = +1 and ratio e^0.5 = 1.65 > 1.28 (every one at the upper clip);
    # sampled with probabilities 0.05, 0.15, 0.3, 0.9: two below 0.2, so 2 of 4 are rare.
    old = torch.log(torch.tensor([[0.05, 0.15, 0.3, 0.9]], dtype=F64))
    logp = old + 0.5
    _, m = dapo_policy_loss(logp, old, torch.tensor([1.0], dtype=F64), torch.ones(1, 4))
    assert m["clip/frac_high"] == 1.0 and m["clip/frac_high_rare"] == 0.5
    # a masked rare token does not count, and the fraction is over the unmasked tokens
    _, m = dapo_policy_loss(logp, old, torch.tensor([1.0], dtype=F64),
                            torch.tensor([[0.0, 1.0, 1.0, 1.0]]))
    assert m["clip/frac_high_rare"] == pytest.approx(1 / 3)


@settings(max_examples=50, deadline=None)
@given(hnp.arrays(np.float64, (2, 5), elements=st.floats(-4, 0)),
       hnp.arrays(np.float64, (2, 5), elements=st.floats(-1, 1)),
       st.floats(-2, 2).filter(lambda a: abs(a) > 1e-3))
def test_rare_upper_clip_is_a_part_of_the_upper_clip(old, shift, adv):
    old_t = torch.tensor(old)
    _, m = dapo_policy_loss(old_t + torch.tensor(shift), old_t,
                            torch.tensor([adv, -adv], dtype=F64), torch.ones(2, 5))
    assert 0.0 <= m["clip/frac_high_rare"] <= m["clip/frac_high"] <= 1.0


def test_token_level_weighs_long_responses_more():
    # lengths 1 and 3, advantages +1 and -1, logp == old_logp:
    # token-mean = -(1 - 3) / 4 = 0.5 ; seq-mean-token-mean = -(1 + -1) / 2 = 0
    mask = torch.tensor([[1, 0, 0], [1, 1, 1]], dtype=torch.bool)
    logp = torch.zeros(2, 3, dtype=F64)
    adv = torch.tensor([1.0, -1.0], dtype=F64)
    tok, _ = dapo_policy_loss(logp, logp, adv, mask)
    seq, _ = dapo_policy_loss(logp, logp, adv, mask, aggregation="seq-mean-token-mean")
    assert tok.item() == pytest.approx(0.5) and seq.item() == pytest.approx(0.0)


def test_dr_grpo_divides_token_sums_by_a_constant_horizon():
    # lengths 1 and 3, A = +1 and -1, on-policy: token sums -1 and +3 over S * H = 2 * 10
    mask = torch.tensor([[1, 0, 0], [1, 1, 1]], dtype=torch.bool)
    logp = torch.zeros(2, 3, dtype=F64)
    adv = torch.tensor([1.0, -1.0], dtype=F64)
    loss, _ = dapo_policy_loss(logp, logp, adv, mask, aggregation="seq-mean-token-sum-norm",
                               horizon=10)
    assert loss.item() == pytest.approx((-1 + 3) / 20)
    with pytest.raises(ValueError, match="horizon"):
        dapo_policy_loss(logp, logp, adv, mask, aggregation="seq-mean-token-sum-norm")


def test_cispo_by_hand_keeps_the_gradient_of_clipped_tokens():
    # r = e^1 = 2.718 > 1.28 with A = +2: clip's gradient is 0, CISPO's is -A * w = -2 * 1.28
    logp = torch.ones(1, 1, dtype=F64, requires_grad=True)
    loss, m = dapo_policy_loss(logp, torch.zeros(1, 1, dtype=F64), torch.tensor([2.0], dtype=F64),
                               torch.ones(1, 1), policy_loss="cispo")
    assert loss.item() == pytest.approx(-2.0 * 1.28) and m["clip/frac_high"] == 1.0
    loss.backward()
    assert logp.grad.item() == pytest.approx(-2.0 * 1.28)
    with pytest.raises(ValueError, match="policy_loss"):
        dapo_policy_loss(logp, logp, torch.ones(1), torch.ones(1, 1), policy_loss="ppo2")


@settings(deadline=None)
@given(batches(), clip_options, st.sampled_from(AGGS))
def test_cispo_matches_plain_loop_and_every_live_token_has_a_gradient(batch, clip, aggregation):
    clip = {**clip, "dual_clip": None}
    loss, grad, _ = loss_and_grad(batch, aggregation=aggregation, policy_loss="cispo", **clip)
    expected = reference_loss(batch, aggregation=aggregation, policy_loss="cispo", **clip)
    assert loss.item() == pytest.approx(expected, rel=1e-10, abs=1e-12)
    adv = batch["adv"] if batch["adv"].dim() == 2 else batch["adv"][:, None].expand_as(grad)
    live = batch["mask"] & (adv != 0)
    assert (grad[live] != 0).all() and (grad[~batch["mask"]] == 0).all()


def test_a_registered_aggregation_is_used_by_name():
    from verimath.trainer.algo.aggregation import AGGREGATIONS, register_aggregation

    @register_aggregation("test-sum")
    def _sum(masked, m, **_):
        return masked.sum()

    try:
        logp = torch.zeros(1, 2, dtype=F64)
        loss, _ = dapo_policy_loss(logp, logp, torch.tensor([1.0], dtype=F64),
                                   torch.ones(1, 2), aggregation="test-sum")
        assert loss.item() == -2.0
    finally:
        del AGGREGATIONS["test-sum"]


def test_empty_mask_gives_zero_loss_and_zero_grad():
    logp = torch.randn(2, 3, dtype=F64, requires_grad=True)
    loss, m = dapo_policy_loss(logp, logp.detach(), torch.ones(2, dtype=F64), torch.zeros(2, 3))
    loss.backward()
    assert loss.item() == 0.0 and (logp.grad == 0).all()
    assert m["policy/tokens"] == 0.0 and math.isnan(m["policy/ratio_mean"])


def test_bf16_inputs_compute_in_float32():
    logp = torch.randn(2, 4).to(torch.bfloat16).requires_grad_(True)
    loss, _ = dapo_policy_loss(logp, logp.detach(), torch.ones(2), torch.ones(2, 4))
    loss.backward()
    assert loss.dtype == torch.float32 and logp.grad.dtype == torch.bfloat16


# --- validation -----------------------------------------------------------------------


def test_errors_name_the_problem():
    z = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="old_logp"):
        dapo_policy_loss(z, torch.zeros(2, 4), torch.zeros(2), z)
    with pytest.raises(ValueError, match="adv"):
        dapo_policy_loss(z, z, torch.zeros(3), z)
    with pytest.raises(ValueError, match="mask"):
        dapo_policy_loss(z, z, torch.zeros(2), torch.ones(3))
    with pytest.raises(ValueError, match="dual_clip"):
        dapo_policy_loss(z, z, torch.zeros(2), z, dual_clip=0.9)
    with pytest.raises(ValueError, match="eps_low"):
        dapo_policy_loss(z, z, torch.zeros(2), z, eps_low=1.0)
    with pytest.raises(ValueError, match="aggregation"):
        dapo_policy_loss(z, z, torch.zeros(2), z, aggregation="mean")
    with pytest.raises(ValueError, match="whole optimizer step"):
        dapo_policy_loss(z, z, torch.zeros(2), torch.ones(2, 3), num_tokens=5)
    with pytest.raises(ValueError, match="num_sequences"):
        dapo_policy_loss(
            z,
            z,
            torch.zeros(2),
            torch.ones(2, 3),
            aggregation="seq-mean-token-mean",
            num_sequences=1,
        )


# --- properties -----------------------------------------------------------------------


@settings(deadline=None)
@given(batches(), clip_options, st.sampled_from(AGGS))
def test_matches_plain_loop_reference(batch, clip, aggregation):
    loss, _, _ = loss_and_grad(batch, aggregation=aggregation, **clip)
    expected = reference_loss(batch, aggregation=aggregation, **clip)
    assert loss.item() == pytest.approx(expected, rel=1e-10, abs=1e-12)


@settings(deadline=None)
@given(batches(), clip_options)
def test_on_policy_loss_is_minus_token_mean_advantage(batch, clip):
    batch["old_logp"] = batch["logp"].clone()
    loss, _, m = loss_and_grad(batch, **clip)
    mask = batch["mask"].to(F64)
    adv = batch["adv"] if batch["adv"].dim() == 2 else batch["adv"][:, None].expand_as(mask)
    expected = -(adv * mask).sum() / mask.sum().clamp(min=1)
    assert loss.item() == pytest.approx(expected.item(), rel=1e-12, abs=1e-12)
    assert m["clip/frac_low"] == m["clip/frac_high"] == m["clip/frac_dual"] == 0.0


@settings(deadline=None)
@given(batches(), clip_options)
def test_gradient_is_zero_exactly_where_a_clip_is_active(batch, clip):
    _, grad, _ = loss_and_grad(batch, **clip)
    logp, old, mask = batch["logp"], batch["old_logp"], batch["mask"]
    adv = batch["adv"] if batch["adv"].dim() == 2 else batch["adv"][:, None].expand_as(logp)
    r = torch.exp(logp - old)
    active = ((adv > 0) & (r > 1 + clip["eps_high"])) | ((adv < 0) & (r < 1 - clip["eps_low"]))
    if clip["dual_clip"] is not None:
        active |= (adv < 0) & (r > clip["dual_clip"])
    assert (grad[active | ~mask] == 0).all()
    live = mask & ~active & (adv != 0)
    assert (grad[live] != 0).all()
    # d loss / d logp = -A r / N on live tokens (token-mean)
    n = mask.sum().clamp(min=1)
    torch.testing.assert_close(grad[live], (-adv * r / n)[live], rtol=1e-10, atol=1e-14)


@settings(deadline=None)
@given(batches(), clip_options, st.sampled_from(AGGS), st.integers(1, 3), st.integers(0, 2))
def test_padding_tokens_and_rows_change_nothing(batch, clip, aggregation, pad_t, pad_b):
    loss, grad, _ = loss_and_grad(batch, aggregation=aggregation, **clip)
    b, t = batch["logp"].shape
    garbage = torch.tensor([float("nan"), float("inf"), -float("inf"), 3.0], dtype=F64)

    def pad(x, fill_values):
        fill = fill_values.repeat((b + pad_b) * (t + pad_t))[: (b + pad_b) * (t + pad_t)]
        out = fill.reshape(b + pad_b, t + pad_t).to(x.dtype).clone()
        out[:b, :t] = x
        return out

    padded = {
        "logp": pad(batch["logp"], garbage),
        "old_logp": pad(batch["old_logp"], garbage.flip(0)),
        "mask": pad(batch["mask"], torch.tensor([0.0])).bool(),
    }
    if batch["adv"].dim() == 2:
        padded["adv"] = pad(batch["adv"], garbage)
    else:
        padded["adv"] = torch.cat([batch["adv"], torch.full((pad_b,), 7.0, dtype=F64)])
    loss2, grad2, _ = loss_and_grad(padded, aggregation=aggregation, **clip)
    assert loss2.item() == pytest.approx(loss.item(), rel=1e-12, abs=1e-15)
    torch.testing.assert_close(grad2[:b, :t], grad, rtol=1e-12, atol=1e-15)
    assert torch.isfinite(grad2).all() and (grad2[b:] == 0).all() and (grad2[:, t:] == 0).all()


def _split(batch, cuts):
    bounds = [0, *cuts, batch["logp"].shape[0]]
    return [{k: v[lo:hi] for k, v in batch.items()} for lo, hi in zip(bounds, bounds[1:])]


@settings(max_examples=60, deadline=None)
@given(batches(max_b=8), clip_options, st.sampled_from(AGGS), st.data())
def test_micro_batches_with_global_counts_equal_the_full_batch(batch, clip, aggregation, data):
    b = batch["logp"].shape[0]
    cuts = sorted(data.draw(st.sets(st.integers(1, max(b - 1, 1)), max_size=3))) if b > 1 else []
    loss, grad, _ = loss_and_grad(batch, aggregation=aggregation, **clip)
    mask = batch["mask"]
    counts = {"num_tokens": int(mask.sum()), "num_sequences": int(mask.any(dim=1).sum())}
    total, grads = 0.0, []
    for micro in _split(batch, cuts):
        part_loss, part_grad, _ = loss_and_grad(micro, aggregation=aggregation, **clip, **counts)
        total += part_loss.item()
        grads.append(part_grad)
    assert total == pytest.approx(loss.item(), rel=1e-10, abs=1e-13)
    torch.testing.assert_close(torch.cat(grads), grad, rtol=1e-10, atol=1e-14)


@settings(deadline=None)
@given(batches(), st.sampled_from(AGGS))
def test_default_clip_is_clip_higher(batch, aggregation):
    """eps_high only matters for A > 0 and r > 1.2: the defaults differ from symmetric 0.2."""
    dapo, _, _ = loss_and_grad(batch, aggregation=aggregation)
    sym, _, _ = loss_and_grad(batch, aggregation=aggregation, eps_high=0.2)
    assert dapo.item() <= sym.item() + 1e-12  # a looser upper clip can only lower the loss


@settings(deadline=None)
@given(st.integers(1, 4), st.integers(1, 5), st.data())
def test_overlong_filter_zeroes_truncated_rows(b, t, data):
    mask = torch.tensor(data.draw(hnp.arrays(np.bool_, (b, t))))
    truncated = torch.tensor(data.draw(hnp.arrays(np.bool_, (b,))))
    for m in (mask, mask.to(torch.float32)):
        out = overlong_filter_mask(m, truncated)
        assert out.dtype == m.dtype
        assert (out[truncated] == 0).all()
        assert (out[~truncated] == m[~truncated]).all()
        assert overlong_filter_mask(m, truncated, enabled=False) is m
    with pytest.raises(ValueError, match="truncated"):
        overlong_filter_mask(mask, torch.zeros(b + 1, dtype=torch.bool))


def test_kl_penalty_by_hand():
    # d = ref - logp = ln 2 -> k3 = 2 - ln 2 - 1; zero where the policies agree
    logp = torch.tensor([[0.0, -1.0]], dtype=F64, requires_grad=True)
    ref = torch.tensor([[math.log(2.0), -1.0]], dtype=F64)
    kl = kl_penalty(logp, ref, torch.ones(1, 2))
    assert kl.item() == pytest.approx((1 - math.log(2.0)) / 2, rel=1e-12)
    kl.backward()  # d k3 / d logp = 1 - exp(d)
    np.testing.assert_allclose(logp.grad.numpy(), [[(1 - 2.0) / 2, 0.0]], rtol=1e-12)


@settings(deadline=None)
@given(batches(), st.sampled_from(AGGS))
def test_kl_penalty_is_non_negative_and_zero_on_reference(batch, aggregation):
    kw = {"aggregation": aggregation, "horizon": HORIZON}
    assert kl_penalty(batch["logp"], batch["old_logp"], batch["mask"], **kw).item() >= 0
    assert kl_penalty(batch["logp"], batch["logp"], batch["mask"], **kw).item() == 0


def reference_entropy(logits):
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
    return -(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)).sum(axis=-1)


@settings(deadline=None)
@given(
    hnp.arrays(
        np.float64,
        st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 9)),
        elements=st.floats(-30, 30),
    ),
    st.floats(-1e4, 1e4),
)
def test_entropy_matches_reference_and_ignores_shifts(logits, shift):
    h = entropy_from_logits(torch.tensor(logits))
    np.testing.assert_allclose(h.numpy(), reference_entropy(logits), rtol=1e-9, atol=1e-10)
    assert (h >= -1e-12).all() and (h <= math.log(logits.shape[-1]) + 1e-9).all()
    torch.testing.assert_close(
        entropy_from_logits(torch.tensor(logits + shift)), h, rtol=1e-6, atol=1e-6
    )


def test_entropy_extremes():
    assert entropy_from_logits(torch.zeros(1, 1, 50)).item() == pytest.approx(math.log(50))
    peaked = torch.tensor([[[1e4, 0.0, -float("inf")]]])
    h = entropy_from_logits(peaked)
    assert torch.isfinite(h).all() and h.item() == pytest.approx(0.0, abs=1e-6)
    half = torch.tensor([[[0.0, 0.0, -float("inf")]]])
    assert entropy_from_logits(half).item() == pytest.approx(math.log(2))


@settings(deadline=None)
@given(batches(), st.sampled_from(AGGS))
def test_aggregate_ignores_garbage_under_the_mask(batch, aggregation):
    values = (batch["logp"] - batch["old_logp"]).requires_grad_(True)
    garbage = values.detach().masked_fill(~batch["mask"], float("nan"))
    garbage = garbage.masked_fill(~batch["mask"] & (batch["logp"] < -3), float("inf"))
    clean = aggregate_loss(values, batch["mask"], aggregation=aggregation, horizon=HORIZON)
    dirty_in = garbage.clone().requires_grad_(True)
    dirty = aggregate_loss(dirty_in, batch["mask"], aggregation=aggregation, horizon=HORIZON)
    assert dirty.item() == pytest.approx(clean.item(), rel=1e-12, abs=1e-15)
    dirty.backward()
    assert torch.isfinite(dirty_in.grad).all() and (dirty_in.grad[~batch["mask"]] == 0).all()


def test_entropy_chunks_agree_with_one_pass():
    logits = torch.randn(3, 5, 11, dtype=F64) * 4
    whole = entropy_from_logits(logits)
    for chunk in (1, 4, 15, 100):
        torch.testing.assert_close(entropy_from_logits(logits, chunk_size=chunk), whole)
    with pytest.raises(ValueError, match="chunk_size"):
        entropy_from_logits(logits, chunk_size=0)


@settings(deadline=None)
@given(
    hnp.arrays(
        np.float64,
        st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 9)),
        elements=st.floats(-50, 50),
    ),
    st.data(),
)
def test_logprobs_from_logits_match_log_softmax(logits, data):
    v = logits.shape[-1]
    tokens = data.draw(hnp.arrays(np.int64, logits.shape[:-1], elements=st.integers(0, v - 1)))
    z, ids = torch.tensor(logits), torch.tensor(tokens)
    expected = torch.log_softmax(z, dim=-1).gather(-1, ids[..., None])[..., 0]
    torch.testing.assert_close(logprobs_from_logits(z, ids), expected, rtol=1e-12, atol=1e-12)
    assert (logprobs_from_logits(z, ids) <= 1e-12).all()


def test_logprobs_from_logits_shape_error_and_bf16():
    with pytest.raises(ValueError, match="disagree"):
        logprobs_from_logits(torch.zeros(2, 3, 5), torch.zeros(2, 4, dtype=torch.long))
    z = torch.randn(2, 3, 7).to(torch.bfloat16)
    ids = torch.randint(0, 7, (2, 3))
    out = logprobs_from_logits(z, ids)
    assert out.dtype == torch.float32
    torch.testing.assert_close(
        out, torch.log_softmax(z.float(), -1).gather(-1, ids[..., None])[..., 0]
    )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_bf16_matches_cpu_float64():
    torch.manual_seed(0)
    logp = -torch.rand(6, 40, dtype=F64) * 3
    batch = {
        "logp": logp,
        "old_logp": logp + (torch.rand(6, 40, dtype=F64) - 0.5) * 0.6,
        "adv": torch.randn(6, dtype=F64),
        "mask": torch.rand(6, 40) > 0.3,
    }
    cpu_loss, cpu_grad, cpu_m = loss_and_grad(batch, dual_clip=3.0)
    on_gpu = {k: v.cuda() for k, v in batch.items()}
    on_gpu["logp"] = on_gpu["logp"].to(torch.bfloat16)
    on_gpu["old_logp"] = on_gpu["old_logp"].to(torch.bfloat16)
    gpu_loss, gpu_grad, gpu_m = loss_and_grad(on_gpu, dual_clip=3.0)
    assert gpu_loss.device.type == "cuda" and gpu_loss.dtype == torch.float32
    assert gpu_loss.item() == pytest.approx(cpu_loss.item(), abs=0.05)
    assert gpu_m["policy/tokens"] == cpu_m["policy/tokens"]
    assert (gpu_grad.cpu() == 0).eq(cpu_grad == 0).float().mean() > 0.9
    h = entropy_from_logits(torch.randn(2, 3, 50, device="cuda", dtype=torch.bfloat16))
    assert h.device.type == "cuda" and torch.isfinite(h).all()


def test_entropy_gradient_is_finite_with_banned_tokens():
    logits = torch.tensor([[[2.0, 0.5, -float("inf"), 1.0]]], dtype=F64, requires_grad=True)
    h = entropy_from_logits(logits)
    h.sum().backward()
    assert torch.isfinite(logits.grad).all() and logits.grad[0, 0, 2] == 0
    with torch.no_grad():
        torch.testing.assert_close(entropy_from_logits(logits), h.detach())
    # dH/dz_v = -p_v (log p_v + H) against finite differences
    z = torch.tensor([[0.3, -1.2, 2.0]], dtype=F64, requires_grad=True)
    entropy_from_logits(z).sum().backward()
    p = torch.softmax(z.detach(), -1)
    expected = -p * (torch.log(p) + entropy_from_logits(z.detach()))
    torch.testing.assert_close(z.grad, expected, rtol=1e-10, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6).flatmap(lambda n: st.tuples(
    hnp.arrays(np.float64, n, elements=st.floats(0.05, 1.0)),
    hnp.arrays(np.float64, n, elements=st.floats(0.05, 1.0)))))
def test_k3_averaged_under_p_is_the_exact_kl(weights):
    """E_p[k3(log q - log p)] = E_p[q/p] - 1 - E_p[log q/p] = KL(p || q) on any finite support;
    each term is >= 0 and zero where q = p."""
    p, q = (w / w.sum() for w in weights)
    d = torch.from_numpy(np.log(q) - np.log(p))
    k3 = k3_estimate(d)
    assert (k3 >= 0).all() and (k3[d == 0] == 0).all()
    assert float((torch.from_numpy(p) * k3).sum()) == pytest.approx(
        float(np.sum(p * np.log(p / q))), abs=1e-12)
