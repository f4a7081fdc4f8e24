"""Explained verdicts, extraction paths and deciding rules, and one notion of equality."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.rewards import (
    correctness_reward,
    explain,
    extract_answer,
    is_equivalent,
    score_batch,
)
from verimath.rewards.batch import RULES
from verimath.rewards.explain import RULES as EXPLAIN_RULES
from verimath.rewards.extraction.chunks import has_prose
from verimath.rewards.extraction.final_answer import PATHS
from verimath.rewards.text.brackets import is_balanced

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "verify_cases.jsonl"
ROWS = [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(
    "response, gold, correct, path, rule",
    [
        ("Q: 3 * 4?\nA: 12", "12", True, "a_line", "exact"),
        ("<think>7 * 6</think><answer>\\boxed{42}</answer>", "42", True, "tag", "exact"),
        ("so \\boxed{x}", "X", False, "box", "written_rule"),
        ("Answer: 0.1429", "\\frac17", False, "answer_line", "convention"),
        ("Answer: sqrt(8)", "2\\sqrt2", True, "answer_line", "fast"),
        ("The answer is $\\frac{6}{4}$.", "1.5", True, "phrase", "fast"),
        ("There are 5 and 6. I cannot solve this.", "6", False, "none", "no_answer"),
    ],
)
def test_explain_names_the_path_and_the_rule(response, gold, correct, path, rule):
    found = explain(response, gold)
    assert (found.correct, found.path, found.rule) == (correct, path, rule)
    assert found.reward == correctness_reward(response, gold, style="flexible")
    assert found.seconds >= 0
    assert repr(found.extracted) in str(found) and f"decided by {rule}" in str(found)


def test_explain_on_the_symbolic_path():
    found = explain("Answer: $\\sqrt{x^2}$", "|x|")
    assert found.correct and found.rule in ("symbolic", "probe")
    assert found.pred_normalized == "\\sqrt{x^2}" and found.gold_normalized == "|x|"


def test_batch_scores_carry_paths_rules_and_their_shares():
    scores = score_batch(["A: 5", "\\boxed{4}", "nothing", "<answer>2</answer>"],
                         ["5", "4", "1", "3"])
    assert scores.paths == ["a_line", "box", "none", "tag"]
    assert scores.rules == ["fast", "fast", "no_answer", "fast"]
    shares = scores.path_shares()
    assert set(shares) == {f"reward/path_{p}" for p in PATHS} | {f"reward/rule_{r}" for r in RULES}
    assert shares["reward/path_box"] == 0.25 and shares["reward/rule_fast"] == 0.75
    assert sum(v for k, v in shares.items() if "/path_" in k) == pytest.approx(1.0)


def _table_pairs() -> list[tuple[str, str]]:
    """(prediction, gold) answer pairs of every labelled table the project has: the ``pred``
    rows of the benchmark's tables, and the flexible style's answer of every response row
    (the benchmark's tables and the golden table)."""
    spec = importlib.util.spec_from_file_location("bench_accuracy", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = [row for table in bench.TABLES for row in bench.load_cases(table)]
    pairs = {(r["text"], r["gold"]) for r in rows if r["input"] == "pred"}
    symbolic_rows = [{"text": r["response"], "gold": r["gold"]} for r in ROWS
                     if r["mode"] == "symbolic"]
    for row in rows + symbolic_rows:
        pred = extract_answer(row["text"], style="flexible")
        if pred and "\n" not in pred and row.get("input", "response") == "response":
            pairs.add((pred, row["gold"]))
    return sorted(pairs)


BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_accuracy.py"
PAIRS = _table_pairs()
DELIMITERS = ["{}", "${}$", "$${}$$", "\\({}\\)", "\\[{}\\]"]
FORMS = ["Answer: {}", "So \\boxed{{{}}}", "<answer>{}</answer>"]


def _boxable(pred: str) -> bool:
    """A prediction that can stand inside ``\\boxed{}``: balanced braces, no escaping
    backslash at its end (``5\\`` would escape the box's closing brace)."""
    return is_balanced(pred, "{", "}") and (len(pred) - len(pred.rstrip("\\"))) % 2 == 0


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(PAIRS), st.sampled_from(DELIMITERS), st.sampled_from(DELIMITERS),
       st.sampled_from(FORMS), st.sampled_from(["auto", "flexible"]))
def test_one_verdict_whatever_the_delimiters_and_the_format(
    pair, around_pred, around_gold, form, style
):
    """is_equivalent(p, g) is unchanged by delimiters around either side, and is the reward of
    a response ending in ``Answer: p``, ``\\boxed{p}`` or ``<answer>p</answer>`` (the strict
    ``auto`` style scores a prediction holding words as written, so only the flexible style
    is held to it for those)."""
    pred, gold = pair
    verdict = is_equivalent(pred, gold)
    if not has_prose(pred):
        assert is_equivalent(around_pred.format(pred), around_gold.format(gold)) == verdict, pair
    if (style == "auto" and has_prose(pred)) or ("boxed" in form and not _boxable(pred)):
        return
    response = "We work it out step by step.\n" + form.format(pred)
    reward = correctness_reward(response, around_gold.format(gold), style=style)
    assert (reward == 1.0) == verdict, (pred, gold, response, style)


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(PAIRS), st.sampled_from(FORMS), st.sampled_from(DELIMITERS))
def test_explain_never_contradicts_its_verdict(pair, form, around):
    """The explanation's rule and normalized sides lead to its verdict, and the verdict is
    the reward's."""
    pred, gold = pair
    if "boxed" in form and not _boxable(pred):
        return
    response = "Working.\n" + form.format(around.format(pred) if not has_prose(pred) else pred)
    found = explain(response, gold)
    assert found.reward == correctness_reward(response, gold, style="flexible"), (response, gold)
    assert found.rule in EXPLAIN_RULES
    if found.rule == "exact":
        assert found.correct and found.pred_normalized == found.gold_normalized, found
    if found.rule in ("no_answer", "timeout"):
        assert not found.correct
    if found.rule == "convention":
        assert found.convention is not None
    if found.pred_normalized == found.gold_normalized and found.rule not in (
            "no_answer", "timeout", "written_rule", "convention"):
        assert found.correct, found


def test_the_issue_example_is_explained_as_it_is_scored():
    found = explain("Answer: $1$", "$k=1$")
    assert found.correct and found.reward == correctness_reward("Answer: $1$", "$k=1$") == 1.0
    assert (found.pred_normalized, found.gold_normalized) == ("1", "1")
    assert "decided by exact (name_value)" in str(found)
    assert is_equivalent("$2^{10^{10}}$", "2^{10^{10}}")  # the same text: no size guard needed
    strict = explain("Answer: $1$", "$k=1$", conventions="strict")
    assert not strict.correct and (strict.rule, strict.convention) == ("convention", "name_value")


def test_letter_case_is_one_rule_in_both():
    for pred, gold in [("x", "X"), ("Answer: X", "x"), ("2X+1", "2x+1")]:
        assert not is_equivalent(pred, gold)
        assert correctness_reward(f"Answer: {pred}", gold, style="flexible") == -1.0
    assert is_equivalent("Answer: c", "C") and correctness_reward("Answer: c", "C") == 1.0
