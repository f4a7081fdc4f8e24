"""The learning-rate schedule."""

from __future__ import annotations

import math
import pickle

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.trainer.algo.schedule import lr_at, make_lr_lambda

schedules = st.sampled_from(["constant", "cosine", "linear"])


@st.composite
def schedule_kwargs(draw):
    warmup = draw(st.integers(0, 30))
    return {
        "base_lr": draw(st.floats(1e-7, 1.0)),
        "warmup_steps": warmup,
        "total_steps": draw(st.integers(warmup + 1, warmup + 200)),
        "schedule": draw(schedules),
        "min_lr_ratio": draw(st.floats(0.0, 1.0)),
    }


# --- hand-worked examples -------------------------------------------------------------


def test_dapo_constant_with_warmup():
    lrs = [lr_at(s, base_lr=1e-6, warmup_steps=20) for s in range(25)]
    assert lrs[0] == pytest.approx(1e-6 / 20) and lrs[9] == pytest.approx(0.5e-6)
    assert lrs[19:] == [1e-6] * 6


def test_cosine_by_hand():
    kw = {"base_lr": 2.0, "warmup_steps": 2, "total_steps": 6, "schedule": "cosine"}
    # warm-up 1.0, 2.0; then q = 0, 1/4, 1/2, 3/4, 1, 1
    expected = [1.0, 2.0, 2.0, 1 + math.cos(math.pi / 4), 1.0, 1 - math.cos(math.pi / 4), 0, 0]
    assert [lr_at(s, **kw) for s in range(8)] == pytest.approx(expected, abs=1e-15)


def test_linear_with_floor_by_hand():
    kw = {"base_lr": 1.0, "total_steps": 4, "schedule": "linear", "min_lr_ratio": 0.2}
    assert [lr_at(s, **kw) for s in range(6)] == pytest.approx([1.0, 0.8, 0.6, 0.4, 0.2, 0.2])


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"step": -1}, "step"),
        ({"base_lr": float("nan")}, "base_lr"),
        ({"warmup_steps": -2}, "warmup_steps"),
        ({"schedule": "exp"}, "schedule"),
        ({"schedule": "cosine"}, "give total_steps"),
        ({"schedule": "cosine", "total_steps": 3, "warmup_steps": 3}, "total_steps"),
        ({"min_lr_ratio": 1.5}, "min_lr_ratio"),
    ],
)
def test_bad_arguments_are_named(kw, match):
    args = {"step": 0, "base_lr": 1.0, **kw}
    with pytest.raises(ValueError, match=match):
        lr_at(args.pop("step"), **args)


def test_lambda_drives_torch_lambdalr_and_survives_state_dict():
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=0.1)
    kw = {"warmup_steps": 3, "total_steps": 10, "schedule": "cosine", "min_lr_ratio": 0.1}
    sched = torch.optim.lr_scheduler.LambdaLR(opt, make_lr_lambda(**kw))
    seen = []
    for _ in range(5):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert seen == pytest.approx([lr_at(s, base_lr=0.1, **kw) for s in range(5)])
    state = sched.state_dict()
    opt2 = torch.optim.SGD([param], lr=0.1)
    sched2 = torch.optim.lr_scheduler.LambdaLR(opt2, make_lr_lambda(**kw))
    sched2.load_state_dict(state)
    assert sched2.get_last_lr() == pytest.approx(sched.get_last_lr())
    pickle.dumps(make_lr_lambda(**kw))
    with pytest.raises(ValueError, match="base_lr"):
        make_lr_lambda(base_lr=1.0)


# --- properties -----------------------------------------------------------------------


@settings(deadline=None)
@given(schedule_kwargs(), st.integers(0, 300))
def test_bounded_by_floor_and_base(kw, step):
    lr = lr_at(step, **kw)
    assert 0.0 <= lr <= kw["base_lr"] * (1 + 1e-12)
    if step >= kw["warmup_steps"]:
        assert lr >= kw["base_lr"] * kw["min_lr_ratio"] * (1 - 1e-12)


@settings(deadline=None)
@given(schedule_kwargs())
def test_warmup_rises_then_never_rises(kw):
    lrs = [lr_at(s, **kw) for s in range(kw["total_steps"] + 5)]
    w = kw["warmup_steps"]
    assert all(a < b for a, b in zip(lrs[:w], lrs[1:w])) or kw["base_lr"] == 0
    assert all(b <= a * (1 + 1e-12) for a, b in zip(lrs[w:], lrs[w + 1 :]))
    if w:
        assert lrs[w - 1] == pytest.approx(kw["base_lr"])  # warm-up ends at the full rate
    end = kw["base_lr"] * (1.0 if kw["schedule"] == "constant" else kw["min_lr_ratio"])
    assert lrs[-1] == pytest.approx(end, rel=1e-9, abs=1e-15)


@settings(deadline=None)
@given(schedule_kwargs(), st.integers(0, 300), st.floats(0.01, 100))
def test_proportional_to_base_lr(kw, step, factor):
    scaled = {**kw, "base_lr": kw["base_lr"] * factor}
    assert lr_at(step, **scaled) == pytest.approx(lr_at(step, **kw) * factor, rel=1e-9)


def test_docstring_examples():
    import doctest

    import verimath.trainer.algo.schedule as module

    assert doctest.testmod(module).failed == 0


# --- a token budget's clock -----------------------------------------------------------


def test_progress_replaces_the_step_fraction_by_hand():
    kw = {"base_lr": 2.0, "warmup_steps": 2, "total_steps": 100, "schedule": "cosine"}
    assert lr_at(0, progress=0.9, **kw) == pytest.approx(1.0)  # warm-up counts updates
    assert lr_at(5, progress=0.0, **kw) == pytest.approx(2.0)
    assert lr_at(5, progress=0.5, **kw) == pytest.approx(1.0)  # (1 + cos(pi / 2)) / 2 * 2
    assert lr_at(5, progress=1.7, **kw) == pytest.approx(0.0, abs=1e-15)  # clipped at 1
    assert lr_at(5, progress=0.5, **{**kw, "schedule": "constant"}) == 2.0
    with pytest.raises(ValueError, match="progress"):
        lr_at(5, progress=float("nan"), **kw)


@settings(deadline=None)
@given(schedule_kwargs(), st.integers(0, 300))
def test_progress_at_the_step_fraction_is_the_step_schedule(kw, step):
    w, total = kw["warmup_steps"], kw["total_steps"]
    q = min(1.0, max(0.0, (step - w) / (total - w)))
    assert lr_at(step, progress=q, **kw) == pytest.approx(lr_at(step, **kw), rel=1e-9, abs=1e-15)


@settings(deadline=None)
@given(schedule_kwargs(), st.integers(0, 300), st.lists(st.floats(0, 1.5), min_size=2))
def test_more_progress_never_raises_the_rate(kw, step, fractions):
    step = max(step, kw["warmup_steps"])
    lrs = [lr_at(step, progress=f, **kw) for f in sorted(fractions)]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(lrs, lrs[1:]))
    assert all(kw["base_lr"] * kw["min_lr_ratio"] * (1 - 1e-12) <= lr
               <= kw["base_lr"] * (1 + 1e-12) for lr in lrs)


def test_lambdalr_follows_the_clock_and_its_state_dict_leaves_it_out():
    from verimath.trainer.algo.schedule import refresh_lr
    from verimath.trainer.core.state import TokenClock

    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=0.1)
    clock = TokenClock(budget=1000)
    kw = {"warmup_steps": 1, "total_steps": 10_000, "schedule": "linear"}
    sched = torch.optim.lr_scheduler.LambdaLR(opt, make_lr_lambda(clock, **kw))
    seen = []
    for tokens in (0, 250, 250, 900, 5000):  # set before each update, as the loop does
        clock.tokens = tokens
        refresh_lr(sched)
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert seen == pytest.approx([0.1, 0.075, 0.075, 0.01, 0.0])  # warm-up, then 1 - fraction
    assert sched.get_last_lr() == [opt.param_groups[0]["lr"]]
    state = sched.state_dict()
    assert all(not d for d in state["lr_lambdas"])  # the clock is not saved with the scheduler
    pickle.dumps(make_lr_lambda(clock, **kw))
    with pytest.raises(ValueError, match="progress"):
        make_lr_lambda(progress=0.5, **kw)
    with pytest.raises(ValueError, match="budget"):
        TokenClock(budget=0)
