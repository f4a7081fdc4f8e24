"""Final-answer formats beyond ``Answer:`` and ``\\boxed``: tags, ``A:`` lines, refusals.

Pure functions on ``str``, linear in the length of their input, never raising on any ``str``.
Used by ``extract`` in the ``"auto"`` and ``"flexible"`` styles.

``<think>`` / ``<answer>`` tags (the format of R1-Zero-style training, DeepSeek-AI 2025,
arXiv 2501.12948): text inside ``<think>...</think>`` is reasoning and never the answer; a
``<think>`` that is never closed leaves no answer (the response was cut off). The content of
the last closed ``<answer>...</answer>`` is the final answer (a ``\\boxed{}`` inside it gives
the box content; an empty tag gives no answer, without falling back to earlier text).

``A: 71`` as the last non-blank line (the GSM8K few-shot format, ``Q: ... A: ...``): the
text after ``A:`` is the answer, the label never part of it. Only the last line counts: an
``A:`` inside the work (``Case A: x = 3``, a list of options) is not an answer.

A ``Q:`` line after an ``A:`` line ends the response (``before_next_question``): a model
that answered a few-shot ``Q: ... A: ...`` prompt and went on to invent the next question.

``last_choice``: the letter of a multiple-choice answer stated in words (``The correct
option is (B).``), the flexible style's last resort when a response has no math.

``MARK`` finds answer labels read by ``"auto"`` and ``"flexible"``: ``Answer:``,
``Final Answer:`` and ``The answer is:`` (the colon is what makes it a label).

Refusals (``refuses``): a response whose writer says they cannot solve, answer or
determine the problem (``I cannot solve this``, ``I don't know how to...``, ``I give up``,
``this question cannot be answered``, ``not enough information``; a person in the problem
who "couldn't come" is no refusal) states no answer of its own; the flexible style's
last-math fallback then gives ``None``, so numbers restated from the question earn nothing.
"""

from __future__ import annotations

import re

__all__ = ["MARK", "after_think", "answer_tag", "before_next_question", "final_a_line",
           "last_choice", "refuses"]

MARK = re.compile(r"\banswer(?:\s+is)?\s*[:\uff1a]", re.IGNORECASE)
_ANSWER_OPEN = "<answer>"
_ANSWER_CLOSE = "</answer>"
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = "</think>"
_A_LINE = re.compile(r"[ \t>#*]*A[ \t*]*[:\uff1a]\**[ \t]*(?P<rest>\S.*?)[ \t\r]*\Z", re.DOTALL)
_VERB = r"(?:solve|answer|determine|compute|calculate|find|figure|work\s+out|proceed|tell|say)"
_REFUSAL = re.compile(
    r"\b(?:i|we)\s*(?:can\s*not|can['’]?t|could\s*not|couldn['’]?t|am\s+unable\s+to"
    r"|are\s+unable\s+to|['’]?m\s+unable\s+to|am\s+not\s+able\s+to|['’]?m\s+not\s+able\s+to"
    r"|are\s+not\s+able\s+to|don['’]?t\s+know|do\s+not\s+know)\b"
    rf"[^.!?\n]{{0,40}}?\b{_VERB}"
    r"|\b(?:problem|question|this|it)\s+(?:cannot|can['’]?t|could\s*not)\s+be\s+"
    r"(?:solved|answered|determined)"
    r"|\bi\s+(?:give\s+up|refuse)\b|\b(?:not\s+enough|insufficient)\s+information\b"
    r"|\bwithout\s+more\s+information\b|\bi['’]?m\s+(?:sorry|not\s+sure)\b"
    r"|\bi\s+am\s+(?:sorry|not\s+sure)\b",
    re.IGNORECASE,
)
_REFUSAL_TAIL = 4000  # characters at the end of a response read for a refusal
_A_START = re.compile(r"^[ \t>#*]*A[ \t*]*[:\uff1a]", re.MULTILINE)
_Q_START = re.compile(r"^[ \t>#*]*Q[ \t*]*[:\uff1a]", re.MULTILINE)
_CHOICE = re.compile(
    r"\b(?:answer|option|choice)\b[^.\n]{0,30}?\(([A-J])\)(?![A-Za-z])", re.IGNORECASE)
_CHOICE_TAIL = 2000


def after_think(text: str) -> str | None:
    """The text after the last ``</think>``; ``None`` when a ``<think>`` is never closed;
    ``text`` itself when it has no think tags."""
    close = text.rfind(_THINK_CLOSE)
    if close >= 0:
        return text[close + len(_THINK_CLOSE) :]
    if _THINK_OPEN.search(text) is not None:
        return None
    return text


def answer_tag(text: str) -> str | None:
    """The content of the last closed ``<answer>...</answer>``, or ``None`` without one.

    The content is returned as written (possibly empty: the caller gives no answer then)."""
    close = text.rfind(_ANSWER_CLOSE)
    if close < 0:
        return None
    open_ = text.rfind(_ANSWER_OPEN, 0, close)
    if open_ < 0:
        return None
    return text[open_ + len(_ANSWER_OPEN) : close]


def final_a_line(text: str) -> str | None:
    """What follows ``A:`` on the last non-blank line of ``text``; ``None`` otherwise."""
    body = text.rstrip()
    start = body.rfind("\n") + 1
    if len(body) - start > 2000:
        return None
    match = _A_LINE.match(body, start)
    return None if match is None else match.group("rest")


def before_next_question(text: str) -> str:
    """``text`` up to a ``Q:`` line that follows an ``A:`` line: a model that answered a
    few-shot ``Q: ... A: ...`` prompt and went on to write the next question."""
    answer = _A_START.search(text)
    if answer is None:
        return text
    question = _Q_START.search(text, answer.end())
    return text if question is None else text[: question.start()]


def last_choice(text: str) -> str | None:
    """The letter of the last ``answer``/``option``/``choice`` ... ``(C)`` near the end."""
    letters = [m.group(1) for m in _CHOICE.finditer(text[-_CHOICE_TAIL:])]
    return letters[-1] if letters else None


def refuses(text: str) -> bool:
    """Whether the end of ``text`` declines to answer (see the module docstring)."""
    return _REFUSAL.search(text[-_REFUSAL_TAIL:]) is not None
