"""One tolerance rule for decimals against exact values.

* A decimal **gold** written with ``k`` digits after the point and at least
  ``MIN_SIGNIFICANT`` significant digits is an exact value rounded to ``k`` places: an exact
  prediction matches it when the prediction rounded to ``k`` places (half away from zero) or
  cut to ``k`` places (toward zero) is the gold. ``\\frac{2}{3}`` matches a gold ``0.667`` or
  ``0.666``; ``\\sqrt2`` matches ``1.414``. The slack scales with the digits given: one more
  digit, ten times less. A gold with fewer significant digits (``0.6``) matches only an
  equal value.
* A decimal **prediction** against an exact gold is the exact answer only when it equals it
  (``0.5`` is ``\\frac12``, ``0.125`` is ``\\frac18``): an approximation is not the answer,
  however many digits it has (``0.142857`` is not ``\\frac17``, ``3.1416`` is not ``\\pi``).
* Two decimals are equal when they agree after rounding both to ``DECIMAL_PLACES`` places
  (math-verify's precision): ``0.50`` is ``0.5``, ``0.1234564`` is ``0.1234561``.
"""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = ["DECIMAL_PLACES", "MIN_SIGNIFICANT", "decimal_matches", "decimal_places", "decimals_equal"]

MIN_SIGNIFICANT = 3
DECIMAL_PLACES = 6
_DECIMAL = re.compile(r"\s*([-+]?)(\d*)\.(\d+)\s*")


def decimal_places(text: str) -> int | None:
    """``k``, the digits after the point of a plain decimal literal (``-0.125`` gives 3);
    ``None`` for anything else (integers, fractions, expressions)."""
    match = _DECIMAL.fullmatch(text)
    return None if match is None or len(text) > 60 else len(match.group(3))


def decimals_equal(a: Fraction, b: Fraction) -> bool:
    """Two decimals' values agree after rounding to ``DECIMAL_PLACES`` places."""
    return round(a, DECIMAL_PLACES) == round(b, DECIMAL_PLACES)


def decimal_matches(text: str, value: Fraction) -> bool:
    """Whether the decimal gold ``text`` matches the exact prediction ``value`` (module rule).

    ``value`` may be a close rational approximation of an irrational number, as long as it
    is exact to well beyond ``k`` places."""
    match = _DECIMAL.fullmatch(text)
    if match is None:
        return False
    sign, whole, frac = match.groups()
    k = len(frac)
    written = Fraction(int((whole or "0") + frac), 10**k) * (-1 if sign == "-" else 1)
    if written == value:
        return True
    if len((whole + frac).lstrip("0")) < MIN_SIGNIFICANT:
        return False
    scaled = abs(value) * 10**k
    cut = int(scaled)
    rounded = cut + (1 if scaled - cut >= Fraction(1, 2) else 0)
    magnitude = abs(written) * 10**k
    if (value < 0) != (written < 0) and value != 0:
        return False
    return magnitude in (cut, rounded)
