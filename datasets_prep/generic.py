"""Any table of problems: the user names the problem and answer fields.

Fields are dotted paths into the row (``"reward_model.ground_truth"``). Conversion:
    prompt = the problem field (stripped)
    answer = the answer field (string or number, see `rows.answer_text`)
    id     = ``"{name}/{split}/{index}"``, or ``"{name}/{split}/{row[id_field]}"`` when an
             id field is named (the pipeline then checks that ids are unique)
    meta   = {field: row[field] for each requested meta field present in the row}
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from verimath.datasets_prep.rows import (
    RawRow,
    RowError,
    get_answer,
    get_field,
    get_text,
    jsonable,
    optional,
)
from verimath.envs.problem import Problem

NAME = "generic"


def convert(
    row: RawRow,
    *,
    name: str = NAME,
    split: str = "train",
    problem_field: str = "problem",
    answer_field: str = "answer",
    id_field: str | None = None,
    meta_fields: Sequence[str] = (),
) -> Problem:
    """One row into a `Problem`, reading the named fields."""
    data = row.data
    problem = _named(get_text, data, problem_field, "--problem-field")
    answer = _named(get_answer, data, answer_field, "--answer-field")
    key = str(row.index)
    if id_field is not None:
        value = _named(get_field, data, id_field, "--id-field")
        if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
            raise RowError(id_field,
                           f"ids must be non-empty strings or integers, got {value!r:.40}")
        key = str(value).strip()
    meta = {f: jsonable(optional(data, f)) for f in meta_fields}
    return Problem(
        id=f"{name}/{split}/{key}", prompt=problem.strip(), answer=answer, source=name, meta=meta
    )


def _named(read: Callable, data, field: str, option: str):
    """``read(data, field)``; a missing field's error names the option that chose it and the
    fields the row has (the usual cause: the table calls its column something else)."""
    try:
        return read(data, field)
    except RowError as exc:
        if not exc.reason.startswith("missing") or "." in field:
            raise
        have = ", ".join(map(repr, list(data)[:8])) or "none"
        raise RowError(field, f"{exc.reason}; the row has {have}: pass {option} with the name "
                              "of the column that holds it") from None


def make_converter(
    problem_field: str = "problem",
    answer_field: str = "answer",
    id_field: str | None = None,
    meta_fields: Sequence[str] = (),
) -> Callable[..., Problem]:
    """A converter with the fields bound, usable wherever a per-source `convert` is."""
    return functools.partial(
        convert,
        problem_field=problem_field,
        answer_field=answer_field,
        id_field=id_field,
        meta_fields=tuple(meta_fields),
    )
