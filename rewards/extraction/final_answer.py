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
    the delimiters around it are stripped (``text.delimiters``: ``$``, ``\\(``/``\\)``,
    ``\\[``/``\\]``, ``**``, a trailing period or comma, whitespace). An empty answer counts as
    none and the previous ``Answer:`` is tried (at most the last 256 marks are). Nothing else is
    cut: ``Answer: 15 (the sum)`` gives ``15 (the sum)``, which the DAPO format does not allow
    and which is then scored as incorrect (``style="flexible"`` reads ``15`` from it).
``"boxed"``
    The content of the last ``\\boxed{...}`` or ``\\fbox{...}``, braces balanced and nested
    braces kept (``\\{`` and ``\\}`` are literal braces, not grouping). TeX's brace-less form
    ``\\boxed 5`` gives the next token (up to whitespace or ``$``). A last box that is empty or
    never closed gives ``None``, not an earlier box: the model's final box is its answer.
``"auto"``
    The final-answer formats of ``markers`` first: text inside ``<think>...</think>`` is
    never read (an unclosed ``<think>``: no answer); the last ``<answer>...</answer>`` is the
    answer (its box content when it holds a box; empty: no answer); a last non-blank line
    ``A: 71`` gives ``71`` (a ``Q:`` line after an ``A:`` line ends the response). Then the
    ``"dapo"`` rule with ``Final Answer:`` and ``The answer is:`` also read as labels, then
    ``"boxed"`` when the text has no usable label. The strict format, for training: a
    policy rewarded for answers found anywhere learns to stop writing them where they belong.
``"flexible"``
    For evaluation and data filtering of free-form output, in the spirit of math-verify's
    priorities: (0) the formats of ``"auto"`` (tags, a final ``A:`` line; a sentence there
    gives the math it states, ``A: 3 + 4 = 7`` gives ``7``); (1) the last usable ``Answer:``
    line (also ``Final Answer:``, ``The answer is:``; a short line without math, such as
    ``Answer: Monday``, is an answer in words unless a box follows), where a line that holds
    words gives the math stated in it (``Final Answer: The largest $n$ is 34.`` gives
    ``34``); (2) the last ``\\boxed{}`` (boxes that only connectors separate form one list:
    ``boxed_answer``); (3) the math after the last final-answer phrase in any of a dozen
    languages (``The final answer is``, ``答案是``, ``La réponse est``, ``La respuesta es``,
    ``Die Antwort ist``, ``Ответ:``, ``الإجابة هي``, ``उत्तर``, ``答えは`` ...; see
    ``phrases.ANSWER_PHRASE``); (4) the last math of the response (the last ``$...$`` or
    bare number or expression). Chunks joined by ``and``/``or``/commas form one list answer
    (``$x=1$ or $x=2$`` gives ``1, 2``). A response whose writer refuses (``I cannot solve
    this``: ``markers.refuses``) has no last math; without any math, a worded choice (``the
    correct option is (B)``) gives its letter. A step whose sentence negates or hedges
    (``the answer is not 5``, ``5, or maybe 6``) gives ``None`` at once: later steps are not
    tried, so hedging never earns a fallback.

``None`` means "no answer": callers score it as incorrect (no partial credit).

``answer_core(pred)`` is the math of a prediction that still carries words: what the
flexible style reads from it when it holds a label, a tag or an ``A:`` line (``Answer: X``
is ``X``), else a box content, or the math stated in the sentence
(``Therefore $x \\geq 5$ is the solution.`` gives ``x \\geq 5``); a prediction without words
is returned as it is.
"""

from __future__ import annotations

import re

from verimath.rewards.extraction.chunks import has_prose
from verimath.rewards.extraction.free_form import final_value, last_phrase_segment, pick_answer
from verimath.rewards.extraction.markers import (
    MARK,
    after_think,
    answer_tag,
    before_next_question,
    final_a_line,
    last_choice,
    refuses,
)
from verimath.rewards.text.boxes import BOX_OPENER, box_content, boxed_answer, last_box
from verimath.rewards.text.delimiters import strip_delimiters
from verimath.rewards.text.inputs import response_text

__all__ = ["PATHS", "STYLES", "answer_core", "boxed_answer", "extract_answer", "extract_with_path"]

STYLES = ("auto", "dapo", "boxed", "flexible")
PATHS = ("tag", "a_line", "answer_line", "box", "phrase", "last_math", "none")

_ANSWER_MARK = re.compile(r"\banswer\s*[:\uff1a]", re.IGNORECASE)  # also the full-width colon
_NON_BLANK = re.compile(r"\S")
_DISPLAY = {"$$": "$$", "\\[": "\\]"}  # display-math openers and their closers
_MAX_MARKS = 256  # "Answer:" marks tried, from the last, before giving up
_FLEXIBLE_MARKS = 16  # "Answer:" marks the flexible style reads before moving on
_WORD_ANSWER = 40  # an answer line without math this short is an answer in words
_PROSE_CHECK = 4000  # longer lines and predictions are never read as sentences


class _Refused(str):
    """A truthy marker: a negated or hedged answer line; the search stops with no answer."""


_REFUSED = _Refused("refused")


class _Words(str):
    """An answer line without math (``Answer: Monday``): used when no box follows."""


def extract_answer(text: str, style: str = "auto") -> str | None:
    """Return the final answer written in ``text``, or ``None`` when there is none.

    >>> extract_answer("so 6 * 7 = 42.\\nAnswer: $42$.")
    '42'
    >>> extract_answer("Thus \\\\boxed{\\\\frac{1}{2}}")
    '\\\\frac{1}{2}'

    See the module docstring for the exact rules of each ``style``. ``text=None`` (a missing
    response) has no answer; a number is read as its ``str``; any other type is a
    ``TypeError`` (``verimath.rewards.text.inputs``).
    """
    return extract_with_path(text, style)[0]


def extract_with_path(text: str, style: str = "auto") -> tuple[str | None, str]:
    """``(answer, path)``: ``extract_answer``'s answer and where it was found, one of
    ``PATHS`` (``"none"`` when there is no answer)."""
    if style not in STYLES:
        raise ValueError(f"unknown answer style {style!r}; expected one of {STYLES}")
    text = response_text(text, "text")
    if text is None:
        return None, "none"
    if style == "dapo":
        return _with_path(_extract_dapo(text), "answer_line")
    if style == "boxed":
        return _with_path(last_box(text), "box")
    flexible = style == "flexible"
    body = after_think(text)
    if body is None:
        return None, "none"  # a <think> block that never closed: cut off, no answer
    body = before_next_question(body)
    tag = answer_tag(body)
    if tag is not None:
        return _with_path(_segment_answer(tag, flexible), "tag")
    line = final_a_line(body)
    if line is not None:
        found = _segment_answer(line, flexible)
        if found is not None or flexible:
            return _with_path(found, "a_line")
    if flexible:
        return _extract_flexible(body)
    found = _extract_dapo(body, mark=MARK)
    if found is not None:
        return found, "answer_line"
    return _with_path(last_box(body), "box")


def _with_path(answer: str | None, path: str) -> tuple[str | None, str]:
    return (None, "none") if answer is None or answer is _REFUSED else (answer, path)


def _segment_answer(segment: str, flexible: bool) -> str | None:
    """The answer written in a tag or ``A:`` line: its last box, else (flexible) the math a
    sentence states, else the cleaned text; ``None`` when empty or refused."""
    if not segment.strip():
        return None
    if BOX_OPENER.search(segment) is not None:
        return boxed_answer(segment)
    if flexible and has_prose(segment[:_PROSE_CHECK]):
        picked, refused = pick_answer(segment, anchored=True)
        if picked is None and not refused and len(segment.strip()) <= _WORD_ANSWER:
            return _clean(segment)  # "<answer>Monday</answer>": an answer in words
        return None if refused or picked is None else _clean(final_value(picked))
    return _clean(final_value(segment) if flexible else segment)


def _box_math(boxed: str) -> str:
    """A box content that holds a sentence gives the math it states (the flexible style reads
    ``\\boxed{The answer is 7.}`` as ``7``); any other content is returned as it is."""
    if not has_prose(boxed[:_PROSE_CHECK]):
        return boxed
    picked, refused = pick_answer(boxed, anchored=True)
    if refused or picked is None:
        return boxed
    return _clean(final_value(picked)) or boxed


def _extract_flexible(text: str) -> tuple[str | None, str]:
    """``Answer:`` line, last box, last final-answer phrase, last math (module docstring)."""
    found = _extract_dapo(text, flexible=True, mark=MARK)
    if isinstance(found, _Words):
        boxed = boxed_answer(text)  # "Answer: see below." then a box: the box
        if boxed is not None:
            return _box_math(boxed), "box"
    if found is not None:
        return _with_path(str(found), "answer_line") if found is not _REFUSED else (None, "none")
    found = boxed_answer(text)
    if found is not None:
        return _box_math(found), "box"
    segment = last_phrase_segment(text)
    if segment is not None:
        picked, refused = pick_answer(segment, anchored=True, find_marker=False)
        if refused or picked is not None:
            return _with_path(None if picked is None else _clean(final_value(picked)), "phrase")
    if refuses(text):
        return None, "none"  # numbers restated from the question, then a refusal
    picked, refused = pick_answer(text, anchored=False)
    if picked is None and not refused:
        return _with_path(last_choice(text), "phrase")  # "The correct option is (B)."
    return _with_path(None if picked is None else _clean(final_value(picked)), "last_math")


def answer_core(pred: str) -> str:
    """The math of a prediction with words around it; ``pred`` itself otherwise.

    Words (``has_prose``) trigger it: then the last box content, or the math the sentence
    states (``pick_answer``). A negated or hedged prediction, or one without math, is
    returned unchanged (and then compared as it is, so it stays incorrect against math).
    """
    if len(pred) > _PROSE_CHECK:
        return pred
    if MARK.search(pred) or answer_tag(pred) is not None or final_a_line(pred) is not None:
        found, _ = extract_with_path(pred, "flexible")  # "Answer: X" is X: one equality
        return found if found is not None else pred
    if not has_prose(pred):
        return pred
    boxed = boxed_answer(pred)
    if boxed is not None:
        return boxed
    picked, _ = pick_answer(pred, anchored=True)
    cleaned = None if picked is None else _clean(picked)
    return cleaned if cleaned else pred


def _extract_dapo(
    text: str, *, flexible: bool = False, mark: re.Pattern = _ANSWER_MARK
) -> str | None:
    """The answer of the last non-empty ``Answer:`` line (see the module docstring).

    ``flexible``: a line that holds words gives the math stated in it (``pick_answer``), and
    a refused line (a negation, a hedge) ends the search with ``_REFUSED``.
    """
    found = [m.span() for m in mark.finditer(text)]
    # Last closer of each display block: an unclosed block is settled without a scan, which
    # keeps many "Answer:" marks before unclosed blocks linear.
    last_closer = {c: text.rfind(c) for c in _DISPLAY.values()} if found else {}
    limit = len(text)
    for tried, (mark_start, end) in enumerate(reversed(found)):
        if tried == (_FLEXIBLE_MARKS if flexible else _MAX_MARKS):
            break  # bounded work on text that repeats "Answer:" (flexible: boxes etc. next)
        answer = _answer_after(text, end, last_closer, flexible, limit)
        if answer:
            return answer
        limit = mark_start
    return None


def _answer_after(
    text: str, start: int, last_closer: dict[str, int], flexible: bool, limit: int
) -> str | None:
    """The cleaned answer that follows an ``Answer:`` mark ending at ``start``.

    ``flexible`` reads the line only up to ``limit``, the next mark on it, so that the
    work over many marks on one line stays linear."""
    found = _answer_segment(text, start, last_closer, limit if flexible else len(text))
    if found is None:
        return None
    start, line = found
    box = BOX_OPENER.search(line)
    if box is not None:
        boxed = box_content(text, start + box.start(), start + box.end())
        if boxed is not None:  # "Answer: \boxed{}" is an empty answer
            return _clean(boxed)
    if flexible and has_prose(line[:_PROSE_CHECK]):
        picked, refused = pick_answer(line, anchored=True)
        if refused:
            return _REFUSED
        if picked is None and len(line.strip()) <= _WORD_ANSWER:
            words = _clean(line)  # "Answer: Monday": a short answer in words
            return None if words is None else _Words(words)
        return None if picked is None else _clean(picked)
    return _clean(line)


def _answer_segment(
    text: str, start: int, last_closer: dict[str, int], limit: int
) -> tuple[int, str] | None:
    """``(offset, text)`` of what follows the mark: the rest of its line (not past
    ``limit``), else the next non-blank line, or the content of a display block opened alone
    on that line."""
    line_end = text.find("\n", start, limit)
    line = text[start:limit] if line_end < 0 else text[start:line_end]
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
    return start, line


def _clean(answer: str) -> str | None:
    """The answer without the math delimiters, Markdown and sentence mark around it
    (``text.delimiters.strip_delimiters``, the same stripping the equality rules apply to
    both sides of a pair); ``None`` when nothing is left."""
    return strip_delimiters(answer) or None
