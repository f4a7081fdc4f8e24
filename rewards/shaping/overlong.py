"""DAPO's soft overlong punishment (Yu et al., 2025, arXiv 2503.14476, section 3.4).

With ``L_max = max_length`` (the expected maximum response length) and
``L_cache = cache_length`` (the punishment interval), a response of ``|y|`` tokens gets::

    R_length(y) = 0                                  if |y| <= L_max - L_cache
    R_length(y) = ((L_max - L_cache) - |y|) / L_cache  if L_max - L_cache < |y| <= L_max
    R_length(y) = -1                                 if |y| > L_max

The penalty lies in [-1, 0], is continuous (0 at ``L_max - L_cache``, -1 at ``L_max``) and
non-increasing in length; it is *added* to the correctness reward. The paper uses
``L_max = 16384, L_cache = 4096``. Arrays are scored by a numba kernel (compiled on first
use and cached on disk); a scalar is scored in plain Python.
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

_KERNEL = None


def overlong_penalty(lengths, *, max_length: float, cache_length: float):
    """Soft overlong penalty of each length; see the module docstring for the formula.

    Args:
        lengths: a non-negative number (returns a float) or an array-like of them (returns a
            float64 array of the same shape). Token counts, usually.
        max_length: ``L_max``; must be >= cache_length.
        cache_length: ``L_cache``; must be > 0.

    Raises:
        ValueError: for ``cache_length <= 0``, ``cache_length > max_length``, non-finite limits,
            or a negative / NaN / non-numeric length (the message names its index).
    """
    _check_limits(max_length, cache_length)
    if np.ndim(lengths) == 0:
        value = _as_length(lengths, "length")
        return penalty_scalar(value, float(max_length), float(cache_length))
    try:
        arr = np.asarray(lengths, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"lengths must be numbers: {exc}") from None
    bad = np.flatnonzero(~(arr >= 0))  # also catches NaN
    if bad.size:
        idx = np.unravel_index(bad[0], arr.shape)
        where = idx[0] if arr.ndim == 1 else tuple(int(i) for i in idx)
        raise ValueError(
            f"lengths[{where}] = {arr[idx]} is not a non-negative number "
            f"({bad.size} bad value(s) in all); lengths are token counts"
        )
    flat = np.ascontiguousarray(arr).ravel()
    return _kernel()(flat, float(max_length), float(cache_length)).reshape(arr.shape)


def penalty_scalar(length: float, max_length: float, cache_length: float) -> float:
    """The formula for one length, in plain Python (no validation; use overlong_penalty)."""
    start = max_length - cache_length
    if length <= start:
        return 0.0
    if length <= max_length:
        return (start - length) / cache_length
    return -1.0


def _check_limits(max_length, cache_length) -> None:
    for name, value in (("max_length", max_length), ("cache_length", cache_length)):
        if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    if cache_length <= 0:
        raise ValueError(
            f"cache_length must be > 0, got {cache_length}; it is the length of the punishment "
            "interval before max_length (DAPO uses 4096 with max_length 16384)"
        )
    if cache_length > max_length:
        raise ValueError(
            f"cache_length ({cache_length}) must not exceed max_length ({max_length}); "
            "the penalty starts at max_length - cache_length, which must be >= 0"
        )


def _as_length(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (Real, np.number)):
        try:
            value = float(np.asarray(value, dtype=np.float64))
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a number, got {value!r}") from None
    value = float(value)
    if not value >= 0:
        raise ValueError(f"{name} = {value} is not a non-negative number; lengths are token counts")
    return value


def _penalty_loop(lengths, max_length, cache_length):
    """Array kernel: one pass over a 1-D float64 array (compiled by numba in _kernel)."""
    out = np.empty(lengths.shape[0], dtype=np.float64)
    start = max_length - cache_length
    for i in range(lengths.shape[0]):
        n = lengths[i]
        if n <= start:
            out[i] = 0.0
        elif n <= max_length:
            out[i] = (start - n) / cache_length
        else:
            out[i] = -1.0
    return out


def _kernel():
    """The compiled kernel, built on first use (numba caches it on disk for later runs)."""
    global _KERNEL
    if _KERNEL is None:
        import numba

        _KERNEL = numba.njit(cache=True, nogil=True)(_penalty_loop)
    return _KERNEL
