"""Readers for every input kind, and errors on malformed files that name file, line, field."""

from __future__ import annotations

import json

import pytest
from verimath.datasets_prep import prepare
from verimath.datasets_prep.readers import input_kind, open_rows
from verimath.envs.problem import ProblemFileError

ROWS = [
    {"problem": "One plus one?", "answer": "2", "level": 1},
    {"problem": "Two times three?", "answer": "6", "level": 2},
]


def write_jsonl(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def read_all(path, **kw):
    opened = open_rows(str(path), **kw)
    return opened, list(opened.rows)


def test_jsonl_skips_blank_lines_and_counts_rows(tmp_path):
    path = write_jsonl(tmp_path / "test.jsonl", [json.dumps(ROWS[0]), "", json.dumps(ROWS[1])])
    opened, rows = read_all(path)
    assert opened.split == "test"
    assert [r.data for r in rows] == ROWS
    assert [r.index for r in rows] == [0, 1]
    assert [r.where for r in rows] == [f"{path}:1", f"{path}:3"]


def test_json_array_and_json_lines_under_json_suffix(tmp_path):
    array = tmp_path / "a.json"
    array.write_text(json.dumps(ROWS, indent=2))
    lines = write_jsonl(tmp_path / "b.json", [json.dumps(r) for r in ROWS])
    for path in (str(array), lines):
        _, rows = read_all(path, split="dev")
        assert [r.data for r in rows] == ROWS
    assert read_all(str(array))[1][1].where == f"{array}: row 1"


def test_csv_rows_are_strings_with_line_numbers(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text('problem,answer\n"Say ""hi""",3\n"multi\nline",4\n', encoding="utf-8")
    _, rows = read_all(path)
    assert rows[0].data == {"problem": 'Say "hi"', "answer": "3"}
    assert rows[1].data["problem"] == "multi\nline"
    assert [r.where for r in rows] == [f"{path}:2", f"{path}:4"]


def test_parquet_rows_stream(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "p.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), path)
    opened, rows = read_all(path)
    assert opened.total == 2 and [r.data for r in rows] == ROWS
    assert rows[1].where == f"{path}: row 1"


def test_datasets_directory_and_split_choice(tmp_path):
    datasets = pytest.importorskip("datasets")
    single = tmp_path / "single"
    datasets.Dataset.from_list(ROWS).save_to_disk(str(single))
    opened, rows = read_all(single)
    assert (opened.split, [r.data for r in rows]) == ("train", ROWS)
    multi = tmp_path / "multi"
    ds = datasets.DatasetDict({"dev": datasets.Dataset.from_list(ROWS[:1]),
                               "test": datasets.Dataset.from_list(ROWS)})
    ds.save_to_disk(str(multi))
    with pytest.raises(ValueError, match="--split.*dev, test"):
        open_rows(str(multi))
    opened, rows = read_all(multi, split="test")
    assert opened.split == "test" and len(rows) == 2 and rows[0].where.endswith("[test]: row 0")
    result = prepare("generic", str(multi), split="dev")
    assert [p.id for p in result.problems] == ["generic/dev/0"]


def test_input_kind(tmp_path):
    assert input_kind("openai/gsm8k") == "hub"
    assert input_kind(str(tmp_path)) == "disk"
    with pytest.raises(FileNotFoundError):
        input_kind(str(tmp_path / "missing.jsonl"))
    with pytest.raises(FileNotFoundError):
        input_kind("./not_here")
    odd = tmp_path / "x.txt"
    odd.write_text("hi")
    with pytest.raises(ValueError, match="unsupported file type '.txt'"):
        input_kind(str(odd))


# --- malformed files: the error names file, line and field ----------------------------


@pytest.mark.parametrize(
    ("lines", "line", "pattern"),
    [
        (['{"question": "a", "answer": "#### 1"}', '{"question": "b", "ans'], 2, "invalid JSON"),
        (['{"question": "a", "answer": "#### 1"}', '{"question": "b"}'], 2,
         "field 'answer': missing"),
        (['{"question": 3, "answer": "#### 1"}'], 1,
         "field 'question': expected a string, got int"),
        (['{"question": "a", "answer": ""}'], 1, "field 'answer': empty"),
        (['[1, 2]'], 1, "expected an object, got list"),
    ],
)
def test_malformed_jsonl_names_file_line_and_field(tmp_path, lines, line, pattern):
    path = write_jsonl(tmp_path / "bad.jsonl", lines)
    with pytest.raises(ProblemFileError) as err:
        prepare("gsm8k", path)
    message = str(err.value)
    assert message.startswith(f"{path}:{line}: ")
    assert pattern in message


def test_malformed_csv_and_json_array(tmp_path):
    csv_path = tmp_path / "bad.csv"
    csv_path.write_text("problem,answer\nok,1\nno answer,\n")
    with pytest.raises(ProblemFileError, match=rf"^{csv_path}:3: field 'answer': empty"):
        prepare("generic", str(csv_path))
    extra = tmp_path / "extra.csv"
    extra.write_text("problem,answer\nok,1,surplus\n")
    with pytest.raises(ProblemFileError, match=rf"^{extra}:2: 1 more values"):
        prepare("generic", str(extra))
    array = tmp_path / "bad.json"
    array.write_text('[{"problem": "p",\n "answer": }]')
    with pytest.raises(ProblemFileError, match=rf"^{array}:2: invalid JSON"):
        prepare("generic", str(array))


def test_missing_optional_dependency_says_what_to_install(tmp_path, monkeypatch):
    import sys

    path = tmp_path / "p.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError, match=r"needs pyarrow: pip install 'verimath\[data\]'"):
        open_rows(str(path))
