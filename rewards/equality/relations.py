"""Equations, their sides, and which side is the answer.

``equation_sides(text)`` splits an equation (``a = b``, a chain ``a = b = c``, or
``a \\approx b``) at its top-level relation signs; an inequality, a list (a top-level comma),
alternatives (``x = 41 or x = 42``) or text without ``=`` gives None. Two equations are
compared as relations (``relations_equal``): both are written ``first side - last side = 0``
and read as polynomials with rational coefficients in any number of letters; they are the same
relation when one polynomial is a non-zero constant times the other (``b = a`` is ``a = b``;
``2y = 4x + 6`` is ``y = 2x + 3``; ``x + y = 5`` is ``y = 5 - x``). Two linear relations that
are not proportional differ (``x = 2`` is not ``y = 2``); for others the symbolic path decides.

``is_name(side)`` says whether the left side of ``name = value`` names the answer (see
``conventions`` for the forms), ``is_computation(side)`` whether it is a computation
without letters (``\\log_2 8``, ``17 \\bmod 5``). Pure, bounded work, never raises on ``str``.
"""

from __future__ import annotations

import re
from fractions import Fraction

from verimath.rewards.text.brackets import top_level_split

__all__ = ["equation_sides", "is_computation", "is_name", "parse_multivariate", "relations_equal"]

MAX_CHARS = 400
MAX_DEGREE = 12
MAX_TERMS = 200
MAX_BITS = 4096

_RELATION_SIGN = re.compile(r"<|>|\\(?:le|ge|leq|geq|leqslant|geqslant|lt|gt|ne|neq|in|notin"
                            r"|subset|subseteq|supset|cup|cap)(?![A-Za-z])|≤|≥|≠|∈")
_ALTERNATIVES = re.compile(r"\b(?:or|and)\b|\\(?:lor|vee|quad|qquad)(?![A-Za-z])")
_EQUALS = re.compile(r"(?<![<>!=:\\])=(?!=)|\\approx(?![A-Za-z])")
_GREEK = (r"alpha|beta|gamma|delta|epsilon|varepsilon|zeta|eta|theta|vartheta|iota|kappa|lambda"
          r"|mu|nu|xi|rho|sigma|tau|upsilon|phi|varphi|chi|psi|omega|Gamma|Delta|Theta|Lambda"
          r"|Xi|Sigma|Phi|Psi|Omega")
_LETTER = rf"(?:[A-Za-z]|\\(?:{_GREEK})(?![A-Za-z]))"
_SUB = r"(?:_(?:\{[A-Za-z0-9,+\-]+\}|[A-Za-z0-9]))?'*"
_SYMBOL = rf"{_LETTER}{_SUB}"
_ARGS = r"\((?:[^()=]|\([^()=]*\))*\)"
_CAPITALS = r"[A-Z]{2,4}"
_SIMPLE_NAME = (rf"(?:{_SYMBOL}(?:{_ARGS})?|{_CAPITALS}|\\(?:sin|cos|tan|cot|sec|csc)\s*{_SYMBOL}"
                rf"|\\(?:overline|overrightarrow|vec|widehat|hat)\s*\{{[^{{}}]*\}})")
_NAME = re.compile(
    rf"\s*(?:(?:m\s*)?\\angle\s*{_CAPITALS}|\\angle\s*{_SYMBOL}|\|\s*{_SIMPLE_NAME}\s*\||\[\s*{_CAPITALS}\s*\]"
    rf"|{_SIMPLE_NAME}(?:\s*(?::|\\colon)\s*{_SIMPLE_NAME})*|\\text\{{[A-Za-z ]+\}})\s*"
)
_COMMAND = re.compile(r"\\[A-Za-z]+")
_COMPUTING = frozenset((
    "\\frac", "\\dfrac", "\\tfrac", "\\sqrt", "\\log", "\\ln", "\\lg", "\\sin", "\\cos", "\\tan",
    "\\binom", "\\dbinom", "\\gcd", "\\bmod", "\\mod", "\\cdot", "\\times", "\\div", "\\left",
    "\\right", "\\pi", "\\operatorname", "\\text", "\\mathrm", "\\lcm", "\\max", "\\min",
))


def equation_sides(text: str) -> list[str] | None:
    """The sides of an equation or chain of equations; None for anything else."""
    if len(text) > MAX_CHARS or ("=" not in text and "\\approx" not in text):
        return None
    if _RELATION_SIGN.search(text) or len(top_level_split(text, ",")) > 1 or ";" in text:
        return None
    if _ALTERNATIVES.search(text):
        return None  # "x = 41 or x = 42": alternatives, not one relation
    sides, pos = [], 0
    for match in _EQUALS.finditer(text):
        sides.append(text[pos:match.start()].strip())
        pos = match.end()
    sides.append(text[pos:].strip())
    if len(sides) < 2 or not all(sides) or not all(_balanced(s) for s in sides):
        return None
    return sides


def is_name(side: str) -> bool:
    """Whether ``side`` names the answer: ``y``, ``a_1``, ``AB``, ``f(x)``, ``P(3)``, ``\\cos A``,
    ``|AB|``, ``\\angle ABC``, ``S_1 : S_2``, ``\\overline{AB}``, ``\\text{Area}``."""
    return len(side) <= 80 and _NAME.fullmatch(side) is not None


def is_computation(side: str) -> bool:
    """A computation without letters (``\\log_2 8``, ``17 \\bmod 5``, ``2^{10}``): digits and
    operators, and only the commands of arithmetic."""
    if len(side) > 200 or not any(c.isdigit() for c in side):
        return False
    if any(cmd not in _COMPUTING for cmd in _COMMAND.findall(side)):
        return False
    return re.search(r"[A-Za-z]", _COMMAND.sub(" ", side).replace("{lcm}", "")) is None


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"(": 1, "{": 1, "[": 1, ")": -1, "}": -1, "]": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


# --- polynomials in several letters ------------------------------------------------------

Monomial = tuple[tuple[str, int], ...]  # sorted (letter, exponent) pairs; () is the constant
MultiPoly = dict[Monomial, Fraction]

_TOKEN = re.compile(
    rf"\\frac|\\cdot|\\times|[0-9]+(?:\.[0-9]+)?|\\(?:{_GREEK})(?![A-Za-z]){_SUB}|[A-Za-z]{_SUB}"
    r"|[-+*/^{}()]|\\[A-Za-z]+|.",
    re.DOTALL,
)
_CONSTANT_LETTERS = frozenset("eEiI")


class _Reject(Exception):
    """Not a polynomial of the supported shape."""


def parse_multivariate(text: str) -> MultiPoly | None:
    """``text`` (spaces removed) as a polynomial in its letters with rational coefficients,
    or None: ``2y-4x-6``, ``\\frac{x^2}{16}+\\frac{y^2}{12}``, ``x_1+x_2``. Other commands,
    ``e``/``i`` (constants), function calls and degrees above ``MAX_DEGREE`` are rejected."""
    if not text or len(text) > MAX_CHARS:
        return None
    parser = _Parser(_TOKEN.findall(text.replace(" ", "")))
    try:
        poly = parser.expression()
        if parser.i != len(parser.tokens):
            return None
    except (_Reject, RecursionError, ZeroDivisionError):
        return None
    return poly


def relations_equal(a: list[str], b: list[str]) -> bool | None:
    """Two equations (``equation_sides``) as relations: True when ``first - last`` of one is a
    non-zero constant times that of the other; False when both are linear and are not; else
    None (the symbolic path decides). Sides are normalized answers without spaces."""
    pa, pb = _difference(a), _difference(b)
    if pa is None or pb is None:
        return None
    if not pa or not pb:
        return None  # "x = x": an identity; the symbolic path decides
    monomial, ca = next(iter(pa.items()))
    ratio = pb.get(monomial, Fraction(0)) / ca
    if ratio and set(pa) == set(pb) and all(pb[m] == ratio * c for m, c in pa.items()):
        return True
    linear = all(sum(e for _, e in m) <= 1 for m in (*pa, *pb))
    return False if linear else None


def _difference(sides: list[str]) -> MultiPoly | None:
    left, right = parse_multivariate(sides[0]), parse_multivariate(sides[-1])
    if left is None or right is None:
        return None
    return _add(left, right, -1)


class _Parser:
    def __init__(self, tokens: list[str]):
        self.tokens, self.i = tokens, 0

    def peek(self) -> str:
        return self.tokens[self.i] if self.i < len(self.tokens) else ""

    def expression(self) -> MultiPoly:
        total: MultiPoly = {}
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

    def term(self) -> MultiPoly:
        value = self.power()
        while self.peek() not in ("", "+", "-", ")", "}"):
            op = self.peek()
            if op in ("\\cdot", "\\times", "*", "/"):
                self.i += 1
            factor = self.power()
            value = _divide(value, factor) if op == "/" else _multiply(value, factor)
        return value

    def power(self) -> MultiPoly:
        base = self.atom()
        if self.peek() != "^":
            return base
        self.i += 1
        tok = self.peek()
        if tok == "{":
            self.i += 1
            exp = self.peek()
            self.i += 1
            if self.peek() != "}":
                raise _Reject
            self.i += 1
        elif tok[:1].isdigit():
            exp = tok[0]
            if len(tok) > 1:
                self.tokens[self.i] = tok[1:]
            else:
                self.i += 1
        else:
            raise _Reject
        if not exp.isdigit() or int(exp) > MAX_DEGREE:
            raise _Reject
        result: MultiPoly = {(): Fraction(1)}
        for _ in range(int(exp)):
            result = _multiply(result, base)
        return result

    def atom(self) -> MultiPoly:
        tok = self.peek()
        if tok[:1].isdigit():
            self.i += 1
            return {(): Fraction(tok)} if Fraction(tok) else {}
        if tok in ("(", "{"):
            self.i += 1
            inner = self.expression()
            if self.peek() != (")" if tok == "(" else "}"):
                raise _Reject
            self.i += 1
            if tok == "(" and self.i >= 2 and self._called():
                raise _Reject  # "f(x)": a function call, not a product
            return inner
        if tok == "\\frac":
            self.i += 1
            top = self.argument()
            return _divide(top, self.argument())
        is_letter_or_command = tok[:1].isalpha() or tok.startswith("\\")
        if is_letter_or_command and tok not in ("\\frac", "\\cdot", "\\times"):
            is_other_command = tok.startswith("\\") and not re.match(rf"\\(?:{_GREEK})", tok)
            if tok in _CONSTANT_LETTERS or is_other_command:
                raise _Reject
            self.i += 1
            return {((tok, 1),): Fraction(1)}
        raise _Reject

    def _called(self) -> bool:
        """Whether the group just read follows a letter directly (``f(x)``)."""
        depth, j = 0, self.i - 1
        while j >= 0:
            depth += {")": 1, "(": -1}.get(self.tokens[j], 0)
            if depth == 0:
                break
            j -= 1
        prev = self.tokens[j - 1] if j >= 1 else ""
        return bool(prev) and (prev[:1].isalpha() or prev.startswith("\\")) and prev not in (
            "\\frac", "\\cdot", "\\times")

    def argument(self) -> MultiPoly:
        tok = self.peek()
        if tok == "{":
            return self.atom()
        if tok[:1].isdigit():  # "\frac12"
            self.tokens[self.i : self.i + 1] = [tok[0]] + ([tok[1:]] if len(tok) > 1 else [])
            self.i += 1
            return {(): Fraction(int(tok[0]))} if int(tok[0]) else {}
        return self.atom()


def _add(a: MultiPoly, b: MultiPoly, sign: int) -> MultiPoly:
    out = dict(a)
    for k, c in b.items():
        out[k] = out.get(k, Fraction(0)) + sign * c
        if not out[k]:
            del out[k]
    return out


def _multiply(a: MultiPoly, b: MultiPoly) -> MultiPoly:
    out: MultiPoly = {}
    for ka, ca in a.items():
        for kb, cb in b.items():
            key = _monomial_product(ka, kb)
            out[key] = out.get(key, Fraction(0)) + ca * cb
    if len(out) > MAX_TERMS:
        raise _Reject
    for c in out.values():
        if c.numerator.bit_length() > MAX_BITS or c.denominator.bit_length() > MAX_BITS:
            raise _Reject
    return {k: c for k, c in out.items() if c}


def _monomial_product(a: Monomial, b: Monomial) -> Monomial:
    powers = dict(a)
    for letter, exp in b:
        powers[letter] = powers.get(letter, 0) + exp
    if sum(powers.values()) > MAX_DEGREE:
        raise _Reject
    return tuple(sorted(powers.items()))


def _divide(a: MultiPoly, b: MultiPoly) -> MultiPoly:
    """``a / b`` for a non-zero constant ``b`` only."""
    if set(b) != {()}:
        raise _Reject
    return {k: c / b[()] for k, c in a.items()}
