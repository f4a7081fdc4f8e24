"""Answer equivalence: a cheap exact path first, then symbolic math-verify.

Public functions (names and signatures are a contract with ``rewards/pool.py``):

``fast_verdict(pred, gold, *, mode)``
    Decides in-process, in bounded time, with exact rational arithmetic
    (``fractions.Fraction``): ``True`` only when the two answers are certainly equivalent,
    ``False`` only when they certainly differ, ``None`` when the symbolic path must decide.
``symbolic_verdict(pred, gold)``
    math-verify in this process, with no timeout of its own: callers bound its time (the
    scoring pool runs it in a worker process and kills that worker on timeout).
``is_equivalent(pred, gold, *, mode, timeout)``
    The fast path, then (mode ``"symbolic"`` only) the symbolic path in the scoring pool.

What counts as the same answer (``normalize_answer``): spacing commands, ``$``,
``\\left``/``\\right``, ``\\displaystyle`` and whitespace are dropped; ``\\dfrac`` and
``\\tfrac`` are ``\\frac``; ``\\text{}``, ``\\mathrm{}`` and similar wrappers are unwrapped; a
trailing unit (a ``\\text{...}`` after a number, or a unit word such as ``cm``, ``dollars``,
``degrees``), degree signs (``^\\circ``) and a leading ``\\$`` are dropped; ``x = 5`` is
``5`` (one variable on the left, nothing else). Numbers are compared by value:
``1,000`` = ``1000``, ``007`` = ``7``, ``3.0`` = ``3``, ``0.5`` = ``1/2`` = ``\\frac12``,
``2\\frac{1}{2}`` = ``5/2`` (a mixed number, as in MATH), ``1.5\\times10^{3}`` = ``1.5e3``
= ``1500``, ``10^{5}`` = ``1e5``.
A percent sign is optional on either side: ``10\\%`` matches ``10`` and ``0.1`` (as in
math-verify). Parenthesised/bracketed lists of numbers are compared element-wise
(intervals and tuples keep order and bracket types; ``\\{...\\}`` sets ignore order).

Asymmetry: math-verify's ``verify(gold, target)`` is not symmetric, so the gold is always
passed first. The fast path is symmetric.

Safety: model output is never evaluated as code. Only math-verify's LaTeX extraction is
used: its expression extraction hands text to sympy ``parse_expr``, an ``eval``. On the
LaTeX path ``parse_expr`` only ever sees digit strings (latex2sympy builds numbers with
``sympy.Number(token)`` from its lexer's NUMBER tokens); the tests check this. Text with
Python-code tokens (``__``, ``import``, ``eval``, ``exec``, ``lambda`` without a backslash,
``os.``, ``getattr``...) is rejected before parsing, as a second fence.
"""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = [
    "MODES",
    "fast_verdict",
    "is_equivalent",
    "looks_like_code",
    "normalize_answer",
    "symbolic_verdict",
]

MODES = ("symbolic", "integer", "string")
MAX_FAST_CHARS = 400  # longer answers skip normalization: exact equality or undecided
MAX_DIGITS = 80  # digits in one number literal on the fast path
MAX_EXPONENT = 120  # |k| in 1.5e{k} / 1.5\times10^{k} on the fast path
MAX_SYMBOLIC_CHARS = 2000  # longer answers are never sent to sympy: verdict False
CLOSE_REL = Fraction(1, 10**5)  # unequal numbers this close are left to math-verify

_SPACING = re.compile(
    r"\\(?:displaystyle|left|right|[bB]igg?[lr]?|quad|qquad)(?![A-Za-z])|\\[,;:! ]|~|\\\$|\$"
)
_TEXT_UNIT = re.compile(
    r"(?<=[0-9}.])\s*\\(?:text|mathrm|textrm|mbox|textnormal)\s*\{\s*[A-Za-z][A-Za-z .]*\}"
    r"(?:\^\{?[23]\}?)?\s*$"
)
_WRAPPER = re.compile(
    r"\\(?:text|textbf|textit|textrm|textnormal|mathrm|mathbf|mathit|mbox|operatorname)"
    r"\s*\{([^{}]*)\}"
)
_WHITESPACE = re.compile(r"\s+")
_DEGREES = re.compile(r"\^\{?\\circ\}?|\\circ|\\degree|°")
_UNIT_WORDS = (
    "cm|mm|km|meters?|metres?|inch(?:es)?|feet|foot|ft|yards?|miles?|mph|kg|grams?|"
    "pounds?|lbs?|ounces?|oz|liters?|litres?|ml|seconds?|sec|minutes?|mins?|hours?|hrs?|"
    "days?|weeks?|months?|years?|dollars?|cents?|units?|degrees?|squareunits|sq\\.?units"
)
_UNIT_SUFFIX = re.compile(rf"(?<=[0-9}}])(?:{_UNIT_WORDS})(?:\^\{{?[23]\}}?|²|³)?$")
_VAR_PREFIX = re.compile(r"^[A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?=(?=[^=]+$)")
_FRAC_NAMES = re.compile(r"\\[dtc]frac")

_NUM = r"(?:[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]*)?|[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_LITERAL = re.compile(
    rf"(?P<sign>[+-]?)(?P<num>{_NUM})"
    r"(?:[eE](?P<e1>[+-]?[0-9]+)|(?:\\times|\\cdot)10\^(?:\{(?P<e2>[+-]?[0-9]+)\}|(?P<e3>[0-9])))?",
    re.ASCII,
)
_FRAC = re.compile(
    r"(?P<sign>[+-]?)(?P<whole>[0-9]+)?\\frac"
    r"(?:\{(?P<a>[^{}]*)\}|(?P<ad>[0-9]))(?:\{(?P<b>[^{}]*)\}|(?P<bd>[0-9]))",
    re.ASCII,
)
_POW10 = re.compile(r"10\^(?:\{(?P<e>[+-]?[0-9]{1,6})\}|(?P<d>[0-9]))", re.ASCII)
_INTEGER = re.compile(r"[+-]?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)", re.ASCII)
_CODE = re.compile(
    r"__|(?<!\\)\b(?:import|eval|exec|lambda|getattr|setattr|delattr|globals|locals|"
    r"compile|subprocess|builtins|breakpoint)\b|\b(?:os|sys)\s*\.|\b(?:open|input|print)\s*\("
)
_OPENERS = ("(", "[", "\\{")
_CLOSERS = (")", "]", "\\}")


def normalize_answer(answer: str) -> str:
    """The canonical spelling of ``answer`` used by the fast path and ``mode="string"``.

    See the module docstring for the rules. Answers longer than ``MAX_FAST_CHARS`` are
    returned stripped but otherwise unchanged (normalization is bounded work).
    """
    text = answer.strip()
    if len(text) > MAX_FAST_CHARS:
        return text
    text = _SPACING.sub("", text)
    text = text.replace("{,}", ",").replace("\u2212", "-")  # U+2212 MINUS SIGN
    text = _TEXT_UNIT.sub("", text)
    for _ in range(2):  # \text{\textbf{5}}
        text = _WRAPPER.sub(r"\1", text)
    text = _WHITESPACE.sub("", text)
    text = _FRAC_NAMES.sub(r"\\frac", text).replace("\\%", "%")
    text = _DEGREES.sub("", text)
    text = _UNIT_SUFFIX.sub("", text)
    text = _VAR_PREFIX.sub("", text)
    return text.rstrip(".")


def fast_verdict(pred: str, gold: str, *, mode: str = "symbolic") -> bool | None:
    """Decide cheaply whether ``pred`` is equivalent to ``gold``; ``None`` if undecided.

    ``True`` only when certainly equivalent, ``False`` only when certainly not. Modes:
    ``"symbolic"`` may return ``None``; ``"integer"`` (DAPO's strict matching: both sides
    integers after normalization, equal by value; ``3.0`` is *not* an integer spelling) and
    ``"string"`` (normalized strings equal) always decide. Never raises on any ``str``
    input; an unknown ``mode`` is a ``ValueError``.
    """
    _check_mode(mode)
    if not isinstance(pred, str) or not isinstance(gold, str):
        return False
    try:
        return _fast_verdict(pred, gold, mode)
    except Exception:  # defensive: a verdict must never crash a training step
        return None if mode == "symbolic" else False


def _fast_verdict(pred: str, gold: str, mode: str) -> bool | None:
    if pred.strip() == gold.strip() and gold.strip():
        return True
    if max(len(pred), len(gold)) > MAX_FAST_CHARS:
        return None if mode == "symbolic" else False
    p, g = normalize_answer(pred), normalize_answer(gold)
    if mode == "string":
        return p == g and p != ""
    if mode == "integer":
        a, b = _integer_digits(p), _integer_digits(g)
        return a is not None and a == b
    if p == g:
        return p != "" or None
    a, b = _parse_number(p), _parse_number(g)
    if a is not None and b is not None:
        return _compare_numbers(a, b)
    tp, tg = _parse_list(p), _parse_list(g)
    if tp is not None and tg is not None:
        return _compare_lists(tp, tg)
    return None


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown equivalence mode {mode!r}; expected one of {MODES}")


def _integer_digits(text: str) -> str | None:
    """Canonical digits of an integer spelling (sign kept, commas and leading zeros dropped)."""
    if not _INTEGER.fullmatch(text):
        return None
    sign = "-" if text.startswith("-") else ""
    digits = text.lstrip("+-").replace(",", "").lstrip("0")
    return sign + digits if digits else "0"


def _parse_literal(match: re.Match) -> Fraction | None:
    """Value of a ``_LITERAL`` match, or None when digit/exponent bounds are exceeded."""
    num = match.group("num").replace(",", "")
    exp = match.group("e1") or match.group("e2") or match.group("e3") or "0"
    if len(num) > MAX_DIGITS or abs(int(exp)) > MAX_EXPONENT or num in (".", ""):
        return None
    value = Fraction(num) * Fraction(10) ** int(exp)
    return -value if match.group("sign") == "-" else value


def _parse_number(text: str) -> tuple[Fraction, bool] | None:
    """``(value, has_percent)`` for a plain number, fraction or mixed number, else None."""
    percent = text.endswith("%")
    body = text[:-1] if percent else text
    if body.startswith("(") and body.endswith(")") and "," not in body:
        body = body[1:-1]  # "(5)" is 5; "(1,2)" is a list
    literal = _LITERAL.fullmatch(body)
    power = _POW10.fullmatch(body)
    if literal is not None:
        value = _parse_literal(literal)
    elif power is not None:
        exp = int(power.group("e") or power.group("d"))
        value = Fraction(10) ** exp if abs(exp) <= MAX_EXPONENT else None
    elif "/" in body and body.count("/") == 1:
        value = _ratio(*body.split("/"))
    else:
        value = _parse_frac(body)
    return None if value is None else (value, percent)


def _ratio(top: str, bottom: str) -> Fraction | None:
    """``top / bottom`` when both are plain number literals and ``bottom != 0``."""
    a, b = _LITERAL.fullmatch(top), _LITERAL.fullmatch(bottom)
    if a is None or b is None:
        return None
    num, den = _parse_literal(a), _parse_literal(b)
    if num is None or den is None or den == 0:
        return None
    return num / den


def _parse_frac(text: str) -> Fraction | None:
    """``\\frac{a}{b}``, ``\\frac12``, ``-\\frac{a}{b}`` and mixed ``2\\frac{1}{2}`` (= 5/2)."""
    match = _FRAC.fullmatch(text)
    if match is None:
        return None
    value = _ratio(match.group("a") or match.group("ad"), match.group("b") or match.group("bd"))
    if value is None:
        return None
    whole = match.group("whole")
    if whole is not None:
        if value < 0 or len(whole) > MAX_DIGITS:
            return None  # "2\frac{-1}{2}" is no mixed number
        value += int(whole)
    return -value if match.group("sign") == "-" else value


def _compare_numbers(a: tuple[Fraction, bool], b: tuple[Fraction, bool]) -> bool | None:
    """Equal values -> True; values so close that rounding may matter -> None; else False."""
    (va, pa), (vb, pb) = a, b
    candidates = [(va, vb)]
    if pa != pb:  # "10%" matches both 10 and 0.1
        candidates.append((va / 100, vb) if pa else (va, vb / 100))
    if any(x == y for x, y in candidates):
        return True
    if any(_close(x, y) for x, y in candidates):
        return None
    return False


def _close(x: Fraction, y: Fraction) -> bool:
    return abs(x - y) <= CLOSE_REL * max(1, abs(x), abs(y))


def _parse_list(text: str) -> tuple[str, list[Fraction]] | None:
    """``(brackets, numbers)`` for ``(1,2)``, ``[0,\\frac12)``, ``\\{3,1\\}``; else None."""
    left = next((b for b in _OPENERS if text.startswith(b)), None)
    close = next((b for b in _CLOSERS if text.endswith(b)), None)
    if left is None or close is None or len(text) < len(left) + len(close):
        return None
    inner = text[len(left) : len(text) - len(close)]
    if any(c in inner for c in "()[]") or "\\{" in inner:
        return None
    values = []
    for item in inner.split(","):
        parsed = _parse_number(item)
        if parsed is None or parsed[1]:
            return None
        values.append(parsed[0])
    return left + close, values


def _compare_lists(a: tuple[str, list[Fraction]], b: tuple[str, list[Fraction]]) -> bool | None:
    """Same brackets: compare in order (``\\{\\}``: as sets); other brackets: undecided.

    Unequal lists with a pair of close but unequal entries are left to math-verify, which
    rounds (see ``CLOSE_REL``).
    """
    (ka, va), (kb, vb) = a, b
    if ka != kb:
        return None
    if ka == "\\{\\}":
        if set(va) == set(vb):
            return True
        pairs = [(x, y) for x in va for y in vb]
    elif len(va) != len(vb):
        return False if ka in ("()", "[]") else None
    elif va == vb:
        return True
    else:
        pairs = list(zip(va, vb))
    return None if any(x != y and _close(x, y) for x, y in pairs) else False


def looks_like_code(text: str) -> bool:
    """True when ``text`` holds Python-code tokens; such answers never reach sympy."""
    return _CODE.search(text) is not None


def symbolic_verdict(pred: str, gold: str) -> bool:
    """math-verify's verdict on ``pred`` against ``gold`` (gold first: not symmetric).

    Runs in this process with math-verify's own timeouts disabled (``signal.alarm`` breaks
    in threads and pools): the caller bounds the time. Only LaTeX extraction is used (never
    math-verify's ``parse_expr``-based expression extraction); answers with code-like tokens
    or longer than
    ``MAX_SYMBOLIC_CHARS`` are ``False``. Any exception is ``False``.
    """
    try:
        if not isinstance(pred, str) or not isinstance(gold, str):
            return False
        if max(len(pred), len(gold)) > MAX_SYMBOLIC_CHARS:
            return False
        if looks_like_code(pred) or looks_like_code(gold):
            return False
        gold_parsed, pred_parsed = _mv_parse(gold), _mv_parse(pred)
        if not gold_parsed or not pred_parsed:
            return False
        from math_verify import verify

        return bool(verify(gold_parsed, pred_parsed, timeout_seconds=None))
    except Exception:
        return False


def _mv_parse(answer: str) -> list:
    """math-verify parse of one bare answer, wrapped as inline math; LaTeX extraction only."""
    from math_verify import LatexExtractionConfig, parse

    config = [LatexExtractionConfig()]
    text = brace_frac_args(answer.strip())
    return parse(f"${text}$", extraction_config=config, parsing_timeout=None)


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
        depth = 0
        for j in range(i, len(text)):
            if text[j] == "{" and text[j - 1] != "\\":
                depth += 1
            elif text[j] == "}" and text[j - 1] != "\\":
                depth -= 1
                if depth == 0:
                    return brace_frac_args(text[i + 1 : j]), j + 1
        return None, i
    token = _TEX_TOKEN.match(text, i)
    return (None, i) if token is None else (token.group(1), token.end())


def is_equivalent(
    pred: str | None, gold: str, *, mode: str = "symbolic", timeout: float = 5.0
) -> bool:
    """Whether the extracted answer ``pred`` is equivalent to the gold answer ``gold``.

    ``pred=None`` (no answer) is ``False``. ``fast_verdict`` decides first; in mode
    ``"symbolic"`` an undecided pair goes to math-verify in the scoring pool, which kills the
    verification after ``timeout`` seconds of wall-clock time and counts it as ``False``
    (``score_batch`` reports such items in ``timed_out``). ``"integer"`` and ``"string"``
    never call math-verify. Gold is the reference: ``verify(gold, pred)``, not symmetric.
    """
    _check_mode(mode)
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if not isinstance(gold, str):
        raise TypeError(f"gold must be a str, got {type(gold).__name__}: {gold!r}")
    if pred is None:
        return False
    verdict = fast_verdict(pred, gold, mode=mode)
    if verdict is not None:
        return verdict
    from verimath.rewards.pool import default_pool

    symbolic, _timed_out = default_pool().verify([(pred, gold)], timeout=timeout)[0]
    return bool(symbolic)
