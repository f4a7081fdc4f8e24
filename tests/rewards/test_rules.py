"""Plain-text notation, the written rules (case, value vs equation, decimals) and the probe."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.rewards import is_equivalent
from verimath.rewards.equality.equivalence import fast_verdict, symbolic_verdict
from verimath.rewards.equality.plain_math import to_latex
from verimath.rewards.equality.tolerance import decimal_matches


@pytest.mark.parametrize(
    "plain, latex",
    [
        ("sqrt(2)/2", "\\frac{\\sqrt{2}}{2}"), ("x**2 - 1", "x^{2} - 1"),
        ("abs(x - 1)", "\\left|x - 1\\right|"), ("exp(2)", "e^{2}"), ("2pi", "2 \\pi"),
        ("2 1/4", "\\frac{9}{4}"), ("-1 2/3", "-\\frac{5}{3}"), ("x >= 3", "x \\ge 3"),
        ("cos(x)^2", "{\\cos\\left(x\\right)}^{2}"),
    ],
)
def test_plain_notation_is_read_into_latex(plain, latex):
    assert to_latex(plain) == latex


@pytest.mark.parametrize("text", ["\\sqrt{2}", "x^2 + 1", "1,000", "sqrt(2", "import os", "2 3"])
def test_what_is_not_plain_notation_is_left_alone(text):
    assert to_latex(text) == text


@settings(max_examples=80, deadline=None)
@given(st.text(alphabet="sqrtabsexplog()*^/+-=<>|, 0123456789xyzpi.", max_size=50))
def test_the_plain_reader_never_raises_and_writes_no_code(text):
    out = to_latex(text)
    assert isinstance(out, str)
    assert "**" not in out or out == text


@settings(max_examples=20, deadline=None)
@given(st.integers(-9, 9), st.integers(-9, 9), st.integers(1, 4))
def test_plain_polynomials_match_their_latex(a, b, n):
    plain, latex = f"{a}*x**{n} + {b}*x", f"{a}x^{{{n}}} + {b}x"
    assert fast_verdict(plain, latex) in (True, None)
    assert symbolic_verdict(plain, latex)


@pytest.mark.parametrize(
    "pred, gold, expected",
    [
        ("x", "X", False), ("2X + 1", "2x + 1", False), ("c", "C", True), ("(B)", "B", True),
        ("B", "C", False), ("Yes", "yes", True), ("Monday", "monday", True),
        ("x = 2", "y = 2", False), ("2", "y=2", True), ("2x+3", "y = 2x + 3", True),
        ("4", "x^2 + y^2 = 4", False), ("\\frac{2}{3}", "0.667", True),
        ("0.1429", "\\frac17", False), ("0.142857", "\\frac17", True),
        ("0.5", "\\frac12", True), ("0.50", "0.5", True), ("2 1/4", "\\frac94", True),
    ],
)
def test_written_rules_in_the_fast_path(pred, gold, expected):
    assert fast_verdict(pred, gold) is expected


def _fixed(units: int, k: int, negative: bool) -> str:
    """``units / 10**k`` written with ``k`` decimals."""
    digits = str(units).rjust(k + 1, "0")
    return ("-" if negative and units else "") + digits[:-k] + "." + digits[-k:]


@settings(max_examples=200, deadline=None)
@given(st.fractions(min_value=-100, max_value=100, max_denominator=97), st.integers(1, 8))
def test_a_decimal_gold_accepts_the_exact_value_it_rounds(value, k):
    scaled = abs(value) * 10**k
    cut = int(scaled)
    rounded = cut + (1 if scaled - cut >= Fraction(1, 2) else 0)
    text = _fixed(rounded, k, value < 0)
    enough = len(text.lstrip("-").replace(".", "").lstrip("0")) >= 3
    assert decimal_matches(text, value) == (enough or Fraction(text) == value)
    # two units past the rounded value in the last place never match
    assert not decimal_matches(_fixed(rounded + 2, k, value < 0), value)


@pytest.mark.parametrize(
    "pred, gold, expected",
    [
        ("\\sin x + \\cos x", "\\sqrt{2}\\sin(x + \\frac{\\pi}{4})", True),
        ("\\sqrt{x^2}", "x", False), ("\\sqrt{x^2}", "|x|", True), ("e^{\\ln x}", "x", True),
        ("\\ln(ab)", "\\ln a + \\ln b", True), ("\\sin(90^\\circ - x)", "\\cos x", True),
        ("\\cos(-x)", "\\cos x", True), ("\\sin(-x)", "\\sin x", False),
        ("i(3-i)", "1+3i", True), ("i(3-i)", "-1+3i", False), ("\\frac{1}{i}", "-i", True),
        ("a<b", "b>a", True), ("a<b", "a>b", False), ("3<3y", "y>1", True),
        ("2x + 4 \\ge 10", "x \\ge 3", True), ("2x + 4 \\ge 10", "x > 3", False),
        ("-x > 2", "x < -2", True), ("y = 2x + 1", "2x - y + 1 = 0", True),
        ("y = 2x + 1", "2x - y - 1 = 0", False), ("2y = 4x + 6", "y = 2x + 3", True),
        ("x + y = 5", "y = 5 - x", True), ("\\pi", "3.1416", True), ("3.1416", "\\pi", False),
        ("0.5*(4.0*t+2.0)/t", "\\frac{2t+1}{t}", True),
        ("sin(x)*cos(x)", "\\frac{\\sin 2x}{2}", True),
    ],
)
def test_identities_relations_and_numbers(pred, gold, expected):
    assert is_equivalent(pred, gold) is expected


@pytest.mark.parametrize(
    "pred, gold, expected",
    [
        ("\\sqrt[3]{-8}", "-2", True), ("\\sqrt{x}\\sqrt{y}", "\\sqrt{xy}", True),
        ("\\sqrt{(x-1)^2}", "x-1", False), ("log(x)", "\\ln x", True), ("\\infty", "oo", True),
        ("[2, oo)", "x \\ge 2", True), ("0.\\overline{142857}", "\\frac17", True),
        ("0.\\overline{3}", "0.3", False), ("-3 \\le x \\le 3", "|x| \\le 3", True),
        ("x^2 \\le 9", "[-3, 3]", True), ("x^2 < 9", "[-3, 3]", False),
        ("x<1 \\text{ or } x>2", "(-\\infty,1)\\cup(2,\\infty)", True),
    ],
)
def test_real_domain_roots_plain_logs_and_solution_sets(pred, gold, expected):
    assert is_equivalent(pred, gold) is expected


def test_plain_towers_meet_the_size_guard_without_waiting_for_the_timeout():
    import time

    from verimath.rewards.equality.equivalence import symbolic_verdict

    start = time.perf_counter()
    assert symbolic_verdict("2**2**2**2**2**2", "4") is False  # in-process: no pool fence
    assert symbolic_verdict("9^(9^(9^9))", "4") is False
    assert time.perf_counter() - start < 2.0


_AGREE_MOSTLY = [  # (pred, gold) templates that agree on a large region but are not equal
    ("\\lfloor x + {c} \\rfloor", "\\lceil x + {c} \\rceil - 1"),  # differ at integers only
    ("\\lceil x \\rceil + {c}", "\\lfloor x \\rfloor + {c} + 1"),
    ("|x - {c}|", "{c} - x"), ("|x - {c}|", "x - {c}"),
    ("\\max(x, {c})", "x"), ("\\min(x, {c})", "{c}"), ("\\sqrt{{(x - {c})^2}}", "{c} - x"),
    ("\\operatorname{{sgn}}(x - {c})", "1"), ("x - \\lfloor x \\rfloor", "0"),
]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(_AGREE_MOSTLY), st.integers(-200, 200))
def test_no_equal_from_pairs_that_agree_on_many_points_but_not_all(template, c):
    pred, gold = (side.format(c=c) for side in template)
    assert symbolic_verdict(pred, gold) is False, (pred, gold)
    assert symbolic_verdict(gold, pred) is False, (gold, pred)


def test_the_probe_never_confirms_piecewise_sides_but_may_reject_them():
    import sympy
    from verimath.rewards.equality.probe import probe_verdict

    x = sympy.Symbol("x")
    assert probe_verdict(sympy.floor(x) + 1, sympy.floor(x + 1)) is None  # equal, unprovable
    assert probe_verdict(sympy.floor(x), sympy.ceiling(x) - 1) is False  # integers separate
    assert probe_verdict(sympy.Abs(x - 5), 5 - x) is False  # far points cross the kink
    assert probe_verdict(sympy.sin(x) ** 2 + sympy.cos(x) ** 2, sympy.Integer(1)) is True
