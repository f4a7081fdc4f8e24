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
(intervals and tuples keep order and bracket types; ``\\{...\\}`` sets ignore order);
intervals with different bracket kinds differ (``(1, 2]`` is not ``[1, 2]``). Distinct
integers always differ; other unequal numbers differ unless math-verify's rounding to 6
decimal places could merge them (then it decides). Products of a rational, square roots
and ``\\pi`` are compared exactly (``2\\sqrt{3}`` = ``\\sqrt{12}`` = ``\\sqrt3\\cdot2``,
``\\frac{\\pi}{2}`` = ``\\frac12\\pi``), and so are polynomials in one variable with
rational coefficients (``(x+6)^2`` = ``x^2+12x+36``; ``polynomials.py``). The exact rules
are in ``fast_path.py``.

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

from verimath.rewards.fast_path import (
    compare_lists,
    compare_numbers,
    integer_digits,
    parse_list,
    parse_number,
    parse_surd,
)
from verimath.rewards.polynomials import parse_polynomial
from verimath.rewards.size_guard import is_intractable

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
MAX_SYMBOLIC_CHARS = 2000  # longer answers are never sent to sympy: verdict False

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

_CODE = re.compile(
    r"__|(?<!\\)\b(?:import|eval|exec|lambda|getattr|setattr|delattr|globals|locals|"
    r"compile|subprocess|builtins|breakpoint)\b|\b(?:os|sys)\s*\.|\b(?:open|input|print)\s*\("
)


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
    check_mode(mode)
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
        a, b = integer_digits(p), integer_digits(g)
        return a is not None and a == b
    if p == g:
        return p != "" or None
    a, b = parse_number(p), parse_number(g)
    if a is not None and b is not None:
        return compare_numbers(a, b)
    tp, tg = parse_list(p), parse_list(g)
    if tp is not None and tg is not None:
        return compare_lists(tp, tg)
    sp, sg = parse_surd(p), parse_surd(g)
    if sp is not None and sg is not None:
        return sp == sg
    return _compare_polynomials(parse_polynomial(p), parse_polynomial(g))


def _compare_polynomials(a, b) -> bool | None:
    """Same variable (or a constant): equal coefficients; two different variables: None."""
    if a is None or b is None:
        return None
    if a[0] and b[0] and a[0] != b[0]:
        return None  # "t^2" vs "x^2": renaming is math-verify's call
    return a[1] == b[1]


def check_mode(mode: str) -> None:
    """ValueError unless ``mode`` is one of ``MODES``."""
    if mode not in MODES:
        raise ValueError(f"unknown equivalence mode {mode!r}; expected one of {MODES}")


def check_timeout(timeout: float) -> None:
    """ValueError unless ``timeout`` is a positive number of seconds (not a bool)."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")


def looks_like_code(text: str) -> bool:
    """True when ``text`` holds Python-code tokens; such answers never reach sympy."""
    return _CODE.search(text) is not None


def symbolic_verdict(pred: str, gold: str) -> bool:
    """math-verify's verdict on ``pred`` against ``gold`` (gold first: not symmetric).

    Runs in this process with math-verify's own timeouts disabled (``signal.alarm`` breaks
    in threads and pools): the caller bounds the time. Only LaTeX extraction is used (never
    math-verify's ``parse_expr``-based expression extraction); answers with code-like tokens,
    longer than ``MAX_SYMBOLIC_CHARS``, or with astronomically large integer powers or
    factorials (``size_guard.is_intractable``: ``2^{10^{10}}``, ``(10^{10})!``) are
    ``False`` at once. Any exception is ``False``.
    """
    try:
        if not isinstance(pred, str) or not isinstance(gold, str):
            return False
        if max(len(pred), len(gold)) > MAX_SYMBOLIC_CHARS:
            return False
        if looks_like_code(pred) or looks_like_code(gold):
            return False
        if is_intractable(pred) or is_intractable(gold):
            return False  # what the pool's timeout would decide, without the wait
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
    check_mode(mode)
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
