"""``\\boxed{}`` answers: the last box, boxes joined into one list, brace matching.

Pure functions on ``str``, linear in the length of their input, never raising on any
``str``. Used by ``extract`` (the ``"boxed"``, ``"auto"`` and ``"flexible"`` styles) and by
``notation`` (a gold written as a worked answer).
"""

from __future__ import annotations

import re

__all__ = ["BOX_OPENER", "box_content", "boxed_answer", "last_box"]

BOX_OPENER = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")
# What may separate boxes that form one list: spaces, commas, "and"/"or", \quad, \text{...},
# math delimiters, and the name of the next value ("\boxed{1} and y_2 = \boxed{2}").
_BOX_JOINER = re.compile(
    r"(?:\s|[,;$.&]|\\[,;!()\[\]]|\\q?quad|\\\\|\\text\{[^{}\\]*\}|\band\b|\bor\b"
    r"|[A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?\s*=)*"
)
_LIST_WORD = re.compile(r"\band\b|\bor\b|,")
_JOINED_BOXES = 8
_BRACE_TOKEN = re.compile(r"\\.|[{}]", re.DOTALL)
_BARE_TOKEN = re.compile(r"[^\s$]+")


def boxed_answer(text: str, *, every: bool = False) -> str | None:
    """The last box, or the last boxes joined into one list when only connectors separate
    them (``\\boxed{1}, \\boxed{2}`` or ``\\boxed{(2, 2)} \\quad\\text{and}\\quad
    \\boxed{(6, 2)}`` give ``1, 2`` and ``(2, 2), (6, 2)``); at most ``_JOINED_BOXES`` boxes.
    A list never equals a single gold, so several boxed guesses gain nothing. ``every``
    (for a gold, which is trusted) also joins boxes that a few words with ``and``, ``or`` or
    a comma separate (``\\boxed{1} papers and \\boxed{2} bins``)."""
    found = []
    end = len(text)
    for _ in range(_JOINED_BOXES):
        start = _last_box_before(text, end)
        if start is None:
            break
        opener = BOX_OPENER.match(text, start)
        content = box_content(text, start, opener.end())
        closing = _box_end(text, opener.end())
        if content is None or not content.strip() or closing is None:
            break
        if found and not _joined(text, closing, found[-1][0], every):
            break
        found.append((start, content.strip()))
        end = start
    if not found:
        return None
    return ", ".join(content for _, content in reversed(found))


def _joined(text: str, start: int, end: int, loose: bool) -> bool:
    """Whether ``text[start:end]``, between two boxes, joins them into one list."""
    if _BOX_JOINER.fullmatch(text, start, end):
        return True
    return loose and end - start <= 40 and _LIST_WORD.search(text, start, end) is not None


def _last_box_before(text: str, end: int) -> int | None:
    index = max(text.rfind("\\boxed", 0, end), text.rfind("\\fbox", 0, end))
    while index >= 0 and not BOX_OPENER.match(text, index):
        index = max(text.rfind("\\boxed", 0, index), text.rfind("\\fbox", 0, index))
    return index if index >= 0 else None


def _box_end(text: str, opener_end: int) -> int | None:
    """Index just after the box whose command ends at ``opener_end`` (its closing brace)."""
    i = opener_end
    while i < len(text) and text[i] in " \t":
        i += 1
    if i >= len(text) or text[i] != "{":
        bare = _BARE_TOKEN.match(text, i)
        return None if bare is None else bare.end()
    close = _matching_brace(text, i)
    return None if close is None else close + 1


def last_box(text: str) -> str | None:
    """Content of the last ``\\boxed``/``\\fbox`` in ``text`` (``extract``'s ``"boxed"``
    style): ``None`` when that box is empty or never closed, never an earlier box."""
    last = None
    for match in BOX_OPENER.finditer(text):
        last = match
    if last is None:
        return None
    content = box_content(text, last.start(), last.end())
    if content is None:
        return None
    return content.strip() or None


def box_content(text: str, opener_start: int, opener_end: int) -> str | None:
    """The argument of the box command spanning ``text[opener_start:opener_end]``.

    ``None`` when the brace never closes. Linear: one scan of the text after the opener.
    """
    i = opener_end
    n = len(text)
    while i < n and text[i] in " \t":
        i += 1
    if i >= n:
        return None
    if text[i] != "{":
        if i == opener_end:  # "\boxedx" is another command, not a box
            return None
        bare = _BARE_TOKEN.match(text, i)
        return bare.group(0) if bare else None
    close = _matching_brace(text, i)
    return None if close is None else text[i + 1 : close]


def _matching_brace(text: str, open_idx: int) -> int | None:
    """Index of the ``}`` closing the ``{`` at ``open_idx``; escaped braces are skipped."""
    depth = 0
    for token in _BRACE_TOKEN.finditer(text, open_idx):
        tok = token.group(0)
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth -= 1
            if depth == 0:
                return token.start()
    return None
