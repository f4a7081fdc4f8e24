"""Exact numbers and lists for the fast path of ``equivalence.fast_verdict``.

Pure functions on already-normalized answers (see ``equivalence.normalize_answer``). Values
are exact rationals (``fractions.Fraction``); nothing is evaluated as code, and every
function does bounded work (number literals are read by ``verimath.rewards.text.numbers``,
with its digit and exponent bounds).

Verdict conventions (``True`` = certainly equivalent, ``False`` = certainly not, ``None`` =
math-verify decides):

* Numbers: equal values are ``True``. Unequal values are ``False`` unless math-verify could
  call them equal: it rounds decimals to 6 places (``float_rounding=6``), so values at most
  ``CLOSE_ABS = 10^-6`` apart are ``None``, and so are unequal non-integers of magnitude
  ``>= 10^15`` (beyond a float's 15 significant digits). Two distinct integers are always
  ``False`` (math-verify compares integers exactly), and so are two distinct rationals whose
  denominators are below 1000 (they differ by more than ``10^-6``). A percent sign on one
  side only also tries the value divided by 100 (``10%`` = ``0.1`` = ``10``).
* Lists: ``(a, b)``, ``[a, b]``, ``(a, b]``, ``[a, b)`` and ``\\{a, b\\}`` of plain numbers.
  Same brackets: compared element-wise in order (``\\{\\}``: as sets). Different bracket
  kinds are different *intervals* when both lists are two increasing endpoints and both
  brackets are interval brackets: ``(1, 2]`` is not ``[1, 2]`` (math-verify agrees: it
  compares the openness of each end). Other mixes (``(1, 2)`` vs ``\\{1, 2\\}``, which
  math-verify accepts as a pair; ``(2, 1)`` vs ``[2, 1]``, tuples to math-verify) are
  ``None``.
* Surds: ``q * sqrt(m) * pi^k`` products without decimals (``parse_surd``) are equal exactly
  when their canonical triples are; different triples are ``False``.
"""

from __future__ import annotations

import re
from fractions import Fraction

from verimath.rewards.text.numbers import MAX_DIGITS, parse_number

__all__ = [
    "CLOSE_ABS",
    "compare_lists",
    "compare_numbers",
    "parse_list",
    "parse_surd",
]

CLOSE_ABS = Fraction(1, 10**6)  # math-verify rounds decimals to 6 places
FLOAT_EXACT = 10**15  # above this, a float's 15 significant digits no longer tell values apart
_OPENERS = ("(", "[", "\\{")
_CLOSERS = (")", "]", "\\}")
INTERVAL_KINDS = ("()", "[]", "(]", "[)")


def compare_numbers(a: tuple[Fraction, bool], b: tuple[Fraction, bool]) -> bool | None:
    """Equal values -> True; values math-verify's rounding may merge -> None; else False."""
    (va, pa), (vb, pb) = a, b
    candidates = [(va, vb)]
    if pa != pb:  # "10%" matches both 10 and 0.1
        candidates.append((va / 100, vb) if pa else (va, vb / 100))
    if any(x == y for x, y in candidates):
        return True
    if any(is_close(x, y) for x, y in candidates):
        return None
    return False


def is_close(x: Fraction, y: Fraction) -> bool:
    """Whether unequal ``x`` and ``y`` might still round to the same float in math-verify.

    ``|x - y| <= 10^-6`` (6 decimal places), or both beyond ``FLOAT_EXACT`` in size with one of
    them not an integer. Two distinct integers are never close.
    """
    if x.denominator == 1 and y.denominator == 1:
        return False
    if abs(x - y) <= CLOSE_ABS:
        return True
    return max(abs(x), abs(y)) >= FLOAT_EXACT


def parse_list(text: str) -> tuple[str, list[Fraction]] | None:
    """``(brackets, numbers)`` for ``(1,2)``, ``[0,\\frac12)``, ``\\{3,1\\}``; else None."""
    left = next((b for b in _OPENERS if text.startswith(b)), None)
    close = next((b for b in _CLOSERS if text.endswith(b)), None)
    if left is None or close is None or len(text) < len(left) + len(close):
        return None
    inner = text[len(left) : len(text) - len(close)]
    if any(c in inner for c in "()[]") or "\\{" in inner:
        return None
    values = []
    for item in inner.split(","):
        parsed = parse_number(item)
        if parsed is None or parsed[1]:
            return None
        values.append(parsed[0])
    return left + close, values


def compare_lists(a: tuple[str, list[Fraction]], b: tuple[str, list[Fraction]]) -> bool | None:
    """Lists of numbers: see the module docstring for the rules.

    Unequal lists with a pair of close but unequal entries are left to math-verify, which
    rounds (see ``is_close``).
    """
    (ka, va), (kb, vb) = a, b
    if ka != kb:
        return False if _are_distinct_intervals(a, b) else None
    if ka == "\\{\\}":
        if set(va) == set(vb):
            return True
        pairs = [(x, y) for x in va for y in vb]
    elif len(va) != len(vb):
        return False if ka in ("()", "[]") else None
    elif va == vb:
        return True
    else:
        pairs = list(zip(va, vb))
    return None if any(x != y and is_close(x, y) for x, y in pairs) else False


def _are_distinct_intervals(a: tuple[str, list[Fraction]], b: tuple[str, list[Fraction]]) -> bool:
    """Both are intervals ``lo < hi`` with interval brackets of different kinds."""
    return all(
        kind in INTERVAL_KINDS and len(ends) == 2 and ends[0] < ends[1] for kind, ends in (a, b)
    ) and a[0] != b[0]


# --- products of a rational, square roots and powers of pi ------------------------------

MAX_RADICAND = 10**6  # larger radicands are left to math-verify (square-factoring cost)
_SURD_TOKEN = re.compile(r"\\frac|\\sqrt|\\pi|\\cdot|\\times|[0-9]+|[{}+-]|.", re.ASCII)

# (q, m, k) is q * sqrt(m) * pi^k, m squarefree, q != 0 or (0, 1, 0)
Surd = tuple[Fraction, int, int]


def parse_surd(text: str) -> Surd | None:
    """Exact value ``q * sqrt(m) * pi^k`` of a product like ``3\\sqrt{2}``, ``\\pi\\cdot4``,
    ``\\frac{\\sqrt{3}}{2}``, ``-\\frac{5\\pi}{6}``; None for anything else.

    Grammar (on normalized text): an optional sign, then a product of factors (juxtaposed or
    joined by ``\\cdot``/``\\times``): integers, ``\\pi``, ``\\sqrt{n}``/``\\sqrt d`` (``n`` an
    integer up to ``MAX_RADICAND``; TeX's brace-less ``\\sqrt 12`` is ``\\sqrt{1}2``) and
    ``\\frac{A}{B}``/``\\frac dd`` of such products. No decimals (math-verify compares those
    after rounding, so they are its call). ``m`` is squarefree, so two values are equal
    exactly when their triples are (``sqrt`` of distinct squarefree numbers are linearly
    independent over the rationals, and ``pi`` is transcendental).
    """
    tokens = _SURD_TOKEN.findall(text)
    sign = -1 if tokens[:1] == ["-"] else 1
    start = 1 if tokens[:1] in (["-"], ["+"]) else 0
    value, end = _surd_product(tokens, start)
    if value is None or end != len(tokens):
        return None
    q, m, k = value
    return (Fraction(0), 1, 0) if q == 0 else (sign * q, m, k)


def _surd_product(tokens: list[str], i: int) -> tuple[Surd | None, int]:
    """Parse factors from ``tokens[i]`` while they continue; ``(value, next index)``."""
    value: Surd = (Fraction(1), 1, 0)
    count = 0
    while i < len(tokens) and tokens[i] not in ("}", "+", "-"):
        if tokens[i] in ("\\cdot", "\\times") and count:
            i += 1
        factor, i = _surd_factor(tokens, i)
        if factor is None:
            return None, i
        value = _surd_multiply(value, factor)
        if value is None:
            return None, i
        count += 1
    return (value if count else None), i


def _surd_factor(tokens: list[str], i: int) -> tuple[Surd | None, int]:
    tok = tokens[i] if i < len(tokens) else ""
    if tok.isdigit() and len(tok) <= MAX_DIGITS:
        return (Fraction(int(tok)), 1, 0), i + 1
    if tok == "\\pi":
        return (Fraction(1), 1, 1), i + 1
    if tok == "\\sqrt":
        arg, i = _surd_argument(tokens, i + 1)
        if arg is None or arg[1] != 1 or arg[2] != 0 or arg[0].denominator != 1:
            return None, i
        return _sqrt_integer(arg[0].numerator), i
    if tok == "\\frac":
        top, i = _surd_argument(tokens, i + 1)
        bottom, i = _surd_argument(tokens, i)
        if top is None or bottom is None or bottom[0] == 0:
            return None, i
        q, m, k = bottom  # 1 / (q sqrt(m) pi^k) = sqrt(m) / (q m) * pi^-k
        return _surd_multiply(top, (1 / (q * m), m, -k)), i
    return None, i


def _surd_argument(tokens: list[str], i: int) -> tuple[Surd | None, int]:
    """A braced product ``{...}`` or a single digit (TeX reads one token)."""
    tok = tokens[i] if i < len(tokens) else ""
    if tok == "{":
        value, i = _surd_product(tokens, i + 1)
        if i >= len(tokens) or tokens[i] != "}":
            return None, i
        return value, i + 1
    if tok.isdigit():  # "\frac12" is \frac{1}{2}: split a digit run into single tokens
        tokens[i : i + 1] = list(tok)
        return (Fraction(int(tokens[i])), 1, 0), i + 1
    return None, i


def _surd_multiply(a: Surd, b: Surd) -> Surd | None:
    (qa, ma, ka), (qb, mb, kb) = a, b
    if ma * mb > MAX_RADICAND:
        return None
    q, m, k = _sqrt_integer(ma * mb)
    return q * qa * qb, m, ka + kb


def _sqrt_integer(n: int) -> Surd | None:
    """``sqrt(n) = s * sqrt(m)`` with ``m`` squarefree, as ``(s, m, 0)``; None when too big."""
    if n < 0 or n > MAX_RADICAND:
        return None
    if n == 0:
        return Fraction(0), 1, 0
    outside, inside, f = 1, n, 2
    while f * f <= inside:
        while inside % (f * f) == 0:
            inside //= f * f
            outside *= f
        f += 1
    return Fraction(outside), inside, 0
