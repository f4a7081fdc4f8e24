"""`verimath score`: scores a file, prints a summary, and names file/line/field on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from verimath.trainer.cli import main as verimath

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "score_example.jsonl"


def _write(path: Path, rows) -> Path:
    path.write_text("".join(r if isinstance(r, str) else json.dumps(r) + "\n" for r in rows))
    return path


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_scores_a_file_and_prints_a_summary(tmp_path, capsys):
    src = _write(tmp_path / "in.jsonl", [
        {"response": "So the total is 12.\nAnswer: 12", "answer": "12", "length": 10, "id": "a"},
        {"response": "\\boxed{\\dfrac{3}{4}}", "answer": "0.75", "length": 95},
        "\n",  # blank lines are skipped
        {"response": "Answer: 7", "answer": 8, "length": 101},
        {"response": "I give up.", "answer": "1", "length": 50},
    ])
    out = tmp_path / "out.jsonl"
    code = verimath(["score", "--input", str(src), "--output", str(out), "--max-length", "100",
                     "--cache-length", "10", "--workers", "1", "--no-progress"])
    assert code == 0
    rows = _read(out)
    assert [r["correct"] for r in rows] == [True, True, False, False]
    assert [r["reward"] for r in rows] == [1.0, 1.0 - 0.5, -2.0, -1.0]
    assert [r["extracted"] for r in rows] == ["12", "\\dfrac{3}{4}", "7", None]
    assert rows[0]["id"] == "a" and rows[2]["answer"] == 8  # input fields are kept
    summary = capsys.readouterr().out
    assert "scored 4 responses" in summary and "accuracy      0.5000 (2/4)" in summary
    assert "timeouts      0" in summary and "mean penalty  -0.3750" in summary
    assert [r["path"] for r in rows] == ["answer_line", "box", "answer_line", "none"]
    assert [r["rule"] for r in rows] == ["fast", "fast", "fast", "no_answer"]
    assert "paths         answer_line 0.50" in summary


def test_explain_adds_the_verdicts_reasons(tmp_path, capsys):
    src = _write(tmp_path / "in.jsonl", [
        {"response": "<think>3 * 4</think><answer>12</answer>", "answer": "12"},
        {"response": "So \\boxed{X}", "answer": "x"},
    ])
    out = tmp_path / "out.jsonl"
    code = verimath(["score", "--input", str(src), "--output", str(out), "--style", "flexible",
                     "--workers", "1", "--no-progress", "--explain"])
    assert code == 0
    rows = _read(out)
    assert [(r["explain"]["path"], r["explain"]["rule"]) for r in rows] == [
        ("tag", "exact"), ("box", "written_rule")]
    assert rows[1]["explain"]["gold_normalized"] == "x" and rows[1]["explain"]["reward"] == -1.0
    err = capsys.readouterr().err
    assert "row 2: reward -1" in err and "decided by written_rule" in err and "row 1:" not in err


def test_example_file_scores_sensibly(tmp_path):
    out = tmp_path / "out.jsonl"
    code = verimath(["score", "--input", str(EXAMPLE), "--output", str(out), "--timeout", "1",
                     "--no-progress", "--mode", "symbolic"])
    assert code == 0
    rows = _read(out)
    assert len(rows) >= 30
    accuracy = sum(r["correct"] for r in rows) / len(rows)
    assert 0.5 < accuracy < 1.0  # the example mixes right, wrong and hostile answers
    hostile = [r for r in rows if "__import__" in r["response"]]
    assert hostile and not any(r["correct"] for r in hostile)


def test_output_to_stdout_sends_the_summary_to_stderr(tmp_path, capfd):
    src = _write(tmp_path / "in.jsonl", [{"response": "Answer: 2", "answer": "2"}])
    assert verimath(["score", "--input", str(src), "--output", "-", "--no-progress"]) == 0
    captured = capfd.readouterr()
    assert json.loads(captured.out)["correct"] is True
    assert "scored 1 responses" in captured.err


def test_custom_field_names(tmp_path):
    src = _write(tmp_path / "in.jsonl", [{"completion": "Answer: 2", "gold": "2"}])
    out = tmp_path / "out.jsonl"
    assert verimath(["score", "--input", str(src), "--output", str(out), "--no-progress",
                     "--response-field", "completion", "--answer-field", "gold"]) == 0
    assert _read(out)[0]["correct"] is True


@pytest.mark.parametrize(
    "lines, extra, message",
    [
        (['{"response": "a", "answer": "1"}\n', "{oops\n"], [], "in.jsonl:2: not valid JSON"),
        (['[1, 2]\n'], [], "in.jsonl:1: expected a JSON object"),
        (['{"answer": "1"}\n'], [], "in.jsonl:1: field 'response' must be a string (missing)"),
        (['{"response": 5, "answer": "1"}\n'], [], "field 'response' must be a string (int)"),
        (['{"response": "a"}\n'], [], "in.jsonl:1: field 'answer' must be a string or a number"),
        (['{"response": "a", "answer": "1"}\n'], ["--max-length", "10", "--cache-length", "2"],
         "in.jsonl:1: field 'length' must be a non-negative integer"),
        (['{"response": "a", "answer": "1", "length": -4}\n'],
         ["--max-length", "10", "--cache-length", "2"], "(-4)"),
        (['{"response": "a", "answer": "1"}\n'], ["--max-length", "10"], "go together"),
        (['{"response": "a", "answer": "1", "length": 1}\n'],
         ["--max-length", "10", "--cache-length", "20"], "must not exceed max_length"),
    ],
)
def test_bad_input_names_file_line_and_field(tmp_path, capsys, lines, extra, message):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(lines))
    out = tmp_path / "out.jsonl"
    code = verimath(["score", "--input", str(src), "--output", str(out), "--no-progress", *extra])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists(), "no output file is written on error"


def test_missing_input_file(tmp_path, capsys):
    code = verimath(["score", "--input", str(tmp_path / "nope.jsonl"), "--output", "-"])
    assert code == 2 and "no such file" in capsys.readouterr().err


def test_console_script_help_is_fast_and_lists_options():
    out = subprocess.run([sys.executable, "-m", "verimath.trainer.cli", "score", "--help"],
                         capture_output=True, text=True, check=True, timeout=60)
    for flag in ("--input", "--output", "--style", "--mode", "--timeout", "--max-length",
                 "--cache-length", "--workers"):
        assert flag in out.stdout


def test_non_utf8_input_is_rejected_with_file_and_line(tmp_path, capsys):
    src = tmp_path / "latin.jsonl"
    src.write_bytes(b'{"response": "Answer: 1", "answer": "1"}\n'
                    b'{"response": "Answer: caf\xe9", "answer": "1"}\n')
    out = tmp_path / "out.jsonl"
    assert verimath(["score", "--input", str(src), "--output", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{src}:2: not UTF-8 text (byte 0xe9 at column 26)" in err and not out.exists()


def test_an_empty_file_is_an_error_as_in_train(tmp_path, capsys):
    src = _write(tmp_path / "empty.jsonl", ["\n"])
    out = tmp_path / "out.jsonl"
    assert verimath(["score", "--input", str(src), "--output", str(out), "--no-progress"]) == 2
    assert "holds no responses" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize("output, message", [(".", "is a directory"),
                                             ("missing/out.jsonl", "does not exist")])
def test_a_bad_output_fails_before_any_scoring(tmp_path, capsys, monkeypatch, output, message):
    import verimath.rewards.cli as cli

    def never(*args, **kwargs):
        raise AssertionError("scored before checking --output")

    monkeypatch.setattr(cli, "_score_rows", never)
    monkeypatch.chdir(tmp_path)
    assert verimath(["score", "--input", str(EXAMPLE), "--output", output, "--no-progress"]) == 2
    assert message in capsys.readouterr().err


def test_the_style_and_mode_choices_come_from_the_rewards_modules():
    import argparse

    from verimath.rewards.cli import add_arguments
    from verimath.rewards.equality.equivalence import MODES
    from verimath.rewards.extraction.final_answer import STYLES

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    choices = {a.dest: a.choices for a in parser._actions if a.choices}
    assert choices["style"] is STYLES and choices["mode"] is MODES
