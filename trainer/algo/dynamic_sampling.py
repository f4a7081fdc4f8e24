"""DAPO dynamic sampling as a small pure driver, independent of models and tensors.

The trainer supplies ``generate_round(round_index, num_prompts) -> (payloads, correct)``: it
samples one generation batch (``num_prompts`` prompts x ``G`` responses), scores it, and
returns one opaque payload per group with the ``(P, G)`` correctness matrix.
``collect_informative`` calls it until it holds ``target_groups`` informative groups
(``0 < #correct < G``, see ``verimath.trainer.algo.advantages.informative_groups``), never more
than ``max_rounds`` times, and reports what happened in ``SamplingStats``.

Two things keep it from wasting generation:

- **Rounds sized to what is missing** (``adaptive``): the first round has ``round_prompts``
  prompts; each later one only as many as the informative rate seen so far says are needed
  (:func:`next_round_prompts`, with a margin and a floor), never more than ``round_prompts``.
- **Surplus kept** (``carried``): informative groups beyond the target are returned as
  ``surplus`` instead of being dropped; the caller passes them back as ``carried`` at the next
  step, where they count first (oldest first). Which groups are still fresh enough is the
  caller's choice (:func:`fresh_groups`).

Filtering is on correctness, not on the shaped reward: a group whose answers are all
right still has unequal rewards under length shaping, but no correctness signal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from verimath.trainer.algo.advantages import informative_groups

__all__ = ["SamplingStats", "allocate_quotas", "collect_informative", "fresh_groups",
           "next_round_prompts"]


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
    """Informative groups generated in this call (kept now, or surplus)."""
    all_correct_groups: int
    """Discarded groups where every response was right (problems too easy)."""
    all_wrong_groups: int
    """Discarded groups where every response was wrong (problems too hard)."""
    hit_cap: bool
    """True when ``max_rounds`` ran out before ``target_groups`` were collected."""
    carried_groups: int = 0
    """Groups kept from the surplus of earlier steps."""
    surplus_groups: int = 0
    """Informative groups left over for a later step."""
    round_sizes: str = ""
    """Prompts generated per round, e.g. ``"32+7"``."""
    note: str = ""
    """Empty when the target was met; otherwise one human-readable line for the log."""

    def as_metrics(self, prefix: str = "sampling/") -> dict[str, float]:
        """Numeric fields under namespaced keys (``sampling/kept_groups``, ...), and the
        prompts of each round that ran (``sampling/round1_prompts``, ``round2_prompts``, ...)."""
        out = {prefix + k: float(v) for k, v in asdict(self).items() if not isinstance(v, str)}
        sizes = [int(x) for x in self.round_sizes.split("+") if x]
        out.update({f"{prefix}round{i}_prompts": float(n) for i, n in enumerate(sizes, 1)})
        return out


def next_round_prompts(missing: int, informative: int, generated: int, *, full: int,
                       margin: float = 1.25, floor: int = 1) -> int:
    """Prompts for the next round: enough to find ``missing`` informative groups at the rate
    seen so far, ``ceil(margin * missing / rate)`` with ``rate = (informative + 1) /
    (generated + 2)`` (so an unlucky round does not read as a zero rate), clamped to
    ``[floor, full]``."""
    if missing <= 0:
        return 0
    rate = (informative + 1) / (generated + 2)
    return int(min(full, max(floor, math.ceil(margin * missing / rate))))


def fresh_groups(groups: Sequence[Any], ages: Sequence[int], max_age: int) -> list[Any]:
    """The groups whose age (steps since they were generated) is at most ``max_age``."""
    return [g for g, age in zip(groups, ages) if age <= max_age]


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


def _check_limits(target_groups, max_rounds, round_prompts) -> None:
    for name, value in (("target_groups", target_groups), ("max_rounds", max_rounds),
                        ("round_prompts", round_prompts)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


class _OneProcess:
    """The collectives of a single process: sums over one rank are the values themselves."""

    rank, world = 0, 1

    @staticmethod
    def all_sum(values) -> np.ndarray:
        return np.asarray(values, dtype=np.float64)


def collect_informative(
    generate_round: Callable[[int, int], tuple[Sequence[Any], Any]],
    *,
    target_groups: int,
    max_rounds: int,
    round_prompts: int,
    filter: bool = True,  # DAPO dynamic sampling on/off (shadows the builtin on purpose)
    adaptive: bool = False,
    margin: float = 1.25,
    min_round_prompts: int = 1,
    carried: Sequence[Any] = (),
    comm=None,
) -> tuple[list[Any], list[Any], SamplingStats]:
    """Run generation rounds until ``target_groups`` informative groups are held.

    With ``filter=True`` (DAPO): the ``carried`` groups count first, then rounds ``0, 1,
    ...`` run while fewer than ``target_groups`` are held and fewer than ``max_rounds`` ran;
    each round's informative groups are appended in generation order. Informative groups
    beyond the target are the ``surplus``. When the cap is hit the step trains on what it has
    (possibly nothing) and ``stats.hit_cap``/``stats.note`` say so; nothing is raised. A
    round returning no group at all (an exhausted source) also ends the collection.

    With ``filter=False`` (naive GRPO): one round runs and every group is kept; nothing is
    carried or left over.

    ``comm`` (``rank``, ``world``, ``all_sum(vector)``, e.g.
    ``verimath.trainer.core.distributed.Comm``) makes it data-parallel: every rank generates
    ``round_prompts`` prompts per full round, the decisions use the counts of all ranks (so
    every rank stops after the same round), and each rank keeps its quota of the target
    (:func:`allocate_quotas`); the stats are global.

    Returns ``(kept, surplus, stats)``.
    """
    _check_limits(target_groups, max_rounds, round_prompts)
    comm = comm or _OneProcess()
    kept: list[Any] = list(carried) if filter else []
    carried_count = len(kept)
    counts = np.zeros(4)  # generated, informative, all correct, all wrong (this rank)
    sizes: list[int] = []
    exhausted = False
    while True:
        held, dry = comm.all_sum([len(kept), float(exhausted)])
        if dry or held >= target_groups or len(sizes) >= (max_rounds if filter else 1):
            break
        size = round_prompts
        if sizes and adaptive:  # sized on the counts of all ranks, split between them
            total = comm.all_sum(counts)
            size = -(-next_round_prompts(int(target_groups - held), int(total[1]),
                                         int(total[0]), full=round_prompts * comm.world,
                                         margin=margin, floor=min_round_prompts)
                     // comm.world)
        payloads, correct = _check_round(len(sizes), generate_round(len(sizes), size))
        sizes.append(int(correct.shape[0]))
        if correct.shape[0] == 0:
            exhausted = True
            continue
        useful = informative_groups(correct)  # (P,)
        n_correct = correct.astype(bool).sum(axis=1)
        counts += [len(payloads), useful.sum(), (n_correct == correct.shape[1]).sum(),
                   (n_correct == 0).sum()]
        if not filter:
            kept.extend(payloads)
            break
        kept.extend(p for p, u in zip(payloads, useful) if u)
    quota = len(kept)
    if filter:
        quota = _quota(comm, len(kept), target_groups)
    surplus, kept = kept[quota:], kept[:quota]
    return kept, surplus, _stats(comm, counts, sizes, kept, surplus, carried_count,
                                 target_groups, filter, exhausted)


def _quota(comm, held: int, target: int) -> int:
    """How many of this rank's ``held`` groups it trains on."""
    if comm.world == 1:
        return min(held, target)
    one_hot = np.zeros(comm.world)
    one_hot[comm.rank] = held
    counts = [int(round(c)) for c in comm.all_sum(one_hot)]
    return allocate_quotas(counts, target)[comm.rank]


def allocate_quotas(counts: list[int], target: int) -> list[int]:
    """Kept groups per rank: as even as the ranks' informative ``counts`` allow, never more
    than a rank holds, adding up to ``min(target, sum(counts))``. Deterministic, so every
    rank computes the same answer."""
    quotas = [0] * len(counts)
    left = min(int(target), int(sum(counts)))
    while left > 0:
        open_ranks = [r for r, c in enumerate(counts) if quotas[r] < c]
        share = max(1, left // len(open_ranks))
        for r in open_ranks:
            take = min(share, counts[r] - quotas[r], left)
            quotas[r] += take
            left -= take
            if left == 0:
                break
    return quotas


def _stats(comm, counts, sizes, kept, surplus, carried_count, target, filter, exhausted):
    """The stats of all ranks together (sums; the same on every rank)."""
    local = [*counts, len(kept), len(surplus), min(carried_count, len(kept)), float(exhausted)]
    total = comm.all_sum(local + sizes)
    generated, informative, all_correct, all_wrong, n_kept, n_surplus, n_carried, dry = \
        (int(round(x)) for x in total[:8])
    round_sizes = [int(round(x)) for x in total[8:]]
    short = filter and n_kept < target
    return SamplingStats(
        rounds=len(sizes), generated_groups=generated, kept_groups=n_kept,
        target_groups=int(target), informative_groups=informative,
        all_correct_groups=all_correct, all_wrong_groups=all_wrong,
        hit_cap=short and not dry, carried_groups=n_carried, surplus_groups=n_surplus,
        round_sizes="+".join(map(str, round_sizes)),
        note=_note(short, dry, len(sizes), n_kept, target,
                   {"all_correct": all_correct, "all_wrong": all_wrong}))


def _note(short, exhausted, rounds, kept, target, counts) -> str:
    if not short:
        return ""
    why = "the problem source ran dry" if exhausted else f"hit max_rounds={rounds}"
    return (
        f"dynamic sampling {why} with {kept}/{target} informative groups "
        f"({counts['all_correct']} all-correct and {counts['all_wrong']} all-wrong groups "
        f"discarded); training on the {kept} collected"
    )
