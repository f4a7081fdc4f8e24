"""Math inside free text: the answer of a sentence such as ``The largest $n$ is 34.``

Pure functions on ``str``, each linear in the length of its input (one regex scan per
pattern, no nested scans), never raising on any ``str``. Used by ``extract`` (the
``"flexible"`` style) and by ``equivalence`` (predictions that still carry words).

Vocabulary:

*chunk*
    A piece of math: the content of ``$...$``, ``$$...$$``, ``\\(...\\)`` or ``\\[...\\]``, or a
    bare run outside those (digits, LaTeX commands, operators, brackets and single letters
    next to an operator: ``x = 5``, ``1,500``, ``\\frac{3}{4}``, ``25%``). A ``$`` that opens a
    span whose content starts with a digit and holds words is a currency sign, not math
    (``$5 and $10``).
*marker*
    Where an answer is announced: a final-answer phrase (``the answer is``, ``答案是``,
    ``la réponse est``, ``Ответ:``, ``الإجابة هي``, ``उत्तर``, ``答えは`` ...;
    ``phrases.ANSWER_PHRASE`` lists them, in more than ten languages) or a copula (``is``,
    ``equals``, ``est``, ``ist``, ``是``, ``равен`` ...).
*group*
    Chunks joined only by list connectors (``,``, ``and``, ``or``, ``et``, ``und``, ``или``,
    ``或`` ...) form one list answer: ``$x = 1$ or $x = 2$`` is ``1, 2``. A list never equals
    a single gold, so a hedge written as a list gains nothing.

``pick_answer(segment, anchored=...)`` returns ``(answer, refused)``. Safety rules: a
segment with a negation (``not``, ``isn't``, ``不是``, ``n'est pas``, ``nicht``, ``не``,
``ليس``, ``नहीं`` ...) is refused, and so is one that hedges between separate answers
(``5 (or maybe 6)``): a refused segment has no answer, and callers must not look further.
"""

from __future__ import annotations

import bisect
import re

from verimath.rewards.phrases import (
    ANSWER_PHRASE,
    CONNECTOR_GAP,
    COPULA,
    HEDGE,
    NEGATION,
    PHRASE_KEY,
)

__all__ = [
    "has_prose",
    "last_phrase_segment",
    "math_chunks",
    "pick_answer",
]

_DELIMITER = re.compile(r"\\\$|\$\$|\$|\\\(|\\\)|\\\[|\\\]")
_CLOSER = {"$$": "$$", "$": "$", "\\(": "\\)", "\\[": "\\]"}
_WORD = re.compile(r"(?<![\\A-Za-z])[^\W\d_]{2,}")
_CURRENCY_START = re.compile(r"\s*[0-9]")
# Bare math is found in two passes of single character-class runs (fast in any regex
# engine): runs of characters that may appear in math, then the words inside each run.
_MATHISH = re.compile(r"[0-9A-Za-z\\{}()\[\]+\-*/^_=<>|!,.:%~ \t≤≥≠±×÷−√π∞∈∪∩°·⋅']+")
_COMMAND_OR_WORD = re.compile(r"\\[A-Za-z]+|[A-Za-z][A-Za-z']*[A-Za-z]")
_MATH_EVIDENCE = re.compile(
    r"[0-9]|\\(?!text|mathrm|textbf|mbox|quad|qquad)[A-Za-z]{2,}|[≤≥≠±×÷−√π∞∈∪∩]"
    r"|[A-Za-z]\s*[=<>+*/^]|[=<>+*/^]\s*[A-Za-z]"
)
_TRIM_LEFT = " \t,.;:)]}=*'"
_TRIM_RIGHT = " \t,.;:([{=+*-/^'"
_LONE_LETTER = re.compile(
    r"^(?:[A-Za-z]\.)+\s*|^[A-Za-z]\s+(?=[0-9A-Za-z\\(])|(?<=[0-9)\]}])\s+[A-Za-z]$"
)
_VAR_VALUE = re.compile(r"([A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?)\s*=\s*([^=]+)")
_PARAGRAPH = re.compile(r"\n[ \t]*\n")
_SENTENCE_END = re.compile(r"[.!?;](?=\s|$)|[。！？；\n]")
_NON_BLANK = re.compile(r"\S")
_SEGMENT_CAP = 2000  # characters of an anchored segment that are read
_TAIL_CAP = 200_000  # characters at the end of a response searched for its last math
_PHRASE_TRIES = 64  # mentions of an answer word, from the last, tried as a phrase
_WINDOW = 400  # characters a negation or hedge check looks at on each side of the answer

# Words that are math, not prose (function names and constants written without a backslash).
_MATH_WORDS = frozenset(
    "sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh log ln lg exp lim max min "
    "gcd lcm det mod deg sqrt pi inf infty infinity cis dx dy dt".split()
)

def _is_currency(content: str) -> bool:
    """``$5 and $``: a ``$`` span that starts with a digit and holds a word is money."""
    return _CURRENCY_START.match(content) is not None and _WORD.search(content) is not None


def _delimited_spans(text: str) -> list[tuple[int, int, int, int]]:
    """``(outer_start, outer_end, inner_start, inner_end)`` of each math span, in order.

    One pass over the delimiter tokens; an inline span may not hold a blank line; a
    currency ``$`` is skipped and its partner may open the next span.
    """
    spans = []
    opener = None  # (token, start, end)
    for match in _DELIMITER.finditer(text):
        tok = match.group(0)
        if tok == "\\$":
            continue
        if opener is None:
            if tok in _CLOSER:
                opener = (tok, match.start(), match.end())
            continue
        want = _CLOSER[opener[0]]
        if tok != want and not (opener[0] == "$" and tok == "$$"):
            continue
        content = text[opener[2] : match.start()]
        inline = opener[0] in ("$", "\\(")
        if inline and ("\n\n" in content or (opener[0] == "$" and _is_currency(content))):
            opener = (tok, match.start(), match.end()) if tok == "$" else None
            continue
        spans.append((opener[1], match.end(), opener[2], match.start()))
        opener = None
    return spans


def _trim_bare(run: str) -> str:
    """Strip punctuation, dangling brackets and operators, and lone leading/trailing letters."""
    for _ in range(3):
        before = run
        run = run.lstrip(_TRIM_LEFT).rstrip(_TRIM_RIGHT)
        run = _LONE_LETTER.sub("", run)
        if run == before:
            break
    return run


def math_chunks(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, math)`` of each chunk of ``text``, in order (see the module docstring)."""
    return _chunks_from(text, _delimited_spans(text), 0)


def _chunks_from(text: str, spans: list, start: int) -> list[tuple[int, int, str]]:
    """The chunks from offset ``start`` (not inside a span) on, given the spans of ``text``."""
    chunks = []
    pos = start
    first = bisect.bisect_left(spans, (start,))
    for outer_start, outer_end, inner_start, inner_end in spans[first:] + [
        (len(text), len(text), len(text), len(text))
    ]:
        for run in _MATHISH.finditer(text, pos, outer_start):
            _bare_chunks(text, run.start(), run.end(), chunks)
        content = text[inner_start:inner_end].strip()
        if content:
            chunks.append((outer_start, outer_end, content))
        pos = outer_end
    return chunks


def _bare_chunks(text: str, start: int, end: int, out: list) -> None:
    """Append the math pieces of ``text[start:end]``, a run of math-like characters that
    words (two letters or more, not a command or a function name) cut into pieces."""
    if not _MATH_EVIDENCE.search(text, start, end):
        return
    piece = start
    for match in _COMMAND_OR_WORD.finditer(text, start, end):
        word = match.group(0)
        if word[0] == "\\" or word.lower() in _MATH_WORDS:
            continue
        _add_piece(text, piece, match.start(), out)
        piece = match.end()
    _add_piece(text, piece, end, out)


def _add_piece(text: str, start: int, end: int, out: list) -> None:
    if not _MATH_EVIDENCE.search(text, start, end):
        return
    raw = text[start:end]
    body = _trim_bare(raw)
    if body and _MATH_EVIDENCE.search(body):
        first = start + raw.find(body)
        out.append((first, first + len(body), body))


def has_prose(text: str) -> bool:
    """Whether ``text`` holds words outside math (outside ``$...$`` spans and braces, not a
    command, function or constant name): a word of four letters or more, a word in a
    non-Latin script, or two shorter words. ``ab`` or ``xyz`` alone is a product of
    variables, not prose."""
    spans = _delimited_spans(text)
    pos = 0
    short = 0
    for outer_start, outer_end, _, _ in spans + [(len(text), len(text), 0, 0)]:
        short = _count_words(text, pos, outer_start, short)
        if short >= 2:
            return True
        pos = outer_end
    return False


_BRACE_OR_WORD = re.compile(r"\\[{}]|\\[A-Za-z]+|[{}]|[^\W\d_]{2,}")


def _count_words(text: str, start: int, end: int, short: int) -> int:
    """``short`` plus the short words of ``text[start:end]`` at brace depth 0; 2 (enough)
    as soon as a long or non-Latin word is seen."""
    depth = 0
    for match in _BRACE_OR_WORD.finditer(text, start, end):
        tok = match.group(0)
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth = max(depth - 1, 0)
        elif tok[0] != "\\" and depth == 0 and tok.lower() not in _MATH_WORDS:
            short += 2 if len(tok) >= 4 or not tok.isascii() else 1
            if short >= 2:
                return short
    return short


def last_phrase_segment(text: str) -> str | None:
    """The text after the last final-answer phrase (``ANSWER_PHRASE``), up to a blank line.

    Only the last ``_PHRASE_TRIES`` mentions of an answer word are tried, which bounds the
    work on text that repeats one.
    When the phrase ends its line, the segment starts on the next non-blank line.
    """
    last = None
    for key in reversed([m.start() for m in PHRASE_KEY.finditer(text)][-_PHRASE_TRIES:]):
        last = ANSWER_PHRASE.match(text, key)
        if last is not None:
            break
    if last is None:
        return None
    start = last.end()
    line_end = text.find("\n", start)
    if line_end >= 0 and not text[start:line_end].strip(" \t\r*:："):
        nxt = _NON_BLANK.search(text, line_end)
        if nxt is None:
            return None
        start = nxt.start()
    stop = _PARAGRAPH.search(text, start)
    return text[start : stop.start() if stop else len(text)]


def pick_answer(
    segment: str, *, anchored: bool, find_marker: bool = True
) -> tuple[str | None, bool]:
    """The answer stated in ``segment`` and whether the segment was refused.

    ``anchored`` (the segment follows an ``Answer:`` mark or a final-answer phrase, or is a
    prediction; only its first ``_SEGMENT_CAP`` characters are read): after the last
    final-answer phrase (else the last copula) that has math after it, the first group of
    chunks; without such a marker (or with ``find_marker=False``: the segment follows a
    final-answer phrase already), the first group. Not anchored (a whole response): the
    last group, found by reading the text from its end. Refused (``(None, True)``): a
    negation in the sentences from the marker to the answer, or a hedge word in the
    sentences from the answer to a competing chunk next to it.
    """
    if anchored:
        segment = segment[:_SEGMENT_CAP]
        chunks = math_chunks(segment)
    else:
        segment = segment[-_TAIL_CAP:]
        chunks = _tail_chunks(segment)
    if not chunks:
        return None, False
    after = _marker_end(segment, chunks) if anchored and find_marker else None
    candidates = chunks if after is None else [c for c in chunks if c[0] >= after]
    group = _group(segment, candidates, forward=anchored)
    first = group[0][0] if after is None else after
    window = segment[_sentence_start(segment, first) : _sentence_end(segment, group[-1][1])]
    if NEGATION.search(window):
        return None, True
    i = candidates.index(group[0])
    before = candidates[i - 1][0] if i > 0 else first
    beyond = candidates[i + len(group)][1] if i + len(group) < len(candidates) else None
    if before != first or beyond is not None:  # competing chunks: no hedging between them
        hedge = segment[_sentence_start(segment, min(before, first)) :
                        _sentence_end(segment, beyond or group[-1][1])]
        if HEDGE.search(hedge):
            return None, True
    return _join(group), False


def _tail_chunks(text: str) -> list[tuple[int, int, str]]:
    """The chunks of the shortest tail of ``text`` (growing 4x at a time, so linear in all)
    that holds one, plus ``2 * _WINDOW`` characters before it for the hedge check. Only the
    last ``_TAIL_CAP`` characters are read; positions are relative to them."""
    spans = _delimited_spans(text)
    size = _SEGMENT_CAP
    while True:
        start = _outside_spans(spans, max(len(text) - size, 0))
        chunks = _chunks_from(text, spans, start)
        if chunks or start == 0:
            break
        size *= 4
    if chunks and start > 0:
        start = _outside_spans(spans, max(chunks[0][0] - 2 * _WINDOW, 0))
        chunks = _chunks_from(text, spans, start)
    return chunks


def _outside_spans(spans: list, pos: int) -> int:
    """``pos``, or the start of the span that contains it."""
    i = bisect.bisect_right(spans, (pos, float("inf"))) - 1  # the last span starting <= pos
    if i >= 0 and spans[i][0] <= pos < spans[i][1]:
        return spans[i][0]
    return pos


def _sentence_start(text: str, pos: int) -> int:
    """Start of the sentence holding ``pos``, looking back at most ``_WINDOW`` characters."""
    start = max(pos - _WINDOW, 0)
    for match in _SENTENCE_END.finditer(text, start, pos):
        start = match.end()
    return start


def _sentence_end(text: str, pos: int) -> int:
    """End of the sentence holding ``pos``, looking ahead at most ``_WINDOW`` characters."""
    limit = min(pos + _WINDOW, len(text))
    match = _SENTENCE_END.search(text, pos, limit)
    return match.end() if match else limit


def _marker_end(segment: str, chunks: list[tuple[int, int, str]]) -> int | None:
    """End of the last answer phrase, else of the last copula, that has a chunk after it."""
    last_start = chunks[-1][0]
    for pattern in (ANSWER_PHRASE, COPULA):
        best = None
        for match in pattern.finditer(segment):
            if match.end() > last_start:
                break
            if not _inside(chunks, match.start()):
                best = match.end()
        if best is not None:
            return best
    return None


def _inside(chunks: list[tuple[int, int, str]], pos: int) -> bool:
    """Whether ``pos`` falls inside a chunk (a ``:`` or ``=`` of the math itself).

    Chunks are sorted and disjoint; a binary search keeps many markers linear-ish."""
    lo, hi = 0, len(chunks)
    while lo < hi:
        mid = (lo + hi) // 2
        if chunks[mid][1] <= pos:
            lo = mid + 1
        else:
            hi = mid
    return lo < len(chunks) and chunks[lo][0] <= pos < chunks[lo][1]


def _group(segment: str, chunks: list[tuple[int, int, str]], *, forward: bool) -> list:
    """The first (or last) chunk with its neighbours joined to it by list connectors only."""
    order = chunks if forward else chunks[::-1]
    group = [order[0]]
    for chunk in order[1:]:
        left, right = (group[-1], chunk) if forward else (chunk, group[-1])
        if not CONNECTOR_GAP.fullmatch(segment, left[1], right[0]):
            break
        group.append(chunk)
    return group if forward else group[::-1]


def _join(group: list[tuple[int, int, str]]) -> str:
    """One chunk as it is; several as a list, ``x = `` dropped when all name one variable."""
    items = [c[2] for c in group]
    if len(items) == 1:
        return items[0]
    pairs = [_VAR_VALUE.fullmatch(item) for item in items]
    if all(pairs) and len({p.group(1) for p in pairs}) == 1:
        items = [p.group(2).strip() for p in pairs]
    return ", ".join(items)
