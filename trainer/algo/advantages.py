"""Group-relative advantages (GRPO / DAPO) and the dynamic-sampling predicate.

Pure numpy, no torch: a verifier user can import this next to ``verimath.rewards``
and compute advantages for someone else's trainer.

Shapes follow the house vocabulary: ``(P, G)`` is prompts x group, one row per prompt
and one column per sampled response of that prompt.

Std convention
--------------
``group_advantages`` divides by the *population* standard deviation of the group
(``ddof=0``, divide by ``G``), which is what the DAPO paper's ``std({R_i})`` denotes
for the finite set of ``G`` rewards. With it the advantages of every non-constant group
have mean 0 and mean square ``1 / (1 + eps / std)**2`` (so almost exactly 1), whatever
``G`` is, and a group of one response is well defined (advantage 0). TRL and verl call
``torch.std``, which is the *sample* standard deviation (``ddof=1``, divide by ``G - 1``);
pass ``ddof=1`` to reproduce their numbers exactly. For binary +-1 rewards with ``k`` of
``G`` correct the population std is ``2 * sqrt(k/G * (1 - k/G))``.

Epsilon
-------
``eps`` (default ``1e-6``, as in TRL and verl) is added to the std, not to the variance:
``A = (r - mean) / (std + eps)``. It only matters for (near-)constant groups, whose
advantages it keeps finite and exactly zero (``r - mean == 0`` there). It is not a
temperature: with rewards of order 1 it changes non-constant advantages by about
``eps`` relative.
"""

from __future__ import annotations

import numpy as np

__all__ = ["group_advantages", "informative_groups"]


def _as_group_matrix(values, name: str, *, dtype) -> np.ndarray:
    arr = np.asarray(values, dtype=dtype)
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array shaped (P, G) = (prompts, group size); "
            f"got shape {arr.shape}"
        )
    if arr.shape[1] == 0:
        raise ValueError(f"{name} has group size G = 0 (shape {arr.shape}); need G >= 1")
    return arr


def group_advantages(
    rewards,
    *,
    eps: float = 1e-6,
    ddof: int = 0,
    scale: bool = True,
) -> np.ndarray:
    """Group-normalised advantages, one per response: ``(P, G) -> (P, G)`` float64.

    ``A[p, i] = (R[p, i] - mean_j R[p, j]) / (std_j R[p, j] + eps)`` with the population
    std by default (``ddof=0``; see the module docstring for why, and ``ddof=1`` for the
    TRL/verl convention). Every token of response ``i`` then gets ``A[p, i]``.

    Properties (tested): each row sums to zero; adding a constant to a row leaves it
    unchanged; permuting a row permutes its advantages; a constant row gives zeros.

    Args:
        rewards: array-like ``(P, G)`` of finite rewards (correctness plus any shaping).
        eps: non-negative constant added to the std.
        ddof: 0 (population std, default) or 1 (sample std; needs ``G >= 2``).
        scale: ``False`` skips the division (advantage = reward minus group mean), the
            "no std normalisation" ablation of Dr. GRPO.

    Raises:
        ValueError: on a wrong shape, a non-finite reward (the first bad row and column
            are named), a negative ``eps`` or an unsupported ``ddof``.

    >>> group_advantages([[1.0, -1.0, -1.0, 1.0]]).round(3).tolist()
    [[1.0, -1.0, -1.0, 1.0]]
    """
    r = _as_group_matrix(rewards, "rewards", dtype=np.float64)
    if not np.isfinite(r).all():
        row, col = np.argwhere(~np.isfinite(r))[0]
        raise ValueError(
            f"rewards must be finite; rewards[{row}, {col}] = {r[row, col]} "
            "(check the reward function for NaN/inf)"
        )
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 (population std) or 1 (sample std), got {ddof}")
    if ddof == 1 and r.shape[1] < 2:
        raise ValueError("ddof=1 (sample std) needs a group size G >= 2")
    centred = r - r.mean(axis=1, keepdims=True)
    # Exact zeros for constant rows, also when the mean is inexact in floating point.
    constant = (r == r[:, :1]).all(axis=1)
    centred[constant] = 0.0
    if not scale:
        return centred
    std = r.std(axis=1, ddof=ddof, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        adv = centred / (std + eps)
    adv[constant] = 0.0  # 0 / (0 + 0) when eps == 0
    return adv


def informative_groups(correct) -> np.ndarray:
    """Groups that teach something: ``(P, G)`` bool -> ``(P,)`` bool, ``0 < #correct < G``.

    DAPO's dynamic sampling keeps exactly these groups: a group where every response is
    right (or every one is wrong) has zero advantages and contributes no gradient. The
    test is on *correctness*, not on the shaped reward (length shaping can make the
    rewards of an all-correct group differ, but it still carries no correctness signal).

    Args:
        correct: ``(P, G)`` booleans (or 0/1 integers) saying which responses are right.

    Raises:
        ValueError: on a wrong shape or a value other than 0/1/True/False.

    >>> informative_groups([[True, False], [True, True], [False, False]]).tolist()
    [True, False, False]
    """
    raw = np.asarray(correct)
    if raw.dtype != np.bool_:
        if raw.size and not np.isin(raw, (0, 1)).all():
            raise ValueError(
                "correct must hold booleans (or 0/1); got values "
                f"{np.unique(raw[~np.isin(raw, (0, 1))])[:5].tolist()}"
            )
    c = _as_group_matrix(raw, "correct", dtype=np.bool_)
    n_correct = c.sum(axis=1)
    return (n_correct > 0) & (n_correct < c.shape[1])
