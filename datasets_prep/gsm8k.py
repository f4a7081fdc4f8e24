"""GSM8K (Cobbe et al., 2021): grade-school word problems with integer answers.

Raw row: ``{"question": str, "answer": str}`` where ``answer`` is the worked solution
with ``<<48/2=24>>`` calculator annotations and a last line ``#### 72``.

Conversion:
    prompt = question (unchanged)
    answer = the text after the last ``####``, stripped, thousands separators removed
             (``"2,125"`` -> ``"2125"``)
    meta   = {"solution": worked solution before ``####``}
"""

from __future__ import annotations

import re

from verimath.datasets_prep.rows import RawRow, RowError, get_text, make_id
from verimath.envs.problem import Problem

NAME = "gsm8k"
_MARK = "####"
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


def final_answer(solution: str) -> str:
    """The gold after the last ``####`` with thousands commas removed; RowError if none."""
    head, mark, tail = solution.rpartition(_MARK)
    if not mark:
        raise RowError("answer", "no '####' final-answer marker")
    answer = _THOUSANDS.sub("", tail.strip())
    if not answer:
        raise RowError("answer", "nothing after '####'")
    return answer


def convert(row: RawRow, *, name: str = NAME, split: str = "test") -> Problem:
    """One GSM8K row into a `Problem` with id ``"{name}/{split}/{index}"``."""
    question = get_text(row.data, "question")
    solution = get_text(row.data, "answer")
    answer = final_answer(solution)
    worked = solution.rpartition(_MARK)[0].strip()
    return Problem(
        id=make_id(name, split, row.index),
        prompt=question.strip(),
        answer=answer,
        source=name,
        meta={"solution": worked},
    )
