"""Answer equivalence: a cheap exact path first, then symbolic math-verify.

Public functions (names and signatures are a contract with ``rewards/pool/scoring_pool.py``):

``fast_verdict(pred, gold, *, mode, conventions)``
    Decides in-process, in bounded time, with exact rational arithmetic
    (``fractions.Fraction``): ``True`` only when the two answers are certainly equivalent,
    ``False`` only when they certainly differ, ``None`` when the symbolic path must decide.
    ``fast_decision`` gives the same verdict with the rule that decided it and the two
    sides as compared (``explain`` shows them).
``symbolic_verdict(pred, gold, conventions)``
    math-verify in this process, with no timeout of its own: callers bound its time (the
    scoring pool runs it in a worker process and kills that worker on timeout). Its verdict
    is then cross-checked by ``probe.probe_verdict`` (a numeric probe at seeded random points
    of the common real domain, and relations normalized), which overrules it when it decides.
``is_equivalent(pred, gold, *, mode, timeout)`` (in ``correctness.py``, above the pool)
    The fast path, then (mode ``"symbolic"`` only) the symbolic path in the scoring pool.

Both verdicts first read the pair the same way (``readings.read_pair``): math delimiters
stripped from both sides, the notation aligned (``notation.align_pair``: plain-text
calculator notation read into LaTeX, relations as intervals, matrices as ``pmatrix``,
decimal commas, ``\\pm``, stray trailing backslashes), choice letters decided, equations
compared as relations, and the conventions of ``conventions.Conventions`` applied (a value
against ``name = value``, a relation's right side against a value).

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
intervals with different bracket kinds differ (``(1, 2]`` is not ``[1, 2]``). Ordered or
not is decided by the gold: a gold tuple ``(a, b)`` keeps its order (a bare ``a, b``
prediction is read in order); a gold written as a set ``\\{a, b\\}`` matches a bare list or
a set of the same elements in any order, and so does a bare list ``a, b`` unless the
``ordered_lists`` convention is on. Matrices
are compared cell by cell (shapes must agree). Distinct
integers always differ; a decimal against an exact number follows ``tolerance`` (the
``decimal_digits`` convention: a decimal gold is a rounded exact value; a decimal prediction
of an exact gold needs that many significant digits, agreeing); other unequal
numbers differ unless math-verify's rounding to 6 decimal places could merge them (then it
decides). Before any of this, the written rules of ``rules`` decide letter case (``X`` is
not ``x``; words ignore case). Products of a rational, square roots
and ``\\pi`` are compared exactly (``2\\sqrt{3}`` = ``\\sqrt{12}`` = ``\\sqrt3\\cdot2``,
``\\frac{\\pi}{2}`` = ``\\frac12\\pi``), and so are polynomials in one variable with
rational coefficients (``(x+6)^2`` = ``x^2+12x+36``) and quotients of them
(``\\frac{3}{x+1}`` = ``\\frac{6}{2x+2}``, cross-multiplied; ``polynomials.py``). The exact rules
are in ``fast_path.py``.

Asymmetry: math-verify's ``verify(gold, target)`` is not symmetric, so the gold is always
passed first. The fast path is symmetric except where the gold decides: words are only
removed around the prediction, and the gold says whether a list is ordered.

Safety: model output is never evaluated as code. Only math-verify's LaTeX extraction is
used: its expression extraction hands text to sympy ``parse_expr``, an ``eval``. On the
LaTeX path ``parse_expr`` only ever sees digit strings (latex2sympy builds numbers with
``sympy.Number(token)`` from its lexer's NUMBER tokens); the tests check this. Text with
Python-code tokens (``__``, ``import``, ``eval``, ``exec``, ``lambda`` without a backslash,
``os.``, ``getattr``...) is rejected before parsing, as a second fence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from verimath.rewards.equality.conventions import Conventions, as_conventions
from verimath.rewards.equality.fast_path import (
    compare_lists,
    compare_numbers,
    parse_list,
    parse_surd,
)
from verimath.rewards.equality.lists import collection, compare_collections
from verimath.rewards.equality.notation import align_pair, brace_frac_args
from verimath.rewards.equality.polynomials import parse_polynomial, parse_rational, rationals_equal
from verimath.rewards.equality.probe import probe_verdict
from verimath.rewards.equality.readings import as_ordered, read_pair
from verimath.rewards.equality.relations import equation_sides, relations_equal
from verimath.rewards.equality.rules import case_verdict
from verimath.rewards.equality.size_guard import is_intractable
from verimath.rewards.equality.tolerance import (
    decimal_agrees,
    decimal_matches,
    decimal_places,
    decimals_equal,
    surd_value,
)
from verimath.rewards.text.delimiters import strip_delimiters
from verimath.rewards.text.inputs import answer_text, response_text
from verimath.rewards.text.numbers import integer_digits, parse_number

__all__ = [
    "MODES",
    "Decision",
    "brace_frac_args",
    "fast_decision",
    "fast_verdict",
    "looks_like_code",
    "math_verify_verdict",
    "normalize_answer",
    "symbolic_verdict",
]

MODES = ("symbolic", "integer", "string")
MAX_FAST_CHARS = 400  # longer answers skip normalization: exact equality or undecided
MAX_SYMBOLIC_CHARS = 2000  # longer answers are never sent to sympy: verdict False

_SPACING = re.compile(
    r"\\(?:displaystyle|left|right|[bB]igg?[lr]?|quad|qquad)(?![A-Za-z])|(?<!\\)\\[,;:! ]|~|\\\$|\$"
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
_TRIG = re.compile(r"\\(?:sin|cos|tan|cot|sec|csc)(?![A-Za-z])")
_TRIG_DEGREES = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*(?:\^\s*\{?\\circ\}?|°)")
_FRAC_NAMES = re.compile(r"\\[dtc]frac")

_CODE = re.compile(
    r"__|(?<!\\)\b(?:import|eval|exec|lambda|getattr|setattr|delattr|globals|locals|"
    r"compile|subprocess|builtins|breakpoint)\b|\b(?:os|sys)\s*\.|\b(?:open|input|print)\s*\("
)


def normalize_answer(answer: str) -> str:
    """The canonical spelling of ``answer`` used by the fast path and ``mode="string"``.

    See the module docstring for the rules. Answers longer than ``MAX_FAST_CHARS`` are
    returned stripped but otherwise unchanged (normalization is bounded work). A number is
    read as its ``str``; any other type is a ``TypeError`` (``text.inputs``).
    """
    text = answer_text(answer, "answer").strip()
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
    text = _VAR_PREFIX.sub("", text).replace("\\varnothing", "\\emptyset")
    return text.rstrip(".")


@dataclass(frozen=True)
class Decision:
    """A verdict of the fast path with its reason: ``rule`` (``"exact"``: the same text once
    normalized; ``"written_rule"``: letter case or words (``rules``), or a value against an
    equation; ``"convention"``: the ``Conventions`` field named in ``convention`` decided;
    ``"fast"``: exact arithmetic; ``"undecided"``: the symbolic path must decide;
    ``"no_answer"``: ``pred`` is None) and the two sides as last compared (``pred``, ``gold``,
    normalized)."""

    verdict: bool | None
    rule: str
    pred: str | None
    gold: str
    convention: str | None = None


def fast_verdict(
    pred: str, gold: str, *, mode: str = "symbolic", conventions: Conventions | str | None = None
) -> bool | None:
    """Decide cheaply whether ``pred`` is equivalent to ``gold``; ``None`` if undecided.

    ``True`` only when certainly equivalent, ``False`` only when certainly not. Modes:
    ``"symbolic"`` may return ``None``; ``"integer"`` (DAPO's strict matching: both sides
    integers after normalization, equal by value; ``3.0`` is *not* an integer spelling) and
    ``"string"`` (normalized strings equal) always decide. ``conventions`` (``Conventions``,
    ``"default"`` or ``"strict"``) applies in mode ``"symbolic"``. Never raises on any ``str``
    input; an unknown ``mode`` or ``conventions`` is a ``ValueError``. As everywhere
    (``text.inputs``): ``pred=None`` (no answer) is ``False``, a number on either side is read
    as its ``str``, any other type is a ``TypeError``.
    """
    return fast_decision(pred, gold, mode=mode, conventions=conventions).verdict


def fast_decision(
    pred: str, gold: str, *, mode: str = "symbolic", conventions: Conventions | str | None = None
) -> Decision:
    """``fast_verdict``'s verdict with the rule that decided it (``Decision``)."""
    check_mode(mode)
    conventions = as_conventions(conventions)
    pred, gold = response_text(pred, "pred"), answer_text(gold, "gold")
    if pred is None:
        return Decision(False, "no_answer", None, gold)
    try:
        return _fast_decision(pred, gold, mode, conventions)
    except Exception:  # defensive: a verdict must never crash a training step
        return Decision(None if mode == "symbolic" else False, "undecided", pred, gold)


def _fast_decision(pred: str, gold: str, mode: str, conventions: Conventions) -> Decision:
    if pred.strip() == gold.strip() and gold.strip():
        same = normalize_answer(pred)
        return Decision(True, "exact", same, same)
    if mode != "symbolic":
        return _strict_mode(pred, gold, mode)
    reading = read_pair(pred, gold, conventions)
    pred, gold = reading.pred, reading.gold
    if reading.verdict is not None:
        return Decision(reading.verdict, reading.rule, normalize_answer(pred),
                        normalize_answer(gold), reading.convention)
    if max(len(pred), len(gold)) > MAX_FAST_CHARS:
        return Decision(None, "undecided", pred, gold)
    if pred == gold and pred:
        same = normalize_answer(pred)
        return Decision(True, "exact", same, same, reading.convention)
    if is_intractable(pred) or is_intractable(gold):
        return Decision(False, "fast", pred, gold)  # the symbolic path's answer, without a worker
    p, g = normalize_answer(pred), normalize_answer(gold)
    if reading.relations:
        return _relations(pred, gold)
    if p == g and p:
        return Decision(True, "exact", p, g, reading.convention)
    if _SPACED_LIST.search(pred) or _SPACED_LIST.search(gold):
        p, g = _as_list(p, pred), _as_list(g, gold)  # "32, 349" lists two numbers
    decided = case_verdict(p, g)
    if decided is not None:
        return Decision(decided, "written_rule", p, g)
    if p == g:
        return Decision(p != "" or None, "exact" if p else "undecided", p, g)
    verdict, convention = _compare(p, g, conventions)
    rule = "undecided" if verdict is None else ("convention" if convention else "fast")
    return Decision(verdict, rule, p, g, convention or reading.convention)


def _strict_mode(pred: str, gold: str, mode: str) -> Decision:
    """Modes ``"string"`` and ``"integer"``: delimiters and notation aside, no conventions."""
    pred, gold = align_pair(strip_delimiters(pred), strip_delimiters(gold))
    if max(len(pred), len(gold)) > MAX_FAST_CHARS:
        return Decision(False, "fast", pred, gold)
    p, g = normalize_answer(pred), normalize_answer(gold)
    if _SPACED_LIST.search(pred) or _SPACED_LIST.search(gold):
        p, g = _as_list(p, pred), _as_list(g, gold)
    if mode == "string":
        return Decision(p == g and p != "", "exact" if p == g else "fast", p, g)
    a, b = integer_digits(p), integer_digits(g)
    return Decision(a is not None and a == b, "fast", p, g)


def _relations(pred: str, gold: str) -> Decision:
    """Two equations compared as relations (``relations.relations_equal``); the sides shown
    are the equations with each side normalized (a variable on the left is kept)."""
    sides_p = [normalize_answer(side) for side in equation_sides(pred) or ()]
    sides_g = [normalize_answer(side) for side in equation_sides(gold) or ()]
    p, g = "=".join(sides_p) or pred, "=".join(sides_g) or gold
    if sides_p == sides_g and sides_p:
        return Decision(True, "exact", p, g)
    verdict = relations_equal(sides_p, sides_g) if sides_p and sides_g else None
    return Decision(verdict, "undecided" if verdict is None else "fast", p, g)


def _compare(p: str, g: str, conventions: Conventions) -> tuple[bool | None, str | None]:
    """Exact arithmetic on normalized sides: ``(verdict, convention that decided or None)``."""
    a, b = parse_number(p) or _constant(p), parse_number(g) or _constant(g)
    if a is not None and b is not None:
        if a[1] or b[1]:
            return compare_numbers(a, b), None
        decided = _decimal_verdict(p, a[0], g, b[0], conventions.decimal_digits)
        if decided is not None:
            return decided
        return compare_numbers(a, b), None
    if (a is None) != (b is None):
        versus = _number_versus(a or b, g if a is not None else p, p if a is not None else g,
                                a is not None, conventions.decimal_digits)
        if versus != (None, None):
            return versus
    tp, tg = parse_list(p), parse_list(g)
    if tp is not None and tg is not None:
        return compare_lists(tp, tg), None
    same = lambda x, y: _item_verdict(x, y, conventions)  # noqa: E731
    collections = compare_collections(p, g, same, ordered=conventions.ordered_lists)
    if collections is not None:
        return collections, ("ordered_lists" if _bare_pair(p, g) else None)
    sp, sg = parse_surd(p), parse_surd(g)
    if sp is not None and sg is not None:
        return sp == sg, None
    polynomials = _compare_polynomials(parse_polynomial(p), parse_polynomial(g))
    if polynomials is not None:
        return polynomials, None
    return _compare_rationals(p, g), None


def _bare_pair(p: str, g: str) -> bool:
    return collection(p)[0] == "bare" and collection(g)[0] == "bare"


def _decimal_verdict(p: str, a: Fraction, g: str, b: Fraction, digits: int | None):
    """Two numbers, one or both written as decimals: ``(verdict, convention)``; None when
    neither is a decimal (exact numbers compare exactly)."""
    if a == b:
        return True, None
    dp, dg = decimal_places(p), decimal_places(g)
    if dp is not None and dg is not None:
        return decimals_equal(a, b), None
    if dg is not None:
        return decimal_matches(g, a, digits), "decimal_digits"
    if dp is not None:
        return decimal_agrees(p, b, digits), "decimal_digits"
    return None


def _item_verdict(x: str, y: str, conventions: Conventions) -> bool | None:
    return _fast_decision(x, y, "symbolic", conventions).verdict


_MIXED = re.compile(r"[0-9]\s*\\[dt]?frac")


def _constant(text: str) -> tuple[Fraction, bool] | None:
    """The exact value of integer arithmetic (``54 + 84``, ``2^{10} - 1``, ``\\frac{3}{4}
    \\cdot 8``) as ``parse_number`` gives it, via ``parse_polynomial``; else None."""
    if not any(op in text for op in "+-*^") and "\\cdot" not in text and "\\times" not in text:
        return None
    if _MIXED.search(text):
        return None  # "2\\frac{1}{2}" may be a mixed number: math-verify's call
    poly = parse_polynomial(text)
    if poly is None or poly[0]:
        return None
    return (dict(poly[1]).get(0, Fraction(0)), False)


def _number_versus(number: tuple[Fraction, bool], other: str, text: str, is_pred: bool,
                   digits: int | None) -> tuple[bool | None, str | None]:
    """A number (written ``text``) against something else: an integer and a product of
    radicals and pi are compared exactly, a decimal and such a product by the
    ``decimal_digits`` convention (``tolerance``); a list, tuple or interval never equals a
    number. ``(verdict, convention)``; ``(None, None)`` when undecided."""
    value, percent = number
    surd = parse_surd(other)
    if surd is not None and not percent:
        if value.denominator == 1 and decimal_places(text) is None:
            return surd == ((value, 1, 0) if value else (Fraction(0), 1, 0)), None
        if decimal_places(text) is not None:
            exact = surd_value(*surd)
            agrees = (decimal_agrees(text, exact, digits) if is_pred
                      else decimal_matches(text, exact, digits))
            return agrees, "decimal_digits"
    kind, items = collection(other)
    bracketed = other.startswith(("(", "[", "\\{")) and items is not None
    if parse_list(other) is not None or bracketed or (kind == "bare" and items and len(items) > 1):
        return False, None  # ("1,000.99m" is a number: parse_number reads thousands separators)
    return None, None


def _compare_rationals(p: str, g: str) -> bool | None:
    """Quotients of polynomials (one side may be a polynomial), cross-multiplied."""
    if "\\frac" not in p and "\\frac" not in g:
        return None
    a = parse_rational(p) or parse_polynomial(p)
    b = parse_rational(g) or parse_polynomial(g)
    if a is None or b is None or (len(a) == 2 and len(b) == 2):
        return None
    return rationals_equal(a, b)


_SPACED_LIST = re.compile(r"[0-9],\s+[0-9]{3}(?![0-9])")


def _as_list(normalized: str, raw: str) -> str:
    """``1, 500`` normalizes to ``1,500``, a thousands spelling; a comma followed by a space
    separates items instead, so such a text is marked as a list (``\\{...\\}`` is never
    a number)."""
    if not _SPACED_LIST.search(raw) or normalized.startswith(("(", "[", "\\{")):
        return normalized
    return "\\{" + normalized + "\\}" if "," in normalized else normalized


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


def symbolic_verdict(pred: str, gold: str, conventions: Conventions | str | None = None) -> bool:
    """math-verify, cross-checked by the numeric probe (``probe.probe_verdict``), on the pair
    as ``readings.read_pair`` reads it under ``conventions``; see ``_symbolic`` for the
    guards. Inputs as everywhere (``text.inputs``): ``pred=None`` is ``False``, a number is
    read as its ``str``, any other type is a ``TypeError``."""
    pred, gold = response_text(pred, "pred"), answer_text(gold, "gold")
    return _symbolic(pred, gold, as_conventions(conventions), probe=True)


def math_verify_verdict(pred: str, gold: str, conventions: Conventions | str | None = None) -> bool:
    """``symbolic_verdict`` without the probe: math-verify alone (``explain`` compares)."""
    pred, gold = response_text(pred, "pred"), answer_text(gold, "gold")
    return _symbolic(pred, gold, as_conventions(conventions), probe=False)


def _symbolic(pred: str, gold: str, conventions: Conventions, *, probe: bool) -> bool:
    """math-verify's verdict on ``pred`` against ``gold`` (gold first: not symmetric).

    Runs in this process with math-verify's own timeouts disabled (``signal.alarm`` breaks
    in threads and pools): the caller bounds the time. Only LaTeX extraction is used (never
    math-verify's ``parse_expr``-based expression extraction); answers with code-like tokens,
    longer than ``MAX_SYMBOLIC_CHARS``, or with astronomically large integer powers or
    factorials (``size_guard.is_intractable``: ``2^{10^{10}}``, ``(10^{10})!``) are
    ``False`` at once. Any exception is ``False``. With ``ordered_lists``, bare lists are
    handed to math-verify as tuples (it reads a bare list as a set).
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
        reading = read_pair(pred, gold, conventions)
        if reading.verdict is not None:
            return reading.verdict
        pred, gold = reading.pred, reading.gold
        if conventions.ordered_lists:
            pred, gold = as_ordered(pred), as_ordered(gold)
        if is_intractable(pred) or is_intractable(gold):
            return False  # plain notation read as LaTeX: "2**2**2**2**2**2" is a tower too
        gold_parsed, pred_parsed = _mv_parse(gold), _mv_parse(pred)
        if not gold_parsed or not pred_parsed:
            return False
        from math_verify import verify

        verdict = bool(verify(gold_parsed, pred_parsed, timeout_seconds=None))
        if not probe:
            return verdict
        probed = probe_verdict(gold_parsed[0], pred_parsed[0], gold, pred,
                               digits=conventions.decimal_digits)
        return verdict if probed is None else probed
    except Exception:
        return False


def _mv_parse(answer: str) -> list:
    """math-verify parse of one bare answer, wrapped as inline math; LaTeX extraction only."""
    from math_verify import LatexExtractionConfig, parse

    config = [LatexExtractionConfig()]
    text = brace_frac_args(answer.strip())
    if _TRIG.search(text):
        text = _TRIG_DEGREES.sub(r"\\frac{\1\\pi}{180}", text)  # sin(90° - x): degrees
    return parse(f"${text}$", extraction_config=config, parsing_timeout=None)
