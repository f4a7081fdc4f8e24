"""Soft overlong punishment (DAPO section 3.4): hand-worked values, properties, validation."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import strategies
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.rewards import overlong_penalty
from verimath.rewards.shaping.overlong import _penalty_loop


def reference(length, max_length, cache_length) -> Fraction:
    """SPEC.md's three cases in exact rational arithmetic, one length at a time."""
    length, max_length, cache_length = (Fraction(x) for x in (length, max_length, cache_length))
    if length <= max_length - cache_length:
        return Fraction(0)
    if length <= max_length:
        return ((max_length - cache_length) - length) / cache_length
    return Fraction(-1)


@pytest.mark.parametrize(
    "length, expected",
    [
        (0, 0.0),
        (12288, 0.0),  # exactly L_max - L_cache
        (12289, -1 / 4096),
        (14336, -0.5),  # halfway through the interval
        (15360, -0.75),
        (16384, -1.0),  # exactly L_max
        (16385, -1.0),
        (10**9, -1.0),
    ],
)
def test_paper_settings_by_hand(length, expected):
    assert overlong_penalty(length, max_length=16384, cache_length=4096) == expected
    arr = overlong_penalty(np.array([length]), max_length=16384, cache_length=4096)
    assert arr.dtype == np.float64 and arr.tolist() == [expected]


def test_scalar_in_float_out_array_in_array_out_with_shape():
    assert type(overlong_penalty(5, max_length=10, cache_length=4)) is float
    assert type(overlong_penalty(np.int64(7), max_length=10, cache_length=4)) is float
    assert overlong_penalty(np.array(8), max_length=10, cache_length=4) == -0.5
    grid = overlong_penalty([[0, 7], [8, 11]], max_length=10, cache_length=4)
    assert grid.shape == (2, 2) and grid.tolist() == [[0.0, -0.25], [-0.5, -1.0]]
    assert overlong_penalty([], max_length=10, cache_length=4).shape == (0,)


def test_cache_equal_to_max_starts_at_zero_length():
    got = overlong_penalty([0, 1, 5, 10, 11], max_length=10, cache_length=10)
    assert got.tolist() == [0.0, -0.1, -0.5, -1.0, -1.0]


@settings(max_examples=200, deadline=None)
@given(strategies.overlong_limits, st.lists(strategies.lengths, max_size=50))
def test_kernel_equals_exact_reference(limits, lengths):
    max_length, cache_length = limits
    got = overlong_penalty(np.array(lengths, dtype=np.float64), max_length=max_length,
                           cache_length=cache_length)
    want = [float(reference(n, max_length, cache_length)) for n in lengths]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    scalars = [overlong_penalty(n, max_length=max_length, cache_length=cache_length)
               for n in lengths]
    np.testing.assert_array_equal(got, scalars)  # the scalar path is the same formula


@settings(max_examples=100, deadline=None)
@given(strategies.overlong_limits, st.lists(strategies.lengths, max_size=50))
def test_compiled_kernel_equals_its_python_loop(limits, lengths):
    arr = np.array(lengths, dtype=np.float64)
    got = overlong_penalty(arr, max_length=limits[0], cache_length=limits[1])
    np.testing.assert_array_equal(got, _penalty_loop(arr, float(limits[0]), float(limits[1])))


@settings(max_examples=200, deadline=None)
@given(strategies.overlong_limits, strategies.lengths, strategies.lengths)
def test_bounded_and_monotone_non_increasing(limits, a, b):
    max_length, cache_length = limits
    pa, pb = (overlong_penalty(x, max_length=max_length, cache_length=cache_length) for x in (a, b))
    assert -1.0 <= pa <= 0.0 and -1.0 <= pb <= 0.0
    if a <= b:
        assert pa >= pb


@settings(max_examples=200, deadline=None)
@given(strategies.overlong_limits, st.data())
def test_zero_before_the_interval_and_minus_one_after_max(limits, data):
    max_length, cache_length = limits
    start = max_length - cache_length
    early = data.draw(st.integers(0, start))
    late = data.draw(st.integers(max_length + 1, max_length + 10**6))
    assert overlong_penalty(early, max_length=max_length, cache_length=cache_length) == 0.0
    assert overlong_penalty(late, max_length=max_length, cache_length=cache_length) == -1.0


@settings(max_examples=200, deadline=None)
@given(strategies.overlong_limits)
def test_continuous_at_both_knots(limits):
    max_length, cache_length = limits
    start = max_length - cache_length
    eps = 1e-7 * cache_length

    def p(x):
        return overlong_penalty(x, max_length=max_length, cache_length=cache_length)

    assert p(start) == 0.0 and abs(p(start + eps)) < 1e-6
    assert p(max_length) == -1.0 and abs(p(max_length - eps) + 1.0) < 1e-6


@pytest.mark.parametrize(
    "max_length, cache_length, match",
    [(100, 0, "cache_length must be > 0"), (100, -5, "cache_length must be > 0"),
     (100, 101, r"must not exceed max_length"), (float("inf"), 10, "finite"),
     (100, None, "finite"), (True, 1, "finite")],
)
def test_bad_limits_raise(max_length, cache_length, match):
    with pytest.raises(ValueError, match=match):
        overlong_penalty([1, 2], max_length=max_length, cache_length=cache_length)


def test_negative_or_nan_lengths_are_named_by_index():
    with pytest.raises(ValueError, match=r"lengths\[2\] = -3\.0"):
        overlong_penalty([1, 2, -3, -4], max_length=10, cache_length=5)
    with pytest.raises(ValueError, match=r"lengths\[1\] = nan"):
        overlong_penalty(np.array([1.0, np.nan]), max_length=10, cache_length=5)
    with pytest.raises(ValueError, match=r"lengths\[\(1, 0\)\]"):
        overlong_penalty([[1, 2], [-1, 3]], max_length=10, cache_length=5)
    with pytest.raises(ValueError, match="length = -1"):
        overlong_penalty(-1, max_length=10, cache_length=5)
    with pytest.raises(ValueError, match="must be numbers"):
        overlong_penalty(["a", "b"], max_length=10, cache_length=5)
