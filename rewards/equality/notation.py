"""Notation that differs while the math is the same: aligned before any comparison.

``align_pair(pred, gold)`` rewrites a (prediction, gold) pair so that the fast path and
math-verify compare like with like. Pure, bounded work (inputs longer than
``MAX_ALIGN_CHARS`` are returned unchanged), never raises on ``str``. Rules, in order:

0. A gold that holds a ``\\boxed{}`` (a worked solution passed as the gold) is its box
   content (``extract.boxed_answer``).
0b. Plain calculator notation (``sqrt(2)/2``, ``x**2``, ``2 1/4``, ``[2, oo)``) is read into
   LaTeX (``plain_math.to_latex``), and a repeating decimal (``0.\\overline{3}``) is written
   as its fraction, on both sides.
1. A stray trailing backslash or ``\\\\`` (a line break) at the end of either side is dropped.
2. ``x \\in I`` is ``I``; a relation in one variable (``-2 \\le x \\le 7``, ``x > 3``,
   ``5 \\geq y``, ``x \\ne 2``, and unions written with ``or``) becomes its interval
   (``[-2, 7]``, ``(3, \\infty)``) when the other side is an interval or a relation too.
3. Matrices: ``bmatrix``, ``Bmatrix``, ``matrix``, ``smallmatrix`` and ``array`` (with the
   brackets around it) are written as ``pmatrix``; ``vmatrix`` (a determinant) is left
   alone. A parenthesised tuple compared with a row or column vector becomes that vector.
4. Decimal commas: ``1,5`` or ``1{,}5`` is ``1.5`` when the other side is a single number.
   A comma followed by exactly three digits stays a thousands separator (``1,500`` is
   1500), unless the integer part is ``0`` (``0,125`` is 0.125).
5. ``\\pm a`` (or ``x = \\pm a``) is the list ``a, -a`` when the other side is a list.

Ordered or not is decided by the gold (see ``fast_path.compare_lists`` and
``equivalence``): a gold ``(a, b)`` is an ordered tuple and ``(b, a)`` differs from it; a
gold written as a bare list ``a, b`` or a set ``\\{a, b\\}`` is unordered.
"""

from __future__ import annotations

import re

from verimath.rewards.equality.plain_math import to_latex
from verimath.rewards.text.boxes import boxed_answer
from verimath.rewards.text.brackets import closing_index
from verimath.rewards.text.numbers import parse_number

__all__ = [
    "MAX_ALIGN_CHARS",
    "align_pair",
    "brace_frac_args",
    "matrix_cells",
    "strip_trailing_backslash",
]

MAX_ALIGN_CHARS = 2000
MAX_RELATION_CHARS = 400  # longer texts are never read as relations (bounded regex work)

_TRAILING_BACKSLASH = re.compile(r"(?:\s*\\(?:\\|(?![A-Za-z{}()\[\]|,;:!%$#&_^ ])))+\s*$")
_DECORATION = re.compile(
    r"\\(?:left|right|displaystyle|[bB]igg?[lr]?)(?![A-Za-z])|\\[,;:! ]|\$|~"
)
_REL = r"(?:<=|>=|<|>|≤|≥|\\(?:leqslant|geqslant|leq|geq|le|ge|lt|gt)(?![A-Za-z]))"
_VAR = r"[A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?"
_SIDE = r"[^<>≤≥,;]+?"
_CHAIN = re.compile(
    rf"\s*(?P<a>{_SIDE})\s*(?P<op1>{_REL})\s*(?P<v>{_VAR})\s*(?P<op2>{_REL})\s*(?P<b>{_SIDE})\s*"
)
_VAR_FIRST = re.compile(rf"\s*(?P<v>{_VAR})\s*(?P<op>{_REL})\s*(?P<b>{_SIDE})\s*")
_VAR_LAST = re.compile(rf"\s*(?P<a>{_SIDE})\s*(?P<op>{_REL})\s*(?P<v>{_VAR})\s*")
_NOT_EQUAL = re.compile(rf"\s*{_VAR}\s*(?:\\neq?(?![A-Za-z])|≠)\s*(?P<b>{_SIDE})\s*")
_IN = re.compile(rf"\s*{_VAR}\s*(?:\\in|∈)\s*(?P<set>.+)")
_OR = re.compile(r"\\text\{\s*or\s*\}|\\(?:lor|vee)(?![A-Za-z])|\bor\b")
_CUP = re.compile(r"\\cup(?![A-Za-z])|∪")
_MATRIX_ENV = re.compile(
    r"^\s*(?P<open>\\left\s*[\[(]|[\[(])?\s*\\begin\{(?P<env>pmatrix|bmatrix|Bmatrix|matrix"
    r"|smallmatrix|array)\}(?:\{[^{}]*\})?(?P<body>.*)\\end\{(?P=env)\}\s*"
    r"(?P<close>\\right\s*[\])]|[\])])?\s*$",
    re.DOTALL,
)
_TUPLE = re.compile(r"\s*(?:\\left\s*)?\((?P<body>[^()]*,[^()]*)(?:\\right\s*)?\)\s*")
_DECIMAL_COMMA = re.compile(r"\s*(?P<int>[+-]?[0-9]+)(?:,|\{,\})(?P<frac>[0-9]+)\s*")
_PLUS_MINUS = re.compile(rf"\s*(?:{_VAR}\s*=\s*)?\\pm\s*(?P<a>[^,]+?)\s*")
_LOWER = {"<": "(", ">": "(", "\\lt": "(", "\\gt": "("}


def strip_trailing_backslash(text: str) -> str:
    """``5\\`` and ``\\frac12\\\\`` lose the stray backslashes at their end; ``\\}`` is kept."""
    return _TRAILING_BACKSLASH.sub("", text) if text.rstrip().endswith("\\") else text


def align_pair(pred: str, gold: str) -> tuple[str, str]:
    """``(pred, gold)`` in comparable notation (see the module docstring)."""
    if max(len(pred), len(gold)) > MAX_ALIGN_CHARS:
        return pred, gold
    if "\\boxed" in gold or "\\fbox" in gold:  # a gold written as a worked answer
        gold = boxed_answer(gold, every=True) or gold
    pred, gold = to_latex(pred), to_latex(gold)
    pred, gold = repeating_decimal(pred), repeating_decimal(gold)
    pred = strip_trailing_backslash(pred)
    gold = strip_trailing_backslash(gold)
    pred, gold = _align_intervals(pred, gold)
    pred, gold = _canonical_matrix(pred), _canonical_matrix(gold)
    pred, gold = _vector_for_tuple(pred, gold), _vector_for_tuple(gold, pred)
    pred, gold = _decimal_comma(pred, gold), _decimal_comma(gold, pred)
    pred, gold = _expand_plus_minus(pred, gold), _expand_plus_minus(gold, pred)
    return pred, gold


_REPEATING = re.compile(r"\s*(-?)(\d*)\.(\d*)\\overline\{(\d{1,12})\}\s*")


def repeating_decimal(text: str) -> str:
    """``0.\\overline{3}`` as ``\\frac{1}{3}``, ``1.2\\overline{45}`` as ``\\frac{137}{110}``."""
    match = _REPEATING.fullmatch(text) if len(text) < 60 else None
    if match is None:
        return text
    sign, whole, fixed, period = match.groups()
    if len(fixed) > 12:
        return text
    head = int((whole or "0") + fixed)
    num = int((whole or "0") + fixed + period) - head
    den = 10 ** len(fixed) * (10 ** len(period) - 1)
    return f"{sign}\\frac{{{num}}}{{{den}}}"


def _align_intervals(pred: str, gold: str) -> tuple[str, str]:
    p, g = as_interval(pred), as_interval(gold)
    if p is None or g is None or _has_variable(p) or _has_variable(g):
        return pred, gold  # "a < b" is a relation between variables, not an interval
    return p, g


def _has_variable(text: str) -> bool:
    """A Latin letter outside LaTeX commands (``\\infty``, ``\\pi``, ``\\frac``...)."""
    return re.search(r"[A-Za-z]", re.sub(r"\\[A-Za-z]+", "", text)) is not None


def as_interval(text: str) -> str | None:
    """The interval (or union of intervals) that ``text`` describes, else None.

    An interval is returned as it is (``x \\in`` dropped); a relation in one variable is
    rewritten: ``-2 \\le x < 7`` is ``[-2, 7)``, ``x \\ge 5`` is ``[5, \\infty)``.
    """
    if len(text) > MAX_RELATION_CHARS:
        return None
    plain = _DECORATION.sub("", text)
    inside = _IN.fullmatch(plain)
    if inside is not None:
        plain = inside.group("set")
    if all(_is_interval(part) for part in _CUP.split(plain)):
        return plain.strip()
    parts = _OR.split(plain) if ("or" in plain or "\\lor" in plain or "\\vee" in plain) else [plain]
    intervals = [_relation_interval(part) for part in parts]
    if not intervals or any(i is None for i in intervals):
        return None
    return " \\cup ".join(intervals)


def _is_interval(text: str) -> bool:
    """``(a, b]``-shaped: opened and closed by brackets, with a comma inside."""
    text = text.strip()
    return len(text) >= 5 and text[0] in "([" and text[-1] in ")]" and "," in text


def _relation_interval(text: str) -> str | None:
    chain = _CHAIN.fullmatch(text)
    if chain is not None:
        a, b = chain.group("a").strip(), chain.group("b").strip()
        up1, up2 = _is_less(chain.group("op1")), _is_less(chain.group("op2"))
        if up1 != up2:
            return None  # "1 < x > 0" is no interval
        if up1:
            return _interval(a, chain.group("op1"), b, chain.group("op2"))
        return _interval(b, chain.group("op2"), a, chain.group("op1"))
    first = _VAR_FIRST.fullmatch(text)
    if first is not None:
        op, b = first.group("op"), first.group("b").strip()
        if _is_less(op):
            return _interval("-\\infty", "<", b, op)
        return _interval(b, op, "\\infty", "<")
    unequal = _NOT_EQUAL.fullmatch(text)
    if unequal is not None:  # x \ne a: everything but a
        b = unequal.group("b").strip()
        return f"(-\\infty, {b}) \\cup ({b}, \\infty)"
    last = _VAR_LAST.fullmatch(text)
    if last is not None:
        op, a = last.group("op"), last.group("a").strip()
        if _is_less(op):
            return _interval(a, op, "\\infty", "<")
        return _interval("-\\infty", "<", a, op)
    return None


def _is_less(op: str) -> bool:
    return op in ("<", "<=", "≤") or op.startswith(("\\l",))


def _interval(lo: str, lo_op: str, hi: str, hi_op: str) -> str:
    """``lo op x op hi`` as an interval: strict operators give open ends."""
    left = "(" if _is_strict(lo_op) else "["
    right = ")" if _is_strict(hi_op) else "]"
    return f"{left}{lo}, {hi}{right}"


def _is_strict(op: str) -> bool:
    return op in ("<", ">", "\\lt", "\\gt")


def matrix_cells(text: str) -> list[list[str]] | None:
    """Rows of cell texts of a ``pmatrix`` (after ``_canonical_matrix``), else None."""
    match = _MATRIX_ENV.fullmatch(text)
    if match is None or match.group("env") != "pmatrix" or "\\begin" in match.group("body"):
        return None
    rows = [r for r in match.group("body").split("\\\\")]
    if rows and not rows[-1].strip():
        rows.pop()  # a trailing "\\" before \end
    return [[cell.strip() for cell in row.split("&")] for row in rows] or None


def _canonical_matrix(text: str) -> str:
    """``bmatrix``/``array``/... with their brackets as a ``pmatrix``; anything else as is.

    ``pmatrix``, ``bmatrix`` and ``Bmatrix`` draw their own brackets; ``matrix``,
    ``smallmatrix`` and ``array`` are matrices with brackets around them or alone."""
    if "\\begin" not in text:
        return text
    match = _MATRIX_ENV.fullmatch(text)
    if match is None or "\\begin" in match.group("body"):
        return text
    has_open, has_close = match.group("open") is not None, match.group("close") is not None
    if has_open != has_close or (has_open and match.group("env").endswith("bmatrix")):
        return text
    if has_open and match.group("env") == "pmatrix":
        return text
    return f"\\begin{{pmatrix}}{match.group('body').strip()}\\end{{pmatrix}}"


def _vector_for_tuple(text: str, other: str) -> str:
    """A tuple ``(a, b)`` written as the row or column vector that ``other`` is."""
    tup = _TUPLE.fullmatch(text)
    if tup is None:
        return text
    cells = matrix_cells(other)
    items = [item.strip() for item in tup.group("body").split(",")]
    if cells is None or len(items) < 2:
        return text
    if len(cells) == 1 and len(cells[0]) == len(items):
        return "\\begin{pmatrix}" + " & ".join(items) + "\\end{pmatrix}"
    if all(len(row) == 1 for row in cells) and len(cells) == len(items):
        return "\\begin{pmatrix}" + " \\\\ ".join(items) + "\\end{pmatrix}"
    return text


def _decimal_comma(text: str, other: str) -> str:
    """``1,5`` as ``1.5`` when ``other`` is one number (see the module docstring)."""
    match = _DECIMAL_COMMA.fullmatch(text)
    if match is None or "," in other or parse_number(_DECORATION.sub("", other).strip()) is None:
        return text
    whole, frac = match.group("int"), match.group("frac")
    if len(frac) == 3 and whole.lstrip("+-") != "0":
        return text  # a thousands separator
    return f"{whole}.{frac}"


def _expand_plus_minus(text: str, other: str) -> str:
    """``\\pm a`` as ``a, -a`` when ``other`` is a list (has a comma at top level)."""
    match = _PLUS_MINUS.fullmatch(text)
    if match is None or "," not in other:
        return text
    a = match.group("a")
    return f"{a}, -{a}" if a[:1] not in "+-" else text


_FRAC_CMD = re.compile(r"\\[dtc]?frac(?![A-Za-z])")
_TEX_TOKEN = re.compile(r"\s*(\\[A-Za-z]+|[^\s{}\\])")


def brace_frac_args(text: str) -> str:
    """Brace ``\\frac`` arguments as TeX reads them (a braced group or one token), which
    math-verify does not: ``\\frac\\pi4`` -> ``\\frac{\\pi}{4}``, ``\\frac ab`` -> ``\\frac{a}{b}``.
    A ``\\frac`` without two arguments is left as it is."""
    out, pos = [], 0
    for match in _FRAC_CMD.finditer(text):
        if match.start() < pos:
            continue
        args, i = [], match.end()
        for _ in range(2):
            arg, i = _tex_argument(text, i)
            if arg is None:
                break
            args.append(arg)
        if len(args) == 2:
            out += [text[pos : match.start()], "\\frac{", args[0], "}{", args[1], "}"]
            pos = i
    out.append(text[pos:])
    return "".join(out)


def _tex_argument(text: str, i: int) -> tuple[str | None, int]:
    """The TeX argument starting at ``text[i]`` (braces dropped) and the index after it."""
    while i < len(text) and text[i].isspace():
        i += 1
    if i < len(text) and text[i] == "{":
        j = closing_index(text, i, "{", "}", escaped=True)
        return (None, i) if j is None else (brace_frac_args(text[i + 1 : j]), j + 1)
    token = _TEX_TOKEN.match(text, i)
    return (None, i) if token is None else (token.group(1), token.end())
