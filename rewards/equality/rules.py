"""Written rules that decide a pair before any algebra: choice letters, letter case, words.
Pure functions on aligned answers (``notation.align_pair``; ``normalize_answer`` for case).

Choice letters (``choice_verdict``; the ``choice_letters`` convention of ``conventions``): a gold
that is one option letter ``A``-``J`` (``C``, ``(C)``, ``\\text{(C)}``, ``\\textbf{C.}``), or
such a letter followed by its option's text, is matched by the same letter: in either case,
in any wrapping and with its own option text when the convention is on; in the same case
and without text when it is off. Two letters (``(A) or (B)``, ``A, B``) never match one, and
neither does anything else.

Letter case (``case_verdict``):
    * words (answers of letters only, two or more, such as ``Yes``, ``Monday``, ``even``)
      are compared case-insensitively;
    * in math, case is meaning: ``X`` is not ``x``, ``2X + 1`` is not ``2x + 1``; a pair
      whose letters differ only in case is unequal;
    * units are dropped before comparison (``normalize_answer``), so their case never counts.
"""

from __future__ import annotations

import re

__all__ = ["case_verdict", "choice_letter", "choice_verdict", "letters_differ_in_case"]

_WRAPPED = re.compile(
    r"\\(?:text|textbf|textit|textrm|textnormal|mathrm|mathbf|mathit|mbox|operatorname)\s*"
    r"\{([^{}]*)\}"
)
_LETTER_ONLY = re.compile(r"\(?\s*([A-Ja-j])\s*\)?\s*[.:]?")
_WITH_TEXT = re.compile(
    r"\(\s*([A-Ja-j])\s*\)\s*[.:]?\s*(?P<text>.+)|([A-J])\s*[.:)]\s*(?P<text2>.+)"
)
_OTHER_OPTION = re.compile(r"\(\s*[A-Ja-j]\s*\)|\b(?:or|and)\b|,")
_WORDS = re.compile(r"[A-Za-z][A-Za-z ]*[A-Za-z]")
_COMMAND = re.compile(r"\\[A-Za-z]+")
_LETTER = re.compile(r"[A-Za-z]")


def choice_letter(text: str, *, with_text: bool = True) -> tuple[str, bool] | None:
    """``(letter, has_option_text)`` when ``text`` states one option letter, else None."""
    text = text.strip()
    for _ in range(3):  # \text{\textbf{(C)}}
        text = _WRAPPED.sub(r"\1", text).strip()
    text = text.replace("\\,", " ").replace("~", " ").strip()
    only = _LETTER_ONLY.fullmatch(text)
    if only is not None and (text.startswith("(") == text.rstrip(".:").endswith(")")):
        return only.group(1), False
    if not with_text or len(text) > 200:
        return None
    found = _WITH_TEXT.fullmatch(text)
    if found is None:
        return None
    body = found.group("text") or found.group("text2") or ""
    if _OTHER_OPTION.search(body):
        return None  # "(A) or (B)", "(B) and (D)": more than one option
    return (found.group(1) or found.group(3)), True


def choice_verdict(pred: str, gold: str, *, lenient: bool = True) -> bool | None:
    """The choice-letter rule of the module docstring; None when the gold is no option letter."""
    expected = choice_letter(gold)
    if expected is None or not expected[0].isupper():
        return None
    found = choice_letter(pred, with_text=lenient)
    if found is None:
        return False
    letter, has_text = found
    if lenient:
        return letter.upper() == expected[0]
    return letter == expected[0] and not has_text


def case_verdict(pred: str, gold: str) -> bool | None:
    """The letter-case rules of the module docstring: True/False when one decides."""
    if _WORDS.fullmatch(pred) and _WORDS.fullmatch(gold) and len(gold) > 1 and len(pred) > 1:
        if pred.casefold() == gold.casefold():
            return True
    if letters_differ_in_case(pred, gold):
        return False
    return None


def letters_differ_in_case(pred: str, gold: str) -> bool:
    """Whether the letters written outside LaTeX commands differ, but not when lowercased."""
    a = sorted(_LETTER.findall(_COMMAND.sub(" ", pred)))
    b = sorted(_LETTER.findall(_COMMAND.sub(" ", gold)))
    return a != b and [c.lower() for c in a] == [c.lower() for c in b]
