"""Math delimiters around a whole answer, which never change what the answer is.

``strip_delimiters(answer)`` removes, from both ends of ``answer`` and repeatedly (a few
rounds): whitespace, runs of unescaped ``$`` (``$...$`` and ``$$...$$``), ``\\(...\\)``,
``\\[...\\]``, Markdown ``**``, one ``\\boxed{...}`` or ``\\fbox{...}`` that spans the whole
answer, ``\\displaystyle`` at the start, and one trailing sentence mark (``.``, ``,`` or
``;``; an ellipsis ``...`` is kept). ``$\\frac{1}{3}.$``, ``\\(\\boxed{\\text{(B)}}\\)`` and
``**$42$**`` give ``\\frac{1}{3}``, ``\\text{(B)}`` and ``42``.

The answer extraction cleans what it found with it, and the equality rules strip both sides
of every pair with it, so that a verdict never depends on the delimiters written around
either side. Pure, linear per round, never raises on ``str``.
"""

from __future__ import annotations

import re

from verimath.rewards.text.boxes import BOX_OPENER, box_content

__all__ = ["strip_delimiters"]

_ROUNDS = 6
_WRAPPERS = (("\\(", "\\)"), ("\\[", "\\]"))
_DISPLAYSTYLE = re.compile(r"\\displaystyle(?![A-Za-z])\s*")


def strip_delimiters(answer: str) -> str:
    """``answer`` without the delimiters around it (module docstring); ``""`` if nothing is left."""
    for _ in range(_ROUNDS):
        before = answer
        answer = answer.strip()
        if answer.endswith((".", ",", ";")) and not answer.endswith(".."):
            answer = answer[:-1].rstrip()
        answer = _strip_unescaped(answer, "$").strip()
        answer = answer.strip("*").strip()
        for left, right in _WRAPPERS:
            if len(answer) >= 4 and answer.startswith(left) and answer.endswith(right):
                answer = answer[2:-2].strip()
        if answer.startswith("\\displaystyle"):
            answer = _DISPLAYSTYLE.sub("", answer, count=1)
        answer = _unbox_whole(answer)
        if answer == before:
            break
    return answer


def _strip_unescaped(answer: str, char: str) -> str:
    """Strip runs of ``char`` at both ends, keeping a trailing one escaped as ``\\char``."""
    stripped = answer.lstrip(char)
    core = stripped.rstrip(char)
    backslashes = len(core) - len(core.rstrip("\\"))
    if backslashes % 2 and len(core) < len(stripped):
        core += char  # "\\$" is an escaped dollar sign; "\\\\" before "$" is a line break
    return core


def _unbox_whole(answer: str) -> str:
    """The content of a ``\\boxed{...}`` that spans all of ``answer``; else ``answer``."""
    opener = BOX_OPENER.match(answer)
    if opener is None or not answer.endswith("}"):
        return answer
    content = box_content(answer, 0, opener.end())
    if content is None:
        return answer
    rest = answer[opener.end():].lstrip(" \t")
    return content.strip() if len(rest) == len(content) + 2 else answer
