"""Number literals read exactly: integers, decimals, scientific notation, fractions, percents.

Pure functions on ``str`` (already normalized answers: see
``verimath.rewards.equality.equivalence.normalize_answer``). Values are exact rationals
(``fractions.Fraction``); nothing is evaluated as code, and every function does bounded work:
at most ``MAX_DIGITS`` digits per literal and ``|exponent| <= MAX_EXPONENT``. Both the answer
extraction (is this sentence's tail a number?) and the equality rules read numbers here.
"""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = ["MAX_DIGITS", "MAX_EXPONENT", "integer_digits", "parse_number"]

MAX_DIGITS = 80  # digits in one number literal on the fast path
MAX_EXPONENT = 120  # |k| in 1.5e{k} / 1.5\times10^{k} on the fast path

_NUM = r"(?:[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]*)?|[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_LITERAL = re.compile(
    rf"(?P<sign>[+-]?)(?P<num>{_NUM})"
    r"(?:[eE](?P<e1>[+-]?[0-9]+)|(?:\\times|\\cdot)10\^(?:\{(?P<e2>[+-]?[0-9]+)\}|(?P<e3>[0-9])))?",
    re.ASCII,
)
_FRAC = re.compile(
    r"(?P<sign>[+-]?)(?P<whole>[0-9]+)?\\frac"
    r"(?:\{(?P<a>[^{}]*)\}|(?P<ad>[0-9]))(?:\{(?P<b>[^{}]*)\}|(?P<bd>[0-9]))",
    re.ASCII,
)
_POW10 = re.compile(r"10\^(?:\{(?P<e>[+-]?[0-9]{1,6})\}|(?P<d>[0-9]))", re.ASCII)
_INTEGER = re.compile(r"[+-]?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)", re.ASCII)


def integer_digits(text: str) -> str | None:
    """Canonical digits of an integer spelling (sign kept, commas and leading zeros dropped)."""
    if not _INTEGER.fullmatch(text):
        return None
    sign = "-" if text.startswith("-") else ""
    digits = text.lstrip("+-").replace(",", "").lstrip("0")
    return sign + digits if digits else "0"


def _parse_literal(match: re.Match) -> Fraction | None:
    """Value of a ``_LITERAL`` match, or None when digit/exponent bounds are exceeded."""
    num = match.group("num").replace(",", "")
    exp = match.group("e1") or match.group("e2") or match.group("e3") or "0"
    if len(num) > MAX_DIGITS or abs(int(exp)) > MAX_EXPONENT or num in (".", ""):
        return None
    value = Fraction(num) * Fraction(10) ** int(exp)
    return -value if match.group("sign") == "-" else value


def parse_number(text: str) -> tuple[Fraction, bool] | None:
    """``(value, has_percent)`` for a plain number, fraction or mixed number, else None."""
    percent = text.endswith("%")
    body = text[:-1] if percent else text
    if body.startswith("(") and body.endswith(")") and "," not in body:
        body = body[1:-1]  # "(5)" is 5; "(1,2)" is a list
    literal = _LITERAL.fullmatch(body)
    power = _POW10.fullmatch(body)
    if literal is not None:
        value = _parse_literal(literal)
    elif power is not None:
        exp = int(power.group("e") or power.group("d"))
        value = Fraction(10) ** exp if abs(exp) <= MAX_EXPONENT else None
    elif "/" in body and body.count("/") == 1:
        value = _ratio(*body.split("/"))
    else:
        value = _parse_frac(body)
    return None if value is None else (value, percent)


def _ratio(top: str, bottom: str) -> Fraction | None:
    """``top / bottom`` when both are plain number literals and ``bottom != 0``."""
    a, b = _LITERAL.fullmatch(top), _LITERAL.fullmatch(bottom)
    if a is None or b is None:
        return None
    num, den = _parse_literal(a), _parse_literal(b)
    if num is None or den is None or den == 0:
        return None
    return num / den


def _parse_frac(text: str) -> Fraction | None:
    """``\\frac{a}{b}``, ``\\frac12``, ``-\\frac{a}{b}`` and mixed ``2\\frac{1}{2}`` (= 5/2)."""
    match = _FRAC.fullmatch(text)
    if match is None:
        return None
    value = _ratio(match.group("a") or match.group("ad"), match.group("b") or match.group("bd"))
    if value is None:
        return None
    whole = match.group("whole")
    if whole is not None:
        if value < 0 or len(whole) > MAX_DIGITS:
            return None  # "2\frac{-1}{2}" is no mixed number
        value += int(whole)
    return -value if match.group("sign") == "-" else value
