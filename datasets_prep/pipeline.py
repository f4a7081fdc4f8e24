"""The preparation pipeline: read -> convert -> integer filter -> dedup -> verify golds ->
decontaminate.

Every stage keeps input order, so the same input and options give the same file. Ids are
``"{name}/{split}/{row}"`` with `row` the 0-based position in the input (see
`rows.make_id`); they survive dedup and filtering unchanged, and a fixed broken row gets
back the id it would have had.

Malformed rows (bad JSON, a missing or empty field, a wrong type) raise
`ProblemFileError` naming file, line/row and field, unless ``skip_bad``: they are then
collected as `Rejected` records. Golds that fail the self-check (`validate`) are always
rejected with the reason, never fatal.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verimath.datasets_prep import aime, contamination, dapo, filters, generic, gsm8k, validate
from verimath.datasets_prep import hendrycks_math as math_source
from verimath.datasets_prep.readers import open_rows
from verimath.datasets_prep.rows import RawRow, RowError, jsonable
from verimath.envs.problem import Problem, ProblemFileError

MAX_EXAMPLES = 1000  # duplicates kept in PrepResult as examples (counts hold the totals)
CONVERTERS: dict[str, Callable[..., Problem]] = {
    "gsm8k": gsm8k.convert,
    "math": math_source.convert,
    "aime": aime.convert,
    "dapo": dapo.convert,
    "generic": generic.convert,
}


@dataclass(frozen=True)
class Rejected:
    """A row left out, where it was, and why (one line of the ``--skip-bad`` side file)."""

    where: str
    reason: str
    field: str | None = None
    row: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        row = {str(k): jsonable(v) for k, v in self.row.items()}
        return {"where": self.where, "reason": self.reason, "field": self.field, "row": row}


@dataclass
class PrepResult:
    """What `prepare` produced: the problems, what was left out and the counts.

    `counts` keys, in pipeline order: ``read``, ``malformed`` (rejected at conversion),
    ``non_integer`` (with ``integer_answers``), ``deduplicated``, ``unverified`` (golds
    failing the self-check; absent without ``verify``), ``rejected`` (malformed +
    unverified), ``decontaminated``, ``kept``; plus ``template_missing`` for DAPO
    prompts in which no instruction template was found. `rejected` and `contaminated`
    are complete; `duplicates` holds the first `MAX_EXAMPLES` (a hub dump can repeat
    every problem a hundred times).
    """

    problems: list[Problem]
    split: str
    counts: dict[str, int]
    rejected: list[Rejected] = dataclasses.field(default_factory=list)
    duplicates: list[filters.Duplicate] = dataclasses.field(default_factory=list)
    contaminated: list[contamination.Contamination] = dataclasses.field(default_factory=list)


def make_converter(source: str, **generic_fields: Any) -> Callable[..., Problem]:
    """The converter for `source`; field names only apply to ``"generic"``."""
    if source not in CONVERTERS:
        raise ValueError(f"unknown source {source!r}; expected one of {', '.join(CONVERTERS)}")
    if source == "generic":
        return generic.make_converter(**generic_fields)
    extra = {k: v for k, v in generic_fields.items() if v not in (None, (), [])}
    if extra:
        raise ValueError(f"{', '.join(extra)} only apply to the 'generic' source, not {source!r}")
    return CONVERTERS[source]


def convert_rows(
    rows: Iterable[RawRow], convert: Callable[..., Problem], *, name: str, split: str,
    skip_bad: bool = False,
) -> Iterator[tuple[str, Problem | Rejected]]:
    """(where, problem) per good row, (where, Rejected) per bad one with `skip_bad`.

    Without `skip_bad` the first bad row raises ProblemFileError naming file, line/row
    and field. Streams, so a large input is never held in memory twice.
    """
    for row in rows:
        try:
            if row.error is not None:
                raise row.error
            yield row.where, convert(row, name=name, split=split)
        except RowError as exc:
            if not skip_bad:
                raise ProblemFileError(f"{row.where}: {exc}") from None
            yield row.where, Rejected(row.where, str(exc), exc.field, row.data)


def convert_and_dedupe(
    pairs: Iterable[tuple[str, Problem | Rejected]], *, integer_answers: bool
) -> tuple[list[Problem], dict[str, str], PrepResult]:
    """Filter and dedup the converted stream in one pass.

    Returns (kept problems, the location of each kept id, a partial result with counts,
    rejected rows and duplicate examples). Raises ProblemFileError, naming both rows,
    when two kept problems share an id (possible only with a generic id field).
    """
    counts = dict.fromkeys(("read", "malformed", "non_integer", "deduplicated"), 0)
    result = PrepResult([], "", counts)
    current = [""]  # location of the problem `good` yielded last

    def good() -> Iterator[Problem]:
        for where, item in pairs:
            counts["read"] += 1
            if isinstance(item, Rejected):
                counts["malformed"] += 1
                result.rejected.append(item)
            elif integer_answers and not filters.is_integer_answer(item.answer):
                counts["non_integer"] += 1
            else:
                current[0] = where
                yield item

    problems: list[Problem] = []
    wheres: dict[str, str] = {}
    for item in filters.first_occurrences(good()):
        if isinstance(item, filters.Duplicate):
            counts["deduplicated"] += 1
            if len(result.duplicates) < MAX_EXAMPLES:
                result.duplicates.append(item)
        elif item.id in wheres:
            raise ProblemFileError(f"{current[0]}: duplicate id {item.id!r} "
                                   f"(first at {wheres[item.id]})")
        else:
            wheres[item.id] = current[0]
            problems.append(item)
    if not integer_answers:
        del counts["non_integer"]
    return problems, wheres, result


def verify_golds(
    problems: list[Problem], wheres: dict[str, str], *, styles: Sequence[str],
    on_chunk: Callable[[int], None] | None = None,
) -> tuple[list[Problem], list[Rejected]]:
    """Keep problems whose gold verifies against itself; reject the rest with the reason."""
    failures = validate.gold_failures([p.answer for p in problems], styles=styles,
                                      on_chunk=on_chunk)
    kept = [p for p, why in zip(problems, failures) if why is None]
    rejected = [
        Rejected(wheres[p.id], f"gold {p.answer!r:.60} fails its self-check: {why}", "answer",
                 p.to_dict())
        for p, why in zip(problems, failures)
        if why is not None
    ]
    return kept, rejected


def prepare(
    source: str,
    path: str,
    *,
    split: str | None = None,
    name: str | None = None,
    subset: str | None = None,
    skip_bad: bool = False,
    verify: bool = True,
    styles: Sequence[str] = validate.STYLES,
    integer_answers: bool = False,
    against: Sequence[Problem] = (),
    ngram: int = contamination.DEFAULT_N,
    min_coverage: float = 0.0,
    progress: Callable[[Iterable[RawRow], int | None], Iterable[RawRow]] | None = None,
    on_chunk: Callable[[int], None] | None = None,
    **generic_fields: Any,
) -> PrepResult:
    """Convert the dataset at `path` (file, datasets directory or hub name) into problems.

    `name` is the id prefix and `Problem.source` (default: `source`); `against` are the
    eval problems to decontaminate against (n-grams of `ngram` words, dropping problems
    that cover at least `min_coverage` of one, see `contamination`); `progress` wraps
    the row stream (a tqdm bar), `on_chunk` reports verified golds.
    """
    convert = make_converter(source, **generic_fields)
    opened = open_rows(path, split=split, subset=subset)
    rows = progress(opened.rows, opened.total) if progress else opened.rows
    pairs = convert_rows(rows, convert, name=name or source, split=opened.split,
                         skip_bad=skip_bad)
    problems, wheres, result = convert_and_dedupe(pairs, integer_answers=integer_answers)
    result.split = opened.split
    counts = result.counts
    if verify:
        problems, unverified = verify_golds(problems, wheres, styles=styles, on_chunk=on_chunk)
        result.rejected += unverified
        counts["unverified"] = len(unverified)
    counts["rejected"] = len(result.rejected)
    problems, contaminated = contamination.decontaminate(
        problems, against, ngram, min_coverage=min_coverage
    )
    result.contaminated = contaminated
    counts["decontaminated"] = len(contaminated)
    counts["kept"] = len(problems)
    if source == "dapo":
        counts["template_missing"] = sum(not p.meta.get("template_found") for p in problems)
    result.problems = problems
    return result
