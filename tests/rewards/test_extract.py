"""extract_answer: exact examples, properties, and linear time on hostile text."""

from __future__ import annotations

import doctest
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.rewards.extraction import final_answer as extract_module
from verimath.rewards.extraction.final_answer import extract_answer

# Any code point at all, lone surrogates (category Cs) and NUL included.
_ANY_CHAR = st.characters(codec=None, exclude_categories=())
_TOKENS = st.sampled_from(
    ["Answer:", "answer :", "\\boxed{", "\\boxed ", "\\fbox{", "{", "}", "\\{", "\\}", "\\\\",
     "$", "**", "\n", " ", ".", "\\(", "\\)", "\x00", "\ud800", "42"]
)
hostile_text = st.lists(st.one_of(st.text(_ANY_CHAR, max_size=8), _TOKENS), max_size=40).map(
    "".join
)
# Answers that survive cleaning unchanged: no newline, no leading/trailing $ * . or space, no
# trailing comma (a sentence mark, stripped like a period).
_ANSWER_CHARS = st.sampled_from(list("0123456789abcxyz+-=/^(),") + ["\\pi", "\\sqrt{2}"])
clean_answers = st.lists(_ANSWER_CHARS, min_size=1, max_size=12).map("".join).filter(
    lambda answer: not answer.endswith(","))
prose = st.text(st.sampled_from(list("abcdefg ,;\n0123456789")), max_size=60)


@pytest.mark.parametrize(
    ("text", "style", "expected"),
    [
        ("6 * 7 = 42.\nAnswer: $42$.", "dapo", "42"),
        ("Answer: 1\nwait, no.\nAnswer: 2", "dapo", "2"),
        ("ANSWER: 7", "dapo", "7"),
        ("Final Answer: 12", "dapo", "12"),
        ("**Answer:** 7", "dapo", "7"),
        ("**Answer: 7**", "dapo", "7"),
        ("Answer:\n\n$\\frac{1}{2}$", "dapo", "\\frac{1}{2}"),
        ("Answer: \\(x=2\\)", "dapo", "x=2"),
        ("Answer: \\[3\\pi\\]", "dapo", "3\\pi"),
        ("Answer: \\boxed{\\{1,2\\}} as shown", "dapo", "\\{1,2\\}"),
        ("Answer: 5\\$", "dapo", "5\\$"),
        ("Answer: 3.5", "dapo", "3.5"),
        ("Answer: 1, 2, \\ldots", "dapo", "1, 2, \\ldots"),
        ("Answer: 7\nAnswer:   \n", "dapo", "7"),
        ("no marker here \\boxed{3}", "dapo", None),
        ("Answer:", "dapo", None),
        ("Answer: 3\nAnswer: \\boxed{ }", "dapo", "3"),
        ("Answer: \\boxed{12", "dapo", "\\boxed{12"),
        # the answer in a display block below the mark
        ("Answer:\n$$\n12\n$$", "dapo", "12"),
        ("Answer:\n\\[\n\\boxed{\\frac{1}{2}}\n\\]\nDone.", "dapo", "\\frac{1}{2}"),
        ("Answer: $$\nx = 1,\ny = 2\n$$", "dapo", "x = 1,\ny = 2"),
        ("Answer: 3\nAnswer:\n\\[\n12", "dapo", "3"),  # unclosed block: the previous mark
        ("Answer:\n$$\n$$", "dapo", None),
        ("thus \\boxed{\\frac{\\sqrt{3}}{2}}.", "boxed", "\\frac{\\sqrt{3}}{2}"),
        ("\\boxed{1} then \\boxed{2}", "boxed", "2"),
        ("\\boxed{a{b}c} tail", "boxed", "a{b}c"),
        ("\\boxed{\\{1,2\\}}", "boxed", "\\{1,2\\}"),
        ("\\boxed {5}", "boxed", "5"),
        ("$\\boxed 5$", "boxed", "5"),
        ("\\fbox{3}", "boxed", "3"),
        ("\\boxed{}", "boxed", None),
        ("\\boxed{  }", "boxed", None),
        ("\\boxed{1} and finally \\boxed{2", "boxed", None),
        ("\\boxedx{3}", "boxed", None),
        ("\\boxed{\\begin{pmatrix}1\\\\2\\end{pmatrix}}", "boxed",
         "\\begin{pmatrix}1\\\\2\\end{pmatrix}"),
        ("The final answer is $\\boxed{7}$. I hope it is correct.", "auto", "7"),
        ("Answer: 4\n\\boxed{5}", "auto", "4"),
        ("reasoning... \\boxed{5}", "auto", "5"),
        ("nothing at all", "auto", None),
        ("", "auto", None),
    ],
)
def test_extract_examples(text, style, expected):
    assert extract_answer(text, style=style) == expected


def test_unknown_style_is_a_value_error():
    with pytest.raises(ValueError, match="unknown answer style 'latex'"):
        extract_answer("Answer: 1", style="latex")


def test_none_gives_none_and_other_types_are_type_errors():
    assert extract_answer(None) is None  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="text must be a str"):
        extract_answer(b"Answer: 1")  # type: ignore[arg-type]


def test_docstring_examples():
    result = doctest.testmod(extract_module)
    assert result.attempted >= 2 and result.failed == 0


@settings(max_examples=300, deadline=None)
@given(hostile_text, st.sampled_from(extract_module.STYLES))
def test_never_raises_and_returns_clean_str_or_none(text, style):
    got = extract_answer(text, style=style)
    assert got is None or (isinstance(got, str) and got == got.strip() and got != "")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(prose, clean_answers), min_size=1, max_size=5), prose)
def test_last_answer_line_wins(blocks, tail):
    text = "".join(f"{p}\nAnswer: {a}\n" for p, a in blocks)
    text += tail.replace("answer", "")
    assert extract_answer(text, style="dapo") == blocks[-1][1]
    assert extract_answer(text, style="auto") == blocks[-1][1]


# Brace-balanced contents: nesting kept verbatim by the boxed extractor.
balanced = st.recursive(
    st.text(st.sampled_from(list("0123456789+-x^ ")), max_size=5),
    lambda inner: st.lists(inner, min_size=1, max_size=3).map(lambda xs: "{" + "".join(xs) + "}")
    | st.tuples(inner, inner).map("".join),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(balanced.filter(lambda s: s.strip() != ""), prose, prose, st.sampled_from(["boxed", "fbox"]))
def test_boxed_keeps_nested_braces(content, before, after, command):
    text = f"{before} \\boxed{{0}} {before} \\{command}{{{content}}} {after.replace('box', '')}"
    assert extract_answer(text, style="boxed") == content.strip()


def _seconds(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


@pytest.mark.parametrize(
    "text",
    [
        "x" * 1_000_000,
        "{" * 10_000 + "1" + "}" * 10_000,
        "\\boxed{" * 10_000 + "1" + "}" * 10_000,
        "\\boxed{" * 100_000,
        "\\boxed{\\{" * 50_000,
        "Answer: " * 100_000,
        "Answer:\n" * 100_000,
        "Answer: \\boxed{" * 50_000,
        "Answer: " + "$" * 500_000 + "x" + "*" * 500_000,
        "\x00\ud800" * 300_000 + "Answer: 1",
        "Answer:\n\\[\n" * 100_000,
        "Answer:\n\\[\n\\]\n" * 100_000,
    ],
    ids=["1MB", "nested-braces", "nested-boxes", "unclosed-boxes", "escaped-braces",
         "answer-marks", "empty-answer-lines", "answer-unclosed-boxes", "dollar-runs",
         "nul-surrogates", "unclosed-display-blocks", "empty-display-blocks"],
)
def test_hostile_text_is_linear_time(text):
    for style in extract_module.STYLES:
        assert _seconds(extract_answer, text, style) < 1.5, f"style={style} took too long"


def test_time_grows_linearly():
    """Doubling the input of a worst case at most ~doubles the time (not quadratic)."""
    small = "Answer: \\boxed{" * 20_000
    big = small * 4
    t_small = min(_seconds(extract_answer, small) for _ in range(3))
    t_big = min(_seconds(extract_answer, big) for _ in range(3))
    assert t_big < 10 * t_small + 0.02


def test_full_width_colon_after_answer_is_an_answer_line():
    # Models trained on Chinese data often write the full-width colon (U+FF1A).
    assert extract_answer("so the total is 5\nAnswer\uff1a5", style="dapo") == "5"
    assert extract_answer("Answer\uff1a $12$.", style="auto") == "12"
