"""The numeric check of the calling process (rewards/equality/numeric.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.rewards.equality.conventions import DEFAULT
from verimath.rewards.equality.equivalence import fast_verdict, symbolic_verdict
from verimath.rewards.equality.numeric import numeric_verdict, parse_expression
from verimath.rewards.extraction.final_answer import answer_core

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_rewards.py"


def _numeric_table_pairs() -> list[tuple[str, str]]:
    spec = importlib.util.spec_from_file_location("bench_rewards", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    pairs = [(answer_core(p), g) for p, g in bench.table_pairs()]
    return [(p, g) for p, g in pairs
            if fast_verdict(p, g) is None and numeric_verdict(p, g, DEFAULT) is not None]


NUMERIC_PAIRS = _numeric_table_pairs()


def test_the_numeric_check_decides_many_table_pairs():
    assert len(NUMERIC_PAIRS) >= 40


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(NUMERIC_PAIRS))
def test_its_verdict_is_the_one_the_symbolic_path_reaches(pair):
    assert numeric_verdict(*pair, DEFAULT) == symbolic_verdict(*pair), pair


@pytest.mark.parametrize(
    "pred, gold, expected",
    [
        ("\\sin 2x", "2\\sin x \\cos x", True), ("\\sin x \\cos x", "\\frac{\\sin 2x}{2}", True),
        ("\\sin x^2", "\\sin(x^2)", True), ("1/2x", "\\frac{1}{2x}", True),
        ("\\log 100", "2", True), ("\\log_2 8", "3", True), ("\\ln(e^3)", "3", True),
        ("\\sqrt[3]{-8}", "-2", True), ("e^{i\\pi}", "-1", True), ("(1+i)^2", "2i", True),
        ("\\sqrt{x^2}", "x", False), ("\\sin(-x)", "\\sin x", False),
        ("\\frac{1+\\sqrt{5}}{2}", "2", False),
        ("x+1", "x+2n+1", False), ("e^{\\pi\\sqrt{163}}", "262537412640768744", None),
    ],
)
def test_readings_and_values(pred, gold, expected):
    assert numeric_verdict(pred, gold, DEFAULT) is expected


@pytest.mark.parametrize(
    "text",
    ["|x|", "\\lfloor x \\rfloor", "0.5x", "\\sin x \\cdot y", "18 apples", "1, 2", "3!",
     "\\sin^{-1} x", "a/b \\cdot c", "\\binom{5}{2}", "ab", "x \\ge 2", "i + x", "\\sin", "x^{"],
)
def test_what_math_verify_might_read_otherwise_is_left_to_the_pool(text):
    assert numeric_verdict(text, "x", DEFAULT) is None
    if text != "i + x":  # readable alone, but "i" beside "x" is no imaginary unit
        assert parse_expression(text) is None


@settings(max_examples=40, deadline=None)
@given(st.integers(-9, 9), st.integers(-9, 9), st.sampled_from(["\\sin", "\\cos", "\\exp", ""]))
def test_factored_and_expanded_forms_agree_and_a_changed_coefficient_does_not(a, b, func):
    wrap = (lambda t: f"{func}({t})") if func else (lambda t: t)
    factored = wrap(f"(x + {a})(x + {b})".replace("+ -", "- "))
    expanded = wrap(f"x^2 + {a + b}x + {a * b}".replace("+ -", "- "))
    changed = wrap(f"x^2 + {a + b + 1}x + {a * b}".replace("+ -", "- "))
    assert numeric_verdict(factored, expanded, DEFAULT) is True, (factored, expanded)
    assert numeric_verdict(changed, expanded, DEFAULT) is False, (changed, expanded)
