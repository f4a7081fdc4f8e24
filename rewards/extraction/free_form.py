"""Math inside free text: the answer of a sentence such as ``The largest $n$ is 34.``

Pure functions on ``str``, each linear in the length of its input (one regex scan per
pattern, no nested scans), never raising on any ``str``. Used by ``extract`` (the
``"flexible"`` style) and by ``equivalence`` (predictions that still carry words).

Vocabulary:

*chunk*
    A piece of math (``chunks.math_chunks``): the content of ``$...$``, ``\\[...\\]`` and the
    like, or a bare run such as ``x = 5``, ``1,500``, ``25%``; money (``$5 and $10``) is not.
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

import re

from verimath.rewards.extraction.chunks import math_chunks, tail_chunks
from verimath.rewards.extraction.phrases import (
    ANSWER_PHRASE,
    CONNECTOR_GAP,
    COPULA,
    HEDGE,
    NEGATION,
    PHRASE_KEY,
    STRONG_HEDGE,
)
from verimath.rewards.text.brackets import top_level_indexes
from verimath.rewards.text.numbers import parse_number

__all__ = ["final_value", "last_phrase_segment", "pick_answer"]

_LONE_VARIABLE = re.compile(r"\s*[A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?\s*")
# "=", "\approx" and "\equiv" state a result ("5!=120" is a factorial, not "not equal")
_EQUALS = re.compile(
    r"((?<![<>=\\])=(?!=)|\\(?:approx|equiv|implies|Rightarrow|Longrightarrow)(?![A-Za-z])|[≈≡⇒])"
)
_ALTERNATIVE = re.compile(r"\bor\b|\\lor(?![A-Za-z])|\\vee(?![A-Za-z])")
_ELLIPSIS = re.compile(r"^\s*(?:\.\.\.|\\[lc]?dots|…)\s*|\s*(?:\.\.\.|\\[lc]?dots|…)\s*$")
_PLAIN_DROP = re.compile(r"\s+|\$|\\[,;!]")
_COMMANDS = re.compile(r"\\[A-Za-z]+")
_EQUATION_VARIABLE = re.compile(r"(?<![A-Za-z])[xyz](?![A-Za-z])")  # as in x^2 + y^2 = 4
_TIMES_X = re.compile(r"(?<=[0-9])\s*x\s*(?=[0-9])")  # "200 x 4/5": x is "times"
_MODULUS = re.compile(r"\s*(?:\\pmod\s*(?:\{[^{}]*\}|\S+)|\(\s*\\mod\s*[^()]*\))\s*$")
_RELATION = re.compile(r"[<>≤≥≠∈]|\\(?:le|ge|leq|geq|lt|gt|ne|neq|in|subset|equiv)(?![A-Za-z])")
_DENIED_BEFORE = re.compile(
    r"(?:\bnot|n['’]t|\bnever|\bno|\bpas|\bnicht|\bkein\w*|\bnão|\bnon|ليس|नहीं)\s+"
    r"(?:be\s+|equal\s+to\s+|equals\s+|égale?\s+à\s+|gleich\s+)?\$*\s*$"
    r"|(?:不是|不为|不等于|\bне)\s*\$*\s*$",
    re.IGNORECASE,
)
_DENIED_AFTER = re.compile(
    r"\$*\s*(?:is|was|are)\s+(?:not|wrong|incorrect)\b|\$*\s*(?:isn['’]t|wasn['’]t)"
    r"|\$*\s*(?:n['’]est\s+pas|ist\s+(?:nicht|falsch)|不对|不是)",
    re.IGNORECASE,
)
_THOUSANDS = re.compile(r",(?:\\!)?[0-9]{3}(?![0-9])")
_VAR_VALUE = re.compile(r"([A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?)\s*=\s*([^=]+)")
_PARAGRAPH = re.compile(r"\n[ \t]*\n")
_SENTENCE_END = re.compile(r"[.!?;](?=\s|$)|[。！？；\n]")
_NON_BLANK = re.compile(r"\S")
_SEGMENT_CAP = 2000  # characters of an anchored segment that are read
_TAIL_CAP = 200_000  # characters at the end of a response searched for its last math
_PHRASE_TRIES = 64  # mentions of an answer word, from the last, tried as a phrase
_WINDOW = 400  # characters a negation or hedge check looks at on each side of the answer


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
    final-answer phrase already), the first group. Refused (``(None, True)``): a negation
    in its clause (``_clause``), or a hedge word in the sentences from the answer to a
    competing chunk next to it. Not anchored (a whole response): see
    ``_pick_last``.
    """
    if not anchored:
        return _pick_last(segment[-_TAIL_CAP:])
    segment = segment[:_SEGMENT_CAP]
    chunks = math_chunks(segment)
    if not chunks:
        return None, False
    after = _marker_end(segment, chunks) if find_marker else None
    candidates = chunks if after is None else [c for c in chunks if c[0] >= after]
    group = _group(segment, candidates, forward=True)
    first = group[0][0] if after is None else after
    if NEGATION.search(_clause(segment, chunks, group)):
        return None, True
    beyond = candidates[len(group)][1] if len(group) < len(candidates) else None
    if beyond is not None:  # a competing chunk: no hedging between the two
        if HEDGE.search(segment, _sentence_start(segment, first), _sentence_end(segment, beyond)):
            return None, True
    return _join(group), False


def _pick_last(text: str) -> tuple[str | None, bool]:
    """The last group of chunks of a whole response (a lone variable such as ``$n$`` does
    not count when other math exists). Refused when it is denied right next to it (``not
    42``, ``42 is not``, ``42 is wrong``: prose such as ``40 girls are not scouts`` denies
    the girls, not the number) or when its clause hedges with a strong hedge word
    (``maybe``, ``perhaps``...; a plain ``or`` often means "equivalently" here): the clause
    is the text from the chunk before it, and after it up to the next chunk, within its
    sentence; a display block ends its sentence."""
    every = tail_chunks(text, 2 * _WINDOW)
    chunks = [c for c in every if not _LONE_VARIABLE.fullmatch(c[2])] or every
    if not chunks:
        return None, False
    group = _group(text, chunks, forward=False)
    start, end = group[0][0], group[-1][1]
    before = [c[1] for c in every if c[1] <= start]
    after = [c[0] for c in every if c[0] >= end]
    left = max(before[-1] if before else 0, _sentence_start(text, start))
    closed = _is_display(text, group[-1]) or _ends_sentence(text, group[-1])
    right = end if closed else min(after[:1] + [_sentence_end(text, end)])
    clause = text[left:start] + " " + text[end:right]
    denied = _DENIED_BEFORE.search(text, left, start) or _DENIED_AFTER.match(text, end, right)
    if denied or (len(group) < len(chunks) and STRONG_HEDGE.search(clause)):
        return None, True
    return _join(group), False


def _is_display(text: str, chunk: tuple[int, int, str]) -> bool:
    return text.startswith(("$$", "\\[", "\\begin"), chunk[0])


def _ends_sentence(text: str, chunk: tuple[int, int, str]) -> bool:
    """``$x = 5.$``: the sentence ends inside the math, before its closing delimiter."""
    raw = text[chunk[0] : chunk[1]].rstrip().rstrip("$")
    raw = raw[:-2] if raw.endswith(("\\)", "\\]")) else raw
    return raw.rstrip().endswith((".", "!", "?"))


def _clause(text: str, chunks: list, group: list) -> str:
    """The text around ``group`` that speaks of it: back to the chunk before it (or its
    sentence start) and on to the chunk after it (or its sentence end). "the number is not
    10 which is 1,000.99" does not deny 1,000.99; "The answer is not 42" denies 42."""
    start, end = group[0][0], group[-1][1]
    before = [c[1] for c in chunks if c[1] <= start]
    after = [c[0] for c in chunks if c[0] >= end]
    left = max(before[-1] if before else 0, _sentence_start(text, start))
    right = min(after[:1] + [_sentence_end(text, end)])
    return text[left:start] + " " + text[end:right]


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
        if not _listable(order[0][2], chunk[2]):
            break  # "$k - 1 = 1$, and $k = 2$" is a derivation, not a list
        group.append(chunk)
    return group if forward else group[::-1]


def _listable(first: str, item: str) -> bool:
    """Items of one list: no equations, or ``x = value`` for one variable ``x`` in both."""
    if _RELATION.search(first) or _RELATION.search(item):
        return False  # "$-2 \\le x \\le 7$ and $x \\in [-2, 7]$" restate one answer
    if "=" not in first and "=" not in item:
        return True
    a, b = _VAR_VALUE.fullmatch(first), _VAR_VALUE.fullmatch(item)
    return a is not None and b is not None and a.group(1) == b.group(1)


def _join(group: list[tuple[int, int, str]]) -> str:
    """One chunk as it is; several as a list, ``x = `` dropped when all name one variable."""
    items = [c[2] for c in group]
    if len(items) == 1:
        return items[0]
    pairs = [_VAR_VALUE.fullmatch(item) for item in items]
    if all(pairs) and len({p.group(1) for p in pairs}) == 1:
        items = [p.group(2).strip() for p in pairs]
    return ", ".join(items)


def final_value(math: str) -> str:
    """The result a closing computation states: the last side of ``a = b = c`` or of
    ``a \\implies b`` (``c``, ``b``). An approximation after an exact value is not the
    result (``1/3 \\approx 0.33`` gives ``1/3``; ``24000 \\cdot 1.01^{30} \\approx 32348``
    gives ``32348``), nor is a lone variable written last (``17 = x`` gives ``17``). Kept
    whole: alternatives (``x = 41 or x = 42``), ``y = 2x + 3`` and ``x = 5`` (comparison
    drops ``x =``), one equation in ``x``,
    ``y`` or ``z`` (``x^2 + y^2 = 4``: an answer of its own; ``m + n = 17`` gives ``17``),
    ``f(y) = y``, and ``a = 2, b = 3``."""
    pieces = _EQUALS.split(math)  # [side, separator, side, ...]
    parts, separators = [_ELLIPSIS.sub("", p) for p in pieces[::2]], pieces[1::2]
    while len(parts) > 1 and not parts[-1].strip():  # "31 + 66 = ...": no result written
        parts, separators = parts[:-1], separators[:-1]
    if len(parts) < 2 or any(_top_level_comma(p) for p in parts[1:-1]):
        return math  # "a = 2, b = 3" assigns several values
    if any(_ALTERNATIVE.search(p) for p in parts[1:-1]):
        return math  # "x = 41 or x = 42": alternatives, not one result
    last = _MODULUS.sub("", parts[-1]).strip()
    previous = parts[-2].strip()
    if separators[-1].strip() in ("\\approx", "≈") and _is_plain_value(previous):
        return _MODULUS.sub("", previous).strip() or math
    if _LONE_VARIABLE.fullmatch(last):
        return previous if (len(parts) > 2 or _is_plain_value(previous)) else math
    if len(parts) == 2 and (_LONE_VARIABLE.fullmatch(parts[0]) or _EQUATION_VARIABLE.search(
            _TIMES_X.sub("", _COMMANDS.sub("", parts[0])))):
        return math
    return last or math


def _is_plain_value(text: str) -> bool:
    """A number, fraction or mixed number (no operation left to do)."""
    return parse_number(_PLAIN_DROP.sub("", text).replace("\\dfrac", "\\frac")) is not None


def _top_level_comma(text: str) -> bool:
    """A list comma: outside brackets, and not a thousands separator (``10,000``,
    ``10,\\!000``)."""
    return any(not _THOUSANDS.match(text, i) for i in top_level_indexes(text, ","))
