"""Every generated answer is recomputed by an independent route: sympy parses and solves the
printed problem, or brute force enumerates (itertools), never the generator's own formula."""

from __future__ import annotations

import itertools
import re
from fractions import Fraction

import pytest
import sympy
from hypothesis import given, settings
from strategies import generator_items
from sympy.parsing.sympy_parser import (
    implicit_multiplication_application,
    parse_expr,
    standard_transformations,
)
from verimath.envs.generators import BASE_FAMILIES, generate

TRANSFORMS = standard_transformations + (implicit_multiplication_application,)
EXAMPLES = settings(max_examples=150, deadline=None)


def sym(text: str) -> sympy.Expr:
    """Parse printed math: ``3x``, ``2(x + 1)``, ``x^2``, ``÷`` all as a reader means them."""
    text = text.replace("÷", "/").replace("^", "**")
    return parse_expr(text, transformations=TRANSFORMS, evaluate=True)


def as_fraction(answer: str) -> Fraction:
    assert re.fullmatch(r"-?\d+(/\d+)?", answer), f"answer {answer!r} is not an int or a/b"
    value = Fraction(answer)
    canonical = str(value.numerator) if value.denominator == 1 else \
        f"{value.numerator}/{value.denominator}"
    assert canonical == answer, f"answer {answer!r} is not reduced/canonical ({canonical})"
    return value


def equals(expr: sympy.Expr, answer: str) -> bool:
    value = as_fraction(answer)
    return sympy.simplify(expr - sympy.Rational(value.numerator, value.denominator)) == 0


def check_arithmetic(p):
    expr = re.fullmatch(r"What is (.+)\?", p.prompt).group(1)
    assert equals(sym(expr), p.answer)


def check_fractions(p):
    expr = re.fullmatch(r"What is (.+)\? Give the answer as .*", p.prompt).group(1)
    assert equals(sym(expr), p.answer)


def check_linear(p):
    m = re.fullmatch(r"Solve for x: (.+) = (.+?)\.( Give .*)?", p.prompt)
    x = sympy.Symbol("x")
    sols = sympy.solve(sympy.Eq(sym(m.group(1)), sym(m.group(2))), x)
    assert len(sols) == 1 and equals(sols[0], p.answer), (p.prompt, sols)


def check_linear_system(p):
    m = re.fullmatch(r"Given (.+) = (.+) and (.+) = (.+), what is (.+?)\?( Give .*)?", p.prompt)
    x, y = sympy.symbols("x y")
    eqs = [sympy.Eq(sym(m.group(1)), sym(m.group(2))), sympy.Eq(sym(m.group(3)), sym(m.group(4)))]
    sol = sympy.solve(eqs, [x, y], dict=True)
    assert len(sol) == 1, f"system is not uniquely solvable: {p.prompt}"
    assert equals(sym(m.group(5)).subs(sol[0]), p.answer)


def check_quadratic(p):
    m = re.fullmatch(r"What is the (larger|smaller) root of (.+) = (.+)\?", p.prompt) or \
        re.fullmatch(r"What is the (sum of the squares|sum|product) of the roots of (.+) = (.+)\?",
                     p.prompt)
    question, lhs, rhs = m.groups()
    roots = sympy.solve(sympy.Eq(sym(lhs), sym(rhs)), sympy.Symbol("x"))
    assert len(roots) == 2 and all(r.is_integer for r in roots), (p.prompt, roots)
    r1, r2 = sorted(roots)
    want = {"larger": r2, "smaller": r1, "sum": r1 + r2, "product": r1 * r2,
            "sum of the squares": r1**2 + r2**2}[question]
    assert equals(want, p.answer)


def check_gcd_lcm(p):
    numbers = [int(n) for n in re.findall(r"\d+", p.prompt)]
    if "greatest common divisor" in p.prompt:
        brute = max(d for d in range(1, min(numbers) + 1) if all(n % d == 0 for n in numbers))
        assert brute == int(p.answer)
    else:
        assert sympy.ilcm(*numbers) == int(p.answer)
        assert all(int(p.answer) % n == 0 for n in numbers)


def check_modular(p):
    m = re.fullmatch(r"What is the remainder when (.+) is divided by (\d+)\?", p.prompt)
    if m:
        assert equals(sympy.Mod(sym(m.group(1)), int(m.group(2))), p.answer)
        return
    a, mod = map(int, re.match(r"What is the inverse of (\d+) modulo (\d+)\?", p.prompt).groups())
    inverses = [x for x in range(mod) if (a * x) % mod == 1]
    assert inverses == [int(p.answer)]


def count_combinatorics(prompt: str) -> int:
    if m := re.fullmatch(r"In how many ways can (\d+) (?:different books|people|different "
                         r"flags) be arranged .*", prompt):
        return sum(1 for _ in itertools.permutations(range(int(m.group(1)))))
    if m := re.fullmatch(r"In how many ways can you choose (\d+) students from a group of (\d+)\?",
                         prompt):
        return sum(1 for _ in itertools.combinations(range(int(m.group(2))), int(m.group(1))))
    if m := re.fullmatch(r"In how many ways can (\d+) different prizes be given to (\d+) .*",
                         prompt):
        return sum(1 for _ in itertools.permutations(range(int(m.group(2))), int(m.group(1))))
    if m := re.fullmatch(r"How many distinct strings .* letters of ([A-Z]+)\?", prompt):
        return len(set(itertools.permutations(m.group(1))))
    m = re.fullmatch(r"A club has (\d+) men and (\d+) women\. .* committee of (\d+) people with "
                     r"exactly (\d+) wom[ae]n be chosen\?", prompt)
    men, women, size, j = map(int, m.groups())
    people = ["m"] * men + ["w"] * women
    return sum(1 for c in itertools.combinations(range(len(people)), size)
               if sum(people[i] == "w" for i in c) == j)


def check_combinatorics(p):
    assert count_combinatorics(p.prompt) == int(p.answer)


def check_sequence(p):
    m = re.fullmatch(r"What is the (?:next term in the|(\d+)\w\w term of the \w+) sequence "
                     r"(.+), \.\.\.\?", p.prompt)
    terms = [int(t) for t in m.group(2).split(", ")]
    n = sympy.Symbol("n")
    target = int(m.group(1)) if m.group(1) else len(terms) + 1
    predictions = set()
    for degree in (1, 2):  # lowest-degree polynomial through the first points, if it fits all
        poly = sympy.interpolate(list(zip(range(1, degree + 2), terms[: degree + 1])), n)
        if all(poly.subs(n, i + 1) == t for i, t in enumerate(terms)):
            predictions.add(int(poly.subs(n, target)))
            break
    if terms[0] != 0 and all(b * terms[0] == a * terms[1] for a, b in zip(terms, terms[1:])):
        predictions.add(int(sympy.Rational(terms[1], terms[0]) ** (target - 1) * terms[0]))
    if all(c == a + b for a, b, c in zip(terms, terms[1:], terms[2:])):
        a, b = terms[-2], terms[-1]
        for _ in range(target - len(terms)):
            a, b = b, a + b
        predictions.add(b)
    assert predictions and int(p.answer) in predictions, (p.prompt, p.answer, predictions)


def check_base_conversion(p):
    def value(token: str) -> int:
        digits, _, base = token.partition("_")
        return int(digits, int(base)) if base else int(digits)

    target = int(re.search(r"base (\d+)\.$", p.prompt).group(1))
    assert all(int(d) < target for d in p.answer) and (p.answer == "0" or p.answer[0] != "0")
    if m := re.fullmatch(r"Compute (\S+) \+ (\S+)\. Write the answer in base \d+\.", p.prompt):
        assert int(p.answer, target) == value(m.group(1)) + value(m.group(2))
    else:
        source = re.fullmatch(r"Write (\S+) in base \d+\.", p.prompt).group(1)
        assert int(p.answer, target) == value(source)


def check_percent(p):
    r = sympy.Rational
    nums = [int(n) for n in re.findall(r"\d+", p.prompt)]
    if p.prompt.startswith("What is"):
        want = r(nums[0], 100) * nums[1]
    elif "jacket" in p.prompt:
        sign = 1 if "increased" in p.prompt else -1
        want = nums[0] + sign * r(nums[0] * nums[1], 100)
    elif "bike" in p.prompt:
        original = sympy.Symbol("o")
        want = sympy.solve(sympy.Eq(original * (1 + r(nums[0], 100)), nums[1]), original)[0]
    else:
        want = nums[0] * (1 + r(nums[1], 100)) * (1 - r(nums[2], 100))
    assert equals(want, p.answer)


def check_chain(p):
    """The printed sum by sympy, and each line of the worked solution by plain int arithmetic:
    it starts at the first term, uses the terms in order, and ends in the gold answer."""
    expr = re.fullmatch(r"What is (.+)\?", p.prompt).group(1)
    assert equals(sym(expr), p.answer)
    tokens = expr.split(" ")
    *lines, last = p.meta["solution"].split("\n")
    assert last == f"Answer: {p.answer}" and len(lines) == len(tokens) // 2
    total = int(tokens[0])
    for line, op, term in zip(lines, tokens[1::2], tokens[2::2]):
        a, line_op, b, eq, c = line.split(" ")
        assert (int(a), line_op, b, eq) == (total, op, term, "="), (line, total, op, term)
        total = int(a) + int(b) if op == "+" else int(a) - int(b)
        assert int(c) == total >= 0, line
    assert total == int(p.answer)


CHECKERS = {
    "Arithmetic": check_arithmetic, "Fractions": check_fractions, "Linear": check_linear,
    "LinearSystem": check_linear_system, "Quadratic": check_quadratic, "GcdLcm": check_gcd_lcm,
    "Modular": check_modular, "Combinatorics": check_combinatorics, "Sequence": check_sequence,
    "BaseConversion": check_base_conversion, "Percent": check_percent, "Chain": check_chain,
    "ChainMix": check_chain,
}


def test_every_family_has_an_independent_checker():
    assert set(CHECKERS) == set(BASE_FAMILIES)


@pytest.mark.parametrize("family", sorted(BASE_FAMILIES))
@EXAMPLES
@given(item=generator_items)
def test_generated_answer_is_right(family, item):
    seed, index, level = item
    problem = generate(family, seed, index, level)
    CHECKERS[family](problem)


@pytest.mark.parametrize("family", sorted(BASE_FAMILIES))
@pytest.mark.parametrize("level", [1, 2, 3, 4, 5])
def test_first_items_of_seed_zero_are_right(family, level):
    for index in range(8):
        CHECKERS[family](generate(family, 0, index, level))


@pytest.mark.parametrize(
    ("family", "prompt", "answer"),
    [  # hand-worked: the checkers themselves must reject wrong answers
        ("Arithmetic", "What is 2 + 3 * 4?", "14"),
        ("Combinatorics", "In how many ways can 4 people be arranged in a line?", "24"),
        ("Fractions", "What is (1/2) ÷ (3/4)? Give the answer as a fraction in lowest terms "
         "or an integer.", "2/3"),
        ("Linear", "Solve for x: 3(x + 2) = 5x - 7.", "13/2"),
        ("Quadratic", "What is the larger root of x^2 - 5x + 6 = 0?", "3"),
        ("GcdLcm", "What is the least common multiple of 4, 6 and 10?", "60"),
        ("Modular", "What is the remainder when 3^4 is divided by 5?", "1"),
        ("Combinatorics", "How many distinct strings can be made by rearranging the letters of "
         "AAB?", "3"),
        ("Sequence", "What is the next term in the sequence 1, 1, 2, 3, 5, ...?", "8"),
        ("BaseConversion", "Write 1011_2 in base 10.", "11"),
        ("Percent", "What is 25% of 80?", "20"),
        ("Chain", "What is 12 + 30 - 7?", "35"),
    ],
)
def test_checkers_accept_hand_worked_examples_and_reject_off_by_one(family, prompt, answer):
    from dataclasses import replace

    from verimath.envs.generators.common import make_problem

    right = make_problem(family, 1, prompt, answer)
    wrong = str(int(Fraction(answer)) + 1) if "/" not in answer else "1/7"
    wrong = make_problem(family, 1, prompt, wrong)
    if family == "Chain":  # hand-written worked solutions, and one with a wrong step
        right = replace(right, meta={"solution": "12 + 30 = 42\n42 - 7 = 35\nAnswer: 35"})
        wrong = replace(wrong, meta={"solution": "12 + 30 = 42\n42 - 7 = 36\nAnswer: 36"})
    CHECKERS[family](right)
    with pytest.raises(AssertionError):
        CHECKERS[family](wrong)


def test_checker_rejects_a_wrong_intermediate_step_with_the_right_answer():
    from dataclasses import replace

    problem = generate("Chain", 0, 0, 3)
    check_chain(problem)
    first, rest = problem.meta["solution"].split("\n", 1)
    total = int(first.rsplit(" ", 1)[1])
    broken = first.rsplit(" ", 1)[0] + f" {total + 1}\n" + rest
    with pytest.raises(AssertionError):
        check_chain(replace(problem, meta={**problem.meta, "solution": broken}))
