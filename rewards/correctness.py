"""The correctness reward of DAPO: +1 if the extracted answer matches the gold, else -1."""

from __future__ import annotations

from verimath.rewards.equivalence import is_equivalent
from verimath.rewards.extract import extract_answer


def correctness_reward(
    response: str, gold: str, *, style: str = "auto", mode: str = "symbolic", timeout: float = 5.0
) -> float:
    """+1.0 if the answer extracted from `response` is equivalent to `gold`, else -1.0.

    A missing answer, a timeout or any error in verification gives -1.0.
    """
    pred = extract_answer(response, style=style)
    if pred is None:
        return -1.0
    return 1.0 if is_equivalent(pred, gold, mode=mode, timeout=timeout) else -1.0


score = correctness_reward
