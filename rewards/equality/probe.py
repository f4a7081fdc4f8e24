"""A numeric probe and relation normalizer over parsed answers (sympy objects).

Runs only in the scoring pool's workers (``equivalence.symbolic_verdict``), on what
math-verify's LaTeX parser built: nothing here parses or evaluates text. sympy is imported
inside the functions, so importing ``verimath.rewards`` stays light.

``probe_verdict(gold, pred)``:
    * Two expressions: both are evaluated at ``POINTS`` pseudo-random points (a fixed seed:
      the verdict is reproducible) of their free variables. Points where either side is not
      a finite real number, or where a square root of a negative or the log of a
      non-positive number is taken on the way (``\\sqrt{x}\\sqrt{y}`` is ``\\sqrt{xy}`` in the
      reals), are outside the common real domain and skipped (seven points in
      ten are positive, so that domains such as ``\\ln a + \\ln b`` get enough of them; one in
      four lies far out, up to ``FAR`` in size, so that a kink such as ``|x - 5|`` is crossed).
      At least ``MIN_POINTS`` points in the domain, all agreeing (relative error under
      ``RTOL``): equal; one point disagreeing: unequal.
    * The probe says "equal" only where its points can separate the two sides: never for
      expressions with a piecewise or integer-valued part (``\\lfloor\\rfloor``,
      ``\\lceil\\rceil``, ``|\\cdot|``, ``\\max``, ``\\min``, ``\\operatorname{sgn}``,
      ``\\bmod``, piecewise definitions), which can agree at every sampled real and differ
      elsewhere (``\\lfloor x \\rfloor`` and ``\\lceil x \\rceil - 1`` differ at every
      integer). Such expressions are also evaluated at integers and half-integers, and one
      disagreement there makes them unequal; their agreement leaves math-verify's verdict.
      Identities that math-verify's simplification misses (``\\sin x + \\cos x`` and
      ``\\sqrt2 \\sin(x + \\pi/4)``, ``e^{\\ln x}`` and ``x``) are found, and a false "equal"
      from simplification is caught (``\\sqrt{x^2}`` is ``|x|``, not ``x``). A symbol ``i`` on
      both sides, with no other variable, is the imaginary unit; constants are compared as
      complex numbers.
    * A decimal literal against a constant: the ``decimal_digits`` convention (``tolerance``:
      a decimal gold is a rounded exact value; a decimal prediction of an exact gold needs
      ``digits`` significant digits, agreeing).
    * Two relations: each is written ``e < 0``, ``e <= 0``, ``e = 0`` or ``e != 0`` (``>`` and
      ``>=`` flipped by negating ``e``). Equal when the kinds agree and ``e1 / e2`` is one
      constant at every probe point: any non-zero constant for ``=`` and ``!=``, a positive one
      for inequalities. So ``b > a`` is ``a < b``, ``3 < 3y`` is ``y > 1``, ``2y = 4x + 6`` is
      ``y = 2x + 3`` and ``x + y = 5`` is ``y = 5 - x``.
    * Inequalities in one variable with polynomial sides (``|...|`` allowed), alone or joined
      by and/or, against each other or against intervals: equal when their real solution
      sets are (``x^2 \\le 9`` = ``|x| \\le 3`` = ``-3 \\le x \\le 3`` = ``[-3, 3]``).
    * Anything else (sets, tuples, two intervals, a relation against an expression): ``None``,
      math-verify's verdict stands.
"""

from __future__ import annotations

import cmath
import math
import random
from fractions import Fraction

from verimath.rewards.equality.tolerance import decimal_agrees, decimal_matches, decimals_equal

__all__ = ["FAR", "MIN_POINTS", "POINTS", "RTOL", "probe_verdict"]

POINTS = 24
MIN_POINTS = 4
RTOL = 1e-7
FAR = 3000.0
_STEPS = tuple(k / 2 for k in range(-8, 9))  # integers and half-integers in [-4, 4]
_MAX_SYMBOLS = 4
_DIGITS = 30


def probe_verdict(gold, pred, gold_text: str = "", pred_text: str = "", *,
                  digits: int | None = 6) -> bool | None:
    """Probe verdict on math-verify's parsed ``gold`` and ``pred`` (see the module
    docstring); ``None`` when undecided. The texts are the answers as written; ``digits`` is
    the ``decimal_digits`` convention."""
    import sympy

    sets = _solution_sets(gold, pred)
    if sets is not None:
        return sets
    if isinstance(gold, sympy.core.relational.Relational) and isinstance(
        pred, sympy.core.relational.Relational
    ):
        return _relations(gold, pred)
    if not isinstance(gold, sympy.Expr) or not isinstance(pred, sympy.Expr):
        return None
    if _is_decimal(gold_text) and _is_decimal(pred_text):
        return decimals_equal(Fraction(gold_text.strip()), Fraction(pred_text.strip()))
    if _is_decimal(gold_text) and not pred.free_symbols:
        value = _exact(pred)
        return None if value is None else decimal_matches(gold_text.strip(), value, digits)
    if _is_decimal(pred_text) and not gold.free_symbols:
        value = _exact(gold)
        return None if value is None else decimal_agrees(pred_text.strip(), value, digits)
    gold, pred = _imaginary_unit(gold, pred)
    gold, pred = _real_odd_roots(gold), _real_odd_roots(pred)
    piecewise = _is_piecewise(gold) or _is_piecewise(pred)
    points = _values(gold - pred, gold, pred, steps=piecewise)
    if points is None:
        return None
    agree = [_close(a, b) for a, b in points]
    if not all(agree):
        return False
    if piecewise:
        return None  # agreement at sampled points proves nothing for such functions
    constant = not (gold.free_symbols or pred.free_symbols)
    return True if constant or len(agree) >= MIN_POINTS else None


def _is_piecewise(expr) -> bool:
    """Whether ``expr`` has a piecewise or integer-valued part with a variable inside."""
    import sympy

    kinds = (sympy.floor, sympy.ceiling, sympy.frac, sympy.Abs, sympy.Max, sympy.Min,
             sympy.sign, sympy.Mod, sympy.Piecewise, sympy.Heaviside)
    return any(node.free_symbols for node in expr.atoms(*kinds))


def _solution_sets(gold, pred) -> bool | None:
    """Inequalities in one variable against each other or against intervals: equal when
    their real solution sets are (``x^2 \\le 9``, ``|x| \\le 3``, ``-3 \\le x \\le 3`` and
    ``[-3, 3]``). Only polynomial sides (``|...|`` allowed): sympy solves those at once."""
    a, b = _real_set(gold), _real_set(pred)
    if a is None or b is None or (a[1] and b[1]):
        return None  # two intervals: math-verify's call
    return a[0] == b[0]


def _real_set(obj):
    """``(set, is_interval)`` of an interval or a one-variable polynomial inequality (an
    ``and``/``or`` of them too), else None."""
    import sympy
    from sympy.core.relational import Relational

    if isinstance(obj, (sympy.Interval, sympy.Union)):
        return (obj, True) if all(isinstance(a, sympy.Interval) for a in _pieces(obj)) else None
    if isinstance(obj, sympy.FiniteSet) and obj and all(isinstance(e, Relational) for e in obj):
        obj = sympy.Or(*obj)  # "x < 1 or x > 2", as math-verify reads it
    if not isinstance(obj, (Relational, sympy.And, sympy.Or)) or len(obj.free_symbols) != 1:
        return None
    (x,) = obj.free_symbols
    relations = obj.atoms(Relational) if not isinstance(obj, Relational) else {obj}
    for rel in relations:
        if isinstance(rel, (sympy.Eq, sympy.Ne)):
            return None
        side = (rel.lhs - rel.rhs).replace(sympy.Abs, lambda e: e)
        if not side.is_polynomial(x) or sympy.degree(side, x) > 4:
            return None
    try:
        return obj.as_set(), False
    except Exception:  # sympy cannot solve it: no verdict
        return None


def _pieces(obj):
    import sympy

    return obj.args if isinstance(obj, sympy.Union) else (obj,)


def _relations(gold, pred) -> bool | None:
    kind_g, eg = _normal(gold)
    kind_p, ep = _normal(pred)
    if kind_g is None or kind_p is None or kind_g != kind_p:
        return None if kind_g is None or kind_p is None else False
    if _is_piecewise(eg) or _is_piecewise(ep):
        return None  # the ratio test samples reals: no proof for piecewise sides
    points = _values(eg / ep, eg, ep)
    if points is None:
        return None
    ratios = [a / b for a, b in points if b != 0]
    if len(ratios) < (1 if not (eg.free_symbols or ep.free_symbols) else MIN_POINTS):
        return None
    first = ratios[0]
    if first == 0 or not all(_close(r, first) for r in ratios):
        return False
    return first.real > 0 if kind_g in ("<", "<=") else True


def _normal(rel):
    """``(kind, e)`` with ``rel`` equivalent to ``e kind 0``."""
    import sympy

    e = rel.lhs - rel.rhs
    kinds = {sympy.StrictLessThan: ("<", 1), sympy.LessThan: ("<=", 1),
             sympy.StrictGreaterThan: ("<", -1), sympy.GreaterThan: ("<=", -1),
             sympy.Equality: ("=", 1), sympy.Unequality: ("!=", 1)}
    found = kinds.get(type(rel))
    return (None, None) if found is None else (found[0], e * found[1])


def _values(joint, left, right, *, steps: bool = False) -> list[tuple[complex, complex]] | None:
    """``(left, right)`` at the probe points where both are finite reals (constants: the
    one complex pair); ``None`` with too many variables or no point at all. ``steps`` adds
    points where every variable is an integer or a half-integer (``_STEPS``)."""
    symbols = sorted(joint.free_symbols | left.free_symbols | right.free_symbols, key=str)
    if len(symbols) > _MAX_SYMBOLS:
        return None
    if not symbols:
        pair = (_number(left, {}), _number(right, {}))
        return None if None in pair else [pair]
    rng = random.Random(7)
    out = []
    guards = _domain_guards(left) + _domain_guards(right)
    grid = [{s: _step(rng) for s in symbols} for _ in range(POINTS)] if steps else []
    for subs in [{s: _sample(rng) for s in symbols} for _ in range(POINTS)] + grid:
        if not all(_positive(g, strict, subs) for g, strict in guards):
            continue  # a square root of a negative or a log of a non-positive on the way
        a, b = _number(left, subs), _number(right, subs)
        if a is None or b is None or abs(a.imag) > 1e-12 or abs(b.imag) > 1e-12:
            continue  # outside the common real domain
        out.append((complex(a.real), complex(b.real)))
    return out or None


def _domain_guards(expr) -> list[tuple[object, bool]]:
    """``(e, strict)`` for each sub-expression that must be positive (``strict``) or
    non-negative in the reals: the radicand of an even root, the argument of a log."""
    import sympy

    out = []
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, sympy.Pow) and node.base.free_symbols:
            exp = node.exp
            if exp.is_Rational and not exp.is_integer and exp.q % 2 == 0:
                out.append((node.base, False))
        elif isinstance(node, sympy.log) and node.args[0].free_symbols:
            out.append((node.args[0], True))
        if len(out) > 16:
            break
    return out


def _positive(expr, strict: bool, subs) -> bool:
    value = _number(expr, subs)
    if value is None or abs(value.imag) > 1e-12:
        return False
    return value.real > 0 if strict else value.real >= 0


def _real_odd_roots(expr):
    """Odd roots of negative constants taken real (``\\sqrt[3]{-8}`` is -2, as in the
    reals), not as sympy's principal complex root."""
    import sympy

    def odd_root(node) -> bool:
        exp = node.exp
        return (exp.is_Rational and not exp.is_integer and exp.q % 2 == 1
                and node.base.is_number and node.base.is_negative)

    try:
        return expr.replace(lambda n: isinstance(n, sympy.Pow) and odd_root(n),
                            lambda n: -((-n.base) ** n.exp) if n.exp.p % 2 else (-n.base) ** n.exp)
    except Exception:  # a replacement sympy cannot make leaves the expression as it is
        return expr


def _sample(rng: random.Random):
    import sympy

    sign = 1 if rng.random() < 0.7 else -1
    if rng.random() < 0.25:
        return sympy.Float(round(sign * 10 ** rng.uniform(0.5, math.log10(FAR)), 4), 20)
    return sympy.Float(round(sign * rng.uniform(0.3, 3.0), 6), 20)


def _step(rng: random.Random):
    import sympy

    return sympy.Rational(int(2 * rng.choice(_STEPS)), 2)


def _number(expr, subs) -> complex | None:
    try:
        value = complex(expr.evalf(_DIGITS, subs=subs))
    except (TypeError, ValueError, ZeroDivisionError, OverflowError, AttributeError):
        return None
    if not (cmath.isfinite(value)):
        return None
    return value


def _close(a: complex, b: complex) -> bool:
    return abs(a - b) <= RTOL * max(1.0, abs(a), abs(b))


def _imaginary_unit(gold, pred):
    """A symbol ``i`` with no other variable, on a side that has it, is the unit."""
    import sympy

    names = {str(s) for s in gold.free_symbols | pred.free_symbols}
    if names != {"i"}:
        return gold, pred
    swap = {s: sympy.I for s in gold.free_symbols | pred.free_symbols}
    return gold.subs(swap), pred.subs(swap)


def _exact(expr) -> Fraction | None:
    """A real constant as a rational exact to ``_DIGITS`` digits."""
    try:
        value = expr.evalf(_DIGITS)
        if not value.is_real or not math.isfinite(float(value)):
            return None
        return Fraction(str(value))
    except (TypeError, ValueError, ZeroDivisionError, OverflowError, AttributeError):
        return None


def _is_decimal(text: str) -> bool:
    body = text.strip().lstrip("-+")
    whole, dot, frac = body.partition(".")
    return bool(dot) and frac.isdigit() and (whole.isdigit() or whole == "") and len(body) < 60
