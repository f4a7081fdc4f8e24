"""Learning-rate schedule: linear warm-up, then constant, cosine or linear decay.

Pure functions of the optimizer step. ``step`` counts optimizer updates from 0 (the
value ``torch.optim.lr_scheduler.LambdaLR`` passes to its lambda before the first
update), so the first update already uses a non-zero rate::

    warm-up   (step < W):      lr = base_lr * (step + 1) / W
    constant  (step >= W):     lr = base_lr
    cosine    (step >= W):     lr = base_lr * (m + (1 - m) * (1 + cos(pi * q)) / 2)
    linear    (step >= W):     lr = base_lr * (m + (1 - m) * (1 - q))
    with q = min(1, (step - W) / (total_steps - W)) and m = min_lr_ratio.

After ``total_steps`` the decaying schedules stay at ``m * base_lr``. DAPO uses a
constant rate after 20 warm-up steps.

A run with a token budget (``optim.token_budget``) decays over the budget instead: ``q`` is
then the fraction of the budget generated so far (``progress``, clipped to [0, 1]), read
from a :class:`TokenClock` that the training loop sets before each RL step. Warm-up still
counts optimizer updates. With dynamic sampling the tokens of a step vary (more rounds when
fewer groups are informative), so a budget fixes what a run may spend, not how many steps
it takes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

from verimath.trainer.config.choices import SCHEDULES
from verimath.trainer.core.state import TokenClock

__all__ = ["SCHEDULES", "TokenClock", "lr_at", "make_lr_lambda", "refresh_lr"]



def _check(step, base_lr, warmup_steps, total_steps, schedule, min_lr_ratio) -> None:
    if int(step) != step or step < 0:
        raise ValueError(f"step must be an integer >= 0, got {step!r}")
    if not (math.isfinite(base_lr) and base_lr >= 0):
        raise ValueError(f"base_lr must be a finite number >= 0, got {base_lr!r}")
    if int(warmup_steps) != warmup_steps or warmup_steps < 0:
        raise ValueError(f"warmup_steps must be an integer >= 0, got {warmup_steps!r}")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    if not 0.0 <= min_lr_ratio <= 1.0:
        raise ValueError(f"min_lr_ratio must be in [0, 1], got {min_lr_ratio!r}")
    if schedule != "constant":
        if total_steps is None:
            raise ValueError(f"schedule={schedule!r} decays to total_steps; give total_steps")
        if int(total_steps) != total_steps or total_steps <= warmup_steps:
            raise ValueError(
                f"total_steps must be an integer > warmup_steps={warmup_steps}, got {total_steps!r}"
            )


def lr_at(
    step: int,
    *,
    base_lr: float,
    warmup_steps: int = 0,
    total_steps: int | None = None,
    schedule: str = "constant",
    min_lr_ratio: float = 0.0,
    progress: float | None = None,
) -> float:
    """The learning rate of optimizer step ``step`` (formulas in the module docstring);
    with ``progress`` (a fraction of a token budget) the decay follows it, not the steps.

    >>> [round(lr_at(s, base_lr=1.0, warmup_steps=4), 2) for s in range(6)]
    [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    >>> lr_at(50, base_lr=1.0, total_steps=100, schedule="linear", progress=0.75)
    0.25
    """
    _check(step, base_lr, warmup_steps, total_steps, schedule, min_lr_ratio)
    if progress is not None and not math.isfinite(progress):
        raise ValueError(f"progress must be a finite fraction, got {progress!r}")
    if step < warmup_steps:
        return base_lr * (step + 1) / warmup_steps
    if schedule == "constant":
        return base_lr
    if progress is not None:
        q = min(1.0, max(0.0, progress))
    else:
        q = min(1.0, (step - warmup_steps) / (total_steps - warmup_steps))
    decay = (1.0 + math.cos(math.pi * q)) / 2.0 if schedule == "cosine" else 1.0 - q
    return base_lr * (min_lr_ratio + (1.0 - min_lr_ratio) * decay)


def _lr_at_clock(step: int, *, clock: TokenClock, **schedule_kwargs) -> float:
    return lr_at(step, progress=clock.fraction, **schedule_kwargs)


def make_lr_lambda(clock: TokenClock | None = None, **schedule_kwargs) -> Callable[[int], float]:
    """``step -> lr / base_lr`` for ``torch.optim.lr_scheduler.LambdaLR``.

    Takes ``lr_at``'s keywords except ``base_lr`` and ``progress`` (LambdaLR multiplies the
    optimizer's own rate by the returned factor); with ``clock`` the decay reads the clock's
    fraction of its budget at each call. The result is a ``functools.partial``: picklable,
    and LambdaLR's ``state_dict`` round-trips it (the clock is not in it: the run's token
    count is, and the loop sets the clock from it).
    """
    for key in ("base_lr", "progress"):
        if key in schedule_kwargs:
            raise ValueError(f"make_lr_lambda takes no {key}: LambdaLR scales the optimizer's "
                             "lr, and the progress comes from the clock")
    lr_at(0, base_lr=1.0, **schedule_kwargs)  # validate now, not at the first step
    if clock is None:
        return functools.partial(lr_at, base_lr=1.0, **schedule_kwargs)
    return functools.partial(_lr_at_clock, clock=clock, base_lr=1.0, **schedule_kwargs)


def refresh_lr(scheduler) -> None:
    """Set each parameter group's rate from the scheduler's lambdas at its current update
    (``LambdaLR`` computes the rate of the next update when it steps; after a
    :class:`TokenClock` moved, the next update must see the new fraction)."""
    for group, lam, base in zip(scheduler.optimizer.param_groups, scheduler.lr_lambdas,
                                scheduler.base_lrs):
        group["lr"] = base * lam(scheduler.last_epoch)
    scheduler._last_lr = [group["lr"] for group in scheduler.optimizer.param_groups]
