"""Generator families on integers: GcdLcm, Modular, Combinatorics, BaseConversion."""

from __future__ import annotations

import math
import string

import numpy as np
from verimath.envs.generators.common import check_level, make_problem, pick, randint
from verimath.envs.problem import Problem


def gcd_lcm(rng: np.random.Generator, level: int) -> Problem:
    """gcd or lcm of two (L1-L3) or three (L4-L5) numbers that share a random factor."""
    level = check_level(level, "GcdLcm")
    count = 2 if level <= 3 else 3
    g_high, c_high = {1: (6, 5), 2: (10, 6), 3: (20, 12), 4: (12, 15)}.get(level, (30, 40))
    g = randint(rng, 1 if level == 1 else 2, g_high)
    numbers: list[int] = []
    while len(set(numbers)) < count:  # distinct numbers, so the question is never trivial
        numbers = [g * randint(rng, 1, c_high) for _ in range(count)]
    kind = "gcd" if level == 1 else pick(rng, ("gcd", "lcm"))
    answer = math.gcd(*numbers) if kind == "gcd" else math.lcm(*numbers)
    name = "greatest common divisor" if kind == "gcd" else "least common multiple"
    listing = " and ".join([", ".join(map(str, numbers[:-1])), str(numbers[-1])])
    return make_problem("GcdLcm", level, f"What is the {name} of {listing}?", answer,
                        kind=kind, numbers=numbers)


def modular(rng: np.random.Generator, level: int) -> Problem:
    """Remainders, modular arithmetic and exponentiation; L5 adds modular inverses."""
    level = check_level(level, "Modular")
    if level <= 2:
        a = randint(rng, 10, 50) if level == 1 else randint(rng, 100, 1000)
        m = randint(rng, 2, 9) if level == 1 else randint(rng, 2, 20)
        return make_problem("Modular", level, f"What is the remainder when {a} is divided by "
                            f"{m}?", a % m, kind="mod", expression=str(a), m=m)
    if level == 3:
        a, b, c = randint(rng, 2, 100), randint(rng, 2, 100), randint(rng, 0, 100)
        m = randint(rng, 3, 25)
        expr = f"{a} * {b} + {c}"
        return make_problem("Modular", level, f"What is the remainder when {expr} is divided by "
                            f"{m}?", (a * b + c) % m, kind="mod", expression=expr, m=m)
    if level == 4 or rng.random() < 0.5:
        a = randint(rng, 2, 12)
        e = randint(rng, 5, 30) if level == 4 else randint(rng, 100, 5000)
        m = randint(rng, 3, 20) if level == 4 else pick(rng, (7, 11, 13, 17, 19, 23, 29, 31))
        return make_problem("Modular", level, f"What is the remainder when {a}^{e} is divided "
                            f"by {m}?", pow(a, e, m), kind="mod", expression=f"{a}^{e}", m=m)
    p = pick(rng, (7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47))
    a = randint(rng, 2, p - 1)
    prompt = (f"What is the inverse of {a} modulo {p}? Give the integer x with 0 <= x < {p} "
              f"such that {a}x leaves remainder 1 when divided by {p}.")
    return make_problem("Modular", level, prompt, pow(a, -1, p), kind="inverse", a=a, m=p)


_ARRANGE_CONTEXTS = (("different books", "on a shelf"), ("people", "in a line"),
                     ("different flags", "in a row"))


def _multiset_word(rng: np.random.Generator) -> str:
    letters = list(string.ascii_uppercase[: randint(rng, 2, 4)])
    length = randint(rng, max(5, len(letters)), 7)
    counts = [1] * len(letters)
    for _ in range(length - len(letters)):
        counts[randint(rng, 0, len(letters) - 1)] += 1
    return "".join(letter * c for letter, c in zip(letters, counts))


def combinatorics(rng: np.random.Generator, level: int) -> Problem:
    """Counting: n! (L1), nCk (L2), nPk (L3), word arrangements (L4), committees (L5)."""
    level = check_level(level, "Combinatorics")
    if level == 1:
        n = randint(rng, 2, 5)
        things, place = pick(rng, _ARRANGE_CONTEXTS)
        prompt = f"In how many ways can {n} {things} be arranged {place}?"
        return make_problem("Combinatorics", level, prompt, math.factorial(n), kind="factorial",
                            n=n)
    if level == 2:
        n = randint(rng, 4, 10)
        k = randint(rng, 2, n - 2)
        prompt = f"In how many ways can you choose {k} students from a group of {n}?"
        return make_problem("Combinatorics", level, prompt, math.comb(n, k), kind="choose",
                            n=n, k=k)
    if level == 3:
        n = randint(rng, 5, 14)
        k = randint(rng, 2, 4)
        prompt = (f"In how many ways can {k} different prizes be given to {n} people "
                  "if each person gets at most one prize?")
        return make_problem("Combinatorics", level, prompt, math.perm(n, k), kind="permute",
                            n=n, k=k)
    if level == 4:
        word = _multiset_word(rng)
        total = math.factorial(len(word))
        for letter in set(word):
            total //= math.factorial(word.count(letter))
        prompt = f"How many distinct strings can be made by rearranging the letters of {word}?"
        return make_problem("Combinatorics", level, prompt, total, kind="multiset", word=word)
    men, women = randint(rng, 3, 8), randint(rng, 3, 8)
    size = randint(rng, 3, 6)
    j = randint(rng, max(1, size - men), min(women, size - 1))
    prompt = (f"A club has {men} men and {women} women. In how many ways can a committee of "
              f"{size} people with exactly {j} {'woman' if j == 1 else 'women'} be chosen?")
    answer = math.comb(women, j) * math.comb(men, size - j)
    return make_problem("Combinatorics", level, prompt, answer, kind="committee", men=men,
                        women=women, size=size, women_in=j)


def to_base(n: int, base: int) -> str:
    """Digits of a non-negative integer in `base` (2..10)."""
    if n == 0:
        return "0"
    digits = []
    while n:
        n, d = divmod(n, base)
        digits.append(str(d))
    return "".join(reversed(digits))


def base_conversion(rng: np.random.Generator, level: int) -> Problem:
    """Conversions between bases 2..10; numbers in base b are written ``1011_2``."""
    level = check_level(level, "BaseConversion")
    if level <= 2:
        n = randint(rng, 2, 15) if level == 1 else randint(rng, 16, 255)
        base = 2 if level == 1 else randint(rng, 2, 9)
        return make_problem("BaseConversion", level, f"Write {n} in base {base}.",
                            to_base(n, base), kind="to_base", n=n, base=base)
    if level == 3:
        n, base = randint(rng, 5, 300), randint(rng, 2, 9)
        prompt = f"Write {to_base(n, base)}_{base} in base 10."
        return make_problem("BaseConversion", level, prompt, str(n), kind="from_base", n=n,
                            base=base)
    if level == 4:
        n, b1 = randint(rng, 10, 500), randint(rng, 2, 9)
        b2 = b1
        while b2 == b1:
            b2 = randint(rng, 2, 9)
        prompt = f"Write {to_base(n, b1)}_{b1} in base {b2}."
        return make_problem("BaseConversion", level, prompt, to_base(n, b2), kind="convert",
                            n=n, base=b2)
    base, a, b = randint(rng, 3, 9), randint(rng, 20, 1000), randint(rng, 20, 1000)
    prompt = (f"Compute {to_base(a, base)}_{base} + {to_base(b, base)}_{base}. "
              f"Write the answer in base {base}.")
    return make_problem("BaseConversion", level, prompt, to_base(a + b, base), kind="sum",
                        n=a + b, base=base)
