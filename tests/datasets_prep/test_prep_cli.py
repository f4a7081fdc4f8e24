"""`verimath prep` end to end: output, counts, side file, atomic writes, exit codes."""

from __future__ import annotations

import json

import pytest
from verimath.datasets_prep import prepare
from verimath.datasets_prep.cli import rejected_path
from verimath.envs.problem import read_problems
from verimath.trainer.cli import main

AIME_PROBLEM = ("Find the sum of all integer bases $b>9$ for which $17_b$ is a divisor of "
                "$97_b$, and write the result as a plain decimal integer without any units.")


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_prep_writes_problems_and_prints_counts_and_samples(tmp_path, capsys):
    rows = [{"problem": f"Problem number {i}?", "answer": str(i)} for i in range(5)]
    src = write_jsonl(tmp_path / "test.jsonl", rows + [rows[1]])
    out = tmp_path / "out.jsonl"
    assert main(["prep", "generic", "--input", src, "--output", str(out), "--name", "toy"]) == 0
    text = capsys.readouterr().out
    for line in ("read            6", "deduplicated    1", "kept            5"):
        assert line in text
    assert "duplicate toy/test/5 of toy/test/1" in text
    samples = text.split("samples:\n")[1].splitlines()[:3]
    assert [json.loads(s)["id"] for s in samples] == ["toy/test/0", "toy/test/1", "toy/test/2"]
    problems = read_problems(out)
    assert [(p.id, p.answer) for p in problems] == [(f"toy/test/{i}", str(i)) for i in range(5)]


def test_samples_print_meta_as_the_file_holds_it(tmp_path, capsys):
    rows = [{"problem": "p?", "answer": "1", "level": 3, "notes": "x" * 200}]
    src = write_jsonl(tmp_path / "test.jsonl", rows)
    out = tmp_path / "out.jsonl"
    assert main(["prep", "generic", "--input", src, "--output", str(out),
                 "--meta-fields", "level", "notes"]) == 0
    sample = json.loads(capsys.readouterr().out.split("samples:\n")[1].splitlines()[0])
    assert sample["meta"]["level"] == 3 and read_problems(out)[0].meta["level"] == 3
    assert sample["meta"]["notes"].startswith('"xxx') and len(sample["meta"]["notes"]) <= 40


def test_a_wrong_column_names_the_option_and_the_row_fields(tmp_path, capsys):
    src = write_jsonl(tmp_path / "test.jsonl", [{"question": "q?", "answer": "1"}])
    assert main(["prep", "generic", "--input", src, "--output", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "field 'problem': missing" in err and "'question'" in err
    assert "--problem-field" in err


def test_output_is_deterministic_across_runs_and_formats(tmp_path):
    pytest.importorskip("pyarrow")
    rows = [{"problem": f"What is {i} squared?", "answer": str(i * i)} for i in range(20)]
    src = write_jsonl(tmp_path / "train.jsonl", rows)
    outs = [tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.parquet"]
    for out in outs:
        assert main(["prep", "generic", "--input", src, "--output", str(out)]) == 0
    assert outs[0].read_bytes() == outs[1].read_bytes()
    assert read_problems(outs[0]) == read_problems(outs[2])


def test_bad_row_fails_and_leaves_existing_output_untouched(tmp_path, capsys):
    src = write_jsonl(tmp_path / "bad.jsonl", [{"question": "q", "answer": "#### 1"},
                                               {"question": "q2"}])
    out = tmp_path / "out.jsonl"
    out.write_text("previous content\n")
    assert main(["prep", "gsm8k", "--input", src, "--output", str(out)]) == 2
    assert f"{src}:2: field 'answer': missing" in capsys.readouterr().err
    assert out.read_text() == "previous content\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "out.jsonl"]


def test_skip_bad_writes_side_file_with_reasons(tmp_path, capsys):
    path = tmp_path / "mixed.jsonl"
    path.write_text('{"question": "ok", "answer": "#### 3"}\n{"question": "x", "answ\n'
                    '{"question": "no gold", "answer": "3"}\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["prep", "gsm8k", "--input", str(path), "--output", str(out), "--skip-bad"]) == 0
    text = capsys.readouterr().out
    assert "malformed       2" in text and "rejected        2" in text
    side = tmp_path / "out.rejected.jsonl"
    assert f"2 rejected rows with reasons -> {side}" in text
    records = [json.loads(line) for line in side.read_text().splitlines()]
    assert [(r["where"], r["field"]) for r in records] == [(f"{path}:2", None),
                                                           (f"{path}:3", "answer")]
    assert "invalid JSON" in records[0]["reason"] and records[0]["row"]["raw_line"].startswith("{")
    assert records[1]["row"] == {"question": "no gold", "answer": "3"}
    assert [p.id for p in read_problems(out)] == ["gsm8k/mixed/0"]


def test_unverifiable_gold_is_rejected_not_fatal(tmp_path, capsys):
    rows = [{"problem": "fine", "answer": "4"}, {"problem": "two lines", "answer": "x\ny"},
            {"problem": "unbalanced", "answer": "}"}]
    src = write_jsonl(tmp_path / "p.jsonl", rows)
    result = prepare("generic", src)
    assert result.counts["unverified"] == 2 and [p.answer for p in result.problems] == ["4"]
    assert all("self-check" in r.reason and r.field == "answer" for r in result.rejected)
    assert [r.where for r in result.rejected] == [f"{src}:2", f"{src}:3"]
    only_boxed = prepare("generic", src, styles=["boxed"])
    assert [p.answer for p in only_boxed.problems] == ["4", "x\ny"]
    assert prepare("generic", src, verify=False).counts["kept"] == 3


def test_integer_answers_and_decontamination(tmp_path, capsys):
    evals = write_jsonl(tmp_path / "aime.jsonl", [{"problem": AIME_PROBLEM, "answer": "070"}])
    eval_out = tmp_path / "aime_p.jsonl"
    assert main(["prep", "aime", "--input", evals, "--output", str(eval_out)]) == 0
    rows = [{"problem": "Intro. " + AIME_PROBLEM.upper(), "answer": "70"},
            {"problem": "Half of 3?", "answer": "\\frac{3}{2}"},
            {"problem": "Twice 4?", "answer": "8"}]
    src = write_jsonl(tmp_path / "train.jsonl", rows)
    out = tmp_path / "out.jsonl"
    argv = ["prep", "generic", "--input", src, "--output", str(out), "--integer-answers",
            "--decontaminate-against", str(eval_out)]
    capsys.readouterr()
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "non_integer     1" in text and "decontaminated  1" in text
    assert 'contaminated generic/train/0 ~ aime/aime/0 (100% of it): "find the sum of all' in text
    assert [p.answer for p in read_problems(out)] == ["8"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--output", "x.txt"], "suffix must be .jsonl or .parquet"),
        (["--output", "o.jsonl", "--problem-field", "q"], "apply only to the 'generic' source"),
        (["--output", "o.jsonl", "--ngram", "0"], "--ngram must be >= 1"),
        (["--output", "o.jsonl", "--min-coverage", "1.5"], "--min-coverage must be between"),
        (["--output", "o.jsonl", "--decontaminate-against", "RAW"], "convert the eval set first"),
        (["--output", "o.jsonl", "--decontaminate-against", "missing.jsonl"],
         "--decontaminate-against missing.jsonl: no such file"),
    ],
)
def test_bad_options_exit_2(tmp_path, capsys, argv, message):
    src = write_jsonl(tmp_path / "t.jsonl", [{"question": "q", "answer": "#### 1"}])
    argv = [src if a == "RAW" else a for a in argv]  # a raw dataset, not a problem file
    assert main(["prep", "gsm8k", "--input", src, *argv]) == 2
    assert message in capsys.readouterr().err


def test_missing_pyarrow_fails_before_the_work(tmp_path, capsys, monkeypatch):
    import verimath.envs.problem as problem_module

    def no_pyarrow():
        raise ImportError("parquet files need pyarrow")

    monkeypatch.setattr(problem_module, "require_pyarrow", no_pyarrow)
    src = write_jsonl(tmp_path / "t.jsonl", [{"question": "q", "answer": "#### 1"}])
    assert main(["prep", "gsm8k", "--input", src, "--output", str(tmp_path / "o.parquet")]) == 2
    out, err = capsys.readouterr()
    assert "parquet files need pyarrow" in err and "read" not in out


def test_nothing_kept_exits_2(tmp_path, capsys):
    src = write_jsonl(tmp_path / "t.jsonl", [{"problem": "p", "answer": "1.5"}])
    out = tmp_path / "o.jsonl"
    assert main(["prep", "generic", "--input", src, "--output", str(out), "--integer-answers"]) == 2
    assert "no problem left" in capsys.readouterr().err and not out.exists()


def test_hub_names_go_to_load_dataset(monkeypatch):
    datasets = pytest.importorskip("datasets")
    calls = []

    def fake_load_dataset(name, subset, split):
        calls.append((name, subset, split))
        return datasets.Dataset.from_list([{"question": "q", "answer": "#### 1,000"}])

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    result = prepare("gsm8k", "openai/gsm8k", subset="main", split="test")
    assert calls == [("openai/gsm8k", "main", "test")]
    assert [(p.id, p.answer) for p in result.problems] == [("gsm8k/test/0", "1000")]


def test_rejected_path():
    assert rejected_path("out/gsm8k.jsonl") == "out/gsm8k.rejected.jsonl"
    assert rejected_path("d.parquet") == "d.rejected.jsonl"


def test_duplicate_ids_from_id_field_name_both_rows(tmp_path):
    rows = [{"problem": "a?", "answer": "1", "uid": "x"},
            {"problem": "b?", "answer": "2", "uid": "x"}]
    src = write_jsonl(tmp_path / "ids.jsonl", rows)
    duplicate = rf"^{src}:2: duplicate id 'generic/ids/x' \(first at {src}:1\)"
    with pytest.raises(ValueError, match=duplicate):
        prepare("generic", src, id_field="uid")


@pytest.mark.parametrize("name, content, where", [
    ("latin.jsonl", b'{"problem": "1+1?", "answer": "2"}\n{"problem": "caf\xe9?", "answer": "2"}\n',
     "latin.jsonl:2: not UTF-8 text (byte 0xe9 at column 17)"),
    ("latin.csv", b"problem,answer\n1+1?,2\ncaf\xe9?,3\n", "latin.csv:3: not UTF-8 text"),
    ("latin.json", b'[{"problem": "1+1?", "answer": "2"},\n {"problem": "caf\xe9", "answer": "3"}]',
     "latin.json:2: not UTF-8 text"),
])
def test_non_utf8_input_names_file_and_line(tmp_path, capsys, name, content, where):
    (tmp_path / name).write_bytes(content)
    out = tmp_path / "out.jsonl"
    assert main(["prep", "generic", "--input", str(tmp_path / name), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / where}" in err and "save the file as UTF-8" in err
    assert "Traceback" not in err and not out.exists()


def test_generic_help_shows_the_default_fields(capsys):
    with pytest.raises(SystemExit):
        main(["prep", "generic", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "dotted path of the problem (default: problem)" in help_text
    assert "(default: answer)" in help_text


def test_a_raw_dataset_where_a_problem_file_belongs_points_at_prep(tmp_path, capsys):
    raw = write_jsonl(tmp_path / "raw.jsonl", [{"question": "q?", "answer": "x\n#### 1"}])
    src = write_jsonl(tmp_path / "t.jsonl", [{"question": "Tom has 2 apples?", "answer": "#### 2"}])
    code = main(["prep", "gsm8k", "--input", src, "--output", str(tmp_path / "o.jsonl"),
                 "--decontaminate-against", raw])
    assert code == 2
    assert "missing field 'id'" in (err := capsys.readouterr().err)
    assert "verimath prep gsm8k" in err
