"""A numeric check in the calling process: LaTeX expressions read by a small parser and
evaluated at seeded points with ``mpmath``, before any pair reaches the scoring pool.

``numeric_verdict(pred, gold, conventions)`` reads the pair as every path does
(``readings.read_pair``), then parses both sides with a deliberately narrow grammar and
compares their values in the reals, as the pool's probe (``probe``) does after math-verify:

* Grammar: integers, single letters (``x``, ``a_1``, Greek letters) as variables, ``\\pi``,
  ``e`` (Euler's number, as math-verify reads it), ``+ - \\cdot \\times * /``, juxtaposition,
  ``^`` (a braced group or one token), ``\\frac``, ``\\sqrt``, ``\\sqrt[n]``, parentheses and
  braces, and the functions ``\\sin \\cos \\tan \\sec \\csc \\cot \\arcsin \\arccos \\arctan
  \\sinh \\cosh \\tanh \\ln \\exp \\log`` (base 10, as math-verify) and ``\\log_b``, with
  ``\\sin^2 x`` for powers. An argument without parentheses is the product that follows up to
  the next sign, bracket or function (``\\sin 2x`` is ``\\sin(2x)``, ``\\sin x \\cos x`` a
  product, as math-verify reads them); anything the grammar would read in a way math-verify
  might not (``\\sin x \\cdot y``, ``a/b \\cdot c``), decimals (rounding is a convention of its
  own), ``i`` beside other letters, absolute values, floors, factorials, relations, lists and
  every other command make the text unreadable here, and so do two letters side by side
  (``ab`` may be a word, ``cm`` a unit) and a letter after a number and a space (``18 apples``,
  ``5 m``): the pool decides those.
* Values: 24 points per pair (a fixed seed), seven in ten positive and one in four far out,
  as in the probe; a point where either side leaves the reals (a square root of a negative,
  a logarithm of a non-positive number) is skipped. Every function of the grammar is
  analytic where it is defined, so sides that agree at ``MIN_POINTS`` or more points agree on
  the whole common domain they were sampled from: equal; one point where they differ beyond
  doubt: unequal. Constants are compared at 50 digits; when ``i`` is the only letter (besides
  Euler's ``e``) it is the imaginary unit, as in the probe, and constants are complex
  (``(1+i)^2`` is ``2i``, ``e^{i\\pi}`` is ``-1``).

The check costs milliseconds and imports no sympy, which keeps the first verdict of a process
fast (the pool's workers start only for what this cannot read). It decides only where its
verdict is the one the pool's math-verify and probe reach.
"""

from __future__ import annotations

import random
import re

from verimath.rewards.equality.conventions import Conventions
from verimath.rewards.equality.readings import read_pair
from verimath.rewards.equality.size_guard import is_intractable

__all__ = ["MIN_POINTS", "POINTS", "numeric_verdict", "parse_expression"]

POINTS = 24
MIN_POINTS = 6
FAR = 3000.0
MAX_CHARS = 300
MAX_NODES = 400
_MAX_VARIABLES = 4
_DIGITS = 30
_CONSTANT_DIGITS = 50
_AGREE = 1e-15
_DIFFER = 1e-8

_FUNCTIONS = {
    "sin": "sin", "cos": "cos", "tan": "tan", "sec": "sec", "csc": "csc", "cot": "cot",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "sinh": "sinh", "cosh": "cosh",
    "tanh": "tanh", "ln": "ln", "exp": "exp", "log": "log10",
}
_GREEK = frozenset((
    "alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta",
    "vartheta", "kappa", "lambda", "mu", "nu", "xi", "rho", "sigma", "tau", "phi", "varphi",
    "chi", "psi", "omega",
))
_SKIP = re.compile(r"\\(?:left|right|displaystyle|[bB]igg?[lr]?)(?![A-Za-z])|\\[,;:! ]|~")
_TOKEN = re.compile(r"\\[A-Za-z]+|[0-9]+|[A-Za-z]|[-+*/^_{}()\[\]]|.", re.DOTALL)
_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}|(?<![\^0-9])[0-9]+\s+[A-Za-z]")
_FRACS = frozenset(("\\frac", "\\dfrac", "\\tfrac", "\\cfrac"))
_STOPS = frozenset(("", "+", "-", ")", "}", "]"))


def _is_digits(tok: str) -> bool:
    return tok.isascii() and tok.isdigit()


class _Unreadable(Exception):
    """Outside the grammar: the pool decides."""


def numeric_verdict(pred: str, gold: str, conventions: Conventions) -> bool | None:
    """The numeric verdict (module docstring), or None when the pair is outside its grammar."""
    if not isinstance(pred, str) or not isinstance(gold, str):
        return None
    if max(len(pred), len(gold)) > MAX_CHARS or is_intractable(pred) or is_intractable(gold):
        return None
    reading = read_pair(pred, gold, conventions)
    if reading.verdict is not None or reading.relations:
        return None
    imaginary = _only_letter_i(reading.pred, reading.gold)
    a = parse_expression(reading.pred, imaginary=imaginary)
    b = parse_expression(reading.gold, imaginary=imaginary)
    if a is None or b is None:
        return None
    try:
        return _compare(a, b)
    except (ArithmeticError, ValueError, TypeError, OverflowError, RecursionError):
        return None


def _only_letter_i(*texts: str) -> bool:
    """Whether ``i`` is the one letter outside commands on the two sides, Euler's ``e`` aside
    (then it is the imaginary unit, as the probe reads it)."""
    letters = set()
    for text in texts:
        letters |= set(re.findall(r"[A-Za-z]", re.sub(r"\\[A-Za-z]+", " ", text)))
    return "i" in letters and letters <= {"i", "e"}


def parse_expression(text: str, *, imaginary: bool = False):
    """The expression tree of ``text`` (nested tuples), or None outside the grammar;
    ``imaginary``: the letter ``i`` is the imaginary unit."""
    text = _SKIP.sub(" ", text).strip()
    if not text or len(text) > MAX_CHARS:
        return None
    if _WORD.search(re.sub(r"\\[A-Za-z]+|_\{[^{}]*\}", "#", text)):
        return None  # words and units ("18 apples", "5 cm"), and "ab": the pool's call
    parser = _Parser([tok for tok in _TOKEN.findall(text) if not tok.isspace()], imaginary)
    try:
        tree = parser.expression()
        if parser.i != len(parser.tokens) or parser.nodes > MAX_NODES:
            return None
    except (_Unreadable, RecursionError, IndexError, ValueError):
        return None
    return tree


class _Parser:
    """Recursive descent; trees are ``("num", int)``, ``("var", name)``, ``("const", name)``,
    ``("neg", t)``, ``("add", t, t)``, ``("mul", t, t)``, ``("div", t, t)``,
    ``("pow", t, t)``, ``("root", t, n)``, ``("call", name, t)``, ``("logb", base, t)``."""

    def __init__(self, tokens: list[str], imaginary: bool = False):
        self.tokens, self.i, self.nodes, self.imaginary = tokens, 0, 0, imaginary

    def peek(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return self.tokens[j] if j < len(self.tokens) else ""

    def take(self, expected: str) -> None:
        if self.peek() != expected:
            raise _Unreadable
        self.i += 1

    def node(self, *parts):
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _Unreadable
        return parts

    def expression(self):
        sign = 1
        while self.peek() in ("+", "-"):
            sign = -sign if self.peek() == "-" else sign
            self.i += 1
        tree = self.term()
        if sign < 0:
            tree = self.node("neg", tree)
        while self.peek() in ("+", "-"):
            op = self.peek()
            self.i += 1
            right = self.term()
            tree = self.node("add", tree, right if op == "+" else self.node("neg", right))
        return tree

    def term(self):
        tree = self.product()
        while self.peek() in ("\\cdot", "\\times", "*", "/"):
            op = self.peek()
            self.i += 1
            if op == "/":
                tree = self.node("div", tree, self.product())
                if self.peek() in ("\\cdot", "\\times", "*", "/"):
                    raise _Unreadable  # "a/b \cdot c": precedence readers disagree on
            else:
                tree = self.node("mul", tree, self.product())
        return tree

    def product(self):
        """Juxtaposed factors (``2x``, ``\\pi r^2``, ``\\sin x \\cos x``)."""
        tree = self.power()
        while self.peek() not in _STOPS and self.peek() not in ("\\cdot", "\\times", "*", "/"):
            tree = self.node("mul", tree, self.power())
        return tree

    def power(self):
        base = self.atom()
        if self.peek() != "^":
            return base
        self.i += 1
        exponent = self.script()
        return self.node("pow", base, exponent)

    def script(self):
        """A braced group or one token (``x^23`` is ``x^2 \\cdot 3``, as TeX reads it)."""
        tok = self.peek()
        if tok == "{":
            self.i += 1
            inner = self.expression()
            self.take("}")
            return inner
        if _is_digits(tok):
            self.tokens[self.i : self.i + 1] = [tok[0]] + ([tok[1:]] if len(tok) > 1 else [])
            self.i += 1
            return self.node("num", int(tok[0]))
        if len(tok) == 1 and tok.isalpha():
            return self.atom()
        raise _Unreadable

    def atom(self):
        tok = self.peek()
        if _is_digits(tok):
            self.i += 1
            if self.peek() == "." or len(tok) > 60:
                raise _Unreadable  # decimals follow their own convention
            return self.node("num", int(tok))
        if tok in ("(", "{"):
            self.i += 1
            inner = self.expression()
            self.take(")" if tok == "(" else "}")
            return inner
        if len(tok) == 1 and tok.isalpha():
            return self.letter(tok)
        if tok in _FRACS:
            self.i += 1
            top = self.argument()
            return self.node("div", top, self.argument())
        if tok == "\\sqrt":
            return self.root()
        if tok == "\\pi":
            self.i += 1
            return self.node("const", "pi")
        if tok.startswith("\\") and tok[1:] in _GREEK:
            self.i += 1
            return self.node("var", tok[1:] + self.subscript())
        if tok.startswith("\\") and tok[1:] in _FUNCTIONS:
            return self.call(_FUNCTIONS[tok[1:]])
        raise _Unreadable

    def letter(self, tok: str):
        self.i += 1
        if tok == "e" and self.peek() != "_":
            return self.node("const", "e")
        if tok == "i" and self.imaginary and self.peek() != "_":
            return self.node("const", "i")
        if tok in ("i", "I", "E"):
            raise _Unreadable  # the imaginary unit, or a constant: the pool's call
        return self.node("var", tok + self.subscript())

    def subscript(self) -> str:
        if self.peek() != "_":
            return ""
        self.i += 1
        tok = self.peek()
        if tok == "{":
            j = self.tokens.index("}", self.i)
            inner = "".join(self.tokens[self.i + 1 : j])
            if not re.fullmatch(r"[A-Za-z0-9]{1,4}", inner):
                raise _Unreadable
            self.i = j + 1
            return "_" + inner
        if re.fullmatch(r"[A-Za-z0-9]", tok):
            self.i += 1
            return "_" + tok
        raise _Unreadable

    def argument(self):
        """A ``\\frac`` or ``\\sqrt`` argument: a braced group or one token."""
        tok = self.peek()
        if tok == "{":
            return self.atom()
        if _is_digits(tok):
            return self.script()
        is_greek = tok.startswith("\\") and tok[1:] in _GREEK
        if (len(tok) == 1 and tok.isalpha()) or tok == "\\pi" or is_greek:
            return self.atom()
        raise _Unreadable

    def root(self):
        self.i += 1
        degree = 2
        if self.peek() == "[":
            self.i += 1
            tok = self.peek()
            if not _is_digits(tok) or int(tok) < 2 or int(tok) > 99:
                raise _Unreadable
            degree = int(tok)
            self.i += 1
            self.take("]")
        return self.node("root", self.argument(), degree)

    def call(self, name: str):
        self.i += 1
        base = None
        if name == "log10" and self.peek() == "_":
            self.i += 1
            base = self.script()
        power = None
        if self.peek() == "^":
            self.i += 1
            tok = self.peek()
            if not _is_digits(tok) or len(tok) != 1:
                raise _Unreadable  # \sin^{-1}: an inverse for some readers, a power for others
            power = self.node("num", int(tok))
            self.i += 1
        if self.peek() == "(":
            self.i += 1
            argument = self.expression()
            self.take(")")
        else:
            argument = self.implicit_argument()
        if base is not None:
            tree = self.node("logb", base, argument)
        else:
            tree = self.node("call", name, argument)
        return tree if power is None else self.node("pow", tree, power)

    def implicit_argument(self):
        """``\\sin 2x``: letters, numbers, ``\\pi`` and powers up to a sign, bracket or function."""
        factors = []
        while True:
            tok = self.peek()
            simple = (_is_digits(tok) or (len(tok) == 1 and tok.isalpha()) or tok == "\\pi"
                      or (tok.startswith("\\") and tok[1:] in _GREEK))
            if not simple:
                break
            factors.append(self.power())
        nxt = self.peek()
        if not factors or not (nxt in _STOPS or (nxt.startswith("\\") and nxt[1:] in _FUNCTIONS)):
            raise _Unreadable
        tree = factors[0]
        for factor in factors[1:]:
            tree = self.node("mul", tree, factor)
        return tree


# --- values --------------------------------------------------------------------------------

def _compare(a, b) -> bool | None:
    import mpmath

    names = sorted(_variables(a) | _variables(b))
    if len(names) > _MAX_VARIABLES:
        return None
    if not names:
        with mpmath.workdps(_CONSTANT_DIGITS):
            x, y = _value(a, {}, complex_ok=True), _value(b, {}, complex_ok=True)
            if x is None or y is None:
                return None
            scale = max(1, abs(x), abs(y))
            if abs(x - y) <= mpmath.mpf(10) ** (10 - _CONSTANT_DIGITS) * scale:
                return True
            return False if abs(x - y) > _DIFFER * scale else None
    rng = random.Random(7)
    agree = 0
    with mpmath.workdps(_DIGITS):
        for _ in range(POINTS):
            point = {name: _sample(rng) for name in names}
            x, y = _value(a, point), _value(b, point)
            if x is None or y is None:
                continue
            scale = max(1, abs(x), abs(y))
            gap = abs(x - y)
            if gap > _DIFFER * scale:
                return False
            if gap > _AGREE * scale:
                return None  # neither clearly equal nor clearly not
            agree += 1
    return True if agree >= MIN_POINTS else None


def _sample(rng: random.Random) -> float:
    sign = 1 if rng.random() < 0.7 else -1
    if rng.random() < 0.25:
        return sign * round(10 ** rng.uniform(0.5, 3.4771), 4)
    return sign * round(rng.uniform(0.3, 3.0), 6)


def _variables(tree) -> set[str]:
    if tree[0] == "var":
        return {tree[1]}
    found: set[str] = set()
    for part in tree[1:]:
        if isinstance(part, tuple):
            found |= _variables(part)
    return found


def _value(tree, point, *, complex_ok: bool = False):
    """The real value of ``tree`` at ``point``, None outside the reals or the domain;
    ``complex_ok`` (constants with the imaginary unit): a complex value, principal branches."""
    import mpmath

    try:
        if complex_ok and _has_unit(tree):
            value = _evaluate_complex(tree, mpmath)
            return value if mpmath.isfinite(value) else None
        value = _evaluate(tree, point, mpmath)
    except (ZeroDivisionError, ValueError, OverflowError, _Unreadable):
        return None
    if value is None or isinstance(value, mpmath.mpc) or not mpmath.isfinite(value):
        return None
    return value


def _has_unit(tree) -> bool:
    if tree == ("const", "i"):
        return True
    return any(isinstance(part, tuple) and _has_unit(part) for part in tree[1:])


def _evaluate_complex(tree, mp):
    """A constant with the imaginary unit: sums, products, quotients, integer powers, ``e^z``,
    ``\\sin``, ``\\cos`` and ``\\exp``; anything else is unreadable here."""
    kind = tree[0]
    if kind == "num":
        return mp.mpc(tree[1])
    if kind == "const":
        return {"i": mp.mpc(0, 1), "pi": mp.mpc(mp.pi), "e": mp.mpc(mp.e)}[tree[1]]
    if kind == "neg":
        return -_evaluate_complex(tree[1], mp)
    if kind in ("add", "mul", "div"):
        x, y = _evaluate_complex(tree[1], mp), _evaluate_complex(tree[2], mp)
        return x + y if kind == "add" else x * y if kind == "mul" else x / y
    if kind == "pow":
        exponent = _evaluate_complex(tree[2], mp)
        if tree[1] == ("const", "e"):
            return mp.exp(exponent)
        if exponent.imag or exponent.real != int(exponent.real) or abs(exponent.real) > 10**4:
            raise _Unreadable
        return _evaluate_complex(tree[1], mp) ** int(exponent.real)
    if kind == "call" and tree[1] in ("exp", "sin", "cos"):
        return getattr(mp, tree[1])(_evaluate_complex(tree[2], mp))
    raise _Unreadable


def _evaluate(tree, point, mp):
    kind = tree[0]
    if kind == "num":
        return mp.mpf(tree[1])
    if kind == "var":
        return mp.mpf(point[tree[1]])
    if kind == "const":
        return +mp.pi if tree[1] == "pi" else +mp.e
    if kind == "neg":
        return -_real(_evaluate(tree[1], point, mp), mp)
    left = _real(_evaluate(tree[1], point, mp), mp) if isinstance(tree[1], tuple) else None
    if kind == "add":
        return left + _real(_evaluate(tree[2], point, mp), mp)
    if kind == "mul":
        return left * _real(_evaluate(tree[2], point, mp), mp)
    if kind == "div":
        return left / _real(_evaluate(tree[2], point, mp), mp)
    if kind == "pow":
        exponent = _real(_evaluate(tree[2], point, mp), mp)
        if left == 0 and exponent <= 0:
            raise ZeroDivisionError
        if left < 0 and exponent != int(exponent):
            raise ValueError  # outside the reals
        if abs(exponent) * mp.log(max(abs(left), 2), 10) > 10**6:
            raise OverflowError
        return mp.power(left, exponent)
    if kind == "root":
        degree = tree[2]
        if left < 0:
            if degree % 2 == 0:
                raise ValueError
            return -mp.root(-left, degree)
        return mp.root(left, degree)
    if kind == "logb":
        base = left
        argument = _real(_evaluate(tree[2], point, mp), mp)
        if base <= 0 or base == 1 or argument <= 0:
            raise ValueError
        return mp.log(argument) / mp.log(base)
    if kind == "call":
        return _call(tree[1], _real(_evaluate(tree[2], point, mp), mp), mp)
    raise _Unreadable


def _call(name: str, x, mp):
    if name in ("ln", "log10"):
        if x <= 0:
            raise ValueError
        return mp.log(x) if name == "ln" else mp.log(x, 10)
    if name in ("asin", "acos") and abs(x) > 1:
        raise ValueError
    if name in ("tan", "sec") and abs(mp.cos(x)) < mp.mpf(10) ** -20:
        raise ValueError
    if name in ("cot", "csc") and abs(mp.sin(x)) < mp.mpf(10) ** -20:
        raise ValueError
    return getattr(mp, name)(x)


def _real(value, mp):
    if isinstance(value, mp.mpc):
        raise ValueError
    return value
