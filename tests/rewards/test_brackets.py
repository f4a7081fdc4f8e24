"""The shared bracket-depth helpers (``rewards/text/brackets.py``) against a plain reference."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.rewards.text.brackets import closing_index, is_balanced, top_level_split

TEXT = st.text(alphabet="([{}]),a1\\ ", max_size=40)


def _reference_split(text: str) -> list[str]:
    items, depth, current = [], 0, ""
    for char in text:
        depth += (char in "([{") - (char in ")]}")
        if char == "," and depth == 0 and char not in "([{)]}":
            items.append(current)
            current = ""
        else:
            current += char
    return items + [current]


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_split_matches_the_reference_and_joins_back(text):
    parts = top_level_split(text)
    assert parts == _reference_split(text)
    assert ",".join(parts) == text


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_closing_index_closes_a_balanced_prefix(text):
    end = closing_index(text, 0)
    if end is not None:
        assert text[0] in "([{" and text[end] in ")]}"
        inner = text[: end + 1]
        assert is_balanced(inner, "([{", ")]}")
        assert all(not is_balanced(inner[:k], "([{", ")]}") for k in range(1, end + 1))


def test_escaped_braces_do_not_count():
    assert closing_index("{a\\}b}", 0, "{", "}", escaped=True) == 5
    assert closing_index("{a\\}b}", 0, "{", "}") == 3
    assert not is_balanced("}{") and is_balanced("{{}}")
