"""AIME (American Invitational Mathematics Examination): integer answers 0..999.

Raw rows differ between collections; all of these are accepted:
    AIME 2024 (Qwen2.5-Math eval): ``{"id": 60, "problem", "solution", "answer": "025", "url"}``
    AIME 2025 (AReaL eval):        ``{"problem", "answer": 70, "id": "0"}``
    others use ``question`` for the statement.

Conversion:
    prompt = ``problem`` (else ``question``), stripped
    answer = the integer in canonical decimal form: ``"025"`` -> ``"25"``, ``70`` -> ``"70"``,
             ``"000"`` -> ``"0"``; a non-integer answer is an error
    meta   = {"original_id": str | None, "url": str | None, "solution": str | None}
"""

from __future__ import annotations

from verimath.datasets_prep.filters import is_integer_answer
from verimath.datasets_prep.rows import (
    RawRow,
    RowError,
    get_answer,
    get_text,
    make_id,
    optional,
    optional_text,
)
from verimath.envs.problem import Problem

NAME = "aime"


def canonical_integer(text: str, field: str = "answer") -> str:
    """``"025"`` -> ``"25"``, ``"-007"`` -> ``"-7"``, ``"+3"`` -> ``"3"``; RowError otherwise."""
    stripped = text.strip()
    if stripped.startswith("$") and stripped.endswith("$") and len(stripped) > 1:
        stripped = stripped[1:-1].strip()
    if not is_integer_answer(stripped):
        raise RowError(field, f"AIME answers are integers, got {text!r:.60}")
    return str(int(stripped))


def convert(row: RawRow, *, name: str = NAME, split: str = "test") -> Problem:
    """One AIME row into a `Problem` with id ``"{name}/{split}/{index}"``."""
    data = row.data
    field = "problem" if optional(data, "problem") is not None else "question"
    problem = get_text(data, field)
    answer = canonical_integer(get_answer(data, "answer"))
    original_id = optional(data, "id")
    meta = {
        "original_id": None if original_id is None else str(original_id),
        "url": optional_text(data, "url"),
        "solution": optional_text(data, "solution"),
    }
    return Problem(
        id=make_id(name, split, row.index),
        prompt=problem.strip(),
        answer=answer,
        source=name,
        meta=meta,
    )
