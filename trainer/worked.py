"""Worked solutions for the warm start: one line per operation of an arithmetic expression.

The ``Arithmetic`` generator records the expression it printed (``meta["params"]
["expression"]``, e.g. ``"10 * (18 - 10)"``). :func:`worked_lines` parses it with the usual
precedence (``*`` before ``+`` and ``-``, left to right, parentheses, negative leaves written
``(-5)``) and writes the operations in evaluation order (left operand first), one line each::

    18 - 10 = 8
    10 * 8 = 80

A warm start on ``lines + "Answer: 80"`` teaches a model to show intermediate lines; mixed
with targets that give the answer line alone (``worked_frac``), it leaves a policy that
writes either, long or short, for the same problem: the length spread within a group that
DAPO's length controls (overlong filtering, the soft overlong punishment, the token-level
loss) act on.
With ``error_step``/``offset`` one operation's result is off by ``offset`` and the later lines
compute on from the wrong value, so a noisy target stays a consistent (wrong) derivation.
"""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np

NOISE_OFFSETS = (-10, -1, 1, 10)
_TOKEN = re.compile(r"\s*(?:(\(-\d+\))|(\d+)|([-+*()]))")
_PREC = {"+": 1, "-": 1, "*": 2}

# A parsed expression: an int leaf, or (op, left, right).
Tree = int | tuple[str, "Tree", "Tree"]


def parse_expression(text: str) -> Tree:
    """The expression tree of ``text`` (integers, ``+ - *``, parentheses, leaves ``(-5)``);
    ValueError naming the text when it is not such an expression."""
    tokens, pos = [], 0
    while pos < len(text.rstrip()):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise ValueError(f"worked solution: cannot parse {text!r} at column {pos}")
        neg, num, sym = match.groups()
        tokens.append(int(neg[1:-1]) if neg else int(num) if num else sym)
        pos = match.end()
    tree, rest = _parse(tokens, 0)
    if rest != len(tokens):
        raise ValueError(f"worked solution: unexpected {tokens[rest]!r} in {text!r}")
    return tree


def _parse(tokens: list, i: int, min_prec: int = 1) -> tuple[Tree, int]:
    """Precedence climbing: an operand, then operators of at least ``min_prec``."""
    left, i = _operand(tokens, i)
    while i < len(tokens) and tokens[i] in _PREC and _PREC[tokens[i]] >= min_prec:
        op = tokens[i]
        right, i = _parse(tokens, i + 1, _PREC[op] + 1)  # left-associative
        left = (op, left, right)
    return left, i


def _operand(tokens: list, i: int) -> tuple[Tree, int]:
    if i >= len(tokens):
        raise ValueError("worked solution: the expression ends after an operator")
    token = tokens[i]
    if isinstance(token, int):
        return token, i + 1
    if token == "(":
        tree, i = _parse(tokens, i + 1)
        if i >= len(tokens) or tokens[i] != ")":
            raise ValueError("worked solution: unbalanced parentheses")
        return tree, i + 1
    raise ValueError(f"worked solution: expected a number or '(', got {token!r}")


def _text(value: int) -> str:
    return f"({value})" if value < 0 else str(value)


def worked_lines(expression: str, *, error_step: int | None = None, offset: int = 0
                 ) -> tuple[list[str], int]:
    """``(lines, value)``: one ``a op b = c`` line per operation in evaluation order and the
    final value. Operation ``error_step`` (0-based, in that order) gets ``offset`` added to
    its result, and the later lines use the wrong value."""
    lines: list[str] = []

    def run(node: Tree) -> int:
        if isinstance(node, int):
            return node
        op, left, right = node
        a, b = run(left), run(right)
        value = a + b if op == "+" else a - b if op == "-" else a * b
        if len(lines) == error_step:
            value += offset
        lines.append(f"{_text(a)} {op} {_text(b)} = {value}")
        return value

    value = run(parse_expression(expression))
    return lines, value


def worked_targets(expressions: list[str | None], answers: list[str], *, answer_prefix: str,
                   noise: float, rng: np.random.Generator, worked_frac: float = 1.0
                   ) -> list[str]:
    """Target texts, one per problem: with probability ``worked_frac`` the worked solution
    (``lines``, then ``answer_prefix + value``), else the answer line alone. With
    probability ``noise`` the target is wrong: one operation, drawn uniformly, is off by one
    of :data:`NOISE_OFFSETS` (an answer line alone: the answer is). A problem without an
    expression (``None``) always gets the answer line alone."""
    for name, value in (("noise", noise), ("worked_frac", worked_frac)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {value}")
    out = []
    for expression, answer in zip(expressions, answers):
        flip, offset = rng.random() < noise, int(rng.choice(NOISE_OFFSETS))
        worked, where = rng.random() < worked_frac, rng.random()
        if expression is None or not worked:
            wrong = flip and answer.lstrip("-").isdigit()
            out.append(answer_prefix + (str(int(answer) + offset) if wrong else answer))
            continue
        steps = len(worked_lines(expression)[0])
        error_step = int(where * steps) if flip and steps else None
        lines, value = worked_lines(expression, error_step=error_step, offset=offset)
        if error_step is None and Fraction(value) != Fraction(answer):
            raise ValueError(f"worked solution of {expression!r} gives {value}, not {answer}")
        out.append("\n".join([*lines, answer_prefix + str(value)]))
    return out


def problem_expression(problem) -> str | None:
    """The expression a procedural ``Arithmetic`` problem was printed from, else None."""
    params = problem.meta.get("params") if isinstance(problem.meta, dict) else None
    expression = params.get("expression") if isinstance(params, dict) else None
    family = problem.meta.get("family") if isinstance(problem.meta, dict) else None
    return expression if family == "Arithmetic" and isinstance(expression, str) else None
