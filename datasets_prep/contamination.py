"""Decontamination: drop training problems that share a long word n-gram with an eval set.

Words are the maximal runs of letters and digits of the case-folded text (``"\\frac{3}{4}"``
-> ``frac 3 4``; punctuation, LaTeX braces and underscores separate words). Two problems
overlap when they share a run of `n` consecutive words (13 by default, as in the GPT-3
and Llama contamination studies). An eval problem shorter than `n` words
(``"Simplify $\\sqrt{242}$."``) is searched for whole: a training problem that contains
all its words in a row overlaps it. (Not the other way round: a short training problem
such as "Find m+n." does not overlap every eval problem that ends with those words.)

Shared boilerplate ("... where m and n are relatively prime positive integers. Find
m+n.") makes 13-gram overlap flag problems that are not copies; `min_coverage` (the
fraction of the eval problem's words inside shared n-grams) tells the two apart.

Cost: one dict lookup per training n-gram, more work only on hits; 17k training x 600
eval problems take about half a second on one core.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from verimath.envs.problem import Problem

DEFAULT_N = 13
_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """The case-folded letter/digit runs of `text`."""
    return _WORD.findall(text.casefold())


def ngrams(tokens: Sequence[str], n: int = DEFAULT_N) -> Iterator[tuple[str, ...]]:
    """The consecutive `n`-word tuples of `tokens` (none when there are fewer than `n`)."""
    if n < 1:
        raise ValueError(f"n-gram length must be >= 1, got {n}")
    yield from zip(*(tokens[i:] for i in range(n)))


@dataclass(frozen=True)
class Contamination:
    """A training problem dropped for its overlap with eval problem `eval_id`.

    `ngram` is the first shared n-gram; `coverage` is the fraction of the eval problem's
    words that lie inside n-grams the two share (1.0: the whole eval problem is copied).
    """

    problem: Problem
    eval_id: str
    ngram: str
    coverage: float


@dataclass(frozen=True)
class EvalIndex:
    """The n-grams of a set of eval problems.

    `grams` maps each n-gram to the (eval position, word offset) pairs where it occurs;
    `short` maps the first word of each eval problem shorter than n words (but not empty)
    to (eval position, all its words); `ids` and `lengths` are ids and word counts.
    """

    grams: dict[tuple[str, ...], list[tuple[int, int]]]
    short: dict[str, list[tuple[int, tuple[str, ...]]]]
    ids: list[str]
    lengths: list[int]
    n: int


def build_index(eval_problems: Iterable[Problem], n: int = DEFAULT_N) -> EvalIndex:
    """Index every n-gram of the eval prompts, and the short prompts whole."""
    grams: dict[tuple[str, ...], list[tuple[int, int]]] = {}
    short: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
    ids: list[str] = []
    lengths: list[int] = []
    for e, p in enumerate(eval_problems):
        tokens = words(p.prompt)
        ids.append(p.id)
        lengths.append(len(tokens))
        if 0 < len(tokens) < n:
            short.setdefault(tokens[0], []).append((e, tuple(tokens)))
        for offset, gram in enumerate(ngrams(tokens, n)):
            grams.setdefault(gram, []).append((e, offset))
    return EvalIndex(grams, short, ids, lengths, n)


def _shared_spans(
    tokens: list[str], index: EvalIndex
) -> Iterator[tuple[int, int, tuple[str, ...]]]:
    """(eval position, word offset in it, words) of each eval span found in `tokens`."""
    for gram in ngrams(tokens, index.n):
        for e, offset in index.grams.get(gram, ()):
            yield e, offset, gram
    if index.short:
        for i, word in enumerate(tokens):
            for e, whole in index.short.get(word, ()):
                if tuple(tokens[i : i + len(whole)]) == whole:
                    yield e, 0, whole


def best_overlap(text: str, index: EvalIndex) -> tuple[str, str, float] | None:
    """(eval id, first shared span, coverage) for the eval problem `text` covers most.

    Coverage of eval problem e = |word offsets of e inside a span shared with `text`|
    / |words of e|. None when `text` shares nothing with any eval problem.
    """
    covered: dict[int, set[int]] = {}
    first: dict[int, tuple[str, ...]] = {}
    for e, offset, span in _shared_spans(words(text), index):
        first.setdefault(e, span)
        covered.setdefault(e, set()).update(range(offset, offset + len(span)))
    if not covered:
        return None
    e = max(covered, key=lambda k: (len(covered[k]) / index.lengths[k], -k))
    return index.ids[e], " ".join(first[e]), len(covered[e]) / index.lengths[e]


def decontaminate(
    problems: Sequence[Problem],
    eval_problems: Iterable[Problem],
    n: int = DEFAULT_N,
    *,
    min_coverage: float = 0.0,
) -> tuple[list[Problem], list[Contamination]]:
    """(kept problems in order, dropped ones with the eval problem they overlap).

    A problem is dropped when it shares an n-gram with an eval problem and covers at
    least `min_coverage` of that eval problem's words. The default 0.0 drops on any
    shared n-gram (the classic rule); 0.5 spares problems that only share boilerplate
    such as "can be expressed as m/n where m and n are relatively prime positive
    integers", which is common in competition problems.
    """
    if not 0.0 <= min_coverage <= 1.0:
        raise ValueError(f"min_coverage must be in [0, 1], got {min_coverage}")
    index = build_index(eval_problems, n)
    kept: list[Problem] = []
    dropped: list[Contamination] = []
    for p in problems:
        hit = best_overlap(p.prompt, index) if index.grams or index.short else None
        if hit is None or hit[2] < min_coverage:
            kept.append(p)
        else:
            dropped.append(Contamination(p, *hit))
    return kept, dropped
