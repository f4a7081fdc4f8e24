"""Statistics of an ablation over seeds. Pure functions of numbers and arrays.

- :func:`t_interval`: the mean over seeds and its 95% Student-t interval,
  ``mean +- t_{0.975, n-1} * sd / sqrt(n)`` (sample sd, ``ddof=1``); one seed has none.
- :func:`interpolate_curve`: a run's held-out accuracy at a given cumulative count of
  generated tokens, by linear interpolation between its evaluation points.
- :func:`common_budget`: the token budget at which every run is compared, the smallest
  final cumulative generated-token count among the runs (every run has reached it).

Held-out accuracy "at equal generated tokens" compares variants that spend generation
differently (dynamic sampling generates discarded groups, which count): each run's curve is
read at the same budget.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
from verimath.trainer.evaluation.metrics import t_quantile_975


def t_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """``(mean, low, high)`` of ``values`` with the 95% Student-t interval; ``low = high =
    nan`` for a single value. ValueError on no values or a value that is not finite."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        raise ValueError("t_interval needs at least one value (no finished seed?)")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"t_interval: values must be finite, got {x.tolist()}")
    mean = float(x.mean())
    if x.size == 1:
        return mean, math.nan, math.nan
    half = t_quantile_975(x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return mean, mean - half, mean + half


def interpolate_curve(xs: Sequence[float], ys: Sequence[float], x: float) -> float:
    """``y`` at ``x`` on the piecewise-linear curve through ``(xs[i], ys[i])``.

    ``xs`` must be non-decreasing (cumulative tokens); at a repeated ``x`` the last point
    counts. ValueError when ``x`` lies outside ``[xs[0], xs[-1]]`` (the run never reached
    that budget) or the inputs are malformed."""
    px, py = np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    if px.ndim != 1 or px.shape != py.shape or px.size == 0:
        raise ValueError(f"interpolate_curve: xs and ys must be equal-length 1-D sequences, "
                         f"got {px.shape} and {py.shape}")
    if np.any(np.diff(px) < 0):
        raise ValueError("interpolate_curve: xs must be non-decreasing (cumulative tokens)")
    if not px[0] <= x <= px[-1]:
        raise ValueError(f"interpolate_curve: {x} is outside the curve's range "
                         f"[{px[0]}, {px[-1]}]")
    right = int(np.searchsorted(px, x, side="right"))  # first point beyond x
    if right == 0 or px[right - 1] == x:
        return float(py[right - 1])
    x0, x1, y0, y1 = px[right - 1], px[right], py[right - 1], py[right]
    return float(y0 + (y1 - y0) * (x - x0) / (x1 - x0))


def common_budget(final_tokens: Iterable[float]) -> float:
    """The smallest final cumulative generated-token count: the budget every run reached."""
    finals = [float(t) for t in final_tokens]
    if not finals:
        raise ValueError("common_budget needs at least one run")
    return min(finals)
