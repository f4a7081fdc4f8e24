"""Plain-text calculator notation read into LaTeX: ``sqrt(x)/2`` -> ``\\frac{\\sqrt{x}}{2}``.

Model answers are often written as a calculator would take them: function calls
(``sqrt(5)``, ``abs(x-1)``, ``exp(2)``, ``log(8)``, ``cos(x)^2``), ``^`` or ``**`` for powers,
``*`` for products, ``pi``, implicit products (``2x``, ``3pi``, ``2(x+1)``), relations
(``<=``, ``>=``, ``!=``) and mixed numbers (``2 1/4`` is nine quarters). ``log`` is the
natural logarithm, as in calculators' ``log`` of programming languages and computer algebra.
``to_latex`` parses such text with its own tokenizer and recursive-descent parser and writes
the same math in LaTeX, which then takes the one symbolic path of every answer (the fast exact
path, then math-verify's LaTeX parser). Nothing is evaluated: the output is a string built
from the tokens, and text that is not plain notation (a backslash, a character outside the
grammar, unbalanced brackets, more than ``MAX_CHARS`` characters) is returned unchanged.

Grammar (``^`` and ``**`` bind right and tighter than unary minus, as in ``-x^2``)::

    answer   := relation ("," relation)*
    relation := sum (("=" | "<" | ">" | "<=" | ">=" | "!=") sum)*
    sum      := product (("+" | "-") product)*
    product  := unary (("*" | "/" | <juxtaposition>) unary)*
    unary    := "-" unary | "+" unary | power
    power    := atom (("^" | "**") unary)?
    atom     := number | name | name "(" answer ")" | "(" answer ")" | "|" sum "|"
"""

from __future__ import annotations

import re

__all__ = ["MAX_CHARS", "to_latex"]

MAX_CHARS = 400
_MAX_DEPTH = 40
_TOKEN = re.compile(r"\s*(?:(\d+\.\d*|\.\d+|\d+)|([A-Za-z]+)|(\*\*|<=|>=|!=|==|[-+*/^()|,<>=]))")
_TRIGGER = re.compile(
    r"\*|\^\s*\(|\b(?:sqrt|cbrt|abs|exp|log|ln|sin|cos|tan|sec|csc|cot|arcsin|arccos|arctan"
    r"|asin|acos|atan|sinh|cosh|tanh)\b|(?<![A-Za-z])(?:pi|oo|inf|infinity)\b|[<>!]=|[0-9]\s+[0-9]+\s*/\s*[0-9]"
)
_END = r"\s*[-+]?\s*(?:[0-9./]+|oo|inf|infinity)\s*"
_INTERVAL = re.compile(rf"\s*[\[(]{_END},{_END}[\])]\s*")
_INFINITY = re.compile(r"(?<![A-Za-z])(?:oo|infinity|inf)(?![A-Za-z])")
_MIXED = re.compile(r"\s*([-+]?)\s*(\d+)\s+(\d+)\s*/\s*(\d+)\s*")
_FUNCTIONS = {
    "sin": "\\sin", "cos": "\\cos", "tan": "\\tan", "sec": "\\sec", "csc": "\\csc",
    "cot": "\\cot", "arcsin": "\\arcsin", "arccos": "\\arccos", "arctan": "\\arctan",
    "asin": "\\arcsin", "acos": "\\arccos", "atan": "\\arctan", "sinh": "\\sinh",
    "cosh": "\\cosh", "tanh": "\\tanh", "log": "\\ln", "ln": "\\ln",
}
_CONSTANTS = {"pi": "\\pi", "inf": "\\infty", "infinity": "\\infty", "oo": "\\infty"}
_SIMPLE = re.compile(r"[0-9]+(?:\.[0-9]*)?|[A-Za-z]|\\pi|\\infty")  # bases needing no braces
_RELATIONS = {"=": "=", "==": "=", "<": "<", ">": ">", "<=": "\\le", ">=": "\\ge", "!=": "\\ne"}


class _Unreadable(Exception):
    """The text is not plain notation."""


def to_latex(text: str) -> str:
    """``text`` in LaTeX when it is plain calculator notation, else ``text`` unchanged."""
    if not isinstance(text, str) or len(text) > MAX_CHARS or "\\" in text:
        return text
    if _INTERVAL.fullmatch(text):
        return _INFINITY.sub(r"\\infty", text)  # "[2, oo)": an interval, brackets kept
    if not _TRIGGER.search(text):
        return text
    mixed = _MIXED.fullmatch(text)
    if mixed is not None:
        sign, whole, num, den = mixed.groups()
        if int(den) == 0 or int(num) >= int(den):
            return text
        value = int(whole) * int(den) + int(num)
        return f"{'-' if sign == '-' else ''}\\frac{{{value}}}{{{den}}}"
    try:
        tokens = _tokenize(text)
        parser = _Parser(tokens)
        out = parser.answer()
        if parser.pos != len(tokens):
            return text
        return out
    except (_Unreadable, RecursionError):
        return text


def _tokenize(text: str) -> list[tuple[str, str]]:
    """``(kind, value)`` tokens, kind ``num``, ``name`` or ``op``."""
    tokens, pos, end = [], 0, len(text.rstrip())
    while pos < end:
        match = _TOKEN.match(text, pos)
        if match is None:
            raise _Unreadable
        num, name, op = match.groups()
        tokens.append(("num", num) if num else ("name", name.lower() if name.lower() in
                      _FUNCTIONS or name.lower() in _CONSTANTS or name.lower() in
                      ("sqrt", "cbrt", "abs", "exp") else name) if name else ("op", op))
        pos = match.end()
    return tokens


class _Parser:
    """Recursive descent over the tokens (grammar in the module docstring)."""

    def __init__(self, tokens: list[tuple[str, str]]):
        self.tokens, self.pos, self.depth = tokens, 0, 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, value: str) -> bool:
        if self.peek() == ("op", value):
            self.pos += 1
            return True
        return False

    def expect(self, value: str) -> None:
        if not self.take(value):
            raise _Unreadable

    def answer(self) -> str:
        items = [self.relation()]
        while self.take(","):
            items.append(self.relation())
        return ", ".join(items)

    def relation(self) -> str:
        out = self.sum()
        while self.peek() is not None and self.peek()[0] == "op" and self.peek()[1] in _RELATIONS:
            op = _RELATIONS[self.tokens[self.pos][1]]
            self.pos += 1
            out = f"{out} {op} {self.sum()}"
        return out

    def sum(self) -> str:
        out = self.product()
        while (tok := self.peek()) is not None and tok in (("op", "+"), ("op", "-")):
            self.pos += 1
            out = f"{out} {tok[1]} {self.product()}"
        return out

    def product(self) -> str:
        out = self.unary()
        while (tok := self.peek()) is not None:
            if tok == ("op", "*"):
                self.pos += 1
                out = f"{out} \\cdot {self.unary()}"
            elif tok == ("op", "/"):
                self.pos += 1
                out = f"\\frac{{{out}}}{{{self.unary()}}}"
            elif tok[0] in ("num", "name") or tok == ("op", "("):
                if tok[0] == "num" and out[-1:].isdigit():
                    raise _Unreadable  # "2 3" is no product
                out = f"{out} {self.unary()}"
            else:
                break
        return out

    def unary(self) -> str:
        if self.take("-"):
            return f"-{self.unary()}"
        if self.take("+"):
            return self.unary()
        return self.power()

    def power(self) -> str:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _Unreadable
        base = self.atom()
        if self.take("^") or self.take("**"):
            if self.take("("):  # "2^(x+1)": the parentheses are the exponent's braces
                exponent = self.answer()
                self.expect(")")
            else:
                exponent = self.unary()
            base = f"{base if _SIMPLE.fullmatch(base) else '{' + base + '}'}^{{{exponent}}}"
        self.depth -= 1
        return base

    def atom(self) -> str:
        tok = self.peek()
        if tok is None:
            raise _Unreadable
        self.pos += 1
        kind, value = tok
        if kind == "num":
            return value
        if kind == "op":
            if value == "(":
                inner = self.answer()
                self.expect(")")
                return f"\\left({inner}\\right)"
            if value == "|":
                inner = self.sum()
                self.expect("|")
                return f"\\left|{inner}\\right|"
            raise _Unreadable
        return self.name(value)

    def name(self, value: str) -> str:
        if value in ("sqrt", "cbrt", "abs", "exp") or value in _FUNCTIONS:
            self.expect("(")
            inner = self.answer()
            self.expect(")")
            if value == "sqrt":
                return f"\\sqrt{{{inner}}}"
            if value == "cbrt":
                return f"\\sqrt[3]{{{inner}}}"
            if value == "abs":
                return f"\\left|{inner}\\right|"
            if value == "exp":
                return f"e^{{{inner}}}"
            return f"{_FUNCTIONS[value]}\\left({inner}\\right)"
        if value in _CONSTANTS:
            return _CONSTANTS[value]
        if len(value) > 3:
            raise _Unreadable  # a word, not a product of variables
        return " ".join(value)  # "xy" is x times y
