"""Verdicts that explain themselves: ``explain(response, gold)``.

The answer to "why did this response get -1?": what was extracted and from where, both
answers in normalized form, the rule that decided, and the time taken. The verdict is the
reward's own (the same extraction, fast path and scoring pool), so an explanation never
disagrees with ``correctness_reward`` in the same style.

Paths (where the answer was found, ``extract.PATHS``): ``tag`` (``<answer>...</answer>``),
``a_line`` (a final ``A: ...`` line), ``answer_line`` (``Answer:``, ``Final Answer:``, ``The
answer is:``), ``box`` (``\\boxed{}``), ``phrase`` (``the answer is ...`` in a dozen
languages), ``last_math`` (the last math of the response), ``none``.

Rules (``RULES``): ``no_answer``; ``exact`` (the same text after normalization);
``written_rule`` (letter case, value vs equation, decimals: ``rules``, ``tolerance``);
``fast`` (exact arithmetic: numbers, radicals, polynomials, lists); ``symbolic``
(math-verify, confirmed by the probe); ``probe`` (the numeric probe or the relation
normalizer overruled math-verify: ``probe``); ``timeout`` (the pool's time bound ran out).
Telling ``probe`` from ``symbolic`` runs math-verify alone once more, in a one-worker pool
of its own: explanations cost more than rewards, and are meant for debugging.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass

from verimath.rewards.equality.equivalence import (
    check_mode,
    check_timeout,
    fast_verdict,
    math_verify_verdict,
    normalize_answer,
    written_rule_verdict,
)
from verimath.rewards.equality.notation import align_pair
from verimath.rewards.extraction.final_answer import extract_with_path
from verimath.rewards.pool.scoring_pool import ScoringPool, default_pool

__all__ = ["RULES", "Explanation", "explain"]

RULES = ("no_answer", "exact", "written_rule", "fast", "symbolic", "probe", "timeout")


@dataclass(frozen=True)
class Explanation:
    """One verdict, explained (see the module docstring for ``path`` and ``rule``)."""

    correct: bool
    style: str
    path: str
    extracted: str | None
    pred_normalized: str | None
    gold_normalized: str
    rule: str
    seconds: float

    @property
    def reward(self) -> float:
        return 1.0 if self.correct else -1.0

    def as_dict(self) -> dict:
        return {**asdict(self), "reward": self.reward}

    def __str__(self) -> str:
        return (
            f"reward {self.reward:+.0f} ({'correct' if self.correct else 'incorrect'})\n"
            f"  extracted  {self.extracted!r} from {self.path} (style {self.style})\n"
            f"  normalized {self.pred_normalized!r} vs gold {self.gold_normalized!r}\n"
            f"  decided by {self.rule} in {1000 * self.seconds:.1f} ms"
        )


def explain(
    response: str, gold: str, *, style: str = "flexible", mode: str = "symbolic",
    timeout: float = 5.0,
) -> Explanation:
    """Score ``response`` against ``gold`` as ``correctness_reward`` does, and say why.

    >>> print(explain("Q: 3 * 4?\\nA: 12", "12"))  # doctest: +ELLIPSIS
    reward +1 (correct)
      extracted  '12' from a_line (style flexible)
      normalized '12' vs gold '12'
      decided by exact in ... ms
    """
    check_mode(mode)
    check_timeout(timeout)
    start = time.perf_counter()
    pred, path = extract_with_path(response, style=style)
    if pred is None:
        return Explanation(False, style, path, None, None, _normalized(gold), "no_answer",
                           time.perf_counter() - start)
    correct, rule = _decide(pred, gold, mode, timeout)
    p, g = align_pair(pred, gold)
    return Explanation(correct, style, path, pred, normalize_answer(p), normalize_answer(g),
                       rule, time.perf_counter() - start)


def _decide(pred: str, gold: str, mode: str, timeout: float) -> tuple[bool, str]:
    fast = fast_verdict(pred, gold, mode=mode)
    if fast is not None:
        p, g = align_pair(pred, gold)
        if normalize_answer(p) == normalize_answer(g):
            return fast, "exact"
        if mode == "symbolic" and written_rule_verdict(pred, gold) is not None:
            return fast, "written_rule"
        return fast, "fast"
    (verdict, late), = default_pool().verify([(pred, gold)], timeout=timeout)
    if late:
        return False, "timeout"
    (alone, late), = _math_verify_pool().verify([(pred, gold)], timeout=timeout)
    return verdict, ("symbolic" if late or alone == verdict else "probe")


def _normalized(gold: str) -> str:
    return normalize_answer(align_pair("", gold)[1]) if isinstance(gold, str) else str(gold)


_POOL: ScoringPool | None = None
_POOL_LOCK = threading.Lock()


def _math_verify_pool() -> ScoringPool:
    """One worker running math-verify alone (no probe), started on first use."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL.closed:
            _POOL = ScoringPool(1, verdict=math_verify_verdict)
        return _POOL
