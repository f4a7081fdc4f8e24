"""A cheap guard against answers whose exact value is astronomically large.

``is_intractable(answer)`` is True when ``answer`` contains an integer power or factorial
whose value has more than ``MAX_RESULT_DIGITS`` digits: ``2^{10^{10}}``, ``9^{9^{9^{9}}}``,
``(10^{10})!``, ``100000000!``, ``((10!)!)!``. sympy would try to compute such a number
exactly and run until the scoring pool kills it; ``symbolic_verdict`` instead answers
``False`` at once (the verdict a timeout gives, minus the wait). No competition answer is an
integer of more than 100,000 digits, and a gold answer that is one never matches anything
but its identical spelling (which the fast path accepts before any guard).

How: whitespace, ``\\left`` and ``\\right`` are dropped, then the innermost integer powers
``b^{e}`` / ``b^d`` and factorials ``n!`` (``b``, ``e``, ``n`` integer literals, possibly in
braces or parentheses) are estimated one at a time: ``digits(b^e) = e * log10(b)``,
``digits(n!) = log10(n!)`` via ``lgamma``. A small result (at most ``EXACT_DIGITS`` digits)
is written back as its digits so that the enclosing power or factorial is estimated next;
a larger one is written back as a marker meaning "an integer above 10^18". Anything not of
this shape (``x^{10^{10}}``, ``2^{3\\cdot 10^{10}}``) is left to the pool's timeout, which
remains the real fence. Pure, never raises, O(len(answer)) per power or factorial.
"""

from __future__ import annotations

import math
import re

__all__ = ["MAX_RESULT_DIGITS", "is_intractable"]

MAX_RESULT_DIGITS = 100_000  # more digits than this: intractable
EXACT_DIGITS = 18  # results up to this many digits are written back exactly
_HUGE = "\ue000"  # private-use marker: an integer with more than EXACT_DIGITS digits
_OPAQUE = "\ue001"  # private-use marker: a value we do not track (2^{-3})
_INT = rf"(?:[0-9]+|{_HUGE})"
_OPERAND = rf"(?<![0-9.])(?:{_INT}|\{{{_INT}\}}|\({_INT}\))"
_POWER = re.compile(rf"(?P<base>{_OPERAND})\^(?:\{{(?P<exp>[+-]?{_INT})\}}|(?P<digit>[0-9]))")
_FACTORIAL = re.compile(rf"(?P<n>{_OPERAND})!")
_DROP = re.compile(r"\s+|\\left(?![A-Za-z])|\\right(?![A-Za-z])")


def is_intractable(answer: str) -> bool:
    """Whether ``answer`` holds an integer power or factorial above ``MAX_RESULT_DIGITS`` digits."""
    if not isinstance(answer, str) or ("^" not in answer and "!" not in answer):
        return False
    text = _DROP.sub("", answer)
    for _ in range(text.count("^") + text.count("!")):
        match = _POWER.search(text) or _FACTORIAL.search(text)
        if match is None:
            return False
        if match.re is _POWER:
            digits, value = _power(_operand(match["base"]), match["exp"] or match["digit"])
        else:
            digits, value = _factorial(_operand(match["n"]))
        if digits > MAX_RESULT_DIGITS:
            return True
        text = text[: match.start()] + value + text[match.end() :]
    return False


def _operand(text: str) -> str:
    return text.strip("{}()")


def _power(base: str, exp: str) -> tuple[float, str]:
    """``(digits, written-back text)`` of ``base^exp`` (digits is a lower bound for markers)."""
    negative = exp.startswith("-")
    exp = exp.lstrip("+-")
    if base != _HUGE and int(base) <= 1:
        return 1.0, base.lstrip("0") or "0"  # 0^e and 1^e are tiny
    if exp == _HUGE or len(exp) > EXACT_DIGITS:
        return math.inf, _HUGE
    e = int(exp)
    per_unit = EXACT_DIGITS if base == _HUGE else math.log10(int(base))
    digits = e * per_unit
    if negative or e == 0:
        return digits, "1" if e == 0 else _OPAQUE
    if base != _HUGE and digits <= EXACT_DIGITS:
        return digits, str(int(base) ** e)
    return digits, _HUGE


def _factorial(n: str) -> tuple[float, str]:
    """``(digits, written-back text)`` of ``n!``."""
    if n == _HUGE or len(n) > EXACT_DIGITS:
        return math.inf, _HUGE
    value = int(n)
    digits = math.lgamma(value + 1) / math.log(10)
    if digits <= EXACT_DIGITS:
        return digits, str(math.factorial(value))
    return digits, _HUGE
