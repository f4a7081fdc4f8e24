"""The size guard: astronomically large integer powers and factorials never reach sympy."""

from __future__ import annotations

import math
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.rewards.equality.equivalence import symbolic_verdict
from verimath.rewards.equality.size_guard import MAX_RESULT_DIGITS, is_intractable


@pytest.mark.parametrize(
    "answer",
    ["2^{10^{10}}", "9^{9^{9^{9}}}", "10^{10^{10^{10}}}", "(10^{10})!", "100000000!",
     "((10!)!)!", "2^{1000000}", "2^{-10^{10}}", "\\left(10^{10}\\right)!", "x+2^{ 2^{100} }",
     "{10}^{10^{6}}", "30000!", "3^{9^{9}}"],
)
def test_huge_powers_and_factorials_are_intractable(answer):
    assert is_intractable(answer)
    start = time.monotonic()
    assert symbolic_verdict(answer, "1") is False
    assert symbolic_verdict("1", answer) is False
    assert time.monotonic() - start < 0.5


@pytest.mark.parametrize(
    "answer",
    ["2^{10}", "x^{10^{10}}", "2^{100000}", "25000!", "10!", "2^{2^{2^{2^{2}}}}", "1^{10^{10}}",
     "1.5^{10^{10}}", "e^{x^2}", "\\frac{2^{10}}{3!}", "2^{3\\cdot 10^{10}}", "", "!!!", "^^^"],
)
def test_ordinary_answers_are_not_intractable(answer):
    assert not is_intractable(answer)


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 10**6), st.integers(0, 10**6))
def test_power_verdict_matches_its_digit_count(base, exp):
    digits = exp * math.log10(base)
    got = is_intractable(f"{base}^{{{exp}}}")
    if digits > MAX_RESULT_DIGITS * 1.001:
        assert got
    elif digits < MAX_RESULT_DIGITS * 0.999:
        assert not got


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**6))
def test_factorial_verdict_matches_its_digit_count(n):
    digits = math.lgamma(n + 1) / math.log(10)
    if abs(digits - MAX_RESULT_DIGITS) > 1:
        assert is_intractable(f"{n}!") is (digits > MAX_RESULT_DIGITS)


@settings(max_examples=200, deadline=None)
@given(st.text(st.sampled_from("0123456789^{}()!x\\left \\right-+."), max_size=60))
def test_guard_never_raises_and_is_fast(text):
    start = time.monotonic()
    assert is_intractable(text) in (True, False)
    assert time.monotonic() - start < 0.1


def test_guard_is_bounded_on_long_hostile_input():
    start = time.monotonic()
    is_intractable("9^{9}+" * 330)
    is_intractable("{" * 1000 + "2^{2}" + "}" * 1000)
    assert time.monotonic() - start < 0.5
