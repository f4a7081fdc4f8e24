"""Where the math is in free text: delimited spans, bare math runs, and prose detection.

Pure functions on ``str``, each linear in the length of its input (one regex scan per
pattern, no nested scans), never raising on any ``str``; ``free_form`` builds on them.

A *chunk* is a piece of math, ``(start, end, math)``: the content of ``$...$``, ``$$...$$``,
``\\(...\\)``, ``\\[...\\]`` or of an ``align``-like environment (its last row, the
alignment ``&`` dropped), or a bare run outside those (digits, LaTeX commands, operators,
brackets and single letters next to an operator: ``x = 5``, ``1,500``, ``\\frac{3}{4}``,
``25%``). Not math: a ``$`` that opens a span of money (``$5 and $10``: it starts with a
digit and ends with a space, is followed by a digit, or holds prose), ``[asy]`` drawings,
numbers glued to a name (``user2010``) or after ``#`` (``horse #12``).
"""

from __future__ import annotations

import bisect
import re

__all__ = ["delimited_spans", "has_prose", "math_chunks", "tail_chunks"]

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
_CURRENCY_START = re.compile(r"\s*[0-9]")
# Bare math is found in two passes of single character-class runs (fast in any regex
# engine): runs of characters that may appear in math, then the words inside each run.
_MATHISH = re.compile(r"[0-9A-Za-z\\{}()\[\]+\-*/^_=<>|!,.:%~ \t≤≥≠±×÷−√π∞∈∪∩°·⋅']+")
# Cuts in a bare run: commands (kept), words, a sentence end (". " before a capital) and
# chat-template tokens ("<|im_start|>").
_COMMAND_OR_WORD = re.compile(
    r"\\[A-Za-z]+|[A-Za-z][A-Za-z']*[A-Za-z]|\.\s+(?=[A-Z])|<\|[A-Za-z_]{0,40}\|>"
)
_MATH_EVIDENCE = re.compile(
    r"[0-9]|\\(?!text|mathrm|textbf|mbox|quad|qquad)[A-Za-z]{2,}|[≤≥≠±×÷−√π∞∈∪∩]"
    r"|[A-Za-z]\s*[=<>+*/^]|[=<>+*/^]\s*[A-Za-z]"
)
_TRIM_LEFT = " \t,;:)]}=*/^'"
_TRIM_RIGHT = " \t,.;:([{=+*-/^'"
_LONE_LETTER = re.compile(
    r"^(?:[A-Za-z]\.)+\s*|^[A-Za-z]\s+(?=[0-9A-Za-z\\(])|(?<=[0-9)\]}.,;:])\s+[A-Za-z]$"
)
_NESTING = re.compile(r"\\begin\{|\\end\{|&")
# Words that are math, not prose (function names and constants written without a backslash).
_MATH_WORDS = frozenset(
    "sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh log ln lg exp lim max min "
    "gcd lcm det mod deg sqrt pi inf infty infinity cis dx dy dt".split()
)
_TAIL_START = 2000  # characters at the end of a text read first for its last chunk


def _is_currency(content: str, after: str) -> bool:
    """``$5 and $10``: a ``$`` span that starts with a digit is money when it ends with a
    space, is followed by a digit, or holds prose (words outside braces:
    ``$54\\text{ cm}^2$`` and ``$3ab^2 = 0$`` are math)."""
    if _CURRENCY_START.match(content) is None:
        return False
    return (content[-1:].isspace() or after.isdigit()
            or _count_words(content, 0, len(content), 0) >= 2)


def delimited_spans(text: str) -> list[tuple[int, int, int, int]]:
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
        if run.startswith(".") and not run[1:2].isdigit():
            run = run[1:]  # a sentence's period; ".4" is a number
        run = _LONE_LETTER.sub("", run)
        if run == before:
            break
    return run


def math_chunks(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, math)`` of each chunk of ``text``, in order (see the module docstring)."""
    return _chunks_from(text, delimited_spans(text), 0)


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
    words (two letters or more, not a command or a function name), sentence ends and chat
    tokens cut into pieces."""
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
    spans = delimited_spans(text)
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


def tail_chunks(text: str, context: int) -> list[tuple[int, int, str]]:
    """The chunks of the shortest tail of ``text`` (growing 4x at a time, so linear in all)
    that holds one, plus ``context`` characters before it (for checks around the answer)."""
    spans = delimited_spans(text)
    size = _TAIL_START
    while True:
        start = _outside_spans(spans, max(len(text) - size, 0))
        chunks = _chunks_from(text, spans, start)
        if chunks or start == 0:
            break
        size *= 4
    if chunks and start > 0:
        start = _outside_spans(spans, max(chunks[0][0] - context, 0))
        chunks = _chunks_from(text, spans, start)
    return chunks


def _outside_spans(spans: list, pos: int) -> int:
    """``pos``, or the start of the span that contains it."""
    i = bisect.bisect_right(spans, (pos, float("inf"))) - 1  # the last span starting <= pos
    if i >= 0 and spans[i][0] <= pos < spans[i][1]:
        return spans[i][0]
    return pos
