"""Real math datasets into the one `Problem` format.

One converter per source family (`gsm8k`, `hendrycks_math` for MATH / MATH-500, `aime`,
`dapo` for DAPO-Math-17k, `generic` for any table), readers for jsonl / json / parquet /
csv / ``datasets`` directories / hub names, and the `prepare` pipeline behind
``verimath prep``: convert, filter (integer answers), deduplicate, verify each gold
against itself with `verimath.rewards`, decontaminate against eval sets by word n-grams.

    >>> from verimath.datasets_prep import prepare
    >>> result = prepare("gsm8k", "data/gsm8k/test.jsonl")      # doctest: +SKIP
    >>> result.counts["kept"], result.problems[17].id            # doctest: +SKIP
    (1319, 'gsm8k/test/17')
"""

from verimath.datasets_prep.contamination import decontaminate
from verimath.datasets_prep.filters import dedupe, is_integer_answer
from verimath.datasets_prep.pipeline import CONVERTERS, PrepResult, Rejected, prepare
from verimath.datasets_prep.readers import open_rows
from verimath.datasets_prep.rows import RawRow, RowError

__all__ = [
    "CONVERTERS",
    "PrepResult",
    "RawRow",
    "Rejected",
    "RowError",
    "decontaminate",
    "dedupe",
    "is_integer_answer",
    "open_rows",
    "prepare",
]
