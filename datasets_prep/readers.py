"""Readers: every supported input as a stream of `RawRow` records.

Inputs, chosen by what `path` is:
    ``*.jsonl``            JSON Lines, one object per line (blank lines skipped)
    ``*.json``             a JSON array of objects, or JSON Lines under a .json name (what
                           ``Dataset.to_json`` writes)
    ``*.parquet``          read in record batches (large files stream)
    ``*.csv``              header row, then one problem per row (values are strings)
    a directory            saved by ``datasets`` (``Dataset.save_to_disk``); for a
                           ``DatasetDict`` the split selects the part
    anything else          a Hugging Face hub name (``"openai/gsm8k"``), loaded with
                           ``datasets.load_dataset(name, subset, split=split)``; needs network

Locations (`RawRow.where`): ``file:LINE`` (1-based) for jsonl and csv, ``file: row I``
(0-based) for json arrays, parquet, directories and hub datasets. `RawRow.index` counts
rows from 0 in input order, broken rows included, so a fixed row keeps its id.

``datasets`` and ``pyarrow`` are the optional extra ``verimath[data]``; they are imported
only for the inputs that need them.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verimath.datasets_prep.rows import RawRow, RowError
from verimath.envs.problem import ProblemFileError, iter_text_lines

FILE_SUFFIXES = (".jsonl", ".json", ".parquet", ".csv")
_DATA_EXTRA = "pip install 'verimath[data]' (datasets and pyarrow)"


@dataclass(frozen=True)
class Rows:
    """An opened input: its rows, the split label used in ids, and the row count if known."""

    rows: Iterator[RawRow]
    split: str
    total: int | None


def input_kind(path: str) -> str:
    """``"jsonl"``, ``"json"``, ``"parquet"``, ``"csv"``, ``"disk"`` or ``"hub"``.

    A missing path that looks like a local file (known suffix, or starts with ``.``, ``/``
    or ``~``) raises FileNotFoundError rather than being tried on the hub.
    """
    p = Path(path).expanduser()
    if p.is_dir():
        return "disk"
    suffix = p.suffix.lower()
    if p.is_file():
        if suffix not in FILE_SUFFIXES:
            raise ValueError(f"{path}: unsupported file type {suffix!r}; expected one of "
                             f"{', '.join(FILE_SUFFIXES)} or a datasets directory")
        return suffix[1:]
    if suffix in FILE_SUFFIXES or path.startswith((".", "/", "~")):
        raise FileNotFoundError(f"{path}: no such file or directory")
    return "hub"


def open_rows(path: str, *, split: str | None = None, subset: str | None = None) -> Rows:
    """Open `path` (file, datasets directory or hub name) as a stream of rows.

    `split` labels the ids of file inputs (default: the file's stem, ``test.jsonl`` ->
    ``"test"``) and selects the part of a directory or hub dataset (default ``"train"``,
    or the only split a directory has). `subset` is the hub configuration (``"main"``).
    """
    kind = input_kind(path)
    if kind in ("disk", "hub"):
        return _open_datasets(path, kind, split, subset)
    label = split or Path(path).stem
    if kind == "parquet":
        return _open_parquet(path, label)
    readers = {"jsonl": _iter_jsonl, "json": _iter_json, "csv": _iter_csv}
    return Rows(readers[kind](path), label, None)


def _parse_line(path: str, lineno: int, index: int, line: str) -> RawRow:
    where = f"{path}:{lineno}"
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        error = RowError(None, f"invalid JSON ({exc.msg}, column {exc.colno})")
        return RawRow(index, where, {"raw_line": line.rstrip("\n")}, error)
    if not isinstance(data, dict):
        error = RowError(None, f"expected an object, got {type(data).__name__}")
        return RawRow(index, where, {"raw_line": line.rstrip("\n")}, error)
    return RawRow(index, where, data)


def _iter_jsonl(path: str) -> Iterator[RawRow]:
    index = 0
    for lineno, line in iter_text_lines(path):  # names file and line of a non-UTF-8 byte
        if line.strip():
            yield _parse_line(path, lineno, index, line)
            index += 1


def _iter_json(path: str) -> Iterator[RawRow]:
    with open(path, "rb") as f:
        head = f.read(4096).lstrip()
    if not head.startswith(b"["):
        yield from _iter_jsonl(path)
        return
    text = "".join(line for _, line in iter_text_lines(path))
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProblemFileError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})") from None
    for index, item in enumerate(items):
        where = f"{path}: row {index}"
        if isinstance(item, dict):
            yield RawRow(index, where, item)
        else:
            yield RawRow(index, where, {},
                         RowError(None, f"expected an object, got {type(item).__name__}"))


def _iter_csv(path: str) -> Iterator[RawRow]:
    lines = (line.removeprefix("\ufeff") if n == 1 else line for n, line in iter_text_lines(path))
    reader = csv.DictReader(lines)
    if reader.fieldnames is None:
        return
    for index, record in enumerate(reader):
        where = f"{path}:{reader.line_num}"
        if None in record:
            error = RowError(None, f"{len(record[None])} more values than header columns")
            yield RawRow(index, where, {}, error)
        else:
            yield RawRow(index, where, record)


def _import(module: str) -> Any:
    try:
        return __import__(module, fromlist=["_"])
    except ImportError:
        raise ImportError(
            f"reading this input needs {module.split('.')[0]}: {_DATA_EXTRA}") from None


def _open_parquet(path: str, label: str) -> Rows:
    pq = _import("pyarrow.parquet")
    file = pq.ParquetFile(path)

    def rows() -> Iterator[RawRow]:
        index = 0
        for batch in file.iter_batches(batch_size=4096):
            for data in batch.to_pylist():
                yield RawRow(index, f"{path}: row {index}", data)
                index += 1

    return Rows(rows(), label, file.metadata.num_rows)


def _open_datasets(path: str, kind: str, split: str | None, subset: str | None) -> Rows:
    datasets = _import("datasets")
    if kind == "hub":  # network: the user asked for a hub dataset by name
        data = datasets.load_dataset(path, subset, split=split or "train")
        label = split or "train"
    else:
        try:
            data = datasets.load_from_disk(path)
        except FileNotFoundError as exc:
            raise ProblemFileError(
                f"{path}: not a directory written by datasets' save_to_disk ({exc})"
            ) from None
        label = split
        if isinstance(data, datasets.DatasetDict):
            names = sorted(data)
            if label is None:
                label = names[0] if len(names) == 1 else ("train" if "train" in names else None)
            if label not in data:
                raise ValueError(f"{path}: choose a split with --split; it has {', '.join(names)}")
            data = data[label]
        label = label or "train"
    name = f"{path}[{label}]"

    def rows() -> Iterator[RawRow]:
        for index, record in enumerate(data):
            yield RawRow(index, f"{name}: row {index}", record)

    return Rows(rows(), label, len(data))
