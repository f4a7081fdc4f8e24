"""Answer tags, ``A:`` lines, ``The answer is:`` labels and refusals
(``rewards/extraction/markers.py``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.rewards import correctness_reward, extract_answer
from verimath.rewards.extraction.final_answer import extract_with_path
from verimath.rewards.extraction.markers import after_think, answer_tag, final_a_line, refuses

PROSE = st.text(alphabet="abcdefgh xyz.,", max_size=40)


@settings(max_examples=60, deadline=None)
@given(PROSE, st.integers(-10_000, 10_000), st.sampled_from(["auto", "flexible"]))
def test_a_final_a_line_is_the_answer_and_its_label_is_not(prose, n, style):
    text = f"Q: {prose}\nWe compute {n}.\nA: {n}"
    assert extract_with_path(text, style) == (str(n), "a_line")


@settings(max_examples=60, deadline=None)
@given(PROSE, st.integers(-10_000, 10_000), st.booleans(), st.sampled_from(["auto", "flexible"]))
def test_the_answer_tag_is_the_answer_boxed_or_not(prose, n, boxed, style):
    inner = f"\\boxed{{{n}}}" if boxed else str(n)
    text = f"<think>{prose} maybe {n + 1}</think>\n<answer>{inner}</answer>"
    assert extract_with_path(text, style) == (str(n), "tag")


@pytest.mark.parametrize(
    "text, flexible, auto",
    [
        ("Sum 4 + 6 = 10.\nFinal Answer: The final answer is 10. I hope it is correct.\n"
         "The answer is: 10.", "10", "10"),
        ("The cost is 7 * 8 = 56.\nThe answer is: 56", "56", "56"),
        ("5 ways times 4 ways, 20 in total. So the answer is 20", "20", None),
        ("Case A: x = 3.\nCase B: x = 5.\nSo \\boxed{8}", "8", "8"),  # A: inside the work
        ("<think>the value is 8</think>", None, None),  # reasoning only
        ("<think>so it is 8, and", None, None),  # cut off inside the reasoning
        ("<think>7*6=42</think><answer></answer>", None, None),  # an empty tag
        ("<think>..</think><answer>2</answer><answer>3</answer>", "3", "3"),  # the last tag
        ("<think>6 choose 2</think><answer>The number of pairs is 15</answer>", "15",
         "The number of pairs is 15"),
        ("Answer: Monday", "Monday", "Monday"),
        ("Answer: see below.\n\\boxed{9}", "9", "see below"),
    ],
)
def test_marker_examples(text, flexible, auto):
    assert extract_answer(text, style="flexible") == flexible
    assert extract_answer(text, style="auto") == auto


def test_the_strict_styles_keep_the_paper_format():
    assert extract_answer("x\nA: 51", style="dapo") is None
    assert extract_answer("<think>x</think><answer>4</answer>", style="boxed") is None


@pytest.mark.parametrize(
    "text",
    [
        "The problem says Jane has 12 apples and buys 5 more. I cannot solve this problem.",
        "Given x + 7 = 19 and y = 12. I don't know how to solve this.",
        "There are 24 students and 6 groups. Not enough information to find it.",
        "I cannot solve this problem. The question mentions 7 cats and 9 dogs.",
        "The numbers are 15 and 20. This question cannot be answered.",
    ],
)
def test_a_refusal_after_restated_numbers_earns_nothing_in_any_style(text):
    assert refuses(text)
    for style in ("auto", "dapo", "boxed", "flexible"):
        assert correctness_reward(text, "12", style=style) == -1.0
        assert extract_answer(text, style=style) is None


def test_marker_helpers():
    assert after_think("a</think> b") == " b" and after_think("<think> a") is None
    assert after_think("plain") == "plain"
    assert answer_tag("<answer>1</answer> x <answer> 2 </answer>") == " 2 "
    assert answer_tag("<answer>1") is None
    assert final_a_line("work\nA: 71\n\n") == "71" and final_a_line("A: 1\nmore") is None
    assert not refuses("She can't buy more than 5 pens, so she buys 5.")


@pytest.mark.parametrize(
    "text, answer",
    [
        ("Q: 5 + 66?\nA: 5 + 66 = 71.\nA: 71\n\nQ: Tom has 5 apples and eats 2.", "71"),
        ("A: 3 + 4 = 7", "7"),
        ("Comparing them, the correct option is (B).", "B"),
    ],
)
def test_few_shot_continuations_results_and_worded_choices(text, answer):
    assert extract_answer(text, style="flexible") == answer
