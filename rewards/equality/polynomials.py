"""Exact polynomials in one variable for the fast path of ``equivalence.fast_verdict``.

``parse_polynomial(text)`` reads a normalized answer such as ``x^2+12x+36``, ``(x+6)^2``,
``\\frac{x+1}{2}``, ``3(t-1)(t+1)`` into ``(variable, coefficients)``: the one letter used
(``""`` for a constant) and the sorted ``(exponent, coefficient)`` pairs with non-zero
rational coefficients. Two polynomials in the same variable are equal as functions exactly
when their coefficients are equal, so ``equivalence`` decides such pairs without sympy.

Grammar (whitespace already removed): sums and differences of terms; a term is a product of
factors, juxtaposed or joined by ``\\cdot``, ``\\times`` or ``*``, optionally ``/ n`` by an
integer; a factor is an integer, the variable, ``( ... )``, ``{ ... }`` or ``\\frac{A}{B}``
with a non-zero constant ``B``, optionally raised to ``^d`` or ``^{n}`` with ``0 <= n <=
MAX_DEGREE``. TeX reads one token for an unbraced argument: ``x^23`` is ``x^2 * 3``.
Rejected (None), so math-verify decides: decimals (it rounds them), any other command
(``\\sqrt``, ``\\pi``), two different letters, the letters ``e``, ``E``, ``i``, ``I`` (constants
to math-verify), degrees above ``MAX_DEGREE``, integers longer than ``MAX_DIGITS`` and
coefficients above ``MAX_BITS`` bits. Pure, never raises on ``str``; work is bounded by
those limits and the input length (at most 400 characters).

``parse_rational(text)`` reads a quotient of two such polynomials written ``\\frac{P}{Q}``
(optionally negated) with a non-constant ``Q``: ``\\frac{3}{x+1}``, ``\\frac{6}{2x+2}``. Two
quotients ``P1/Q1`` and ``P2/Q2`` in one variable are equal as rational functions exactly
when ``P1 Q2 = P2 Q1`` (``rationals_equal``), which is also how math-verify's simplification
decides them (``\\frac{x^2-1}{x-1}`` equals ``x+1``).

One known difference from math-verify: it keeps ``x^1`` as an unevaluated power and calls
``x^1`` and ``x`` different; here they are equal, as they are in mathematics.
"""

from __future__ import annotations

import re
from fractions import Fraction

from verimath.rewards.text.brackets import is_balanced

__all__ = ["MAX_DEGREE", "parse_polynomial", "parse_rational", "rationals_equal"]

MAX_DEGREE = 64
MAX_DIGITS = 30
MAX_BITS = 4096  # a coefficient larger than this (about 1,233 digits) is rejected
_TOKEN = re.compile(r"\\frac|\\cdot|\\times|[0-9]+|[A-Za-z]|[-+*/^{}()]|.", re.ASCII | re.DOTALL)
_CONSTANT_LETTERS = frozenset("eEiI")

Poly = dict[int, Fraction]  # exponent -> coefficient (zeros dropped)


class _Reject(Exception):
    """The text is not a polynomial of the supported shape."""


def parse_polynomial(text: str) -> tuple[str, tuple[tuple[int, Fraction], ...]] | None:
    """``(variable, ((exponent, coefficient), ...))`` for a polynomial, else None."""
    if not text or len(text) > 400:
        return None
    parser = _Parser(_TOKEN.findall(text))
    try:
        poly = parser.expression()
        if parser.i != len(parser.tokens):
            return None
    except (_Reject, RecursionError):
        return None
    variable = parser.variable if any(k for k in poly) else ""
    return variable, tuple(sorted(poly.items()))


class _Parser:
    """Recursive descent over tokens; ``variable`` is the one letter seen so far."""

    def __init__(self, tokens: list[str]):
        self.tokens, self.i, self.variable = tokens, 0, ""

    def peek(self) -> str:
        return self.tokens[self.i] if self.i < len(self.tokens) else ""

    def take(self, expected: str) -> None:
        if self.peek() != expected:
            raise _Reject
        self.i += 1

    def expression(self) -> Poly:
        total: Poly = {}
        sign = 1
        if self.peek() in ("+", "-"):
            sign = -1 if self.peek() == "-" else 1
            self.i += 1
        while True:
            total = _add(total, self.term(), sign)
            if self.peek() not in ("+", "-"):
                return total
            sign = -1 if self.peek() == "-" else 1
            self.i += 1

    def term(self) -> Poly:
        value = self.power()
        while self.peek() not in ("", "+", "-", ")", "}"):
            op = self.peek()
            if op in ("\\cdot", "\\times", "*", "/"):
                self.i += 1
            factor = self.power()
            value = _divide(value, factor) if op == "/" else _multiply(value, factor)
        return value

    def power(self) -> Poly:
        base = self.atom()
        if self.peek() != "^":
            return base
        self.i += 1
        if self.peek() == "{":
            self.i += 1
            exp = self.peek()
            self.i += 1
            self.take("}")
        else:
            exp = self._single_digit()
        if not exp.isdigit() or int(exp) > MAX_DEGREE:
            raise _Reject
        result: Poly = {0: Fraction(1)}
        for _ in range(int(exp)):
            result = _multiply(result, base)
        return result

    def atom(self) -> Poly:
        tok = self.peek()
        if tok.isdigit():
            if len(tok) > MAX_DIGITS:
                raise _Reject
            self.i += 1
            return _constant(int(tok))
        if len(tok) == 1 and tok.isalpha():
            if tok in _CONSTANT_LETTERS or self.variable not in ("", tok):
                raise _Reject
            self.variable = tok
            self.i += 1
            return {1: Fraction(1)}
        if tok in ("(", "{"):
            self.i += 1
            inner = self.expression()
            self.take(")" if tok == "(" else "}")
            return inner
        if tok == "\\frac":
            self.i += 1
            top = self.argument()
            return _divide(top, self.argument())
        raise _Reject

    def argument(self) -> Poly:
        """A braced group, or one token (``\\frac12``, ``\\frac x2``)."""
        if self.peek() == "{":
            return self.atom()
        if self.peek().isdigit():
            return _constant(int(self._single_digit()))
        return self.atom()

    def _single_digit(self) -> str:
        tok = self.peek()
        if not tok.isdigit():
            raise _Reject
        if len(tok) > 1:
            self.tokens[self.i : self.i + 1] = [tok[0], tok[1:]]
        self.i += 1
        return tok[0]


def _constant(value: int | Fraction) -> Poly:
    return {0: Fraction(value)} if value else {}


def _add(a: Poly, b: Poly, sign: int) -> Poly:
    out = dict(a)
    for k, c in b.items():
        out[k] = out.get(k, Fraction(0)) + sign * c
        if not out[k]:
            del out[k]
    return out


def _multiply(a: Poly, b: Poly) -> Poly:
    if a and b and max(a) + max(b) > MAX_DEGREE:
        raise _Reject
    out: Poly = {}
    for ka, ca in a.items():
        for kb, cb in b.items():
            out[ka + kb] = out.get(ka + kb, Fraction(0)) + ca * cb
    for c in out.values():  # ((2^{64})^{64})^{64}... would grow without bound
        if c.numerator.bit_length() > MAX_BITS or c.denominator.bit_length() > MAX_BITS:
            raise _Reject
    return {k: c for k, c in out.items() if c}


def _divide(a: Poly, b: Poly) -> Poly:
    """``a / b`` for a non-zero constant ``b`` only."""
    if set(b) != {0}:
        raise _Reject
    return {k: c / b[0] for k, c in a.items()}


_FRAC_WHOLE = re.compile(r"(-?)\\frac\{(.*)\}\{(.*)\}", re.DOTALL)


def parse_rational(text: str) -> tuple[str, tuple, tuple] | None:
    """``(variable, numerator, denominator)`` of ``\\frac{P}{Q}`` with polynomial ``P`` and
    non-constant polynomial ``Q`` in one variable (coefficients as in ``parse_polynomial``),
    else None. ``-\\frac{P}{Q}`` negates ``P``."""
    match = _FRAC_WHOLE.fullmatch(text)
    if match is None or not _balanced(match.group(2)) or not _balanced(match.group(3)):
        return None
    top, bottom = parse_polynomial(match.group(2)), parse_polynomial(match.group(3))
    if top is None or bottom is None or not bottom[0] or (top[0] and top[0] != bottom[0]):
        return None
    numerator = tuple((k, -c) for k, c in top[1]) if match.group(1) else top[1]
    return bottom[0], numerator, bottom[1]


def rationals_equal(a: tuple, b: tuple) -> bool | None:
    """Cross-multiplied equality of two ``parse_rational`` or ``parse_polynomial`` results
    (a polynomial is a quotient over 1); None for two different variables."""
    (va, pa, qa), (vb, pb, qb) = (_as_quotient(a), _as_quotient(b))
    if va and vb and va != vb:
        return None
    try:
        return _multiply(dict(pa), dict(qb)) == _multiply(dict(pb), dict(qa))
    except _Reject:
        return None


def _as_quotient(value: tuple) -> tuple:
    return value if len(value) == 3 else (value[0], value[1], ((0, Fraction(1)),))


def _balanced(text: str) -> bool:
    return is_balanced(text, "{", "}")
