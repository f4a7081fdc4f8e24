"""Decimals against exact values: the ``decimal_digits`` convention (``conventions``).

* A decimal **prediction** of an exact gold (``decimal_agrees``): equal values always agree
  (``0.5`` is ``\\frac12``). With ``digits`` set, a decimal written with at least ``digits``
  significant digits agrees when it is within half a unit of the gold's ``digits``-th
  significant digit, that is, correct to ``digits`` significant digits (``0.142857`` and
  ``0.0833333333333333`` for ``\\frac17`` and ``\\frac{1}{12}`` at 6 digits; ``0.1429`` has too
  few, ``0.666666`` is a cut, not a rounding, of ``\\frac23``). With ``digits=None`` nothing but
  equality agrees.
* A decimal **gold** written with ``k`` digits after the point and at least
  ``MIN_SIGNIFICANT`` significant digits is an exact value rounded to ``k`` places
  (``decimal_matches``): an exact prediction matches it when the prediction rounded to ``k``
  places (half away from zero) or cut to ``k`` places gives the gold (``\\frac{2}{3}`` for a
  gold ``0.667`` or ``0.666``; ``\\sqrt2`` for ``1.414``). With ``digits=None`` only an equal
  value matches.
* Two decimals are equal when they agree after rounding both to ``DECIMAL_PLACES`` places
  (math-verify's precision): ``0.50`` is ``0.5``, ``0.1234564`` is ``0.1234561``.

Exact values may be rationals that approximate an irrational number far beyond the digits
compared (``surd_value`` gives such for ``q * sqrt(m) * pi^k``).
"""

from __future__ import annotations

import decimal
import re
from fractions import Fraction

__all__ = [
    "DECIMAL_PLACES",
    "MIN_SIGNIFICANT",
    "decimal_agrees",
    "decimal_matches",
    "decimal_places",
    "decimals_equal",
    "significant_digits",
    "surd_value",
]

MIN_SIGNIFICANT = 3
DECIMAL_PLACES = 6
_DECIMAL = re.compile(r"\s*([-+]?)(\d*)\.(\d+)\s*")
_PI = Fraction("3.14159265358979323846264338327950288419716939937510582097494459")
_PRECISION = 60


def decimal_places(text: str) -> int | None:
    """``k``, the digits after the point of a plain decimal literal (``-0.125`` gives 3);
    ``None`` for anything else (integers, fractions, expressions)."""
    match = _DECIMAL.fullmatch(text)
    return None if match is None or len(text) > 60 else len(match.group(3))


def significant_digits(text: str) -> int | None:
    """Significant digits written in a decimal literal (``0.0830`` gives 3); None otherwise."""
    match = _DECIMAL.fullmatch(text)
    if match is None or len(text) > 60:
        return None
    digits = (match.group(2) + match.group(3)).lstrip("0")
    return len(digits)


def decimals_equal(a: Fraction, b: Fraction) -> bool:
    """Two decimals' values agree after rounding to ``DECIMAL_PLACES`` places."""
    return round(a, DECIMAL_PLACES) == round(b, DECIMAL_PLACES)


def decimal_agrees(text: str, value: Fraction, digits: int | None) -> bool:
    """Whether the decimal prediction ``text`` is the exact gold ``value`` (module rule)."""
    written = _written(text)
    if written is None:
        return False
    if written == value:
        return True
    count = significant_digits(text)
    if digits is None or count is None or count < digits or value == 0:
        return False
    unit = Fraction(10) ** (_exponent(abs(value)) - digits + 1)
    return abs(written - value) <= unit / 2


def decimal_matches(text: str, value: Fraction, digits: int | None = 6) -> bool:
    """Whether the decimal gold ``text`` matches the exact prediction ``value`` (module rule)."""
    written = _written(text)
    if written is None:
        return False
    if written == value:
        return True
    match = _DECIMAL.fullmatch(text)
    sign, whole, frac = match.groups()
    if digits is None or len((whole + frac).lstrip("0")) < MIN_SIGNIFICANT:
        return False
    k = len(frac)
    scaled = abs(value) * 10**k
    cut = int(scaled)
    rounded = cut + (1 if scaled - cut >= Fraction(1, 2) else 0)
    if (value < 0) != (written < 0) and value != 0:
        return False
    return abs(written) * 10**k in (cut, rounded)


def surd_value(q: Fraction, m: int, k: int) -> Fraction:
    """``q * sqrt(m) * pi^k`` as a rational exact to about ``_PRECISION`` digits."""
    with decimal.localcontext() as ctx:
        ctx.prec = _PRECISION
        root = Fraction(decimal.Decimal(m).sqrt()) if m != 1 else Fraction(1)
    return q * root * _PI**k


def _written(text: str) -> Fraction | None:
    match = _DECIMAL.fullmatch(text)
    if match is None or len(text) > 60:
        return None
    sign, whole, frac = match.groups()
    value = Fraction(int((whole or "0") + frac), 10 ** len(frac))
    return -value if sign == "-" else value


def _exponent(magnitude: Fraction) -> int:
    """The ``e`` with ``10^e <= magnitude < 10^(e+1)`` (``magnitude > 0``)."""
    exponent = len(str(magnitude.numerator)) - len(str(magnitude.denominator))
    while Fraction(10) ** exponent > magnitude:
        exponent -= 1
    while Fraction(10) ** (exponent + 1) <= magnitude:
        exponent += 1
    return exponent
