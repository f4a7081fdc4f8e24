"""Answer equivalence. PLACEHOLDER: the rewards helper replaces this with the fast path +
process-bounded math-verify path. Only a normalized string comparison for now."""

from __future__ import annotations


def is_equivalent(pred: str | None, gold: str, *, mode: str = "symbolic", timeout: float = 5.0) -> bool:
    if pred is None:
        return False
    return pred.strip().replace(" ", "") == gold.strip().replace(" ", "")
