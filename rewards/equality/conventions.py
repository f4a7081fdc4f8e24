"""Grading conventions: the choices on which graders differ, as named settings.

Whether an answer is "the same" as the gold is sometimes a convention rather than math: is
``2`` the answer to a gold written ``y = 2``? Is ``0.142857`` the answer when the gold is
``\\frac{1}{7}``? ``Conventions`` names each such choice; its defaults follow what the graders
that RL runs train with decide (math-verify, which TRL's accuracy reward and lighteval call,
and verl's ``math_dapo``; ``docs/conventions.md`` has the table), and ``STRICT`` turns every
one of them to its strict reading. Pass ``conventions=`` to ``is_equivalent``,
``correctness_reward``, ``score_batch``, ``explain`` and the trainer adapters.

Every setting, its default, and its strict reading:

``name_value`` (default ``True``; strict ``False``)
    A bare value matches a gold written ``name = value`` when the left side is a name: a
    letter with an optional subscript or prime (``y``, ``a_1``, ``\\theta``), a product of
    capitals (``AB``), a function of names or numbers (``f(x)``, ``P(3)``, ``\\cos A``), a
    name in ``|...|``, ``\\overline{}``, ``\\angle``, or a ratio of names (``S_1 : S_2``); or a
    computation without letters (``\\log_2 8 = 3``). ``2`` is then ``y = 2`` and ``7 : 32`` is
    ``S_1 : S_2 = 7 : 32``. An equation whose left side is an expression (``x^2 + y^2 = 4``) is
    never matched by a value. Strict: a value never matches an equation.
``relation_value`` (default ``True``; strict ``False``)
    A prediction written as a relation whose right side is the answer (``17 \\bmod 5 = 2``,
    ``x = 5``, ``f(2) = 9``, ``x \\approx 11``; a chain ``a = b = c`` counts by its last side)
    matches a gold that is a value by that right side. Strict: it never does.
``decimal_digits`` (default ``6``; strict ``None``)
    A decimal prediction of an exact gold (``0.142857`` for ``\\frac{1}{7}``) is right when it
    has at least this many significant digits and is correct to this many: within half a unit
    of the gold's last such digit (``0.0833333333333333`` is ``\\frac{1}{12}``; ``0.1429`` is
    not ``\\frac{1}{7}``, nor is the cut ``0.666666`` ``\\frac{2}{3}``). Strict (``None``): it
    must equal the gold exactly (``0.5`` is ``\\frac12``). A decimal gold is a rounded value
    either way: an exact prediction matches it when rounding or cutting the prediction to the
    gold's decimal places gives the gold (with ``None``, only an equal value).
``ordered_lists`` (default ``False``; strict ``True``)
    Tuples ``(a, b)`` always keep their order and sets ``\\{a, b\\}`` never do; this decides bare
    lists ``a, b``: by default a bare list is compared as a multiset, as math-verify reads it
    (the roots ``-1, 3`` and ``3, -1`` are one answer). Strict: a bare list keeps its order.
``choice_letters`` (default ``True``; strict ``False``)
    A gold that is one option letter ``A``-``J`` (``C``, ``(C)``, ``\\text{(C)}``) matches that
    letter in either case and any wrapping (``c``, ``(C)``, ``\\textbf{C}``, ``C.``), and the
    letter followed by its option's text (``(C) parabola``); two letters never match one.
    Strict: the same letter in the same case, in any wrapping, without text.

Equations on both sides are compared as relations before any of these (``b = a`` is
``a = b``; ``2y = 4x + 6`` is ``y = 2x + 3``; ``x + y = 5`` is ``y = 5 - x``).
"""

from __future__ import annotations

from dataclasses import astuple, dataclass, fields

__all__ = ["DEFAULT", "STRICT", "Conventions", "as_conventions"]

MAX_DECIMAL_DIGITS = 30


@dataclass(frozen=True)
class Conventions:
    """The grading conventions (module docstring); hashable, picklable, validated."""

    name_value: bool = True
    """A bare value matches a gold ``name = value`` (``2`` for ``y = 2``)."""
    relation_value: bool = True
    """A relation's right side matches a value gold (``17 \\bmod 5 = 2`` for ``2``)."""
    decimal_digits: int | None = 6
    """Significant digits that make a decimal right for an exact gold; None: must be exact."""
    ordered_lists: bool = False
    """A bare list ``a, b`` keeps its order (tuples always do, sets never do)."""
    choice_letters: bool = True
    """An option letter matches in either case, any wrapping, with its option's text."""

    def __post_init__(self) -> None:
        for name in ("name_value", "relation_value", "ordered_lists", "choice_letters"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"Conventions.{name} must be True or False, got "
                                 f"{getattr(self, name)!r}")
        digits = self.decimal_digits
        if digits is not None and (isinstance(digits, bool) or not isinstance(digits, int)
                                   or not 1 <= digits <= MAX_DECIMAL_DIGITS):
            raise ValueError(f"Conventions.decimal_digits must be None (decimals must be exact) "
                             f"or a number of significant digits from 1 to "
                             f"{MAX_DECIMAL_DIGITS}, got {digits!r}")

    def key(self) -> tuple:
        """The settings as a tuple (cache keys, messages to the scoring pool's workers)."""
        return astuple(self)

    @classmethod
    def from_key(cls, key: tuple) -> Conventions:
        """The inverse of ``key``."""
        return cls(*key)

    def changed(self) -> dict[str, object]:
        """The settings that differ from ``DEFAULT``, by name."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) != getattr(DEFAULT, f.name)}


DEFAULT = Conventions()
STRICT = Conventions(name_value=False, relation_value=False, decimal_digits=None,
                     ordered_lists=True, choice_letters=False)


def as_conventions(value: Conventions | str | dict | None) -> Conventions:
    """``Conventions`` from a ``Conventions``, ``None`` (the defaults), ``"default"``,
    ``"strict"``, or a dict of settings (from a config file: ``{"decimal_digits": 4}``, the
    others at their defaults); anything else is a ValueError that names the accepted values."""
    if value is None or (isinstance(value, str) and value == "default"):
        return DEFAULT
    if isinstance(value, str) and value == "strict":
        return STRICT
    if isinstance(value, Conventions):
        return value
    if isinstance(value, dict):
        known = {f.name for f in fields(Conventions)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"unknown conventions {unknown}; the settings are {sorted(known)}")
        return Conventions(**value)
    raise ValueError(f"conventions must be a Conventions, None, 'default', 'strict' or a dict "
                     f"of settings, got {value!r}")
