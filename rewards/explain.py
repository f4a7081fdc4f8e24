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
``written_rule`` (letter case, words, a value against an equation: ``rules``);
``convention`` (a grading convention decided: ``convention`` names which field of
``Conventions``, such as ``name_value`` or ``decimal_digits``); ``fast`` (exact arithmetic:
numbers, radicals, polynomials, lists, relations); ``numeric`` (the numeric check of the
calling process, ``equality.numeric``); ``symbolic`` (math-verify, confirmed by
the probe); ``probe`` (the numeric probe or the relation normalizer overruled math-verify:
``probe``); ``timeout`` (the pool's time bound ran out). The rule and the two normalized sides
come from the same decision as the verdict, so they always lead to it: ``exact`` comes with
equal sides and a correct verdict, and equal sides are never called incorrect by a rule
that compares them. Telling ``probe`` from ``symbolic`` runs math-verify alone once more, in
a one-worker pool of its own: explanations cost more than rewards, and are meant for
debugging.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass

from verimath.rewards.equality.conventions import Conventions, as_conventions
from verimath.rewards.equality.equivalence import (
    check_mode,
    check_timeout,
    fast_decision,
    math_verify_verdict,
    normalize_answer,
)
from verimath.rewards.equality.numeric import numeric_verdict
from verimath.rewards.extraction.final_answer import extract_with_path
from verimath.rewards.pool.scoring_pool import ScoringPool, default_pool
from verimath.rewards.text.inputs import answer_text, response_text

__all__ = ["RULES", "Explanation", "explain"]

RULES = ("no_answer", "exact", "written_rule", "convention", "fast", "numeric", "symbolic", "probe",
         "timeout")


@dataclass(frozen=True)
class Explanation:
    """One verdict, explained (see the module docstring for ``path``, ``rule`` and
    ``convention``)."""

    correct: bool
    style: str
    path: str
    extracted: str | None
    pred_normalized: str | None
    gold_normalized: str
    rule: str
    seconds: float
    convention: str | None = None

    @property
    def reward(self) -> float:
        return 1.0 if self.correct else -1.0

    def as_dict(self) -> dict:
        return {**asdict(self), "reward": self.reward}

    def __str__(self) -> str:
        rule = self.rule if self.convention is None else f"{self.rule} ({self.convention})"
        return (
            f"reward {self.reward:+.0f} ({'correct' if self.correct else 'incorrect'})\n"
            f"  extracted  {self.extracted!r} from {self.path} (style {self.style})\n"
            f"  normalized {self.pred_normalized!r} vs gold {self.gold_normalized!r}\n"
            f"  decided by {rule} in {1000 * self.seconds:.1f} ms"
        )


def explain(
    response: str, gold: str, *, style: str = "flexible", mode: str = "symbolic",
    timeout: float = 5.0, conventions: Conventions | str | None = None,
) -> Explanation:
    """Score ``response`` against ``gold`` as ``correctness_reward`` does, and say why
    (inputs as there: ``response=None`` has no answer, numbers are read as their ``str``).

    >>> print(explain("Q: 3 * 4?\\nA: 12", "12"))  # doctest: +ELLIPSIS
    reward +1 (correct)
      extracted  '12' from a_line (style flexible)
      normalized '12' vs gold '12'
      decided by exact in ... ms
    """
    response = response_text(response, "response")
    gold = answer_text(gold, "gold")
    check_mode(mode)
    check_timeout(timeout)
    conventions = as_conventions(conventions)
    start = time.perf_counter()
    pred, path = extract_with_path(response, style=style)
    if pred is None:
        return Explanation(False, style, path, None, None, normalize_answer(gold), "no_answer",
                           time.perf_counter() - start)
    correct, rule, convention, p, g = _decide(pred, gold, mode, timeout, conventions)
    return Explanation(correct, style, path, pred, p, g, rule, time.perf_counter() - start,
                       convention)


def _decide(pred: str, gold: str, mode: str, timeout: float, conventions: Conventions):
    """``(correct, rule, convention, pred as compared, gold as compared)``: the reward's own
    decision (``fast_decision``, then the pool), never a second opinion."""
    decision = fast_decision(pred, gold, mode=mode, conventions=conventions)
    sides = (decision.pred, decision.gold)
    if decision.verdict is not None:
        return decision.verdict, decision.rule, decision.convention, *sides
    numeric = numeric_verdict(pred, gold, conventions) if mode == "symbolic" else None
    if numeric is not None:
        return numeric, "numeric", decision.convention, *sides
    (verdict, late), = default_pool().verify([(pred, gold)], timeout=timeout,
                                             conventions=conventions)
    if late:
        return False, "timeout", None, *sides
    (alone, late), = _math_verify_pool().verify([(pred, gold)], timeout=timeout,
                                                conventions=conventions)
    rule = "symbolic" if late or alone == verdict else "probe"
    return verdict, rule, decision.convention, *sides


_POOL: ScoringPool | None = None
_POOL_LOCK = threading.Lock()


def _math_verify_pool() -> ScoringPool:
    """One worker running math-verify alone (no probe), started on first use."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL.closed:
            _POOL = ScoringPool(1, verdict=math_verify_verdict)
        return _POOL
