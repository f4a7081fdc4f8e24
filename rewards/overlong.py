"""DAPO's soft overlong punishment. PLACEHOLDER numpy version; numba kernel to come."""

from __future__ import annotations

import numpy as np


def overlong_penalty(lengths, *, max_length: int, cache_length: int):
    if cache_length <= 0 or cache_length > max_length:
        raise ValueError("need 0 < cache_length <= max_length")
    arr = np.asarray(lengths, dtype=np.float64)
    if np.any(arr < 0):
        raise ValueError("lengths must be non-negative")
    start = max_length - cache_length
    out = np.where(arr <= start, 0.0, np.where(arr <= max_length, (start - arr) / cache_length, -1.0))
    return float(out) if np.ndim(lengths) == 0 else out
