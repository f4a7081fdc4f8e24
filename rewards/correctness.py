"""Verdicts that may need the scoring pool: ``is_equivalent`` and DAPO's correctness reward.

The correctness reward of DAPO (Yu et al. 2025, "DAPO: An Open-Source LLM Reinforcement
Learning System at Scale", arXiv 2503.14476, section on rule-based reward):

    R(y_hat, y) = +1  if extract_answer(y_hat) is equivalent to y
                  -1  otherwise

The extracted answer is compared as it is: words left around it by the ``"auto"`` style
(``Answer: The number of ways is 35.``) make it incorrect, which keeps the paper's strict
answer format; ``style="flexible"`` extracts the math from such sentences instead.

No partial credit: a missing answer, a verification timeout or any error in verification
is -1. The paper matches integer answers exactly (``mode="integer"``); symbolic equivalence
through math-verify (``mode="symbolic"``, the default) is the general case. DAPO's soft
overlong punishment is a separate term (``verimath.rewards.overlong_penalty``) that the
caller adds.
"""

from __future__ import annotations

from verimath.rewards.equality.conventions import Conventions, as_conventions
from verimath.rewards.equality.equivalence import check_mode, check_timeout, fast_verdict
from verimath.rewards.equality.numeric import numeric_verdict
from verimath.rewards.extraction.final_answer import answer_core, extract_answer
from verimath.rewards.pool.scoring_pool import default_pool
from verimath.rewards.text.inputs import answer_text, response_text

__all__ = ["correctness_reward", "is_equivalent", "score"]


def is_equivalent(
    pred: str | None, gold: str, *, mode: str = "symbolic", timeout: float = 5.0,
    conventions: Conventions | str | None = None,
) -> bool:
    """Whether the extracted answer ``pred`` is equivalent to the gold answer ``gold``.

    ``pred=None`` (no answer) is ``False``; a number on either side is read as its ``str``
    (``is_equivalent(3, 3)`` is ``True``), and any other type is a ``TypeError``
    (``text.inputs``). ``fast_verdict`` decides first; in mode ``"symbolic"`` an undecided
    pair goes to the numeric check of this process (``equality.numeric``: expressions its
    narrow grammar reads, evaluated at seeded points), then to math-verify in the scoring
    pool, which kills the verification after ``timeout`` seconds of wall-clock time and
    counts it as ``False`` (``score_batch`` reports such items in ``timed_out``).
    ``"integer"`` and ``"string"`` never call math-verify. The first call in mode
    ``"symbolic"`` launches the pool's processes in the background (``ScoringPool.start``)
    and returns as soon as its own pair is decided: a pair decided in this process does not
    wait for them. Gold is the reference: ``verify(gold, pred)``, not symmetric.
    ``conventions`` (``Conventions``, ``"default"`` or ``"strict"``; see
    ``verimath.rewards.equality.conventions``) settles what graders differ on: a value
    against ``name = value``, a relation's right side, decimals against exact golds, the
    order of bare lists, choice letters.

    Math delimiters around either side never change the verdict (``$1$``, ``$$1$$``,
    ``\\(1\\)``, ``\\[1\\]`` and ``1`` are one answer), and the verdict is the reward of a
    response that ends in ``Answer: pred``, ``\\boxed{pred}`` or ``<answer>pred</answer>``.
    ``pred`` may still carry words (``"Therefore $x \\geq 5$ is the solution."``,
    ``"The answer is 0.5"``): the math it states is compared (``extract.answer_core``), as
    strictly as a bare answer; negated or hedged predictions stay incorrect.

    >>> is_equivalent("The answer is 0.5", "\\\\frac{1}{2}")
    True
    >>> is_equivalent("$1$", "$k = 1$")
    True
    """
    pred = response_text(pred, "pred")
    gold = answer_text(gold, "gold")
    conventions = as_conventions(conventions)
    if pred is None:
        return _verdict(None, gold, mode, timeout, conventions)
    return _verdict(answer_core(pred), gold, mode, timeout, conventions)


def _verdict(
    pred: str | None, gold: str, mode: str, timeout: float, conventions: Conventions
) -> bool:
    """The fast path, the numeric check, then math-verify in the pool; ``pred`` is compared
    as it is (both sides already checked: ``text.inputs``)."""
    check_mode(mode)
    check_timeout(timeout)
    if mode == "symbolic":
        default_pool().start()  # a head start for the pool, in the background
    if pred is None:
        return False
    verdict = fast_verdict(pred, gold, mode=mode, conventions=conventions)
    if verdict is None and mode == "symbolic":
        verdict = numeric_verdict(pred, gold, conventions)
    if verdict is not None:
        return verdict
    (symbolic, _timed_out), = default_pool().verify([(pred, gold)], timeout=timeout,
                                                   conventions=conventions)
    return bool(symbolic)


def correctness_reward(
    response: str, gold: str, *, style: str = "auto", mode: str = "symbolic", timeout: float = 5.0,
    conventions: Conventions | str | None = None,
) -> float:
    """+1.0 if the answer extracted from ``response`` is equivalent to ``gold``, else -1.0.

    Args:
        response: the model's full response text; ``None`` (a missing response) scores -1.0.
        gold: the reference answer (a bare answer such as ``"42"`` or ``"\\frac{1}{2}"``; a
            number is read as its ``str``).
        style: answer extraction, ``"auto"`` (``<answer>`` tag, a final ``A:`` line,
            ``Answer:`` line, then ``\\boxed{}``; the strict format, for training),
            ``"dapo"``, ``"boxed"`` or ``"flexible"`` (also final-answer phrases in many
            languages and the last math; for evaluation); see
            ``verimath.rewards.extraction.final_answer``.
        mode: ``"symbolic"`` (fast exact path, then math-verify), ``"integer"`` (DAPO's
            strict integer matching) or ``"string"`` (normalized strings).
        timeout: wall-clock seconds for the symbolic check; a timeout scores -1.0.
        conventions: the grading conventions (``is_equivalent``); default: what RL graders do.

    >>> correctness_reward("6 * 7 = 42\\nAnswer: 42", "42")
    1.0
    >>> correctness_reward("I think it is \\\\boxed{41}", "42")
    -1.0
    """
    response = response_text(response, "response")
    gold = answer_text(gold, "gold")
    pred = extract_answer(response, style=style)
    return 1.0 if _verdict(pred, gold, mode, timeout, as_conventions(conventions)) else -1.0


score = correctness_reward
"""Short alias of ``correctness_reward`` (SPEC.md: ``score(response, gold)``)."""
