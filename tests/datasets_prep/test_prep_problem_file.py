"""The problem file format (envs/problem.py) as `verimath prep` writes it."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.envs.problem import Problem, ProblemFileError, read_problems, write_problems

meta_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda inner: (st.lists(inner, max_size=3)
                   | st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=6,
)
non_blank = st.text(min_size=1, max_size=20).filter(str.strip)
problems = st.builds(Problem, id=non_blank, prompt=st.text(max_size=80),
                     answer=non_blank, source=st.text(max_size=10),
                     meta=st.dictionaries(st.text(max_size=8), meta_values, max_size=4))


@given(st.lists(problems, max_size=8))
@settings(max_examples=40, deadline=None)
def test_jsonl_round_trip_of_any_text(tmp_path_factory, items):
    path = tmp_path_factory.mktemp("rt") / "p.jsonl"
    write_problems(items, path)
    back = read_problems(path)
    assert back == items and [p.meta for p in back] == [p.meta for p in items]


@pytest.mark.parametrize(
    ("line", "pattern"),
    [
        ('{"id": "a", "prompt": "p", "answer": "1"}', "missing field 'source'"),
        ('{"id": "a", "prompt": "p", "answer": 1, "source": "s"}',
         "field 'answer' must be a string"),
        ('{"id": "a", "prompt": "p", "answer": "1", "source": "s", "meta": "{x"}',
         "'meta' is not valid JSON"),
        ('{"id": "a", "prompt": "p", "answer": "1", "source": "s", "meta": [1]}',
         "'meta' must be an object"),
        ('{"id": "a", "prompt": "p"', "invalid JSON"),
        ('{"id": "a", "prompt": "p", "answer": " ", "source": "s"}', "field 'answer' is empty"),
        ('{"id": "", "prompt": "p", "answer": "1", "source": "s"}', "field 'id' is empty"),
    ],
)
def test_broken_problem_files_name_file_and_line(tmp_path, line, pattern):
    path = tmp_path / "p.jsonl"
    good = json.dumps({"id": "x", "prompt": "p", "answer": "1", "source": "s"})
    path.write_text(good + "\n\n" + line + "\n")
    with pytest.raises(ProblemFileError, match=rf"^{path}:3: .*{pattern}"):
        read_problems(path)


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_writer_refuses_what_the_reader_would_refuse(tmp_path, suffix):
    good = Problem(id="a", prompt="p", answer="1", source="s")
    path = tmp_path / f"p{suffix}"
    cases = [(Problem(id="b", prompt="p", answer=" ", source="s"), "field 'answer' is empty"),
             (Problem(id="c", prompt="p", answer="1", source="s", meta={"x": {1, 2}}),
              "field 'meta' is not JSON serializable")]
    for bad, pattern in cases:
        with pytest.raises(ProblemFileError, match=rf"^{path}: problem 1 .*{pattern}"):
            write_problems([good, bad], path)
    assert list(tmp_path.iterdir()) == []


def test_unknown_suffixes_are_refused(tmp_path):
    with pytest.raises(ProblemFileError, match="expected .jsonl or .parquet"):
        write_problems([], tmp_path / "p.csv")
    with pytest.raises(ProblemFileError, match="unknown problem file type"):
        read_problems(tmp_path / "p.csv")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("row, hint", [
    ({"question": "q?", "answer": "x\n#### 1"}, "verimath prep gsm8k --input"),
    ({"problem": "p?", "solution": "s", "answer": "1"}, "verimath prep math|aime|generic"),
    ({"prompt": "p?", "solution": "1"}, "verimath prep dapo"),
    ({"id": "a", "answer": "1", "source": "s"}, "a problems file has fields id, prompt"),
])
def test_raw_rows_in_a_problems_file_point_at_prep(tmp_path, row, hint):
    path = tmp_path / "raw.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(ProblemFileError, match="raw.jsonl:1: missing field") as info:
        read_problems(path)
    assert hint in str(info.value)


def test_a_directory_is_not_a_problems_file(tmp_path):
    with pytest.raises(ProblemFileError, match="is a directory"):
        read_problems(tmp_path)
