"""Final-answer extraction from model responses. Pure functions; never evaluates text."""

from __future__ import annotations

import re

_ANSWER_LINE = re.compile(r"answer\s*:", re.IGNORECASE)
_BOX_OPENERS = ("\\boxed", "\\fbox")


def extract_answer(text: str, style: str = "auto") -> str | None:
    """Return the final answer in `text`, or None.

    Styles:
        "dapo":  the last ``Answer: <x>`` (case-insensitive; the last occurrence wins),
                 with ``$``, a trailing period and surrounding whitespace stripped.
        "boxed": the content of the last ``\\boxed{...}`` or ``\\fbox{...}``.
        "auto":  "dapo" first, then "boxed".
    """
    if style == "dapo":
        return _extract_dapo(text)
    if style == "boxed":
        return _extract_boxed(text)
    if style == "auto":
        found = _extract_dapo(text)
        return found if found is not None else _extract_boxed(text)
    raise ValueError(f"unknown answer style {style!r}; expected 'auto', 'dapo' or 'boxed'")


def _extract_dapo(text: str) -> str | None:
    last = None
    for last in _ANSWER_LINE.finditer(text):
        pass
    if last is None:
        return None
    rest = text[last.end():].split("\n", 1)[0]
    boxed = _extract_boxed(rest)
    answer = boxed if boxed is not None else rest
    answer = answer.strip().strip("$").strip().rstrip(".").strip()
    return answer or None


def _extract_boxed(text: str) -> str | None:
    start = max(text.rfind(opener) for opener in _BOX_OPENERS)
    while start >= 0:
        opener = "\\boxed" if text.startswith("\\boxed", start) else "\\fbox"
        i = start + len(opener)
        while i < len(text) and text[i] == " ":
            i += 1
        if i < len(text) and text[i] == "{":
            content = _balanced(text, i)
            if content is not None:
                return content.strip() or None
        start = max(text.rfind(o, 0, start) for o in _BOX_OPENERS)
    return None


def _balanced(text: str, open_idx: int) -> str | None:
    depth = 0
    for i in range(open_idx, len(text)):
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[open_idx + 1 : i]
    return None
