"""Final-answer extraction from model responses.

Pure functions on ``str``; nothing here evaluates text. Every function runs in time linear
in the length of its input and never raises on any ``str`` (NUL bytes, lone surrogates,
megabyte strings and thousands of nested braces included); only an unknown ``style`` is a
``ValueError``.

Styles (``extract_answer(text, style=...)``):

``"dapo"``
    The DAPO prompt (Yu et al. 2025, arXiv 2503.14476) asks the model to finish with a line
    ``Answer: <x>``. The *last* match of ``answer:`` (case-insensitive, a word on its own,
    spaces allowed before the colon, so ``Final Answer:`` counts) wins; its answer is the rest
    of that line (or the next non-blank line when the colon ends its line; when that line is
    just a display-math opener, ``$$`` or ``\\[``, the block up to its closer). If that text holds
    a ``\\boxed{...}``, the box content is the answer (an empty box: an empty answer). Then
    ``$``, ``\\(``/``\\)``, ``\\[``/``\\]``, Markdown ``**`` and a trailing period are stripped,
    with surrounding whitespace. An empty answer counts as none and the previous ``Answer:``
    is tried. Nothing else is cut: ``Answer: 15 (the sum)`` gives ``15 (the sum)``, which
    the DAPO format does not allow and which is then scored as incorrect.
``"boxed"``
    The content of the last ``\\boxed{...}`` or ``\\fbox{...}``, braces balanced and nested
    braces kept (``\\{`` and ``\\}`` are literal braces, not grouping). TeX's brace-less form
    ``\\boxed 5`` gives the next token (up to whitespace or ``$``). A last box that is empty or
    never closed gives ``None``, not an earlier box: the model's final box is its answer.
``"auto"``
    ``"dapo"`` first, then ``"boxed"`` when the text has no usable ``Answer:`` line.

``None`` means "no answer": callers score it as incorrect (no partial credit).
"""

from __future__ import annotations

import re

__all__ = ["STYLES", "extract_answer"]

STYLES = ("auto", "dapo", "boxed")

_ANSWER_MARK = re.compile(r"\banswer\s*[:\uff1a]", re.IGNORECASE)  # also the full-width colon
_BOX_OPENER = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")
_BRACE_TOKEN = re.compile(r"\\.|[{}]", re.DOTALL)
_BARE_TOKEN = re.compile(r"[^\s$]+")
_NON_BLANK = re.compile(r"\S")
_WRAPPERS = (("\\(", "\\)"), ("\\[", "\\]"))
_DISPLAY = {"$$": "$$", "\\[": "\\]"}  # display-math openers and their closers
_CLEAN_ROUNDS = 4


def extract_answer(text: str, style: str = "auto") -> str | None:
    """Return the final answer written in ``text``, or ``None`` when there is none.

    >>> extract_answer("so 6 * 7 = 42.\\nAnswer: $42$.")
    '42'
    >>> extract_answer("Thus \\\\boxed{\\\\frac{1}{2}}")
    '\\\\frac{1}{2}'

    See the module docstring for the exact rules of each ``style``.
    """
    if style not in STYLES:
        raise ValueError(f"unknown answer style {style!r}; expected one of {STYLES}")
    if not isinstance(text, str):
        return None
    if style == "dapo":
        return _extract_dapo(text)
    if style == "boxed":
        return _extract_boxed(text)
    found = _extract_dapo(text)
    return found if found is not None else _extract_boxed(text)


def _extract_dapo(text: str) -> str | None:
    """The answer of the last non-empty ``Answer:`` line (see the module docstring)."""
    marks = [m.end() for m in _ANSWER_MARK.finditer(text)]
    # Last closer of each display block: an unclosed block is settled without a scan, which
    # keeps many "Answer:" marks before unclosed blocks linear.
    last_closer = {c: text.rfind(c) for c in _DISPLAY.values()} if marks else {}
    for end in reversed(marks):
        answer = _answer_after(text, end, last_closer)
        if answer:
            return answer
    return None


def _answer_after(text: str, start: int, last_closer: dict[str, int]) -> str | None:
    """The cleaned answer that follows an ``Answer:`` mark ending at ``start``."""
    line_end = text.find("\n", start)
    line = text[start:] if line_end < 0 else text[start:line_end]
    if line_end >= 0 and not line.strip(" \t\r*"):
        # "Answer:" alone on its line: the answer is on the next non-blank line.
        nxt = _NON_BLANK.search(text, line_end)
        if nxt is None:
            return None
        start = nxt.start()
        stop = text.find("\n", start)
        line = text[start:] if stop < 0 else text[start:stop]
    closer = _DISPLAY.get(line.strip(" \t\r*"))
    if closer is not None:
        # A display block opened alone on the line ("$$" or "\[" then the answer on the
        # lines below): the answer is the block's content, up to its closer.
        begin = text.index(line.strip(" \t\r*"), start) + 2
        if last_closer[closer] < begin:
            return None
        end = text.find(closer, begin)
        start, line = begin, text[begin:end]
    box = _BOX_OPENER.search(line)
    if box is not None:
        boxed = _box_content(text, start + box.start(), start + box.end())
        if boxed is not None:  # "Answer: \boxed{}" is an empty answer
            return _clean(boxed)
    return _clean(line)


def _clean(answer: str) -> str | None:
    """Strip whitespace, ``$``, ``**``, ``\\(...\\)``, ``\\[...\\]`` and one trailing period.

    Repeated (a few rounds) so that ``$42$.`` and ``**$42$**`` both give ``42``. Each round
    is linear: runs of ``$`` and ``*`` are stripped at once, never one character per round.
    """
    for _ in range(_CLEAN_ROUNDS):
        before = answer
        answer = answer.strip()
        if answer.endswith(".") and not answer.endswith(".."):
            answer = answer[:-1].rstrip()
        answer = _strip_unescaped(answer, "$").strip()
        answer = answer.strip("*").strip()
        for left, right in _WRAPPERS:
            if len(answer) >= 4 and answer.startswith(left) and answer.endswith(right):
                answer = answer[2:-2].strip()
        if answer == before:
            break
    return answer or None


def _strip_unescaped(answer: str, char: str) -> str:
    """Strip runs of ``char`` at both ends, keeping a trailing one escaped as ``\\char``."""
    stripped = answer.lstrip(char)
    core = stripped.rstrip(char)
    if core.endswith("\\") and len(core) < len(stripped):
        core += char
    return core


def _extract_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed``/``\\fbox`` in ``text`` (see the module docstring)."""
    last = None
    for match in _BOX_OPENER.finditer(text):
        last = match
    if last is None:
        return None
    content = _box_content(text, last.start(), last.end())
    if content is None:
        return None
    return content.strip() or None


def _box_content(text: str, opener_start: int, opener_end: int) -> str | None:
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
