"""Gold-answer self-check: every gold must be extractable and equivalent to itself.

For a gold `g` and each answer style, the response a perfect model would write is built
(``"Answer: g"`` for the DAPO style, ``"\\boxed{g}"`` for the boxed style) and scored
against `g` with `verimath.rewards.score_batch`. A gold passes when every requested
style gives a correct score: an environment may then ask for either format and a right
answer can earn +1. Golds that fail (nothing extracted, extraction changed the answer,
the verifier says "not equivalent" or times out) are rejected with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from verimath.rewards import score_batch

STYLES = ("dapo", "boxed")
CHUNK = 2048


def ideal_response(gold: str, style: str) -> str:
    """What a correct model answer in `style` looks like: ``Answer: g`` or ``\\boxed{g}``."""
    if style == "dapo":
        return f"Answer: {gold}"
    if style == "boxed":
        return "\\boxed{" + gold + "}"
    raise ValueError(f"unknown answer style {style!r}; expected one of {', '.join(STYLES)}")


def _reason(style: str, gold: str, extracted: str | None, timed_out: bool) -> str:
    shown = ideal_response(gold, style)
    if timed_out:
        return f"verification timed out on {shown!r:.80}"
    if extracted is None:
        return f"no answer extracted from {shown!r:.80}"
    return f"{extracted!r:.60} extracted from {shown!r:.80} is not equivalent to the gold"


def gold_failures(
    golds: Sequence[str],
    *,
    styles: Sequence[str] = STYLES,
    on_chunk: Callable[[int], None] | None = None,
) -> list[str | None]:
    """For each gold, None when it verifies against itself in every style, else why not.

    Each distinct gold is scored once (DAPO-Math-17k has few distinct integer answers),
    in chunks of `CHUNK`; `on_chunk(n)` is called after each chunk (progress).
    """
    for style in styles:
        ideal_response("", style)  # reject unknown styles before any scoring
    unique = list(dict.fromkeys(golds))
    verdicts: dict[str, str | None] = {}
    for start in range(0, len(unique), CHUNK):
        chunk = unique[start : start + CHUNK]
        for gold, why in zip(chunk, _chunk_failures(chunk, styles)):
            verdicts[gold] = why
        if on_chunk is not None:
            on_chunk(len(chunk))
    return [verdicts[g] for g in golds]


def _chunk_failures(golds: list[str], styles: Sequence[str]) -> list[str | None]:
    failures: list[str | None] = [None] * len(golds)
    for style in styles:
        responses = [ideal_response(g, style) for g in golds]
        scores = score_batch(responses, golds, style=style)
        for i, ok in enumerate(scores.correct):
            if not ok and failures[i] is None:
                failures[i] = _reason(style, golds[i], scores.extracted[i],
                                      bool(scores.timed_out[i]))
    return failures
