"""Raw rows and the small field helpers every converter shares.

A reader yields `RawRow` records: the row's position in the input (`index`, 0-based, the
basis of stable ids), a human location (`where`, e.g. ``"test.jsonl:18"``) and the row
itself as a mapping. A converter turns one `RawRow` into one `Problem`, or raises
`RowError` naming the field at fault; the pipeline adds the location and either stops
(default) or records the row as rejected (``--skip-bad``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class RowError(ValueError):
    """One row cannot be converted.

    `field` names the offending field (dotted path), or is None when the row itself is
    broken (a line that is not JSON, a JSON value that is not an object).
    """

    def __init__(self, field: str | None, reason: str) -> None:
        super().__init__(reason if field is None else f"field {field!r}: {reason}")
        self.field = field
        self.reason = reason


@dataclass(frozen=True)
class RawRow:
    """One input row before conversion.

    Attributes:
        index: 0-based position in the input (after split selection); ids derive from it.
        where: Where a person finds the row: ``"file.jsonl:18"`` (1-based line),
            ``"file.parquet: row 17"`` or ``"openai/gsm8k[test]: row 17"``.
        data: The row's fields; when `error` is set, ``{"raw_line": text}`` for a line
            that could not be parsed, else empty.
        error: Why the reader could not parse the row (bad JSON), else None.
    """

    index: int
    where: str
    data: Mapping[str, Any]
    error: RowError | None = None


def get_field(row: Mapping[str, Any], path: str) -> Any:
    """The value at dotted `path` (``"reward_model.ground_truth"``); RowError when missing.

    A key that literally contains dots is found before the path is split.
    """
    if path in row:
        value = row[path]
    else:
        value: Any = row
        for part in path.split("."):
            if not isinstance(value, (dict, Mapping)) or part not in value:
                raise RowError(path, "missing")
            value = value[part]
    if value is None:
        raise RowError(path, "missing (null)")
    return value


def get_text(row: Mapping[str, Any], path: str) -> str:
    """A required, non-blank string field, returned unchanged."""
    value = get_field(row, path)
    if not isinstance(value, str):
        raise RowError(path, f"expected a string, got {type(value).__name__}")
    if not value.strip():
        raise RowError(path, "empty")
    return value


def answer_text(value: Any, path: str) -> str:
    """A gold answer as a stripped string.

    Strings are stripped; integers become their decimal form; a float that holds an
    integer (``25.0``) becomes ``"25"`` and any other finite float its shortest repr.
    Booleans, NaN, containers and blank strings raise RowError.
    """
    if isinstance(value, bool):
        raise RowError(path, f"expected a string or number, got bool {value!r}")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise RowError(path, f"not a finite number: {value!r}")
        return str(int(value)) if value.is_integer() else repr(value)
    if not isinstance(value, str):
        raise RowError(path, f"expected a string or number, got {type(value).__name__}")
    text = value.strip()
    if not text:
        raise RowError(path, "empty answer")
    return text


def get_answer(row: Mapping[str, Any], path: str) -> str:
    """A required gold-answer field (string or number), see `answer_text`."""
    return answer_text(get_field(row, path), path)


def make_id(name: str, split: str, index: int) -> str:
    """The stable id of row `index`: ``"{name}/{split}/{index}"`` (e.g. ``"gsm8k/test/17"``)."""
    return f"{name}/{split}/{index}"


def optional(row: Mapping[str, Any], path: str) -> Any:
    """The value at `path`, or None when it is absent."""
    try:
        return get_field(row, path)
    except RowError:
        return None


def optional_text(row: Mapping[str, Any], path: str) -> str | None:
    """The value at `path` when it is a string, else None (absent or another type)."""
    value = optional(row, path)
    return value if isinstance(value, str) else None


def jsonable(value: Any) -> Any:
    """`value` if JSON can hold it, else its ``str`` (dates, decimals, bytes in meta)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return str(value)
    return value
