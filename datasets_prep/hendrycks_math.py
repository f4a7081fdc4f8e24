"""MATH (Hendrycks et al., 2021) and its 500-problem subset MATH-500 (Lightman et al., 2023).

Raw rows (both layouts are accepted):
    MATH-500: ``{"problem", "solution", "answer", "subject", "level": 1..5, "unique_id"}``
    MATH:     ``{"problem", "solution", "type": "Algebra", "level": "Level 3"}``

Conversion:
    prompt = problem (stripped)
    answer = the ``answer`` field when present, else the content of the last
             ``\\boxed{...}`` (or ``\\fbox{...}``) of the solution
    meta   = {"level": int | None, "subject": str | None, "unique_id": str | None,
              "solution": str | None}
"""

from __future__ import annotations

import re
from typing import Any

from verimath.datasets_prep.rows import (
    RawRow,
    RowError,
    answer_text,
    get_text,
    make_id,
    optional,
    optional_text,
)
from verimath.envs.problem import Problem
from verimath.rewards import extract_answer

NAME = "math"
_LEVEL = re.compile(r"^\s*(?:level\s*)?([0-9]+)\s*$", re.IGNORECASE)


def parse_level(value: Any) -> int | None:
    """``3`` or ``"Level 3"`` -> 3; anything else (``"Level ?"``, None) -> None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        match = _LEVEL.match(value)
        return int(match.group(1)) if match else None
    return None


def gold_answer(data: dict) -> str:
    """The ``answer`` field if present, else the last boxed expression of ``solution``.

    A blank ``answer`` counts as absent (CSV and parquet exports write missing cells as
    ``""``), so the solution's box is used when there is one.
    """
    answer = optional(data, "answer")
    blank = isinstance(answer, str) and not answer.strip()
    if answer is not None and not blank:
        return answer_text(answer, "answer")
    solution = optional(data, "solution")
    if solution is None:
        state = "empty" if blank else "missing"
        raise RowError("answer", f"{state}, and no 'solution' to take a \\boxed{{}} answer from")
    if not isinstance(solution, str):
        raise RowError("solution", f"expected a string, got {type(solution).__name__}")
    boxed = extract_answer(solution, style="boxed")
    if boxed is None:
        raise RowError("solution", "no \\boxed{...} final answer (and no 'answer' field)")
    return boxed


def convert(row: RawRow, *, name: str = NAME, split: str = "test") -> Problem:
    """One MATH / MATH-500 row into a `Problem` with id ``"{name}/{split}/{index}"``."""
    data = row.data
    problem = get_text(data, "problem")
    answer = gold_answer(data)
    subject = optional(data, "subject")
    if subject is None:
        subject = optional(data, "type")
    meta = {
        "level": parse_level(optional(data, "level")),
        "subject": subject if isinstance(subject, str) else None,
        "unique_id": optional_text(data, "unique_id"),
        "solution": optional_text(data, "solution"),
    }
    return Problem(
        id=make_id(name, split, row.index),
        prompt=problem.strip(),
        answer=answer,
        source=name,
        meta=meta,
    )
