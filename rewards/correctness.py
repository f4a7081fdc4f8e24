"""The correctness reward of DAPO (Yu et al. 2025, "DAPO: An Open-Source LLM Reinforcement
Learning System at Scale", arXiv 2503.14476, section on rule-based reward):

    R(y_hat, y) = +1  if is_equivalent(extract_answer(y_hat), y)
                  -1  otherwise

No partial credit: a missing answer, a verification timeout or any error in verification
is -1. The paper matches integer answers exactly (``mode="integer"``); symbolic equivalence
through math-verify (``mode="symbolic"``, the default) is the general case. DAPO's soft
overlong punishment is a separate term (``verimath.rewards.overlong_penalty``) that the
caller adds.
"""

from __future__ import annotations

from verimath.rewards.equivalence import is_equivalent
from verimath.rewards.extract import extract_answer

__all__ = ["correctness_reward", "score"]


def correctness_reward(
    response: str, gold: str, *, style: str = "auto", mode: str = "symbolic", timeout: float = 5.0
) -> float:
    """+1.0 if the answer extracted from ``response`` is equivalent to ``gold``, else -1.0.

    Args:
        response: the model's full response text.
        gold: the reference answer (a bare answer such as ``"42"`` or ``"\\\\frac{1}{2}"``).
        style: answer extraction, ``"auto"`` (``Answer:`` line, then ``\\\\boxed{}``),
            ``"dapo"`` or ``"boxed"``; see ``verimath.rewards.extract``.
        mode: ``"symbolic"`` (fast exact path, then math-verify), ``"integer"`` (DAPO's
            strict integer matching) or ``"string"`` (normalized strings).
        timeout: wall-clock seconds for the symbolic check; a timeout scores -1.0.

    >>> correctness_reward("6 * 7 = 42\\nAnswer: 42", "42")
    1.0
    >>> correctness_reward("I think it is \\\\boxed{41}", "42")
    -1.0
    """
    pred = extract_answer(response, style=style)
    return 1.0 if is_equivalent(pred, gold, mode=mode, timeout=timeout) else -1.0


score = correctness_reward
"""Short alias of ``correctness_reward`` (SPEC.md: ``score(response, gold)``)."""
