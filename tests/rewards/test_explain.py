"""Explained verdicts, extraction paths and deciding rules, and one notion of equality."""

from __future__ import annotations

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
from verimath.rewards.extraction.final_answer import PATHS

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
    scores = score_batch(["A: 5", "\\boxed{4}", "nothing", "<answer>2</answer>"], ["5", "4", "1", "3"])
    assert scores.paths == ["a_line", "box", "none", "tag"]
    assert scores.rules == ["fast", "fast", "no_answer", "fast"]
    shares = scores.path_shares()
    assert set(shares) == {f"reward/path_{p}" for p in PATHS} | {f"reward/rule_{r}" for r in RULES}
    assert shares["reward/path_box"] == 0.25 and shares["reward/rule_fast"] == 0.75
    assert sum(v for k, v in shares.items() if "/path_" in k) == pytest.approx(1.0)


def _pairs() -> list[tuple[str, str]]:
    """(prediction, gold) pairs from the golden table: each row's answer against each gold."""
    golds = [r["gold"] for r in ROWS if r["mode"] == "symbolic"]
    preds = [extract_answer(r["response"], style="flexible") for r in ROWS]
    preds = [p for p in preds if p and "\n" not in p and "Answer" not in p] + golds
    return [(p, g) for p in preds for g in golds[:: max(1, len(golds) // 40)]]


PAIRS = _pairs()


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(PAIRS), st.sampled_from(["Answer: {}", "So \\boxed{{{}}}", "<answer>{}</answer>"]))
def test_is_equivalent_agrees_with_the_reward_of_a_response_ending_in_the_prediction(pair, form):
    pred, gold = pair
    response = "We work it out step by step.\n" + form.format(pred)
    reward = correctness_reward(response, gold, style="flexible")
    assert is_equivalent(pred, gold) == (reward == 1.0), (pred, gold, response)


def test_letter_case_is_one_rule_in_both():
    for pred, gold in [("x", "X"), ("Answer: X", "x"), ("2X+1", "2x+1")]:
        assert not is_equivalent(pred, gold)
        assert correctness_reward(f"Answer: {pred}", gold, style="flexible") == -1.0
    assert is_equivalent("Answer: c", "C") and correctness_reward("Answer: c", "C") == 1.0
