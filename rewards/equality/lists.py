"""Collections for the fast path of ``equivalence.fast_verdict``: matrices, lists, sets, tuples.

Pure functions on normalized answers (``equivalence.normalize_answer``); items are compared
by a function the caller passes (the fast path itself), so this module imports nothing of
the package. Ordered or not is decided by the gold: a gold set ``\\{a, b\\}`` or bare list
``a, b`` matches a bare list or set of the same items in any order (a bare gold list keeps its
order under the ``ordered_lists`` convention); a gold tuple ``(a, b)`` matches a bare ``a, b``
in that order; matrices (``pmatrix``, after ``notation`` aligned
them) match cell by cell when their shapes agree.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from verimath.rewards.equality.notation import matrix_cells
from verimath.rewards.text.brackets import closing_index, top_level_split

__all__ = ["collection", "compare_collections"]

Same = Callable[[str, str], "bool | None"]

def compare_collections(p: str, g: str, same: Same, *, ordered: bool = False) -> bool | None:
    """Matrices cell by cell; bare lists and sets as multisets, tuples in order (from the gold).

    ``p`` and ``g`` are normalized; ``same(x, y)`` compares two items (``True``, ``False``
    or ``None`` for undecided). ``ordered``: a bare gold list keeps its order, as a tuple
    does (the ``ordered_lists`` convention). None when undecided or not collections."""
    mp, mg = matrix_cells(p), matrix_cells(g)
    if mp is not None and mg is not None:
        if [len(row) for row in mp] != [len(row) for row in mg]:
            return False
        return _all_items(sum(mp, []), sum(mg, []), same)
    kind_g, items_g = collection(g)
    kind_p, items_p = collection(p)
    if items_g is None or items_p is None or kind_p not in ("bare", "set"):
        return None
    if ordered and kind_g == "bare" and kind_p == "set":
        return False  # a set has no order to match an ordered list
    if (kind_g == "tuple" or (ordered and kind_g == "bare")) and kind_p == "bare":
        return _all_items(items_p, items_g, same) if len(items_p) == len(items_g) else False
    if kind_g not in ("bare", "set") or len(items_p) > _MAX_ITEMS:
        return None
    if sorted(items_p) == sorted(items_g):
        return True
    if len(items_p) != len(items_g):
        return None
    return _match_unordered(items_p, items_g, same)


_MAX_ITEMS = 12  # unordered lists longer than this are matched by exact spelling only


def collection(text: str) -> tuple[str, list[str] | None]:
    """``("set" | "tuple" | "bare", items)`` of a normalized list; items None otherwise.

    Items lose a leading ``x_1 =`` (``x_1 = 2, x_2 = 3`` lists 2 and 3); ``{1,2,3}`` (TeX
    braces, which group) is read as a set."""
    if text.startswith("\\{") and text.endswith("\\}"):
        kind, items = "set", _top_level_items(text[2:-2])
    elif text.startswith("{") and text.endswith("}") and _closes_at_end(text):
        kind, items = "set", _top_level_items(text[1:-1])
    elif text.startswith("(") and text.endswith(")"):
        items = _top_level_items(text[1:-1])
        kind, items = "tuple", items if items is not None and _closes_at_end(text) else None
    else:
        kind, items = "bare", _top_level_items(text)
    if items is not None and kind != "tuple":
        items = [_ITEM_NAME.sub("", item) for item in items]
    return kind, items


_ITEM_NAME = re.compile(r"^[A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?=(?=[^=]+$)")


def _closes_at_end(text: str) -> bool:
    """Whether the bracket that opens ``text`` closes at its last character."""
    return bool(text) and closing_index(text, 0) == len(text) - 1


def _top_level_items(text: str) -> list[str] | None:
    """Items of ``text`` split at commas outside brackets; None without such a comma."""
    items = top_level_split(text, ",")
    return items if len(items) > 1 and all(items) else None


def _all_items(a: list[str], b: list[str], same: Same) -> bool | None:
    """Item-wise verdicts in order: all True -> True, any False -> False, else None."""
    if len(a) != len(b):
        return False
    verdicts = [same(x, y) for x, y in zip(a, b)]
    if all(v is True for v in verdicts):
        return True
    return False if any(v is False for v in verdicts) else None


def _match_unordered(a: list[str], b: list[str], same: Same) -> bool | None:
    """Multiset match of items: True when each item of ``a`` pairs with an equal one of ``b``;
    False when some item of ``a`` is certainly unequal to every item of ``b``."""
    left = list(b)
    undecided = False
    for x in a:
        verdicts = [same(x, y) for y in left]
        if True in verdicts:
            left.pop(verdicts.index(True))
        elif all(v is False for v in verdicts):
            return False
        else:
            undecided = True
    return None if undecided else True
