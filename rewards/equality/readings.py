"""How a (prediction, gold) pair is read before it is compared: one reading for every path.

``read_pair(pred, gold, conventions)`` is the first step of the fast path and of the symbolic
path alike, so that a verdict never depends on which of them decides, nor on how either side
was written down:

1. Delimiters: ``$...$``, ``$$...$$``, ``\\(...\\)``, ``\\[...\\]``, a whole ``\\boxed{}`` and a
   trailing sentence mark are stripped from both sides (``text.delimiters``), then the
   notation is aligned (``notation.align_pair``).
2. Choice letters: a gold that is one option letter decides at once (``rules.choice_verdict``,
   the ``choice_letters`` convention).
3. Equations (``relations``): two equations are compared as relations (``relations=True``:
   mirror, multiples and moved terms are the same relation), before any value rule. A value
   against a gold ``name = value`` is compared with the value (``name_value``); against an
   equation that is not solved for a name it is wrong. A relation whose right side is the
   answer, against a value gold, is compared by that right side (``relation_value``).

The conventions are ``conventions.Conventions``; a ``Reading`` says which one decided.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from verimath.rewards.equality.conventions import Conventions
from verimath.rewards.equality.notation import align_pair
from verimath.rewards.equality.relations import equation_sides, is_computation, is_name
from verimath.rewards.equality.rules import choice_verdict
from verimath.rewards.text.brackets import top_level_split
from verimath.rewards.text.delimiters import strip_delimiters

__all__ = ["Reading", "as_ordered", "read_pair"]

_NOT_A_VALUE = re.compile(r"<|>|\\(?:le|ge|leq|geq|lt|gt|ne|neq|in|cup|cap)(?![A-Za-z])|≤|≥|≠|∈")


@dataclass(frozen=True)
class Reading:
    """A pair as read: the sides to compare, or the verdict when reading decided it."""

    pred: str
    gold: str
    verdict: bool | None = None
    rule: str | None = None  # "convention" or "written_rule" when reading decided
    convention: str | None = None  # the Conventions field that decided or rewrote the pair
    relations: bool = False  # both sides are equations: compare them as relations


def read_pair(pred: str, gold: str, conventions: Conventions) -> Reading:
    """The pair as compared (module docstring). Pure; never raises on ``str``."""
    pred, gold = align_pair(strip_delimiters(pred), strip_delimiters(gold))
    choice = choice_verdict(pred, gold, lenient=conventions.choice_letters)
    if choice is not None:
        return Reading(pred, gold, choice, "convention", "choice_letters")
    sides_p, sides_g = equation_sides(pred), equation_sides(gold)
    if sides_p is not None and sides_g is not None:
        return Reading(pred, gold, relations=True)
    if sides_g is not None:
        left = sides_g[0]
        if not (is_name(left) or is_computation(left)):
            return Reading(pred, gold, False, "written_rule")  # a value is no equation
        if not conventions.name_value:
            return Reading(pred, gold, False, "convention", "name_value")
        return Reading(pred, sides_g[-1], convention="name_value")
    if sides_p is not None and not _NOT_A_VALUE.search(gold):
        if not conventions.relation_value:
            return Reading(pred, gold, False, "convention", "relation_value")
        return Reading(sides_p[-1], gold, convention="relation_value")
    return Reading(pred, gold)


_THOUSANDS = re.compile(r"[0-9]{3}")


def as_ordered(text: str) -> str:
    """A bare list ``a, b`` written as the tuple ``(a, b)`` (the ``ordered_lists`` reading for
    the symbolic path); anything else, a thousands spelling ``1,000`` included, as it is."""
    if text.startswith(("(", "[", "\\{", "\\left")) or len(text) > 2000:
        return text
    items = top_level_split(text, ",")
    if len(items) < 2 or not all(item.strip() for item in items):
        return text
    if all(_THOUSANDS.fullmatch(item) for item in items[1:]) and items[0].strip().isdigit():
        return text  # 1,000,000
    return "(" + text + ")"
