"""The one record that crosses folders: a math problem with its gold answer.

`datasets_prep` writes `Problem` records, the environments read them, the trainer
carries them. On disk a problem is one JSON object (jsonl) or one row (parquet) with
the fields `id`, `prompt`, `answer`, `source` and `meta` (an object).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

FIELDS = ("id", "prompt", "answer", "source", "meta")


class ProblemFileError(ValueError):
    """A problem file that cannot be read; the message names file, row and field."""


@dataclass(frozen=True)
class Problem:
    """One math problem.

    Attributes:
        id: Stable identifier, unique within a dataset (e.g. ``"gsm8k/test/17"``).
        prompt: The bare problem statement, without any instruction template.
        answer: The gold final answer as a string (``"25"``, ``"\\frac{3}{4}"``).
        source: Where it came from (``"gsm8k"``, ``"math500"``, ``"gen/linear"``...).
        meta: Free-form extra data (level, subject, original ids, worked solution).
            It takes no part in equality or hashing.
    """

    id: str
    prompt: str
    answer: str
    source: str
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        for name in ("id", "prompt", "answer", "source"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(
                    f"Problem.{name} must be a str, got {type(value).__name__}: {value!r:.80}"
                )
        if not isinstance(self.meta, dict):
            raise TypeError(f"Problem.meta must be a dict, got {type(self.meta).__name__}")

    def __hash__(self) -> int:
        return hash((self.id, self.prompt, self.answer, self.source))

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "prompt": self.prompt,
            "answer": self.answer,
            "source": self.source,
            "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, row: Mapping[str, Any], *, where: str = "row") -> Problem:
        """Build a problem from a mapping; errors name `where` (file and line) and the field."""
        if not isinstance(row, Mapping):
            raise ProblemFileError(f"{where}: expected an object, got {type(row).__name__}")
        values: dict[str, Any] = {}
        for name in ("id", "prompt", "answer", "source"):
            if name not in row or row[name] is None:
                raise ProblemFileError(f"{where}: missing field {name!r}{_raw_row_hint(row)}")
            value = row[name]
            if not isinstance(value, str):
                raise ProblemFileError(
                    f"{where}: field {name!r} must be a string, got {type(value).__name__}"
                )
            if name in ("id", "answer") and not value.strip():
                raise ProblemFileError(f"{where}: field {name!r} is empty")
            values[name] = value
        meta = row.get("meta") or {}
        if isinstance(meta, str):  # parquet writers store meta as a JSON string
            try:
                meta = json.loads(meta)
            except json.JSONDecodeError as exc:
                raise ProblemFileError(f"{where}: field 'meta' is not valid JSON: {exc}") from None
        if not isinstance(meta, dict):
            raise ProblemFileError(
                f"{where}: field 'meta' must be an object, got {type(meta).__name__}"
            )
        return cls(meta=meta, **values)


def read_problems(path: str | os.PathLike) -> list[Problem]:
    """Read problems from a ``.jsonl`` or ``.parquet`` file written by ``verimath prep``."""
    return list(iter_problems(path))


def iter_problems(path: str | os.PathLike) -> Iterator[Problem]:
    """Yield problems one at a time from a ``.jsonl`` (``.json`` lines) or ``.parquet`` file.

    Blank lines are skipped. A broken line or row raises `ProblemFileError` naming the
    file, the 1-based line (jsonl) or 0-based row (parquet) and the field.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise ProblemFileError(f"{path} is a directory; a problems file is a .jsonl or .parquet "
                               "file written by verimath prep")
    if path.endswith(".parquet"):
        yield from _iter_parquet(path)
    elif path.endswith((".jsonl", ".json")):
        yield from _iter_jsonl(path)
    else:
        raise ProblemFileError(f"{path}: unknown problem file type (expected .jsonl or .parquet)")


def write_problems(problems: Iterable[Problem], path: str | os.PathLike) -> int:
    """Write problems atomically (temp file, then rename); the format follows the suffix."""
    path = os.fspath(path)
    problems = list(problems)
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        if path.endswith(".parquet"):
            for i, p in enumerate(problems):
                _problem_line(p, f"{path}: problem {i}")
            _write_parquet(problems, tmp)
        elif path.endswith(".jsonl"):
            lines = [_problem_line(p, f"{path}: problem {i}") for i, p in enumerate(problems)]
            with open(tmp, "w", encoding="utf-8") as f:
                f.writelines(line + "\n" for line in lines)
        else:
            raise ProblemFileError(f"{path}: unknown output type (expected .jsonl or .parquet)")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return len(problems)


def _problem_line(problem: Problem, where: str) -> str:
    """One jsonl line; refuses what `read_problems` would refuse (blank id or answer, meta
    that JSON cannot hold) with an error naming `where` and the field."""
    for name in ("id", "answer"):
        if not getattr(problem, name).strip():
            raise ProblemFileError(f"{where} (id {problem.id!r}): field {name!r} is empty")
    try:
        return json.dumps(problem.to_dict(), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ProblemFileError(f"{where} (id {problem.id!r}): field 'meta' is not JSON "
                               f"serializable ({exc})") from None


def _iter_jsonl(path: str) -> Iterator[Problem]:
    for lineno, line in iter_text_lines(path):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ProblemFileError(f"{where}: invalid JSON ({exc.msg})") from None
        yield Problem.from_dict(row, where=where)


def iter_text_lines(path: str | os.PathLike, encoding: str = "utf-8") -> Iterator[tuple[int, str]]:
    """``(1-based line number, line)`` of a text file; a line that is not valid UTF-8 raises
    `ProblemFileError` naming the file, the line and the byte (codecs alone name neither)."""
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, start=1):
            try:
                yield lineno, raw.decode(encoding)
            except UnicodeDecodeError as exc:
                raise ProblemFileError(
                    f"{os.fspath(path)}:{lineno}: not UTF-8 text (byte "
                    f"0x{raw[exc.start]:02x} at column {exc.start + 1}); save the file as "
                    "UTF-8") from None


# Fields of raw dataset rows, and the `verimath prep` sources that convert them.
_RAW_LAYOUTS = ((("question", "answer"), "gsm8k"), (("source_prompt",), "dapo"),
                (("prompt", "solution"), "dapo"), (("problem", "answer"), "math|aime|generic"))


def _raw_row_hint(row: Mapping[str, Any]) -> str:
    """A pointer to `verimath prep` for rows that look like an unconverted dataset."""
    if all(name in row for name in ("id", "prompt", "answer", "source")):
        return ""
    for fields, source in _RAW_LAYOUTS:
        if all(name in row for name in fields):
            return (f" (the row has {', '.join(repr(f) for f in fields)}: it looks like raw "
                    f"data; convert it first: verimath prep {source} --input FILE "
                    "--output problems.jsonl)")
    return (" (a problems file has fields id, prompt, answer, source, meta: write one with "
            "`verimath prep`)")


def require_pyarrow():
    """The ``pyarrow`` module with its parquet reader; ImportError naming the install when it
    is missing (callers that write parquet call it before their work)."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ImportError(
            "parquet files need pyarrow: pip install 'verimath[data]' (or pyarrow)"
        ) from None
    return pyarrow


def _iter_parquet(path: str) -> Iterator[Problem]:
    pa = require_pyarrow()
    table = pa.parquet.read_table(path)
    for i, row in enumerate(table.to_pylist()):
        yield Problem.from_dict(row, where=f"{path}: row {i}")


def _write_parquet(problems: list[Problem], path: str) -> None:
    pa = require_pyarrow()
    columns = {name: [getattr(p, name) for p in problems] for name in FIELDS[:4]}
    columns["meta"] = [json.dumps(p.meta, ensure_ascii=False) for p in problems]
    pa.parquet.write_table(pa.table(columns), path)
