"""Generator families on equations and patterns: Linear, LinearSystem, Quadratic, Sequence.

Each problem is built backwards from its answer (choose the solution, then the equation), so the
answer is exact by construction; tests solve the printed equation with sympy to confirm it.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from verimath.envs.generators.common import (
    check_level,
    linear_expr,
    make_problem,
    nonzero,
    pick,
    randint,
)
from verimath.envs.problem import Problem

_FRACTION_NOTE = " Give the answer as a fraction in lowest terms or an integer."


def _scaled(coef: int, inner: str) -> str:
    """``coef(inner)``: ``3(x + 2)``, ``(x + 2)``, ``-(x + 2)``."""
    prefix = {1: "", -1: "-"}.get(coef, str(coef))
    return f"{prefix}({inner})"


def linear(rng: np.random.Generator, level: int) -> Problem:
    """One linear equation in x. L1-L3 have integer solutions; L4-L5 may have fractions."""
    level = check_level(level, "Linear")
    if level == 1:
        x, a = randint(rng, 1, 9), randint(rng, 1, 9)
        lhs, rhs, answer = f"x + {a}", str(x + a), Fraction(x)
    elif level == 2:
        a, x, b = randint(rng, 2, 9), randint(rng, 0, 10), randint(rng, 1, 20)
        lhs, rhs, answer = linear_expr([(a, "x"), (b, "")]), str(a * x + b), Fraction(x)
    elif level == 3:
        a, c = nonzero(rng, -9, 9), nonzero(rng, -9, 9)
        while c == a:
            c = nonzero(rng, -9, 9)
        x, b = randint(rng, -10, 10), randint(rng, -20, 20)
        d = a * x + b - c * x
        lhs, rhs, answer = linear_expr([(a, "x"), (b, "")]), linear_expr([(c, "x"), (d, "")]), x
    elif level == 4:
        a, b, c = nonzero(rng, -9, 9), nonzero(rng, -9, 9), randint(rng, -9, 9)
        while c == a:
            c = randint(rng, -9, 9)
        d = randint(rng, -30, 30)
        lhs = _scaled(a, linear_expr([(1, "x"), (b, "")]))
        rhs = linear_expr([(c, "x"), (d, "")])
        answer = Fraction(d - a * b, a - c)
    else:
        a, b = randint(rng, 2, 9), nonzero(rng, -9, 9)
        c, d = randint(rng, 2, 9), nonzero(rng, -9, 9)
        e, f = randint(rng, -9, 9), randint(rng, -30, 30)
        while a - c - e == 0:
            e = randint(rng, -9, 9)
        lhs = (f"{_scaled(a, linear_expr([(1, 'x'), (b, '')]))} - "
               f"{_scaled(c, linear_expr([(1, 'x'), (-d, '')]))}")
        rhs = linear_expr([(e, "x"), (f, "")])
        answer = Fraction(f - a * b - c * d, a - c - e)
    note = _FRACTION_NOTE if level >= 4 else ""
    prompt = f"Solve for x: {lhs} = {rhs}.{note}"
    return make_problem("Linear", level, prompt, answer, equation=f"{lhs} = {rhs}")


def _system_coefficients(rng: np.random.Generator, level: int) -> list[list[int]]:
    low, high = {1: (1, 1), 2: (1, 3), 3: (-5, 5)}.get(level, (-9, 9))
    while True:
        if level == 1:
            m = [[1, 1], [1, -1]]
        else:
            m = [[nonzero(rng, low, high) for _ in range(2)] for _ in range(2)]
        if m[0][0] * m[1][1] - m[0][1] * m[1][0] != 0:
            return m


def linear_system(rng: np.random.Generator, level: int) -> Problem:
    """A 2x2 linear system; asks for x, y, or (L5) x + y. Fractions from L4 on."""
    level = check_level(level, "LinearSystem")
    m = _system_coefficients(rng, level)
    if level <= 3:
        low = {1: 1, 2: 0, 3: -9}[level]
        x, y = randint(rng, low, 9), randint(rng, low, 9)
        if level == 1:
            x, y = max(x, y), min(x, y)
        rhs = [m[0][0] * x + m[0][1] * y, m[1][0] * x + m[1][1] * y]
        x, y = Fraction(x), Fraction(y)
    else:
        rhs = [randint(rng, -20, 20), randint(rng, -20, 20)]
        det = m[0][0] * m[1][1] - m[0][1] * m[1][0]
        x = Fraction(rhs[0] * m[1][1] - m[0][1] * rhs[1], det)  # Cramer's rule
        y = Fraction(m[0][0] * rhs[1] - rhs[0] * m[1][0], det)
    eqs = [f"{linear_expr([(row[0], 'x'), (row[1], 'y')])} = {c}" for row, c in zip(m, rhs)]
    target = "x + y" if level == 5 else pick(rng, ("x", "y")) if level > 1 else "x"
    answer = {"x": x, "y": y, "x + y": x + y}[target]
    note = _FRACTION_NOTE if level >= 4 else ""
    prompt = f"Given {eqs[0]} and {eqs[1]}, what is {target}?{note}"
    return make_problem("LinearSystem", level, prompt, answer, equations=eqs, target=target)


def _two_roots(rng: np.random.Generator, low: int, high: int) -> tuple[int, int]:
    r1 = randint(rng, low, high)
    r2 = r1
    while r2 == r1:
        r2 = randint(rng, low, high)
    return r1, r2


def quadratic(rng: np.random.Generator, level: int) -> Problem:
    """A quadratic with two distinct integer roots, written expanded; asks about the roots."""
    level = check_level(level, "Quadratic")
    low, high = {1: (1, 9), 2: (-9, 9), 3: (-10, 10)}.get(level, (-12, 12))
    r1, r2 = _two_roots(rng, low, high)
    a = 1 if level <= 2 else nonzero(rng, -4, 4) if level == 3 else nonzero(rng, -5, 5)
    b, c = -a * (r1 + r2), a * r1 * r2
    poly = linear_expr([(a, "x^2"), (b, "x"), (c, "")])
    equation = f"{poly} = 0"
    if level == 5:  # move a random linear part to the right-hand side
        d, e = randint(rng, -9, 9), randint(rng, -20, 20)
        equation = f"{linear_expr([(a, 'x^2'), (b + d, 'x'), (c + e, '')])} = " \
                   f"{linear_expr([(d, 'x'), (e, '')])}"
    if level <= 3:
        question = "larger" if level == 1 else pick(rng, ("larger", "smaller"))
        answer = max(r1, r2) if question == "larger" else min(r1, r2)
        prompt = f"What is the {question} root of {equation}?"
    else:
        question = pick(rng, ("sum", "product", "sum of the squares"))
        answer = {"sum": r1 + r2, "product": r1 * r2, "sum of the squares": r1**2 + r2**2}[
            question]
        prompt = f"What is the {question} of the roots of {equation}?"
    return make_problem("Quadratic", level, prompt, answer, equation=equation, question=question,
                        roots=sorted([r1, r2]))


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _sequence_terms(rng: np.random.Generator, level: int) -> tuple[str, list[int], int]:
    """(kind, first terms, next term) for levels 1-4."""
    if level <= 2:
        d = randint(rng, 1, 5) if level == 1 else nonzero(rng, -9, 9)
        start = randint(rng, 1, 10) if level == 1 else randint(rng, -20, 20)
        count = 4 if level == 1 else 5
        terms = [start + d * i for i in range(count + 1)]
        return "arithmetic", terms[:-1], terms[-1]
    if level == 3:
        r, start = pick(rng, (2, 3, 4, -2, -3)), nonzero(rng, -9, 9)
        terms = [start * r**i for i in range(6)]
        return "geometric", terms[:-1], terms[-1]
    if rng.random() < 0.5:
        a, b, c = nonzero(rng, -3, 3), randint(rng, -5, 5), randint(rng, -10, 10)
        terms = [a * n * n + b * n + c for n in range(1, 7)]
        return "quadratic", terms[:-1], terms[-1]
    terms = [randint(rng, 1, 9), randint(rng, 1, 9)]
    while len(terms) < 7:
        terms.append(terms[-1] + terms[-2])
    return "fibonacci", terms[:-1], terms[-1]


def sequence(rng: np.random.Generator, level: int) -> Problem:
    """Next term of arithmetic, geometric, quadratic or Fibonacci-like sequences; L5 asks for
    the n-th term of an arithmetic or doubling sequence."""
    level = check_level(level, "Sequence")
    if level <= 4:
        kind, shown, answer = _sequence_terms(rng, level)
        listing = ", ".join(str(t) for t in shown)
        prompt = f"What is the next term in the sequence {listing}, ...?"
        return make_problem("Sequence", level, prompt, answer, kind=kind, terms=shown)
    if rng.random() < 0.5:
        start, d, n = randint(rng, -30, 30), nonzero(rng, -12, 12), randint(rng, 10, 40)
        shown, answer, kind = [start + d * i for i in range(4)], start + d * (n - 1), "arithmetic"
    else:
        start, n = nonzero(rng, -5, 5), randint(rng, 8, 16)
        shown, answer, kind = [start * 2**i for i in range(4)], start * 2 ** (n - 1), "geometric"
    listing = ", ".join(str(t) for t in shown)
    prompt = f"What is the {_ordinal(n)} term of the {kind} sequence {listing}, ...?"
    return make_problem("Sequence", level, prompt, answer, kind=kind, terms=shown, n=n)
