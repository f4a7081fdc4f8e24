"""Generator families on numbers: Arithmetic, Fractions, Percent.

Expressions are random binary trees over the leaves, printed with the fewest parentheses that
keep the usual precedence (``*`` and ``÷`` before ``+`` and ``-``, left to right), and evaluated
exactly with `fractions.Fraction`.
"""

from __future__ import annotations

from fractions import Fraction
from math import gcd

import numpy as np
from verimath.envs.generators.common import check_level, make_problem, nonzero, pick, randint
from verimath.envs.problem import Problem

# A node is a leaf (value, text) or an operation (op, left, right).
Node = tuple[Fraction, str] | tuple[str, "Node", "Node"]
_PREC = {"+": 1, "-": 1, "*": 2, "÷": 2}


def _is_leaf(node: Node) -> bool:
    return isinstance(node[0], Fraction)


def _random_tree(rng: np.random.Generator, leaves: list, ops: tuple[str, ...]) -> Node:
    """Split the leaf list at a random point, recursively; each split gets a random operator."""
    if len(leaves) == 1:
        return leaves[0]
    k = randint(rng, 1, len(leaves) - 1)
    return (pick(rng, ops), _random_tree(rng, leaves[:k], ops), _random_tree(rng, leaves[k:], ops))


def evaluate(node: Node) -> Fraction:
    """Exact value of an expression tree (raises ZeroDivisionError on ``÷ 0``)."""
    if _is_leaf(node):
        return node[0]
    op, left, right = node
    a, b = evaluate(left), evaluate(right)
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if b == 0:
        raise ZeroDivisionError("division by zero in a generated expression")
    return a / b


def render(node: Node) -> str:
    """Infix text with minimal parentheses: a child is wrapped when it binds looser than its
    parent, or binds equally and sits right of ``-`` or ``÷`` (which are not associative)."""
    if _is_leaf(node):
        return node[1]
    op, left, right = node
    text_l, text_r = render(left), render(right)
    if not _is_leaf(left) and _PREC[left[0]] < _PREC[op]:
        text_l = f"({text_l})"
    elif _is_leaf(left) and op in "*÷" and "/" in text_l and not text_l.startswith("("):
        text_l = f"({text_l})"  # a fraction operand of * or ÷ is wrapped: (2/3) ÷ (4/5)
    if not _is_leaf(right) and (
        _PREC[right[0]] < _PREC[op] or (_PREC[right[0]] == _PREC[op] and op in "-÷")
    ):
        text_r = f"({text_r})"
    elif _is_leaf(right) and op in "*÷" and "/" in text_r and not text_r.startswith("("):
        text_r = f"({text_r})"
    return f"{text_l} {op} {text_r}"


def _int_leaf(value: int) -> Node:
    return (Fraction(value), f"({value})" if value < 0 else str(value))


def _arith_setup(rng: np.random.Generator, level: int) -> tuple[list[int], tuple[str, ...]]:
    """Operands and operators per level (L1: one-digit + and -; L5: five operands, negatives)."""
    if level == 1:
        a, b = randint(rng, 0, 9), randint(rng, 0, 9)
        op = pick(rng, ("+", "-"))
        return ([max(a, b), min(a, b)] if op == "-" else [a, b]), (op,)
    if level == 2:
        if rng.random() < 0.5:
            return [randint(rng, 2, 9), randint(rng, 2, 9)], ("*",)
        a, b = randint(rng, 10, 99), randint(rng, 10, 99)
        op = pick(rng, ("+", "-"))
        return ([max(a, b), min(a, b)] if op == "-" else [a, b]), (op,)
    if level == 3:
        return [randint(rng, 1, 20) for _ in range(3)], ("+", "-", "*")
    if level == 4:
        return [randint(rng, -9, 30) for _ in range(4)], ("+", "-", "*")
    return [randint(rng, -20, 50) for _ in range(5)], ("+", "-", "*")


def arithmetic(rng: np.random.Generator, level: int) -> Problem:
    """Integer arithmetic with precedence and parentheses. L1 is "What is 7 + 5?"."""
    level = check_level(level, "Arithmetic")
    values, ops = _arith_setup(rng, level)
    tree = _random_tree(rng, [_int_leaf(v) for v in values], ops)
    expr = render(tree)
    return make_problem("Arithmetic", level, f"What is {expr}?", evaluate(tree), expression=expr)


def _fraction_leaves(rng: np.random.Generator, level: int) -> tuple[list[Node], tuple]:
    """Leaves as drawn (``4/6`` stays ``4/6`` in the text); negative ones are parenthesized."""
    if level == 1:
        d = randint(rng, 2, 9)
        pairs, ops = [(randint(rng, 1, d - 1), d) for _ in range(2)], ("+",)
    elif level <= 3:
        pairs = [(randint(rng, 1, 9), randint(rng, 2, 9)) for _ in range(2)]
        ops = ("+", "-") if level == 2 else ("*", "÷")
    else:
        count, low = (3, 1) if level == 4 else (4, -9)
        pairs = [(nonzero(rng, low, 9), randint(rng, 2, 12)) for _ in range(count)]
        ops = ("+", "-", "*", "÷")
    leaves = [(Fraction(n, d), f"({n}/{d})" if n < 0 else f"{n}/{d}") for n, d in pairs]
    return leaves, ops


def fractions(rng: np.random.Generator, level: int) -> Problem:
    """Fraction arithmetic; the answer is a reduced fraction or an integer."""
    level = check_level(level, "Fractions")
    while True:  # redraw the rare tree that divides by zero
        leaves, ops = _fraction_leaves(rng, level)
        tree = _random_tree(rng, leaves, ops)
        try:
            value = evaluate(tree)
        except ZeroDivisionError:
            continue
        expr = render(tree)
        prompt = f"What is {expr}? Give the answer as a fraction in lowest terms or an integer."
        return make_problem("Fractions", level, prompt, value, expression=expr)


def percent(rng: np.random.Generator, level: int) -> Problem:
    """Percent word problems with integer answers (percent of, discounts, reverse, successive)."""
    level = check_level(level, "Percent")
    if level <= 2:
        p = pick(rng, (10, 20, 25, 50)) if level == 1 else 5 * randint(rng, 1, 19)
        n = (100 // gcd(p, 100)) * randint(rng, 1, 10 if level == 1 else 20)
        return make_problem("Percent", level, f"What is {p}% of {n}?", Fraction(p * n, 100),
                            kind="of", p=p, n=n)
    if level == 3:
        p = 5 * randint(rng, 1, 15)
        price = (100 // gcd(p, 100)) * randint(rng, 1, 30)
        up = bool(rng.random() < 0.5)
        verb = "increased" if up else "reduced"
        new = Fraction(price * (100 + p if up else 100 - p), 100)
        prompt = (f"A jacket costs ${price}. Its price is {verb} by {p}%. "
                  "What is the new price in dollars?")
        return make_problem("Percent", level, prompt, new, kind="change", p=p if up else -p,
                            price=price)
    if level == 4:
        p = 5 * randint(rng, 1, 12)
        original = (100 // gcd(100 + p, 100)) * randint(rng, 1, 20)
        after = Fraction(original * (100 + p), 100)
        prompt = (f"After a {p}% increase, the price of a bike is ${after}. "
                  "What was the price before the increase, in dollars?")
        return make_problem("Percent", level, prompt, original, kind="reverse", p=p,
                            after=int(after))
    p, q = 5 * randint(rng, 1, 12), 5 * randint(rng, 1, 12)
    price = 400 * randint(rng, 1, 5)
    final = Fraction(price * (100 + p) * (100 - q), 10000)
    prompt = (f"A price of ${price} is increased by {p}%, and the new price is then decreased "
              f"by {q}%. What is the final price in dollars?")
    return make_problem("Percent", level, prompt, final, kind="successive", p=p, q=q, price=price)
