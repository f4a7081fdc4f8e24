"""Notation alignment: relations and intervals, matrices, decimal commas, lists from the gold."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from verimath.rewards import fast_verdict, is_equivalent
from verimath.rewards.equality.notation import align_pair, as_interval, strip_trailing_backslash

PM = "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}"
COLUMN = "\\begin{pmatrix}1\\\\2\\end{pmatrix}"


@pytest.mark.parametrize(
    ("text", "interval"),
    [
        ("-2 \\le x \\le 7", "[-2, 7]"),
        ("-2 < x \\leq 7", "(-2, 7]"),
        ("7 \\geq x > -2", "(-2, 7]"),
        ("x > 3", "(3, \\infty)"),
        ("x \\ge 3", "[3, \\infty)"),
        ("3 < x", "(3, \\infty)"),
        ("y \\le \\sqrt{2}", "(-\\infty, \\sqrt{2}]"),
        ("x \\in [-2, 7]", "[-2, 7]"),
        ("x < -2 \\text{ or } x > 3", "(-\\infty, -2) \\cup (3, \\infty)"),
        ("\\left[ 1, 2 \\right)", "[ 1, 2 )"),
    ],
)
def test_relations_become_intervals(text, interval):
    assert as_interval(text) == interval


@pytest.mark.parametrize("text", ["x^2 < 4", "1 < x > 0", "x = 5", "5", "(1 + 2)", "x < y < z < w"])
def test_other_text_is_no_interval(text):
    assert as_interval(text) is None


@pytest.mark.parametrize(
    ("pred", "gold", "expected"),
    [
        # relations vs intervals
        ("-2 \\le x \\le 7", "x \\in [-2, 7]", True),
        ("-2 \\le x \\le 7", "[-2, 7]", True),
        ("-2 < x \\le 7", "[-2, 7]", False),
        ("x > 3", "(3, \\infty)", True),
        ("x \\geq 3", "(3, \\infty)", False),
        ("x < -2 \\text{ or } x > 3", "(-\\infty, -2) \\cup (3, \\infty)", True),
        # matrices across environments, shapes, vectors and tuples
        ("\\begin{bmatrix}1&2\\\\3&4\\end{bmatrix}", PM, True),
        ("\\left[\\begin{array}{cc}1&2\\\\3&4\\end{array}\\right]", PM, True),
        ("\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}", PM, True),
        ("\\begin{bmatrix}1&2\\\\3&5\\end{bmatrix}", PM, False),
        ("\\begin{pmatrix}0.5&2\\\\3&4\\end{pmatrix}",
         "\\begin{pmatrix}\\frac12&2\\\\3&4\\end{pmatrix}", True),
        ("\\begin{pmatrix}1&2\\end{pmatrix}", COLUMN, False),
        ("(1, 2)", COLUMN, True),
        ("(2, 1)", COLUMN, False),
        ("\\begin{vmatrix}1&2\\\\3&4\\end{vmatrix}", PM, False),
        # decimal commas vs thousands separators
        ("1,5", "1.5", True),
        ("1{,}5", "1.5", True),
        ("1,5", "15", False),
        ("1,500", "1500", True),
        ("1,500", "1.5", False),
        ("0,125", "\\frac{1}{8}", True),
        ("1,5", "1, 5", True),
        # ordered or not, decided from the gold
        ("2, 1", "1, 2", True),
        ("\\{2, 1\\}", "1, 2", True),
        ("2, 1", "\\{1, 2\\}", True),
        ("(2, 1)", "(1, 2)", False),
        ("2, 1", "(1, 2)", False),
        ("1, 2", "(1, 2)", True),
        ("1, 3", "1, 2", False),
        ("\\pm 2", "-2, 2", True),
        ("x = \\pm 2", "2, -2", True),
        # stray LaTeX
        ("5\\", "5", True),
        ("\\frac{1}{2}\\\\", "0.5", True),
        ("\\{1, 2\\}", "\\{1, 2\\}\\", True),
        # a gold given as a worked answer, lists of named values, a spaced comma
        ("12", "So the total is \\boxed{12}.", True),
        ("1, 2", "\\boxed{1} papers and \\boxed{2} bins", True),
        ("-2(x-1)^2+5, 3(x+2)^2-2", "y_{1}=-2x^{2}+4x+3, y_{2}=3x^{2}+12x+10", True),
        ("1, 2, 3", "{1,2,3}", True),
        ("32, 349", "32349", False),
    ],
)
def test_verdicts_across_notations(pred, gold, expected):
    assert is_equivalent(pred, gold) is expected


def test_trailing_backslash_keeps_escaped_closers():
    assert strip_trailing_backslash("\\{1\\}") == "\\{1\\}"
    assert strip_trailing_backslash("5 \\\\") == "5"
    assert strip_trailing_backslash("5\\") == "5"


def test_align_pair_leaves_plain_answers_alone():
    for pred, gold in (("42", "42"), ("x^2", "x^2"), ("(1, 2]", "(1, 2]"), ("\\frac12", "0.5")):
        assert align_pair(pred, gold) == (pred, gold)


@settings(max_examples=80, deadline=None)
@given(st.integers(-999, 999), st.integers(1, 99), st.booleans(), st.booleans())
def test_relation_and_interval_spellings_agree(lo, width, closed_lo, closed_hi):
    hi = lo + width
    ops = ("\\le" if closed_lo else "<", "\\le" if closed_hi else "<")
    relation = f"{lo} {ops[0]} x {ops[1]} {hi}"
    interval = f"{'[' if closed_lo else '('}{lo}, {hi}{']' if closed_hi else ')'}"
    other = f"{'(' if closed_lo else '['}{lo}, {hi}{']' if closed_hi else ')'}"
    assert fast_verdict(relation, interval) is True
    assert fast_verdict(relation, other) is False


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 99))
def test_decimal_comma_is_read_from_the_gold(whole, frac):
    assume(whole or frac)  # 0,00 and 000 are both zero
    assert fast_verdict(f"{whole},{frac:02d}", f"{whole}.{frac:02d}") is True
    assert fast_verdict(f"{whole},{frac:02d}", f"{whole}{frac:02d}") is False
