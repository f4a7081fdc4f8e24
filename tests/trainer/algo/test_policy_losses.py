"""GSPO, Clip-Cov and KL-Cov: hand-worked values, the formulas as plain references, and the
properties each paper states (the reduction to the clipped surrogate, one clip decision per
response, the covariance selection, exactness under micro-batching)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from strategies import loss_batches
from verimath.trainer.algo.loss import (
    POLICY_LOSSES,
    SELECTING,
    covariance_selection,
    dapo_policy_loss,
)
from verimath.trainer.config import AlgoConfig
from verimath.trainer.config.choices import POLICY_LOSS_NAMES

F64 = torch.float64
AGGS = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm")
HORIZON = 9


def loss_and_grad(batch, **kw):
    kw.setdefault("horizon", HORIZON)
    logp = batch["logp"].clone().requires_grad_(True)
    loss, metrics = dapo_policy_loss(logp, batch["old_logp"], batch["adv"], batch["mask"], **kw)
    (grad,) = torch.autograd.grad(loss, logp, allow_unused=True)
    return loss.detach(), torch.zeros_like(logp) if grad is None else grad, metrics


def test_every_registered_loss_is_a_config_choice():
    assert sorted(POLICY_LOSSES) == sorted(POLICY_LOSS_NAMES)
    assert SELECTING == {"clip-cov": "random", "kl-cov": "top"}
    for name in POLICY_LOSSES:
        assert AlgoConfig(policy_loss=name).policy_loss == name


# --- GSPO ---------------------------------------------------------------------------------


def test_gspo_by_hand():
    # row 0: log-ratios 0.2, 0.4 -> s = e^0.3 = 1.350 > 1.28 with A = +1: clipped, -1.28 per
    # token, no gradient. Row 1: log-ratios -0.1, 0.1, 0.3 -> s = e^0.1 = 1.105 with A = -1:
    # inside the range, +1.105 per token. Token mean over 5 tokens.
    old = torch.zeros(2, 3, dtype=F64)
    batch = {"logp": torch.tensor([[0.2, 0.4, 9.0], [-0.1, 0.1, 0.3]], dtype=F64),
             "old_logp": old, "adv": torch.tensor([1.0, -1.0], dtype=F64),
             "mask": torch.tensor([[1, 1, 0], [1, 1, 1]], dtype=torch.bool)}
    s = math.exp(0.1)
    loss, grad, m = loss_and_grad(batch, policy_loss="gspo")
    assert loss.item() == pytest.approx((2 * -1.28 + 3 * s) / 5, rel=1e-12)
    np.testing.assert_allclose(grad.numpy(), [[0, 0, 0], [s / 5] * 3], rtol=1e-12)
    assert m["clip/frac_high"] == pytest.approx(2 / 5) and m["clip/frac_low"] == 0.0
    # the paper's sequence mean: (-1.28 + s) / 2, gradient -A s / (2 * 3) per token of row 1
    loss, grad, _ = loss_and_grad(batch, policy_loss="gspo", aggregation="seq-mean-token-mean")
    assert loss.item() == pytest.approx((-1.28 + s) / 2, rel=1e-12)
    np.testing.assert_allclose(grad[1].numpy(), [s / 6] * 3, rtol=1e-12)


def sequence_objective(batch, eps_low=0.2, eps_high=0.28):
    """The GSPO paper's objective written per response (a differentiable reference):
    ``mean_i -min(s_i A_i, clip(s_i) A_i)`` over responses with a token."""
    logp = batch["logp"].clone().requires_grad_(True)
    terms = []
    for i in range(logp.shape[0]):
        m = batch["mask"][i]
        if not m.any():
            continue
        s = torch.exp((logp[i][m] - batch["old_logp"][i][m]).mean())
        a = batch["adv"][i]
        terms.append(-torch.minimum(s * a, s.clamp(1 - eps_low, 1 + eps_high) * a))
    loss = torch.stack(terms).mean() if terms else (logp * 0).sum()
    (grad,) = torch.autograd.grad(loss, logp, allow_unused=True)
    return loss.detach(), torch.zeros_like(logp) if grad is None else grad


@settings(max_examples=40, deadline=None)
@given(loss_batches(per_token_adv=False), st.sampled_from([(0.2, 0.28), (3e-4, 4e-4)]))
def test_gspo_token_form_has_the_value_and_gradient_of_the_sequence_objective(batch, eps):
    loss, grad, _ = loss_and_grad(batch, policy_loss="gspo", aggregation="seq-mean-token-mean",
                                  eps_low=eps[0], eps_high=eps[1])
    want, want_grad = sequence_objective(batch, *eps)
    assert loss.item() == pytest.approx(want.item(), rel=1e-10, abs=1e-12)
    torch.testing.assert_close(grad, want_grad, rtol=1e-9, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(loss_batches(), st.sampled_from(AGGS))
def test_gspo_is_the_clipped_surrogate_on_one_token_responses(batch, aggregation):
    first = torch.cumsum(batch["mask"].long(), dim=1) == 1
    batch["mask"] = batch["mask"] & first  # at most one loss token per response
    gspo = loss_and_grad(batch, policy_loss="gspo", aggregation=aggregation)
    clip = loss_and_grad(batch, policy_loss="clip", aggregation=aggregation)
    assert gspo[0].item() == pytest.approx(clip[0].item(), rel=1e-12, abs=1e-15)
    torch.testing.assert_close(gspo[1], clip[1], rtol=1e-12, atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(loss_batches(per_token_adv=False), st.data())
def test_gspo_decides_once_per_response_and_ignores_token_order(batch, data):
    loss, grad, m = loss_and_grad(batch, policy_loss="gspo")
    for i in range(grad.shape[0]):  # every token of a response gets the same gradient
        g = grad[i][batch["mask"][i]]
        assert torch.allclose(g, g[:1].expand_as(g), rtol=1e-12, atol=1e-15)
    perm = torch.tensor(data.draw(st.permutations(range(grad.shape[1]))))
    shuffled = {k: (v[:, perm] if v.dim() == 2 else v) for k, v in batch.items()}
    loss2, grad2, _ = loss_and_grad(shuffled, policy_loss="gspo")
    assert loss2.item() == pytest.approx(loss.item(), rel=1e-12, abs=1e-15)
    torch.testing.assert_close(grad2, grad[:, perm], rtol=1e-12, atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(loss_batches(per_token_adv=False))
def test_gspo_on_policy_and_bounded(batch):
    batch["old_logp"] = batch["logp"].clone()  # s = 1: the loss is -mean A, as for clip
    on, _, m = loss_and_grad(batch, policy_loss="gspo")
    clip, _, _ = loss_and_grad(batch, policy_loss="clip")
    assert on.item() == pytest.approx(clip.item(), rel=1e-12, abs=1e-15)
    assert m["clip/frac_low"] == m["clip/frac_high"] == 0.0


def test_gspo_refuses_the_dual_clip():
    z = torch.zeros(1, 2)
    with pytest.raises(ValueError, match="dual_clip"):
        dapo_policy_loss(z, z, torch.ones(1), torch.ones(1, 2), policy_loss="gspo", dual_clip=2.0)


# --- the covariance selection -------------------------------------------------------------


def test_covariance_selection_by_hand():
    # one response of 4 tokens, A = +1 on tokens 0 and 2 (per token), -1 on 1 and 3:
    # logp -1, -2, -3, 0 (mean -1.5), A mean 0: cov = 0.5, 0.5, -1.5, -1.5
    logp = torch.tensor([[-1.0, -2.0, -3.0, 0.0]], dtype=F64)
    adv = torch.tensor([[1.0, -1.0, 1.0, -1.0]], dtype=F64)
    mask = torch.ones(1, 4, dtype=torch.bool)
    top = covariance_selection(logp, adv, mask, fraction=0.25)  # k = 1: ties -> first
    assert top.tolist() == [[True, False, False, False]]
    two = covariance_selection(logp, adv, mask, fraction=0.5)
    assert two.tolist() == [[True, True, False, False]]
    banded = covariance_selection(logp, adv, mask, fraction=0.5, low=-2.0, high=0.0)
    assert banded.tolist() == [[False, False, True, True]]
    nothing = covariance_selection(logp, adv, mask, fraction=0.5, low=1.0, high=5.0)
    assert not nothing.any()
    tiny = covariance_selection(logp, adv, mask, fraction=1e-9)  # at least one token
    assert int(tiny.sum()) == 1


@st.composite
def selections(draw):
    b, t = draw(st.integers(1, 5)), draw(st.integers(1, 6))
    logp = draw(hnp.arrays(np.float64, (b, t), elements=st.floats(-6, 0)))
    adv = draw(hnp.arrays(np.float64, (b,), elements=st.floats(-2, 2)))
    mask = draw(hnp.arrays(np.bool_, (b, t)))
    fraction = draw(st.sampled_from([1e-4, 0.1, 0.3, 1.0]))
    low, high = draw(st.sampled_from([(-math.inf, math.inf), (0.0, math.inf), (-1.0, 0.5)]))
    return torch.tensor(logp), torch.tensor(adv), torch.tensor(mask), fraction, low, high


def _cov(logp, adv, mask):
    a = adv[:, None].expand_as(logp)
    return (logp - logp[mask].mean()) * (a - a[mask].mean())


@settings(max_examples=40, deadline=None)
@given(selections(), st.integers(0, 2**31))
def test_covariance_selection_properties(case, seed):
    logp, adv, mask, fraction, low, high = case
    cov = _cov(logp, adv, mask) if mask.any() else torch.zeros_like(logp)
    candidates = mask & (cov > low) & (cov < high)
    want = min(max(1, int(fraction * int(mask.sum()))), int(candidates.sum()))
    for pick in ("top", "random"):
        gen = torch.Generator().manual_seed(seed)
        chosen = covariance_selection(logp, adv, mask, fraction=fraction, low=low, high=high,
                                      pick=pick, generator=gen)
        assert int(chosen.sum()) == (want if mask.any() else 0)
        assert not (chosen & ~candidates).any()  # only candidates, never padding
        again = covariance_selection(logp, adv, mask, fraction=fraction, low=low, high=high,
                                     pick=pick, generator=torch.Generator().manual_seed(seed))
        assert torch.equal(chosen, again)  # the generator decides the random pick
        if pick == "top" and chosen.any() and (candidates & ~chosen).any():
            assert cov[chosen].min() >= cov[candidates & ~chosen].max()


@settings(max_examples=40, deadline=None)
@given(selections())
def test_covariance_selection_ignores_padding_values(case):
    logp, adv, mask, fraction, low, high = case
    dirty = logp.masked_fill(~mask, float("nan"))
    a = covariance_selection(logp, adv, mask, fraction=fraction, low=low, high=high)
    b = covariance_selection(dirty, adv, mask, fraction=fraction, low=low, high=high)
    assert torch.equal(a, b)


def test_covariance_selection_errors():
    z, m = torch.zeros(1, 2), torch.ones(1, 2, dtype=torch.bool)
    with pytest.raises(ValueError, match="fraction"):
        covariance_selection(z, torch.zeros(1), m, fraction=0.0)
    with pytest.raises(ValueError, match="low < high"):
        covariance_selection(z, torch.zeros(1), m, fraction=0.1, low=5.0, high=1.0)
    with pytest.raises(ValueError, match="pick"):
        covariance_selection(z, torch.zeros(1), m, fraction=0.1, pick="best")


# --- Clip-Cov and KL-Cov ------------------------------------------------------------------


def test_clip_cov_and_kl_cov_by_hand():
    # two tokens, A = +1, log-ratios 0.1 and -0.5; the second token is selected.
    batch = {"logp": torch.tensor([[0.1, -0.5]], dtype=F64), "old_logp": torch.zeros(1, 2,
             dtype=F64), "adv": torch.tensor([1.0], dtype=F64), "mask": torch.ones(1, 2)}
    sel = torch.tensor([[False, True]])
    r0, r1 = math.exp(0.1), math.exp(-0.5)
    # clip-cov: values as clip (-r0, -r1: inside the range for A > 0 below 1.28), gradient of
    # the selected token stopped
    loss, grad, m = loss_and_grad(batch, policy_loss="clip-cov", selected=sel)
    assert loss.item() == pytest.approx((-r0 - r1) / 2, rel=1e-12)
    np.testing.assert_allclose(grad.numpy(), [[-r0 / 2, 0.0]], rtol=1e-12)
    assert m["clip/frac_cov"] == 0.5
    # kl-cov, beta = 0.5: -r0, and -r1 + 0.5 * |-0.5| on the selected token; gradient
    # -r0 / 2 and (-r1 + 0.5 * sign(-0.5)) / 2
    loss, grad, m = loss_and_grad(batch, policy_loss="kl-cov", selected=sel,
                                  options={"kl_cov_coef": 0.5})
    assert loss.item() == pytest.approx((-r0 - r1 + 0.25) / 2, rel=1e-12)
    np.testing.assert_allclose(grad.numpy(), [[-r0 / 2, (-r1 - 0.5) / 2]], rtol=1e-12)
    assert m["clip/frac_cov"] == 0.5 and m["clip/frac_high"] == 0.0


@settings(max_examples=40, deadline=None)
@given(loss_batches(), st.data())
def test_clip_cov_is_clip_with_the_selected_gradients_stopped(batch, data):
    sel = torch.tensor(data.draw(hnp.arrays(np.bool_, tuple(batch["logp"].shape))))
    cov, cov_grad, m = loss_and_grad(batch, policy_loss="clip-cov", selected=sel)
    clip, clip_grad, _ = loss_and_grad(batch, policy_loss="clip")
    assert cov.item() == pytest.approx(clip.item(), rel=1e-12, abs=1e-15)
    live = batch["mask"].bool() & ~sel
    torch.testing.assert_close(cov_grad[live], clip_grad[live], rtol=1e-12, atol=1e-15)
    assert (cov_grad[sel] == 0).all()
    none, none_grad, _ = loss_and_grad(batch, policy_loss="clip-cov",
                                       selected=torch.zeros_like(sel))
    torch.testing.assert_close(none_grad, clip_grad, rtol=1e-12, atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(loss_batches(), st.data(), st.floats(0.0, 3.0))
def test_kl_cov_adds_a_non_negative_term_on_the_selected_tokens_only(batch, data, coef):
    sel = torch.tensor(data.draw(hnp.arrays(np.bool_, tuple(batch["logp"].shape))))
    kl, kl_grad, _ = loss_and_grad(batch, policy_loss="kl-cov", selected=sel,
                                   options={"kl_cov_coef": coef})
    plain, plain_grad, _ = loss_and_grad(batch, policy_loss="kl-cov",
                                         selected=torch.zeros_like(sel))
    assert kl.item() >= plain.item() - 1e-12
    m = batch["mask"].bool()
    torch.testing.assert_close(kl_grad[m & ~sel], plain_grad[m & ~sel], rtol=1e-12, atol=1e-15)
    # with nothing selected it is the unclipped surrogate: where no clip binds, clip's value
    clip, _, cm = loss_and_grad(batch, policy_loss="clip", eps_low=0.99, eps_high=1e9)
    assume(cm["clip/frac_low"] == 0.0)
    assert plain.item() == pytest.approx(clip.item(), rel=1e-12, abs=1e-15)


def _split(batch, cuts):
    bounds = [0, *cuts, batch["logp"].shape[0]]
    return [{k: v[lo:hi] for k, v in batch.items()} for lo, hi in zip(bounds, bounds[1:])]


@settings(max_examples=60, deadline=None)
@given(loss_batches(max_b=8), st.sampled_from(["gspo", "clip-cov", "kl-cov"]),
       st.sampled_from(AGGS), st.data())
def test_micro_batches_with_global_counts_and_one_selection_equal_the_full_batch(
        batch, policy_loss, aggregation, data):
    b = batch["logp"].shape[0]
    cuts = sorted(data.draw(st.sets(st.integers(1, max(b - 1, 1)), max_size=3))) if b > 1 else []
    batch["selected"] = covariance_selection(batch["logp"], batch["adv"], batch["mask"],
                                             fraction=0.3)
    whole = {k: v for k, v in batch.items() if k != "selected"}
    loss, grad, _ = loss_and_grad(whole, policy_loss=policy_loss, aggregation=aggregation,
                                  selected=batch["selected"])
    mask = batch["mask"]
    counts = {"num_tokens": int(mask.sum()), "num_sequences": int(mask.any(dim=1).sum())}
    total, grads = 0.0, []
    for micro in _split(batch, cuts):
        sel = micro.pop("selected")
        part, part_grad, _ = loss_and_grad(micro, policy_loss=policy_loss, selected=sel,
                                           aggregation=aggregation, **counts)
        total += part.item()
        grads.append(part_grad)
    assert total == pytest.approx(loss.item(), rel=1e-10, abs=1e-13)
    torch.testing.assert_close(torch.cat(grads), grad, rtol=1e-10, atol=1e-14)


def test_without_a_selection_the_loss_selects_among_its_own_tokens():
    torch.manual_seed(0)
    logp = -torch.rand(4, 6, dtype=F64) * 3
    batch = {"logp": logp, "old_logp": logp + 0.05, "adv": torch.randn(4, dtype=F64),
             "mask": torch.rand(4, 6) > 0.2}
    _, _, m = loss_and_grad(batch, policy_loss="kl-cov", options={"cov_fraction": 0.25})
    assert m["clip/frac_cov"] == pytest.approx(int(0.25 * batch["mask"].sum())
                                               / batch["mask"].sum().item())


@pytest.mark.parametrize(("settings_", "match"), [
    ({"clip_cov_fraction": 0.0}, "algo.clip_cov_fraction"),
    ({"kl_cov_fraction": 1.5}, "algo.kl_cov_fraction"),
    ({"clip_cov_low": 5.0, "clip_cov_high": 1.0}, "algo.clip_cov_low"),
    ({"kl_cov_coef": -1.0}, "algo.kl_cov_coef"),
    ({"policy_loss": "gspo", "dual_clip": 3.0}, "algo.dual_clip"),
])
def test_bad_loss_settings_name_the_setting(settings_, match):
    with pytest.raises(ValueError, match=match):
        AlgoConfig(**settings_)


def test_each_loss_gets_its_own_options():
    assert AlgoConfig(policy_loss="clip-cov").loss_options == {
        "cov_fraction": 2e-4, "cov_low": 1.0, "cov_high": 5.0}
    assert AlgoConfig(policy_loss="kl-cov", kl_cov_coef=0.5).loss_options == {
        "cov_fraction": 2e-4, "kl_cov_coef": 0.5}
    assert AlgoConfig(policy_loss="gspo").loss_options == {}


@pytest.mark.slow
@pytest.mark.parametrize("overrides", [
    ["algo.policy_loss=gspo"],
    ["algo.policy_loss=clip-cov", "algo.clip_cov_fraction=0.05", "algo.clip_cov_low=-100"],
    ["algo.policy_loss=kl-cov", "algo.kl_cov_fraction=0.05",
     "algo.rollout_correction=sequence-mask"],
])
def test_each_loss_trains_by_name(tmp_path, overrides):
    from smoke_config import SMOKE
    from verimath.trainer.config.files import load_config
    from verimath.trainer.run.loop import train
    from verimath.trainer.run.metrics import read_metrics
    from verimath.trainer.run.setup import open_state

    config = load_config("tiny", [*SMOKE, "optim.steps=2", "eval.num_problems=0",
                                  "logging.save_every=0", "logging.plot=false",
                                  "logging.backends=[jsonl]", "algo.kl_coef=0", *overrides])
    with open_state(config, tmp_path, echo=lambda _: None) as state:
        before = [p.detach().clone() for p in state.model.parameters()]
        train(state)
        moved = any(not torch.equal(a, b) for a, b in zip(before, state.model.parameters()))
    records = [r for r in read_metrics(tmp_path / "metrics.jsonl") if "loss/policy" in r]
    assert records and moved
    assert all(math.isfinite(r["loss/policy"]) for r in records)
    if "cov" in overrides[0]:
        assert any(r["clip/frac_cov"] > 0 for r in records)
    if "algo.rollout_correction=sequence-mask" in overrides:
        assert all("rollout/is_weight_mean" in r for r in records)
