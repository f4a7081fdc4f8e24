"""Row filters after conversion: DAPO's integer-answer restriction and deduplication.

Both keep input order and the first occurrence, so output is deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from verimath.envs.problem import Problem

_INTEGER = re.compile(r"^[+-]?[0-9]+$")


def is_integer_answer(answer: str) -> bool:
    """True for an optionally signed run of decimal digits (``"25"``, ``"-3"``, ``"007"``).

    No thousands separators, decimals (``"3.0"``), LaTeX or units: the DAPO paper keeps
    only problems whose gold was transformed to a plain integer.
    """
    return bool(_INTEGER.match(answer.strip()))


def normalize_prompt(text: str) -> str:
    """The dedup key of a prompt: whitespace runs collapsed to one space, ends stripped."""
    return " ".join(text.split())


@dataclass(frozen=True)
class Duplicate:
    """A dropped problem and the id of the earlier one it repeats."""

    problem: Problem
    kept_id: str
    same_answer: bool


def first_occurrences(problems: Iterable[Problem]) -> Iterator[Problem | Duplicate]:
    """Each problem whose prompt is new (after `normalize_prompt`), else a `Duplicate`.

    Streams: memory grows with the number of distinct prompts only, so a hub dump with
    every problem repeated (DAPO-Math-17k's 1.79M rows) dedups in bounded memory.
    """
    first: dict[str, tuple[str, str]] = {}  # key -> (id, answer) of the kept problem
    for p in problems:
        key = normalize_prompt(p.prompt)
        earlier = first.get(key)
        if earlier is None:
            first[key] = (p.id, p.answer)
            yield p
        else:
            yield Duplicate(p, earlier[0], earlier[1] == p.answer)


def dedupe(problems: Iterable[Problem]) -> tuple[list[Problem], list[Duplicate]]:
    """Drop problems whose prompt repeats an earlier one (after `normalize_prompt`).

    The first occurrence is kept. A repeat whose answer differs is still dropped, and
    marked ``same_answer=False`` so that conflicting golds can be reported.
    """
    kept: list[Problem] = []
    dropped: list[Duplicate] = []
    for item in first_occurrences(problems):
        (dropped if isinstance(item, Duplicate) else kept).append(item)
    return kept, dropped
