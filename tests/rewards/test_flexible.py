"""The "flexible" extraction style, math inside sentences, and predictions with words."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.rewards import correctness_reward, extract_answer, is_equivalent
from verimath.rewards.extraction.chunks import has_prose, math_chunks
from verimath.rewards.extraction.final_answer import answer_core
from verimath.rewards.extraction.free_form import pick_answer

FLEXIBLE = [
    # (response, flexible answer); auto finds nothing in any of these but the first two
    ("Final Answer: The largest $n$ is 34.", "34"),
    ("Final Answer: The final answer is $5$. I hope it is correct.", "5"),
    ("Work...\nSo the final answer is $\\frac{3}{4}$.", "\\frac{3}{4}"),
    ("The answer is\n\n$$x^2 + 1$$\n", "x^2 + 1"),
    ("计算得 x=3。\n所以答案是 $12$。", "12"),
    ("最终答案：$\\sqrt{2}$", "\\sqrt{2}"),
    ("Donc la réponse est 7.", "7"),
    ("Réponse : 42", "42"),
    ("Por lo tanto, la respuesta es $-3$.", "-3"),
    ("Also ist die Antwort 15.", "15"),
    ("Die endgültige Antwort lautet $2\\pi$.", "2\\pi"),
    ("Итак, ответ: 8.", "8"),
    ("Ответ равен $\\frac{1}{2}$.", "\\frac{1}{2}"),
    ("لذلك الإجابة هي 9", "9"),
    ("अतः उत्तर 5 है।", "5"),
    ("よって、答えは 5 です。", "5"),
    ("따라서 답은 6이다.", "6"),
    ("Quindi la risposta è 11.", "11"),
    ("Portanto, a resposta é 13.", "13"),
    ("We add them: 3 + 4 = 7.", "7"),
    ("The roots are $x = 1$ and $x = 2$.", "1, 2"),
    ("So it costs $5 and $10 makes 15 dollars in all, that is 15.", "15"),
    ("\\boxed{12} is what we get", "12"),
]

REFUSED = [
    "The answer is not 5.",
    "The answer is 5, or maybe 6.",
    "Answer: 5 (or maybe 6)\nThe answer is 6.",
    "La réponse n'est pas 5.",
    "答案不是 5。",
    "Die Antwort ist nicht 5.",
    "Ответ не 5.",
    "It could be 41. Or perhaps 42.",
]


@pytest.mark.parametrize(("response", "expected"), FLEXIBLE)
def test_flexible_finds_the_stated_answer(response, expected):
    assert extract_answer(response, style="flexible") == expected


@pytest.mark.parametrize("response", [r for r, _ in FLEXIBLE[2:-1]])
def test_auto_stays_strict_on_free_form_text(response):
    assert extract_answer(response, style="auto") is None


@pytest.mark.parametrize("response", REFUSED)
def test_negated_or_hedged_answers_give_no_answer_and_no_fallback(response):
    assert extract_answer(response, style="flexible") is None


def test_flexible_keeps_the_priorities():
    # Answer: line first, then the last box, then the last phrase, then the last math.
    assert extract_answer("The answer is 3. \\boxed{4}\nAnswer: 5", style="flexible") == "5"
    assert extract_answer("The answer is 3. So \\boxed{4}.", style="flexible") == "4"
    assert extract_answer("The answer is 3. Check: 3 * 2 = 6.", style="flexible") == "3"
    assert extract_answer("We get 3 * 2 = 6.", style="flexible") == "6"
    assert extract_answer("no math at all", style="flexible") is None
    # an Answer: line without math moves on to the box
    assert extract_answer("Answer: see below.\n\\boxed{9}", style="flexible") == "9"


def test_a_clean_answer_line_reads_the_same_in_auto_and_flexible():
    for text in ("so 6 * 7 = 42.\nAnswer: $42$.", "Answer: \\boxed{\\frac{1}{2}}",
                 "Answer:\n$$3$$"):
        assert extract_answer(text, style="flexible") == extract_answer(text, style="auto")


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="abc xyz.,\n", max_size=60), st.integers(-10_000, 10_000))
def test_the_last_answer_line_wins_whatever_prose_precedes_it(prose, n):
    assert extract_answer(f"{prose}\nAnswer: {n}", style="flexible") == str(n)


def test_chunks_and_prose_detection():
    assert [c[2] for c in math_chunks("x is $3$ and y = 4, also 5%.")] == ["3", "y = 4", "5%"]
    assert math_chunks("a word-only sentence") == []
    assert has_prose("The answer is 5") and has_prose("18 apples")
    assert not has_prose("\\frac ab") and not has_prose("x \\in [1, 2]")
    assert not has_prose("\\text{Monday}") and not has_prose("5 cm")
    assert pick_answer("5 (or maybe 6)", anchored=True) == (None, True)
    assert pick_answer("The largest $n$ is 34.", anchored=True) == ("34", False)


@pytest.mark.parametrize(
    ("pred", "gold", "expected"),
    [
        ("Therefore $x \\geq 5$ is the solution.", "[5, \\infty)", True),
        ("Therefore $x \\geq 5$ is the solution.", "[6, \\infty)", False),
        ("The answer is 0.5", "\\frac{1}{2}", True),
        ("The answer is 0.5", "\\frac{1}{3}", False),
        ("The answer is 0.5 or 0.6", "\\frac{1}{2}", False),
        ("The answer is not 0.5", "\\frac{1}{2}", False),
        ("18 apples", "18", True),
        ("Monday", "\\text{Monday}", True),
    ],
)
def test_is_equivalent_reads_predictions_with_words(pred, gold, expected):
    assert is_equivalent(pred, gold) is expected


def test_answer_core_leaves_bare_math_alone():
    for pred in ("x^2+1", "\\frac{1}{2}", "(1, 2]", "ab", "Monday"):
        assert answer_core(pred) == pred
    assert answer_core("The final answer is $\\boxed{7}$.") == "7"


def test_auto_keeps_the_strict_answer_line_for_training():
    # Words on the Answer: line make the auto reward -1 (the paper's format); flexible reads them.
    response = "Answer: The number of ways is 35."
    assert correctness_reward(response, "35") == -1.0
    assert correctness_reward(response, "35", style="flexible") == 1.0


@pytest.mark.parametrize(
    "text",
    ["$5 and " * 150_000, "the answer is " * 70_000, "1 or not " * 100_000, "1 " * 500_000,
     "is 1 " * 200_000, "The answer is " + "$" * 400_000, "答案是" * 200_000],
    ids=["currency", "phrases", "hedges", "digits", "copulas", "dollars", "cjk-phrases"],
)
def test_flexible_is_linear_on_hostile_text(text):
    start = time.perf_counter()
    extract_answer(text, style="flexible")
    answer_core(text[:3000])
    assert time.perf_counter() - start < 1.5


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("\\boxed{1},\\boxed{2},\\boxed{3}", "1, 2, 3"),
        ("$$\\boxed{(2, 2)} \\quad \\text{and} \\quad \\boxed{(6, 2)}$$", "(2, 2), (6, 2)"),
        ("\\(y_1 = \\boxed{2}\\) and \\(y_2 = \\boxed{3}\\)", "2, 3"),
        ("\\boxed{5} is wrong, the real answer is \\boxed{7}", "7"),
        ("Final Answer: The final answer is 12,000,023. I hope it is correct. <|im_start|>user",
         "12,000,023"),
        ("So $x = 5+5+1 = 1/3 \\approx 11$", "1/3"),
        ("It grows to $24000 \\cdot 1.01^{30} \\approx 32348$ dollars.", "32348"),
        ("Thus $36 - 7 - 2 - 10 = 17 = x$.", "17"),
        ("We find $x = 7.$  (Since the denominators are nonzero, it is not extraneous.)", "x = 7"),
        ("Then \\begin{align*} x &= 2 + 3 \\\\ &= 5. \\end{align*}", "5"),
        ("The 5 plants did not grow, so he has 30-5=25 flowers.", "25"),
    ],
)
def test_flexible_reads_lists_of_boxes_and_closing_computations(response, expected):
    assert extract_answer(response, style="flexible") == expected
    assert extract_answer("\\boxed{1},\\boxed{2}", style="boxed") == "2"  # boxed stays strict
