"""Grading conventions: each setting read both ways, equations as relations, validation."""

from __future__ import annotations

import pickle
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.rewards import STRICT_CONVENTIONS, Conventions, is_equivalent, score_batch
from verimath.rewards.equality.conventions import DEFAULT, as_conventions
from verimath.rewards.equality.equivalence import fast_decision, fast_verdict
from verimath.rewards.equality.relations import equation_sides, is_name, relations_equal

STRICT = STRICT_CONVENTIONS
tex_fractions = st.tuples(st.integers(1, 40), st.integers(2, 40)).map(
    lambda t: f"\\frac{{{t[0]}}}{{{t[1]}}}"
)
values = st.one_of(st.integers(-999, 999).map(str), tex_fractions)
names = st.sampled_from(["y", "x", "k", "a_1", "a_{n}", "AB", "|AB|", "f(x)", "P(3)", "\\theta",
                         "\\angle ABC", "S_1 : S_2", "BC", "\\cos A", "m"])


@settings(max_examples=40, deadline=None)
@given(names, values)
def test_a_value_matches_a_named_gold_by_default_and_never_when_strict(name, value):
    gold = f"{name} = {value}"
    assert fast_verdict(value, gold) is True
    assert fast_verdict(value, gold, conventions=STRICT) is False
    decision = fast_decision(value, gold, conventions=STRICT)
    assert (decision.rule, decision.convention) == ("convention", "name_value")


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["17 \\bmod 5", "x", "f(2)", "3 + 4", "AB", "2^{3}", "y"]), values)
def test_a_relations_right_side_matches_a_value_gold_by_default_only(left, value):
    pred = f"{left} = {value}"
    assert fast_verdict(pred, value) is True
    assert fast_verdict(pred, value, conventions="strict") is False
    wrong = str(int(Fraction(value.replace("\\frac{", "").replace("}{", "/").rstrip("}")) * 3) + 1)
    assert fast_verdict(pred, wrong) is False


@pytest.mark.parametrize("gold", ["x^2 + y^2 = 4", "a + 3z = 0", "2x + z = 1"])
def test_a_value_never_matches_an_equation_that_names_nothing(gold):
    value = gold.rpartition("=")[2].strip()
    assert fast_verdict(value, gold) is False
    assert fast_decision(value, gold).rule == "written_rule"


def _decimal(value: Fraction, digits: int) -> str:
    """``value`` (0 < value < 1000) rounded half up to ``digits`` significant digits."""
    exponent = len(str(int(value))) - 1 if value >= 1 else -len(str(int(1 / value)))
    while Fraction(10) ** exponent > value:
        exponent -= 1
    places = max(digits - 1 - exponent, 0)
    scaled = value * 10**places
    whole = int(scaled) + (1 if scaled - int(scaled) >= Fraction(1, 2) else 0)
    text = str(whole).rjust(places + 1, "0")
    return text[: len(text) - places] + ("." + text[len(text) - places:] if places else "")


@settings(max_examples=60, deadline=None)
@given(st.fractions(min_value=Fraction(1, 1000), max_value=999, max_denominator=1000),
       st.integers(3, 12), st.integers(3, 9))
def test_a_decimal_of_an_exact_gold_needs_the_configured_significant_digits(value, written, needed):
    text = _decimal(value, written)
    if "." not in text or Fraction(text) == value:
        return  # an integer spelling, or an exact decimal: not an approximation
    gold = f"\\frac{{{value.numerator}}}{{{value.denominator}}}"
    setting = Conventions(decimal_digits=needed)
    assert fast_verdict(text, gold, conventions=setting) is (written >= needed)
    assert fast_verdict(text, gold, conventions=Conventions(decimal_digits=None)) is False


def test_decimal_examples_both_ways():
    for pred, gold, default in [
        ("0.0833333333333333", "\\frac{1}{12}", True), ("0.142857", "\\frac17", True),
        ("0.1429", "\\frac17", False), ("1.4142135623730951", "\\sqrt{2}", True),
        ("3.1416", "\\pi", False), ("3.14159", "\\pi", True), ("0.5", "\\frac12", True),
    ]:
        assert is_equivalent(pred, gold) is default, (pred, gold)
        assert is_equivalent(pred, gold, conventions="strict") is (pred == "0.5"), (pred, gold)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=2, max_size=5, unique=True), st.randoms())
def test_order_counts_for_tuples_never_for_sets_and_for_bare_lists_only_when_strict(items, rnd):
    shuffled = list(items)
    rnd.shuffle(shuffled)
    same = shuffled == items
    bare_p, bare_g = ", ".join(map(str, shuffled)), ", ".join(map(str, items))
    assert fast_verdict(f"({bare_p})", f"({bare_g})") is same
    assert fast_verdict(f"\\{{{bare_p}\\}}", f"\\{{{bare_g}\\}}") is True
    assert fast_verdict(bare_p, bare_g) is True
    assert fast_verdict(bare_p, bare_g, conventions="strict") is same


@pytest.mark.parametrize(
    "pred, gold, default, strict",
    [("c", "C", True, False), ("\\text{(C)}", "C", True, True), ("\\textbf{B}", "(B)", True, True),
     ("(C) parabola", "C", True, False), ("(A) or (B)", "A", False, False),
     ("A, B", "A", False, False), ("D", "C", False, False),
     ("\\(\\boxed{\\text{(B)}}\\)", "B", True, True), ("C.", "\\text{(C)}", True, True)],
)
def test_choice_letters_both_ways(pred, gold, default, strict):
    assert is_equivalent(pred, gold) is default
    assert is_equivalent(pred, gold, conventions="strict") is strict


linear = st.lists(st.integers(-9, 9), min_size=3, max_size=3).filter(lambda c: c[0] and c[1])


def _side(coeffs: list[int], letters: str = "xy") -> str:
    terms = [f"{c}{v}" for c, v in zip(coeffs, letters) if c] + [str(coeffs[-1])]
    return " + ".join(terms).replace("+ -", "- ")


@settings(max_examples=60, deadline=None)
@given(linear, st.integers(-5, 5).filter(bool), st.booleans())
def test_equations_are_compared_as_relations(coeffs, factor, mirror):
    a, b, c = coeffs
    gold = f"{_side([a, b, 0])[:-4]} = {-c}" if c else f"{_side([a, b, 0])[:-4]} = 0"
    scaled = f"{_side([factor * a, factor * b, 0])[:-4]} = {-factor * c}"
    pred = " = ".join(reversed(scaled.split(" = "))) if mirror else scaled
    assert fast_verdict(pred, gold) is True, (pred, gold)
    moved = f"{factor * a}x = {-factor * b}y + {-factor * c}".replace("+ -", "- ")
    assert fast_verdict(moved, gold) is True, (moved, gold)
    off = f"{_side([a + 1, b, 0])[:-4]} = {-c}"
    assert fast_verdict(off, gold) is False, (off, gold)


def test_relation_examples():
    assert fast_verdict("b = a", "a = b") is True
    assert fast_verdict("x = 2", "y = 2") is False
    assert fast_verdict("y = x^2", "x = y^2") is None  # not linear: the symbolic path decides
    assert relations_equal(["2y"], ["4x + 6"]) is None or True
    assert equation_sides("x = 41 or x = 42") is None and equation_sides("x \\le 2") is None
    assert equation_sides("a = b = c") == ["a", "b", "c"]
    assert is_name("|AB|") and is_name("S_1 : S_2") and not is_name("x^2 + y^2")


def test_conventions_are_validated_and_named():
    with pytest.raises(ValueError, match="decimal_digits must be None"):
        Conventions(decimal_digits=0)
    with pytest.raises(ValueError, match="name_value must be True or False"):
        Conventions(name_value="yes")
    with pytest.raises(ValueError, match="unknown conventions \\['digits'\\]"):
        as_conventions({"digits": 4})
    with pytest.raises(ValueError, match="'default', 'strict'"):
        is_equivalent("1", "1", conventions="lenient")
    assert as_conventions({"decimal_digits": 4}) == Conventions(decimal_digits=4)
    assert as_conventions(None) is DEFAULT and as_conventions("strict") == STRICT
    assert pickle.loads(pickle.dumps(STRICT)) == STRICT
    assert Conventions.from_key(STRICT.key()) == STRICT
    assert set(STRICT.changed()) == {"name_value", "relation_value", "decimal_digits",
                                     "ordered_lists", "choice_letters"}


def test_conventions_reach_the_pools_workers():
    # both pairs need math-verify (an irrational gold the fast path cannot evaluate)
    responses = ["Answer: 2.718281828459045", "Answer: 2.718281828459045"]
    assert score_batch(responses, ["e", "e"]).correct.all()
    assert not score_batch(responses, ["e", "e"], conventions="strict").correct.any()
