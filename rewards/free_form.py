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
    STRONG_HEDGE,
)

__all__ = [
    "final_value",
    "has_prose",
    "last_phrase_segment",
    "math_chunks",
    "pick_answer",
]

_ENVIRONMENTS = r"(?:align|equation|gather|eqnarray|multline|displaymath)\*?"
_DELIMITER = re.compile(
    r"\\\$|\$\$|\$|\\\(|\\\)|\\\[|\\\]|\[/?asy\]"
    rf"|\\(?:begin|end)\{{{_ENVIRONMENTS}\}}"
)
_CLOSER = {"$$": "$$", "$": "$", "\\(": "\\)", "\\[": "\\]", "[asy]": "[/asy]"}
_ALIGNED = re.compile(
    r"\s*\\begin\{(?:aligned|split|gathered|alignedat)\}(?:\{[^{}]*\})?(.*)"
    r"\\end\{(?:aligned|split|gathered|alignedat)\}[\s.,;]*",
    re.DOTALL,
)
_ROW_BREAK = re.compile(r"\\\\(?:\[[^\]]*\])?")
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
_TRIM_LEFT = " \t,.;:)]}=*/^'"
_TRIM_RIGHT = " \t,.;:([{=+*-/^'"
_LONE_LETTER = re.compile(
    r"^(?:[A-Za-z]\.)+\s*|^[A-Za-z]\s+(?=[0-9A-Za-z\\(])|(?<=[0-9)\]}])\s+[A-Za-z]$"
)
_LONE_VARIABLE = re.compile(r"\s*[A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?\s*")
# "=", "\approx" and "\equiv" state a result ("5!=120" is a factorial, not "not equal")
_EQUALS = re.compile(
    r"(?<![<>=\\])=(?!=)|\\(?:approx|equiv|implies|Rightarrow|Longrightarrow)(?![A-Za-z])|[≈≡⇒]"
)
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
_NESTING = re.compile(r"\\begin\{|\\end\{|&")
_THOUSANDS = re.compile(r",(?:\\!)?[0-9]{3}(?![0-9])")
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

def _is_currency(content: str, after: str) -> bool:
    """``$5 and $10``: a ``$`` span that starts with a digit is money when it ends with a
    space, is followed by a digit, or holds prose (words outside braces:
    ``$54\\text{ cm}^2$`` and ``$3ab^2 = 0$`` are math)."""
    if _CURRENCY_START.match(content) is None:
        return False
    return content[-1:].isspace() or after.isdigit() or _count_words(content, 0, len(content), 0) >= 2


def _delimited_spans(text: str) -> list[tuple[int, int, int, int]]:
    """``(outer_start, outer_end, inner_start, inner_end)`` of each math span, in order.

    One pass over the delimiter tokens; a ``$`` span may not cross a line and ``\\(`` one
    not a blank line; a currency ``$`` or one whose span would cross a line is skipped, and
    its partner may open the next span. ``[asy]`` drawings are spans without math.
    """
    spans = []
    opener = None  # (token, start, end)
    for match in _DELIMITER.finditer(text):
        tok = match.group(0)
        if tok == "\\$":
            continue
        if tok == "[asy]":  # a drawing: its labels' "$" must not pair with the prose's
            opener = (tok, match.start(), match.end())
            continue
        if opener is None:
            if tok in _CLOSER or tok.startswith("\\begin"):
                opener = (tok, match.start(), match.end())
            continue
        want = _CLOSER.get(opener[0]) or opener[0].replace("\\begin", "\\end", 1)
        if tok != want and not (opener[0] == "$" and tok == "$$"):
            continue
        content = text[opener[2] : match.start()]
        inline = opener[0] in ("$", "\\(")
        money = opener[0] == "$" and _is_currency(content, text[match.end() : match.end() + 1])
        broken = "\n" in content if opener[0] == "$" else "\n\n" in content
        if inline and (broken or money):
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
        content = _span_math(text, outer_start, inner_start, inner_end)
        if content:
            chunks.append((outer_start, outer_end, content))
        pos = outer_end
    return chunks


def _span_math(text: str, outer_start: int, inner_start: int, inner_end: int) -> str:
    """The math of a span: its content; the last row of an ``align``-like environment
    (alignment ``&`` dropped); nothing for an ``[asy]`` drawing."""
    if text.startswith("[asy]", outer_start):
        return ""
    content = text[inner_start:inner_end]
    inner = _ALIGNED.fullmatch(content)
    if text.startswith("\\begin", outer_start) or inner is not None:
        rows = _rows(inner.group(1) if inner is not None else content)
        content = _drop_alignment(rows[-1]).strip().lstrip("=") if rows else ""
    return content.strip().rstrip(".,;").strip()


def _drop_alignment(row: str) -> str:
    """``row`` without its alignment ``&`` (those of a nested ``pmatrix`` stay)."""
    out, depth, pos = [], 0, 0
    for match in _NESTING.finditer(row):
        tok = match.group(0)
        depth += 1 if tok.startswith("\\b") else -1 if tok.startswith("\\e") else 0
        if tok == "&" and depth <= 0:
            out.append(row[pos : match.start()])
            pos = match.end()
    out.append(row[pos:])
    return "".join(out)


def _rows(body: str) -> list[str]:
    """Rows of an alignment (split at ``\\\\`` outside nested environments such as a
    ``pmatrix``), blank rows dropped."""
    rows, current = [], []
    for piece in _ROW_BREAK.split(body):
        current.append(piece)
        joined = "\\\\".join(current)
        if joined.count("\\begin") <= joined.count("\\end"):
            rows.append(joined)
            current = []
    if current:
        rows.append("\\\\".join(current))
    return [r for r in rows if r.strip()]


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
        if piece < end and text[piece].isdigit():
            piece = _skip_digits(text, piece, end)  # "MC413551", "user2010": a name
    _add_piece(text, piece, end, out)


def _skip_digits(text: str, pos: int, end: int) -> int:
    while pos < end and text[pos].isdigit():
        pos += 1
    return pos


def _add_piece(text: str, start: int, end: int, out: list) -> None:
    if start > 0 and text[start - 1] == "#":  # "horse #12": a label, not a value
        start = _skip_digits(text, start, end)
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
    non-Latin script, a contraction (``it's``), two shorter words, or one next to ``$...$``
    math. ``ab`` or ``xyz`` alone is a product of variables, not prose."""
    spans = _delimited_spans(text)
    pos = 0
    short = 1 if spans else 0  # "So $k = 5$.": one word next to delimited math is prose
    for outer_start, outer_end, _, _ in spans + [(len(text), len(text), 0, 0)]:
        short = _count_words(text, pos, outer_start, short)
        if short >= 2:
            return True
        pos = outer_end
    return False


_BRACE_OR_WORD = re.compile(r"\\[{}]|\\[A-Za-z]+|[{}]|[^\W\d_]+['’][^\W\d_]+|[^\W\d_]{2,}")


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
            short += 2 if len(tok) >= 4 or not tok.isascii() or "'" in tok else 1
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
    final-answer phrase already), the first group. Refused (``(None, True)``): a negation
    in the sentences from the marker to the answer, or a hedge word in the sentences from
    the answer to a competing chunk next to it. Not anchored (a whole response): see
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
    window = segment[_sentence_start(segment, first) : _sentence_end(segment, group[-1][1])]
    if NEGATION.search(window):
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
    every = _tail_chunks(text)
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
    ``a \\implies b`` (``c``, ``b``), skipping a lone variable written last (``17 = x``).
    Kept whole: one equation in ``x``, ``y`` or ``z`` (``x^2 + y^2 = 4``,
    ``5x - 7y + 4 = 0``: an answer of its own; ``m + n = 17`` gives ``17``), and
    ``a = 2, b = 3``."""
    parts = _EQUALS.split(math)
    if len(parts) < 2 or any(_top_level_comma(p) for p in parts[1:-1]):
        return math  # "a = 2, b = 3" assigns several values
    last = _MODULUS.sub("", parts[-1]).strip()
    if _LONE_VARIABLE.fullmatch(last):
        last = parts[-2].strip()
        if _LONE_VARIABLE.fullmatch(last):
            return math
    elif len(parts) == 2 and _EQUATION_VARIABLE.search(_TIMES_X.sub("", _COMMANDS.sub("", parts[0]))):
        if not _LONE_VARIABLE.fullmatch(parts[0]):
            return math
    return last or math


def _top_level_comma(text: str) -> bool:
    """A list comma: outside brackets, and not a thousands separator (``10,000``,
    ``10,\\!000``)."""
    depth = 0
    for i, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0 and not _THOUSANDS.match(text, i):
            return True
    return False
