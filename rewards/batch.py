"""Batch scoring: thousands of responses in one call, the way an RL step needs them.

``score_batch`` gives each response the DAPO reward ``correctness + overlong penalty``:

1. extract the final answer of every response (``extract_answer``, in the caller);
2. deduplicate identical ``(extracted, gold)`` pairs (the 16 samples of one prompt often agree);
3. settle each unique pair with the cheap exact path (``fast_verdict``), then the numeric
   check (``equality.numeric``), in the caller;
4. send only the undecided pairs to a ``ScoringPool`` of worker processes, each item under a
   hard wall-clock ``timeout`` (a timeout counts as incorrect and is flagged in ``timed_out``);
5. add the soft overlong penalty when ``lengths`` are given (see ``overlong_penalty``).

A missing answer is incorrect (-1). There is no partial credit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from verimath.rewards.equality.conventions import Conventions, as_conventions
from verimath.rewards.equality.equivalence import check_mode, check_timeout, fast_verdict
from verimath.rewards.equality.numeric import numeric_verdict
from verimath.rewards.extraction.final_answer import PATHS, extract_with_path
from verimath.rewards.pool.scoring_pool import ScoringPool, default_pool
from verimath.rewards.shaping.overlong import overlong_penalty
from verimath.rewards.text.inputs import answer_text, response_text

__all__ = ["RULES", "BatchScores", "ScoringPool", "score_batch", "score_with_pool"]

RULES = ("no_answer", "fast", "numeric", "symbolic", "timeout")


@dataclass(frozen=True, eq=False)
class BatchScores:
    """Scores of a batch, index-aligned with the input responses (arrays are read-only).

    Attributes:
        correct: (N,) bool, the extracted answer is equivalent to the gold.
        correctness: (N,) float64, +1.0 where correct else -1.0.
        penalty: (N,) float64 in [-1, 0], soft overlong penalty (zeros without lengths).
        reward: (N,) float64, ``correctness + penalty``.
        timed_out: (N,) bool, symbolic verification ran out of time (counted incorrect).
        extracted: list of N extracted answers (None where no answer was found).
        paths: list of N extraction paths, where each answer was found (``extract.PATHS``:
            ``tag``, ``a_line``, ``answer_line``, ``box``, ``phrase``, ``last_math``, ``none``).
        rules: list of N deciding rules (``RULES``): ``no_answer``, ``fast`` (settled in the
            caller by exact arithmetic, the written rules and the conventions), ``numeric``
            (the caller's numeric check), ``symbolic`` (math-verify and the numeric probe, in
            the pool) or ``timeout``.
    """

    correct: np.ndarray
    correctness: np.ndarray
    penalty: np.ndarray
    reward: np.ndarray
    timed_out: np.ndarray
    extracted: list[str | None]
    paths: list[str] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.extracted)

    def path_shares(self) -> dict[str, float]:
        """Share of the batch per extraction path and per deciding rule, as metric keys
        (``reward/path_box``, ``reward/rule_symbolic``...; every path and rule is present,
        so the curves of a run stay aligned). Empty for an empty batch."""
        n = len(self.paths)
        if n == 0:
            return {}
        out = {f"reward/path_{p}": self.paths.count(p) / n for p in PATHS}
        out.update({f"reward/rule_{r}": self.rules.count(r) / n for r in RULES})
        return out

    @property
    def accuracy(self) -> float:
        """Fraction of correct responses (nan for an empty batch)."""
        return float(self.correct.mean()) if len(self) else float("nan")


def score_batch(
    responses: Sequence[str],
    golds: Sequence[str],
    *,
    lengths=None,
    max_length: float | None = None,
    cache_length: float | None = None,
    style: str = "auto",
    mode: str = "symbolic",
    timeout: float = 5.0,
    workers: int | None = None,
    pool: ScoringPool | None = None,
    conventions: Conventions | str | None = None,
) -> BatchScores:
    """Score ``responses`` against ``golds`` (index-aligned); see the module docstring.

    Args:
        responses: model outputs (str; ``None``, a missing response, scores -1 as one without
            an answer).
        golds: gold answers (str; ints and floats are converted with ``str``). Any other type
            in either is a ``TypeError`` naming the item (``text.inputs``).
        lengths: token counts of the responses, for the overlong penalty; needs
            ``max_length`` and ``cache_length`` (and those need ``lengths``).
        style: answer extraction style (``extract.STYLES``): ``"auto"`` (tags, a final ``A:``
            line, ``Answer:`` labels, then the last box), ``"dapo"``, ``"boxed"`` or
            ``"flexible"`` (for evaluation).
        mode: equivalence mode (see ``equivalence.MODES``): ``"symbolic"`` (exact path, then
            math-verify in the pool), ``"integer"`` (DAPO's strict integer match) or
            ``"string"`` (normalized strings); the last two never use the pool.
        timeout: seconds of wall-clock time per undecided unique pair.
        workers: None scores with the shared ``default_pool()`` (its processes start once and
            are reused by later calls); an int starts a private pool of that many processes
            for this call and closes it before returning.
        pool: a ``ScoringPool`` of your own to score with (left open); excludes ``workers``.
        conventions: the grading conventions (``Conventions``, ``"default"`` or ``"strict"``;
            see ``verimath.rewards.equality.conventions``).
    """
    kwargs = dict(
        lengths=lengths, max_length=max_length, cache_length=cache_length,
        style=style, mode=mode, timeout=timeout, conventions=conventions,
    )
    if pool is not None:
        if workers is not None:
            raise ValueError("pass either workers= (a private pool) or pool= (yours), not both")
        return score_with_pool(pool, responses, golds, **kwargs)
    if workers is None:
        return score_with_pool(default_pool(), responses, golds, **kwargs)
    with ScoringPool(workers) as pool:
        return score_with_pool(pool, responses, golds, **kwargs)


def score_with_pool(
    pool: ScoringPool,
    responses: Sequence[str],
    golds: Sequence[str],
    *,
    lengths=None,
    max_length: float | None = None,
    cache_length: float | None = None,
    style: str = "auto",
    mode: str = "symbolic",
    timeout: float = 5.0,
    conventions: Conventions | str | None = None,
) -> BatchScores:
    """``score_batch`` on a given pool (``score_batch(..., pool=pool)`` calls this)."""
    responses, golds = _check_inputs(responses, golds, lengths, max_length, cache_length, mode,
                                     timeout)
    conventions = as_conventions(conventions)
    if mode == "symbolic" and hasattr(pool, "start"):
        pool.start()  # the pool's processes warm up while this process extracts and decides
    found = [extract_with_path(text, style=style) for text in responses]
    extracted = [answer for answer, _ in found]
    verdicts = _unique_verdicts(pool, extracted, golds, mode=mode, timeout=timeout,
                                conventions=conventions)
    n = len(extracted)
    correct = np.zeros(n, dtype=bool)
    timed_out = np.zeros(n, dtype=bool)
    rules = ["no_answer"] * n
    for i, (pred, gold) in enumerate(zip(extracted, golds)):
        if pred is not None:
            correct[i], timed_out[i], rules[i] = verdicts[(pred, gold)]
    correctness = np.where(correct, 1.0, -1.0)
    if lengths is None:
        penalty = np.zeros(n, dtype=np.float64)
    else:
        penalty = overlong_penalty(lengths, max_length=max_length, cache_length=cache_length)
    arrays = (correct, correctness, penalty, correctness + penalty, timed_out)
    for arr in arrays:
        arr.setflags(write=False)
    return BatchScores(*arrays, extracted=extracted, paths=[path for _, path in found], rules=rules)


def _unique_verdicts(pool, extracted, golds, *, mode: str, timeout: float,
                     conventions: Conventions) -> dict:
    """``(verdict, timed_out, rule)`` per unique ``(pred, gold)``: fast path here, rest in pool."""
    verdicts: dict[tuple[str, str], tuple[bool, bool, str]] = {}
    undecided: dict[tuple[str, str], None] = {}  # ordered set
    for key in zip(extracted, golds):
        if key[0] is None or key in verdicts or key in undecided:
            continue
        fast = fast_verdict(key[0], key[1], mode=mode, conventions=conventions)
        if fast is not None:
            verdicts[key] = (bool(fast), False, "fast")
            continue
        numeric = numeric_verdict(key[0], key[1], conventions) if mode == "symbolic" else None
        if numeric is None:
            undecided[key] = None
        else:
            verdicts[key] = (numeric, False, "numeric")
    if undecided:
        pairs = list(undecided)
        results = pool.verify(pairs, timeout=timeout, conventions=conventions)
        for key, (ok, late) in zip(pairs, results):
            verdicts[key] = (ok, late, "timeout" if late else "symbolic")
    return verdicts


def _check_inputs(
    responses, golds, lengths, max_length, cache_length, mode, timeout
) -> tuple[list[str | None], list[str]]:
    """Validate arguments; return the responses and golds as ``text.inputs`` reads them."""
    if isinstance(responses, str) or isinstance(golds, str):
        raise ValueError("responses and golds must be sequences of strings, not a single string")
    if len(responses) != len(golds):
        raise ValueError(f"got {len(responses)} responses but {len(golds)} golds; they must align")
    texts = [response_text(text, f"responses[{i}]") for i, text in enumerate(responses)]
    clean = [answer_text(gold, f"golds[{i}]") for i, gold in enumerate(golds)]
    has_limits = (max_length is not None, cache_length is not None)
    if lengths is not None and not all(has_limits):
        raise ValueError("lengths were given without max_length and cache_length; pass both "
                         "(DAPO: max_length=16384, cache_length=4096) or drop lengths")
    if lengths is None and any(has_limits):
        raise ValueError("max_length/cache_length were given without lengths; pass the token "
                         "count of each response as lengths=")
    if lengths is not None and len(lengths) != len(responses):
        raise ValueError(f"got {len(lengths)} lengths for {len(responses)} responses")
    check_mode(mode)
    check_timeout(timeout)
    return texts, clean
