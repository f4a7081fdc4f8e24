"""Every public entry point treats non-string input alike (``rewards/text/inputs.py``):
``None`` as a response or prediction is a wrong answer, numbers are read as their ``str``,
a missing gold and any other type are a ``TypeError`` that names the argument."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from verimath.rewards import (
    compute_score,
    compute_score_batch,
    correctness_reward,
    explain,
    extract_answer,
    extract_with_path,
    fast_verdict,
    is_equivalent,
    make_trl_reward,
    normalize_answer,
    score,
    score_batch,
    symbolic_verdict,
)

# Each entry point as (response or prediction, gold) -> correct?, with the names its type
# errors give the two arguments. Response-level entry points read with the flexible style,
# so that a bare "3" is an answer there too.
ENTRY_POINTS = {
    "score": (lambda r, g: score(r, g, style="flexible") == 1.0, "response", "gold"),
    "correctness_reward": (lambda r, g: correctness_reward(r, g, style="flexible") == 1.0,
                           "response", "gold"),
    "is_equivalent": (lambda p, g: is_equivalent(p, g), "pred", "gold"),
    "fast_verdict": (lambda p, g: fast_verdict(p, g) is True, "pred", "gold"),
    "symbolic_verdict": (lambda p, g: symbolic_verdict(p, g), "pred", "gold"),
    "explain": (lambda r, g: explain(r, g).correct, "response", "gold"),
    "score_batch": (lambda r, g: bool(score_batch([r], [g], style="flexible").correct[0]),
                    r"responses\[0\]", r"golds\[0\]"),
    "compute_score": (lambda r, g: compute_score("src", r, g, style="flexible")["acc"],
                      "solution_str", "ground_truth"),
    "compute_score_batch": (
        lambda r, g: compute_score_batch(["src"], [r], [g], style="flexible")[0]["acc"],
        r"solution_strs\[0\]", r"ground_truths\[0\]"),
    "trl_reward": (lambda r, g: make_trl_reward(style="flexible")([r], answer=[g]) == [1.0],
                   r"completions\[0\]", r"answer\[0\]"),
}
NAMES = sorted(ENTRY_POINTS)


@pytest.mark.parametrize("name", NAMES)
def test_a_missing_response_scores_as_wrong(name):
    correct, _, _ = ENTRY_POINTS[name]
    assert correct(None, "1") is False


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "pred, gold",
    [(3, 3), ("3", 3), (3, "3"), (0.5, "\\frac12"), ("\\frac{1}{2}", 0.5),
     (np.int64(7), 7), (7, np.int64(7)), (np.float64(2.5), "5/2"), (Fraction(1, 2), "0.5")],
)
def test_numbers_are_read_as_their_str(name, pred, gold):
    correct, _, _ = ENTRY_POINTS[name]
    assert correct(pred, gold) is True


@pytest.mark.parametrize("name", NAMES)
def test_a_wrong_number_is_still_wrong(name):
    correct, _, _ = ENTRY_POINTS[name]
    assert correct(4, 3) is False


# A list or a dict is a conversation for TRL (test_adapters checks its form).
BAD_RESPONSES = [
    (name, bad) for name in NAMES for bad in (b"3", True, ["3"], {"answer": 3})
    if not (name == "trl_reward" and isinstance(bad, (list, dict)))
]


@pytest.mark.parametrize("name, bad", BAD_RESPONSES, ids=repr)
def test_other_response_types_are_a_type_error_naming_the_argument(name, bad):
    correct, response_name, _ = ENTRY_POINTS[name]
    message = rf"{response_name} must be a str .*got {type(bad).__name__}"
    with pytest.raises(TypeError, match=message):
        correct(bad, "3")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bad", [None, b"3", True, ["3"]], ids=repr)
def test_a_missing_or_odd_gold_is_a_type_error_naming_the_argument(name, bad):
    correct, _, gold_name = ENTRY_POINTS[name]
    with pytest.raises(TypeError, match=rf"{gold_name} must be a str .*got {type(bad).__name__}"):
        correct("Answer: 3", bad)


def test_extraction_reads_the_same_inputs():
    assert extract_answer(None) is None
    assert extract_with_path(None, "flexible") == (None, "none")
    assert extract_answer(42, style="flexible") == "42"
    assert extract_answer(42) is None  # the strict format: a bare number states no answer
    with pytest.raises(TypeError, match="text must be a str .*got bytes"):
        extract_answer(b"Answer: 1")


def test_normalize_answer_reads_numbers():
    assert normalize_answer(3) == "3"
    with pytest.raises(TypeError, match="answer must be a str .*got NoneType"):
        normalize_answer(None)
