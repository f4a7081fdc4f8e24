"""DAPO dynamic sampling as a small pure driver, independent of models and tensors.

The trainer supplies ``generate_round(round_index) -> (payloads, correct)``: it samples
one generation batch (``P`` prompts x ``G`` responses), scores it, and returns one
opaque payload per group (its rollout tensors, say) with the ``(P, G)`` correctness
matrix. ``collect_informative`` calls it until it holds ``target_groups`` informative
groups (``0 < #correct < G``, see ``verimath.trainer.advantages.informative_groups``),
never more than ``max_rounds`` times, and reports what happened in ``SamplingStats``.

Filtering is on correctness, not on the shaped reward: a group whose answers are all
right still has unequal rewards under length shaping, but no correctness signal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from verimath.trainer.advantages import informative_groups

__all__ = ["SamplingStats", "collect_informative"]


@dataclass(frozen=True)
class SamplingStats:
    """What one call of ``collect_informative`` did (all counts are groups, not responses)."""

    rounds: int
    """Generation rounds run (calls of ``generate_round``)."""
    generated_groups: int
    """Groups generated over all rounds, kept or not (the compute spent)."""
    kept_groups: int
    """Groups returned for training (at most ``target_groups`` when filtering)."""
    target_groups: int
    """Informative groups asked for."""
    informative_groups: int
    """Informative groups seen, including extras trimmed after the target was reached."""
    all_correct_groups: int
    """Discarded groups where every response was right (problems too easy)."""
    all_wrong_groups: int
    """Discarded groups where every response was wrong (problems too hard)."""
    hit_cap: bool
    """True when ``max_rounds`` ran out before ``target_groups`` were collected."""
    note: str
    """Empty when the target was met; otherwise one human-readable line for the log."""

    def as_metrics(self, prefix: str = "sampling/") -> dict[str, float]:
        """Numeric fields under namespaced keys (``sampling/kept_groups``, ...)."""
        return {prefix + k: float(v) for k, v in asdict(self).items() if not isinstance(v, str)}


def _check_round(round_index: int, result) -> tuple[Sequence[Any], np.ndarray]:
    try:
        payloads, correct = result
    except (TypeError, ValueError):
        raise ValueError(
            f"generate_round({round_index}) must return (payloads, correct); "
            f"got {type(result).__name__}"
        ) from None
    correct = np.asarray(correct)
    if correct.ndim != 2:
        raise ValueError(
            f"generate_round({round_index}) returned correct with shape {correct.shape}; "
            "expected (P, G) booleans, one row per group"
        )
    if len(payloads) != correct.shape[0]:
        raise ValueError(
            f"generate_round({round_index}) returned {len(payloads)} payloads for "
            f"{correct.shape[0]} groups; give exactly one payload per group (row of correct)"
        )
    return payloads, correct


def collect_informative(
    generate_round: Callable[[int], tuple[Sequence[Any], Any]],
    *,
    target_groups: int,
    max_rounds: int,
    filter: bool = True,  # DAPO dynamic sampling on/off (shadows the builtin on purpose)
) -> tuple[list[Any], SamplingStats]:
    """Run generation rounds until ``target_groups`` informative groups are collected.

    With ``filter=True`` (DAPO): rounds ``0, 1, ...`` run while fewer than
    ``target_groups`` informative groups are held and fewer than ``max_rounds`` rounds
    ran; each round's informative groups are appended in generation order, and extras
    beyond the target (from the last round) are dropped. When the cap is hit the step
    trains on what it has (possibly nothing) and ``stats.hit_cap``/``stats.note`` say so;
    nothing is raised. A round returning no group at all (an exhausted source) also ends
    the collection early.

    With ``filter=False`` (naive GRPO): one round runs and every group is kept.

    Returns ``(kept_payloads, stats)``.
    """
    if int(target_groups) != target_groups or target_groups < 1:
        raise ValueError(f"target_groups must be a positive integer, got {target_groups!r}")
    if int(max_rounds) != max_rounds or max_rounds < 1:
        raise ValueError(f"max_rounds must be a positive integer, got {max_rounds!r}")
    kept: list[Any] = []
    counts = {"generated": 0, "informative": 0, "all_correct": 0, "all_wrong": 0}
    rounds = 0
    exhausted = False
    while rounds < (max_rounds if filter else 1) and len(kept) < target_groups:
        payloads, correct = _check_round(rounds, generate_round(rounds))
        rounds += 1
        if correct.shape[0] == 0:
            exhausted = True
            break
        useful = informative_groups(correct)  # (P,)
        n_correct = correct.astype(bool).sum(axis=1)
        counts["generated"] += len(payloads)
        counts["informative"] += int(useful.sum())
        counts["all_correct"] += int((n_correct == correct.shape[1]).sum())
        counts["all_wrong"] += int((n_correct == 0).sum())
        if not filter:
            kept.extend(payloads)
            break
        kept.extend(p for p, u in zip(payloads, useful) if u)
    if filter:
        kept = kept[:target_groups]
    short = filter and len(kept) < target_groups
    return kept, SamplingStats(
        rounds=rounds,
        generated_groups=counts["generated"],
        kept_groups=len(kept),
        target_groups=int(target_groups),
        informative_groups=counts["informative"],
        all_correct_groups=counts["all_correct"],
        all_wrong_groups=counts["all_wrong"],
        hit_cap=short and not exhausted,
        note=_note(short, exhausted, rounds, len(kept), target_groups, counts),
    )


def _note(short, exhausted, rounds, kept, target, counts) -> str:
    if not short:
        return ""
    why = "the problem source ran dry" if exhausted else f"hit max_rounds={rounds}"
    return (
        f"dynamic sampling {why} with {kept}/{target} informative groups "
        f"({counts['all_correct']} all-correct and {counts['all_wrong']} all-wrong groups "
        f"discarded); training on the {kept} collected"
    )
