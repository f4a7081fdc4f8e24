"""Bracket depth, in one place: splitting at top-level separators and finding closers.

Pure functions on ``str``, one linear scan each, never raising. ``opens``/``closes`` name the
bracket characters that count (by default the three kinds ``([{`` and ``)]}`` share one
depth, as in ``(1, [2, 3])``); with ``escaped=True`` a bracket right after a backslash
(``\\{``, a literal brace in LaTeX) does not count.
"""

from __future__ import annotations

__all__ = ["closing_index", "is_balanced", "top_level_indexes", "top_level_split"]

OPENS, CLOSES = "([{", ")]}"


def top_level_indexes(text: str, sep: str, opens: str = OPENS, closes: str = CLOSES) -> list[int]:
    """Indexes of the character ``sep`` at depth 0 (outside every bracket)."""
    out, depth = [], 0
    for i, char in enumerate(text):
        if char in opens:
            depth += 1
        elif char in closes:
            depth -= 1
        elif char == sep and depth == 0:
            out.append(i)
    return out


def top_level_split(
    text: str, sep: str = ",", opens: str = OPENS, closes: str = CLOSES
) -> list[str]:
    """``text`` split at ``sep`` outside brackets (``"(1,2),3"`` gives ``["(1,2)", "3"]``)."""
    cuts = top_level_indexes(text, sep, opens, closes)
    bounds = [-1, *cuts, len(text)]
    return [text[a + 1 : b] for a, b in zip(bounds, bounds[1:])]


def closing_index(
    text: str, start: int = 0, opens: str = OPENS, closes: str = CLOSES, *, escaped: bool = False
) -> int | None:
    """Index of the bracket that closes the one at ``text[start]``; ``None`` when it never
    closes (or ``text[start]`` opens nothing)."""
    depth = 0
    for j in range(start, len(text)):
        char = text[j]
        if escaped and j > 0 and text[j - 1] == "\\":
            continue
        if char in opens:
            depth += 1
        elif char in closes:
            depth -= 1
            if depth == 0:
                return j
        if depth == 0:
            return None
    return None


def is_balanced(text: str, opens: str = "{", closes: str = "}") -> bool:
    """Every closer has its opener before it, and every opener is closed."""
    depth = 0
    for char in text:
        if char in opens:
            depth += 1
        elif char in closes:
            depth -= 1
            if depth < 0:
                return False
    return depth == 0
