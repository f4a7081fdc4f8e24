"""Written rules that decide a pair before any algebra: letter case, words, value vs equation,
decimals vs exact numbers. Pure functions on normalized answers (``normalize_answer``).

Letter case:
    * a choice letter (a gold that is one letter ``A``-``J``, optionally in parentheses)
      matches the same letter in either case (``c``, ``(C)``), and nothing more (``(C)
      parabola`` is not ``(C)``);
    * words (answers of letters only, two or more, such as ``Yes``, ``Monday``, ``even``)
      are compared case-insensitively;
    * in math, case is meaning: ``X`` is not ``x``, ``2X + 1`` is not ``2x + 1``; a pair
      whose letters differ only in case is unequal;
    * units are dropped before comparison (``normalize_answer``), so their case never counts.

Value vs equation:
    * ``v = value`` with a lone variable ``v`` on the left is that value, on either side:
      ``2`` matches a gold ``y = 2``, and ``2x + 3`` matches ``y = 2x + 3``;
    * two such assignments to different variables differ (``x = 2`` is not ``y = 2``);
    * an equation that is not solved for a lone variable (``x^2 + y^2 = 4``) is matched only
      by an equation (``relations`` in the symbolic path decides which ones).

Decimals vs exact values: ``tolerance`` (a decimal gold is a rounded exact value; a decimal
prediction of an exact gold must equal it).
"""

from __future__ import annotations

import re
from fractions import Fraction

from verimath.rewards.equality.tolerance import decimal_matches, decimal_places, decimals_equal

__all__ = ["case_verdict", "decimal_verdict", "letters_differ_in_case", "variable_verdict"]

_CHOICE = re.compile(r"\(?([A-Ja-j])\)?\.?")
_WORDS = re.compile(r"[A-Za-z][A-Za-z ]*[A-Za-z]")
_COMMAND = re.compile(r"\\[A-Za-z]+")
_LETTER = re.compile(r"[A-Za-z]")
_ASSIGN = re.compile(r"\s*([A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?(?:\([^()=]*\))?)\s*=\s*([^=<>]+)")
_EQUATION = re.compile(r"(?<![<>!\\])=")


def case_verdict(pred: str, gold: str) -> bool | None:
    """The letter-case rules of the module docstring: True/False when one decides."""
    choice = _CHOICE.fullmatch(gold)
    if choice is not None and choice.group(1).isupper():
        other = _CHOICE.fullmatch(pred)
        return other is not None and other.group(1).upper() == choice.group(1)
    if _WORDS.fullmatch(pred) and _WORDS.fullmatch(gold) and len(gold) > 1 and len(pred) > 1:
        if pred.casefold() == gold.casefold():
            return True
    if letters_differ_in_case(pred, gold):
        return False
    return None


def letters_differ_in_case(pred: str, gold: str) -> bool:
    """Whether the letters written outside LaTeX commands differ, but not when lowercased."""
    a = sorted(_LETTER.findall(_COMMAND.sub(" ", pred)))
    b = sorted(_LETTER.findall(_COMMAND.sub(" ", gold)))
    return a != b and [c.lower() for c in a] == [c.lower() for c in b]


def variable_verdict(pred: str, gold: str) -> bool | None:
    """False for assignments to different variables (``x = 2`` against ``y = 2``)."""
    a, b = _ASSIGN.fullmatch(pred), _ASSIGN.fullmatch(gold)
    if a is not None and b is not None and a.group(1) != b.group(1):
        return False
    return None


def is_unsolved_equation(text: str) -> bool:
    """An equation whose left side is not a lone variable (``x^2 + y^2 = 4``)."""
    if "," in text or ";" in text:
        return False  # a list of equations is compared item by item
    return _EQUATION.search(text) is not None and _ASSIGN.fullmatch(text) is None


def decimal_verdict(p: str, a: Fraction, g: str, b: Fraction) -> bool | None:
    """Two numbers, one or both written as decimals: the tolerance rule decides; else None."""
    if a == b:
        return True
    dp, dg = decimal_places(p), decimal_places(g)
    if dp is not None and dg is not None:
        return decimals_equal(a, b)
    if dg is not None:
        return decimal_matches(g, a)
    return False if dp is not None else None
