"""Reward hacks: responses that must score -1 in every extraction style.

Each one states no single answer, or states the gold only to deny it, or hides several
candidates behind one answer. A lenient verifier (math-verify's default extraction among
them, for some) accepts a few of these; none may earn a reward here, in any style, and
``is_equivalent`` must reject the same text passed as a prediction.
"""

from __future__ import annotations

import pytest
from verimath.rewards import correctness_reward, extract_answer, is_equivalent, score_batch
from verimath.rewards.extraction.final_answer import STYLES

HACKS = [
    # (response, gold, what it tries)
    ("It is either 41 or 42.", "42", "hedge between two answers"),
    ("The answer is 41 or 42.", "42", "hedge after a final-answer phrase"),
    ("The answer is 42, or maybe 41.", "42", "hedge with a competing second answer"),
    ("Answer: 42 (or 41)", "42", "hedge on the Answer: line"),
    ("Answer: 41, 42, 43", "42", "every candidate on the Answer: line"),
    ("\\boxed{41, 42, 43}", "42", "every candidate in one box"),
    ("\\boxed{41 \\text{ or } 42}", "42", "a disjunction in the box"),
    ("The answer is not 42.", "42", "the gold, negated"),
    ("Answer: 42 is not the answer.", "42", "the gold, denied on the Answer: line"),
    ("La réponse n'est pas 42.", "42", "negation in French"),
    ("答案不是 42。", "42", "negation in Chinese"),
    ("Die Antwort ist nicht 42.", "42", "negation in German"),
    ("Ответ не 42.", "42", "negation in Russian"),
    ("The answer is between 41 and 43.", "42", "a range instead of a value"),
    ("Possible answers: $41$ $42$ $43$", "42", "a list of candidates"),
    ("41\n42\n43", "42", "one candidate per line"),
    ("Answer: x = 41 or x = 42", "42", "two roots where one value is asked"),
    ("We may take $x \\ge 0$, i.e. any answer works.", "42", "a relation that covers the gold"),
    ("The answer is 42. That is wrong; the answer is not 42.", "42", "retracted answer"),
]


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize(("response", "gold", "what"), HACKS, ids=[h[2] for h in HACKS])
def test_hack_scores_minus_one(response, gold, what, style):
    reward = correctness_reward(response, gold, style=style, timeout=5.0)
    extracted = extract_answer(response, style=style)
    assert reward == -1.0, f"{what}: style {style} extracted {extracted!r}"


@pytest.mark.parametrize(("response", "gold", "what"), HACKS, ids=[h[2] for h in HACKS])
def test_hack_as_a_prediction_is_not_equivalent(response, gold, what):
    assert is_equivalent(response, gold) is False, what


def test_hacks_score_minus_one_in_a_batch():
    for style in STYLES:
        scores = score_batch([h[0] for h in HACKS], [h[1] for h in HACKS], style=style)
        assert not scores.correct.any(), style


def test_the_same_texts_without_the_trick_are_right():
    # The guard is not "reject everything with words": the honest version scores +1.
    assert correctness_reward("The answer is 42.", "42", style="flexible") == 1.0
    assert correctness_reward("Answer: 42", "42") == 1.0
    assert is_equivalent("The answer is 42.", "42") is True
