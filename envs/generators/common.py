"""Helpers shared by the procedural generator families (see `verimath.envs.generators`).

Conventions every family follows:
    * a generator is a pure function ``(rng: numpy.random.Generator, level: int) -> Problem``;
      the only randomness it uses is ``rng``;
    * levels run 1..5, each harder than the one before;
    * answers are exact: an integer (``"-12"``) or a reduced fraction (``"-3/4"``), never a float;
    * ``meta`` holds ``family``, ``level`` and ``params`` (the numbers the problem was built from),
      so tests can recompute the answer by another route.
"""

from __future__ import annotations

import hashlib
from fractions import Fraction
from typing import Any

import numpy as np
from verimath.envs.problem import Problem

LEVELS = (1, 2, 3, 4, 5)


def check_level(level: int, family: str) -> int:
    """Return `level` as an int, or raise ValueError naming the family and the valid range."""
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or level not in LEVELS:
        raise ValueError(f"{family}: level must be an integer in 1..5, got {level!r}")
    return int(level)


def randint(rng: np.random.Generator, low: int, high: int) -> int:
    """A uniform integer in ``[low, high]`` (both ends included), as a Python int."""
    return int(rng.integers(low, high, endpoint=True))


def nonzero(rng: np.random.Generator, low: int, high: int) -> int:
    """A uniform non-zero integer in ``[low, high]``."""
    value = 0
    while value == 0:
        value = randint(rng, low, high)
    return value


def pick(rng: np.random.Generator, options: Any) -> Any:
    """One element of a sequence, chosen uniformly."""
    return options[int(rng.integers(len(options)))]


def format_number(value: int | Fraction) -> str:
    """Exact answer text: ``"7"``, ``"-7"``, ``"3/4"``, ``"-3/4"`` (fractions always reduced)."""
    value = Fraction(value)
    if value.denominator == 1:
        return str(value.numerator)
    return f"{value.numerator}/{value.denominator}"


def make_problem(
    family: str, level: int, prompt: str, answer: int | Fraction | str, **params: Any
) -> Problem:
    """Build a generated `Problem`; its id is content-based until `generate` names it by seed."""
    digest = hashlib.sha1(prompt.encode("utf-8")).hexdigest()[:12]
    text = answer if isinstance(answer, str) else format_number(answer)
    return Problem(
        id=f"gen/{family}/L{level}/{digest}",
        prompt=prompt,
        answer=text,
        source=f"gen/{family}",
        meta={"family": family, "level": level, "params": params},
    )


def linear_term(coef: int | Fraction, var: str, first: bool) -> str:
    """Render ``coef*var`` inside a sum: ``"3x"``, ``"- x"``, ``"+ 2y"`` (first term unsigned)."""
    coef = Fraction(coef)
    sign = "-" if coef < 0 else "+"
    mag = abs(coef)
    body = var if mag == 1 else f"{format_number(mag)}{var}"
    if mag.denominator != 1:
        body = f"({format_number(mag)}){var}"
    if first:
        return f"-{body}" if sign == "-" else body
    return f"{sign} {body}"


def linear_expr(terms: list[tuple[int | Fraction, str]]) -> str:
    """Render a sum of terms; ``var == ""`` marks a constant. Zero terms are skipped."""
    parts: list[str] = []
    for coef, var in terms:
        if coef == 0:
            continue
        first = not parts
        if var:
            parts.append(linear_term(coef, var, first))
        else:
            mag = format_number(abs(Fraction(coef)))
            if first:
                parts.append(format_number(coef))
            else:
                parts.append(f"{'-' if coef < 0 else '+'} {mag}")
    return " ".join(parts) if parts else "0"
