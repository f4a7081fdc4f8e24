"""Fast-path number, interval, surd and polynomial rules, checked against math-verify."""

from __future__ import annotations

import logging
import math
from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from verimath.rewards.equality.equivalence import fast_verdict, symbolic_verdict
from verimath.rewards.equality.polynomials import MAX_DEGREE, parse_polynomial

logging.getLogger("math_verify").setLevel(logging.ERROR)

# Every pair the fast path decides must get the same verdict from math-verify (which
# compares gold first). Pairs it leaves undecided are listed too: then nothing is checked.
CROSS_CHECK = [
    ("(x+6)^2", "x^2+12x+36"), ("(x-6)^2", "x^2+12x+36"), ("x^2-1", "(x-1)(x+1)"),
    ("y = 2x+1", "2x+1"), ("3x", "x \\cdot 3"), ("\\frac{x}{2}", "x/2"), ("-x^2", "(-x)^2"),
    ("n(n+1)/2", "\\frac{n^2+n}{2}"), ("k^2+1", "1+k^2"), ("2a", "a+a"), ("(C)", "C"),
    ("C", "2"), ("2^{10}", "1024"), ("x^2+49", "x^2+14x+49"), ("t^2", "x^2"),
    ("\\sqrt{12}", "2\\sqrt{3}"), ("12\\sqrt{3}", "11\\sqrt{3}"), ("\\pi \\cdot 8", "8\\pi"),
    ("\\frac{3\\sqrt{2}}{2}", "\\frac{3}{\\sqrt2}"), ("9\\pi", "8\\pi"),
    ("2\\sqrt{2}", "\\sqrt{8}"),
    ("\\frac{\\pi}{3}", "60^\\circ"), ("1.414214", "\\sqrt{2}"),
    ("5600178", "5600168"), ("5600178.0", "5600168"), ("1001", "1000"), ("0.1234564", "0.1234561"),
    ("\\frac{7}{999}", "\\frac{7}{998}"), ("0.333333", "\\frac{1}{3}"), ("10\\%", "0.1"),
    ("(-12, 36)", "(-12, 36]"), ("[-8, 33]", "(-8, 33]"), ("[1, 2)", "(1, 2]"), ("(1,2)", "[1,2]"),
    ("(1, 2)", "\\{1, 2\\}"), ("(2, 1)", "[2, 1]"), ("(3, 3]", "[3, 3)"), ("(1,2,3)", "[1,2,3]"),
    ("\\frac{52}{x+9}", "\\frac{104}{2x+18}"), ("\\frac{3}{x-1}", "\\frac{3}{1+x}"),
    ("\\frac{x^2-1}{x-1}", "x+1"), ("\\frac{3}{x+1}", "3"), ("\\frac{2x}{x^2}", "\\frac{2}{x}"),
    ("-\\frac{1}{x}", "\\frac{-1}{x}"), ("\\frac{x}{x+1}", "\\frac{x+1}{x}"),
    ("54 + 84", "138"), ("54 + 84", "33.25"), ("2^{10}-1", "1023"), ("18 + 16", "11\\sqrt{3}"),
    ("64 + 44", "(5, 46)"), ("\\frac{3}{4} \\cdot 8", "6"), ("5 \\times 6 \\times 4", "120"),
]


@pytest.mark.parametrize(("pred", "gold"), CROSS_CHECK)
def test_fast_path_agrees_with_math_verify(pred, gold):
    fast = fast_verdict(pred, gold)
    if fast is not None:
        assert symbolic_verdict(pred, gold) is fast, (pred, gold, fast)


def test_cross_check_covers_both_verdicts():
    verdicts = [fast_verdict(p, g) for p, g in CROSS_CHECK]
    assert verdicts.count(True) >= 10 and verdicts.count(False) >= 10 and None in verdicts


def _expanded(coeffs: list[int], var: str) -> str:
    """``c0 + c1 x + c2 x^2 + ...`` spelled highest power first, as a model would."""
    terms = []
    for k in range(len(coeffs) - 1, -1, -1):
        c = coeffs[k]
        if c == 0:
            continue
        body = "" if k == 0 else var if k == 1 else f"{var}^{{{k}}}"
        coef = str(abs(c)) if (abs(c) != 1 or k == 0) else ""
        terms.append(("-" if c < 0 else "+") + coef + body)
    text = "".join(terms) or "0"
    return text[1:] if text.startswith("+") else text


def _coefficients(roots: list[int], lead: int) -> list[int]:
    """Coefficients (lowest first) of ``lead * prod(x - r)``: a plain-loop reference."""
    coeffs = [lead]
    for r in roots:
        shifted = [0] + coeffs  # x * p
        coeffs = [shifted[i] - r * (coeffs[i] if i < len(coeffs) else 0)
                  for i in range(len(shifted))]
    return coeffs


_roots = st.lists(st.integers(-20, 20), min_size=1, max_size=5)
_lead = st.integers(-9, 9).filter(bool)
_var = st.sampled_from("xtnkab")


def _factored(roots: list[int], lead: int, var: str) -> str:
    factors = "".join(f"({var}{'-' if r > 0 else '+'}{abs(r)})" if r else var for r in roots)
    return factors if lead == 1 else f"-{factors}" if lead == -1 else f"{lead}{factors}"


@settings(max_examples=150, deadline=None)
@given(_roots, _lead, _var)
def test_factored_and_expanded_polynomials_are_equivalent(roots, lead, var):
    factored, expanded = _factored(roots, lead, var), _expanded(_coefficients(roots, lead), var)
    assert fast_verdict(factored, expanded) is True, (factored, expanded)
    assert fast_verdict(expanded, factored) is True


@settings(max_examples=150, deadline=None)
@given(_roots, _lead, _var, st.integers(0, 5), st.integers(-3, 3).filter(bool))
def test_polynomials_with_a_changed_coefficient_are_never_equivalent(roots, lead, var, k, delta):
    coeffs = _coefficients(roots, lead)
    changed = coeffs + [0] * (k + 1 - len(coeffs)) if k >= len(coeffs) else list(coeffs)
    changed[k] += delta
    assume(any(changed[1:]))  # stays a polynomial in var, not a constant
    assert fast_verdict(_factored(roots, lead, var), _expanded(changed, var)) is False


@settings(max_examples=100, deadline=None)
@given(_roots, _lead, st.integers(-5, 5))
def test_parsed_coefficients_evaluate_like_the_factored_form(roots, lead, x):
    parsed = parse_polynomial(_factored(roots, lead, "x"))
    assert parsed is not None and parsed[0] == "x"
    value = sum(c * Fraction(x) ** k for k, c in parsed[1])
    assert value == lead * math.prod(x - r for r in roots)


@pytest.mark.parametrize(
    "text",
    ["xy", "e^2", "i+1", "2.5x", "x^{65}", "\\sqrt{x}", "x_1", "\\frac{1}{x}", "x^{-1}", "x(x",
     "", "x^{1+1}", "f(x)", "\\pi x", "(" * 500 + "x" + ")" * 500, "1" * 31 + "x"],
)
def test_non_polynomials_are_rejected(text):
    assert parse_polynomial(text) is None


def test_huge_constants_are_rejected_quickly():
    import time

    start = time.monotonic()
    assert parse_polynomial("((((((2^{64})^{64})^{64})^{64})^{64})^{64})x") is None
    assert parse_polynomial("(x+" + "9" * 30 + ")^{64}") is None
    assert fast_verdict("((((2^{64})^{64})^{64})^{64})^{64}", "1") is None
    assert time.monotonic() - start < 0.5


def test_degree_bound_is_enforced():
    assert parse_polynomial(f"x^{{{MAX_DEGREE}}}") is not None
    assert parse_polynomial(f"(x+1)^{{{MAX_DEGREE // 2}}}(x-1)^{{{MAX_DEGREE // 2 + 1}}}") is None


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from("x2^{}()+-*/\\fracdot t.e"), max_size=40))
def test_parse_polynomial_never_raises(text):
    got = parse_polynomial(text)
    assert got is None or isinstance(got[0], str)


@settings(max_examples=60, deadline=None)
@given(_roots, _roots, _lead, st.integers(2, 9), _var)
def test_quotients_of_polynomials_are_compared_cross_multiplied(top, bottom, lead, k, var):
    """(lead * prod(x - r)) / prod(x - s) equals the same quotient scaled by k, and differs
    from it with one root of the numerator moved (as functions of x)."""
    num, den = _coefficients(top, lead), _coefficients(bottom, 1)
    frac = f"\\frac{{{_expanded(num, var)}}}{{{_expanded(den, var)}}}"
    scaled_num = _expanded([k * c for c in num], var)
    scaled_den = _expanded([k * c for c in den], var)
    scaled = f"\\frac{{{scaled_num}}}{{{scaled_den}}}"
    assert fast_verdict(frac, scaled) is True
    moved = _coefficients([top[0] + 1] + top[1:], lead)
    other = f"\\frac{{{_expanded(moved, var)}}}{{{_expanded(den, var)}}}"
    assert fast_verdict(frac, other) is False
